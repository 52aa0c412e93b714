"""Both LMM sections (rerank, describe) in one pass a family, under a time budget.

``convis bench perf --sections rerank,describe --shape 7b`` builds each family's real-shape checkpoint once per
section (16 GB written and read back each time). A lent GPU's minutes are few, so this pass builds and loads
each family once for both, in the order that matters most (every family's pairs, then Qwen2.5-VL's captions),
writes every row the moment it is measured, and starts no step once the budget is spent (a checkpoint is kept on
disk only while a later step needs it)::

    python -m bench.perf.lmm_pass --shape 7b --out DIR --budget-s 420

Rows are the sections' own (LmmRerankResult, DescribeResult), as JSON lines in DIR/lmm.jsonl, and their tables
in DIR/lmm.md. ``--shape tiny`` runs the same pass on the tiny random checkpoints, on any machine.
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Sequence

from bench.perf import lmm_describe, lmm_rerank, real_shape
from retrieval.core.concepts import CONVIS_CONCEPTS

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "videos"


@dataclass(frozen=True)
class Step:
    """One measurement of one family: ``run(folder)`` gives its rows."""

    family: str
    what: str
    run: Callable[[Path], list]


def steps(shape: str, clips: Sequence[Path], families: Sequence[str]) -> list[Step]:
    """Every family's rerank (Qwen2.5-VL's at batch 1 and its own, the others' at their own; sharing on and off),
    then Qwen2.5-VL's captions (both ways): the pair targets first, as a caption run's compile can take minutes."""
    concepts = list(CONVIS_CONCEPTS.values())
    tokens = lmm_describe.MAX_NEW_TOKENS if shape == "7b" else lmm_describe.SMOKE_TOKENS
    first = real_shape.FAMILIES[0]
    out = []
    for family in families:
        batches = (1, None) if family == first else (None,)  # None: the family's own batch
        out.append(Step(family, "rerank", lambda folder, f=family, b=batches: lmm_rerank.measure_family(
            f, folder, clips[:9], shape, concepts, batches=b, profile="first")))
    if first in families:
        out.append(Step(first, "describe", lambda folder: lmm_describe.measure_family(
            first, folder, clips[:8], shape, tokens, ways=lmm_describe.WAYS[::-1], profile=True)))
    return out


def run_pass(shape: str, out: Path, budget_s: float, families: Sequence[str] = real_shape.FAMILIES,
             clips: Sequence[Path] | None = None, say: Callable[[str], None] = print) -> list[dict]:
    clips = list(clips or sorted(EXAMPLES.glob("*.mp4")))
    out.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    started = time.perf_counter()
    scratch = Path(tempfile.mkdtemp(prefix="convis-lmm-pass-"))
    say(json.dumps(machine()))
    folders: dict[str, Path] = {}
    try:
        todo = steps(shape, clips, families)
        for i, step in enumerate(todo):
            if time.perf_counter() - started > budget_s:
                say(f"budget spent: {step.family} {step.what} not measured")
                continue
            if step.family not in folders:
                folders[step.family], built = _build(step.family, scratch, shape)
                say(f"{step.family}: checkpoint built in {built:.0f} s")
            rows += _measured(step, folders[step.family], out, say)
            if all(later.family != step.family for later in todo[i + 1:]):
                shutil.rmtree(folders.pop(step.family), ignore_errors=True)  # a 7b checkpoint is 16 GB of disk
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        (out / "lmm.md").write_text(tables(rows))
    return rows


def _build(family: str, scratch: Path, shape: str) -> tuple[Path, float]:
    began = time.perf_counter()
    folder = real_shape.build(family, scratch / family, shape)
    return folder, time.perf_counter() - began


def _measured(step: Step, folder: Path, out: Path, say) -> list[dict]:
    began = time.perf_counter()
    try:
        measured = step.run(folder)
    except Exception as err:  # one family's failure is a row of its own; the others are still measured
        measured, error = [], f"{type(err).__name__}: {err}"
        say(f"{step.family} {step.what} failed: {error}")
        rows = [{"family": step.family, "what": step.what, "error": error}]
    else:
        rows = [{"what": step.what, **asdict(row), **_rates(row)} for row in measured]
    with (out / "lmm.jsonl").open("a") as file:
        for row in rows:
            file.write(json.dumps(row) + "\n")
            say(json.dumps(row))
    say(f"{step.family} {step.what}: {time.perf_counter() - began:.0f} s")
    return rows


def _rates(row) -> dict:
    if isinstance(row, lmm_rerank.LmmRerankResult):
        return {"pairs_per_s": round(row.pairs_per_s, 3)}
    return {"answers_per_s": round(row.answers_per_s, 3), "tokens_per_s": round(row.tokens / row.seconds, 1)}


def machine() -> dict:
    import torch
    import transformers

    card = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    return {"card": card, "torch": torch.__version__, "transformers": transformers.__version__,
            "python": platform.python_version()}


def tables(rows: list[dict]) -> str:
    rerank = [r for r in rows if r.get("what") == "rerank" and "error" not in r]
    describe = [r for r in rows if r.get("what") == "describe" and "error" not in r]
    lines = ["| family | shape | batch | share | pairs | s | pairs/s | vision calls | prefix passes | pair passes "
             "| GPU peak GB | kernel share |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r['family']} | {r['shape']} | {r['batch']} | {r['share']} | {r['pairs']} | {r['seconds']:.2f} | "
              f"{r['pairs_per_s']:.2f} | {r['vision_calls']} | {r['prefix_passes']} | {r['pair_passes']} | "
              f"{r['gpu_peak_gb']} | {r['kernel_share']} |" for r in rerank]
    lines += ["", "| family | shape | way | units a call | answers | tokens | calls | s | answers/s | tokens/s "
              "| GPU peak GB | kernel share |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r['family']} | {r['shape']} | {r['way']} | {r['batch']} | {r['answers']} | {r['tokens']} | "
              f"{r['generate_calls']} | {r['seconds']:.2f} | {r['answers_per_s']:.2f} | {r['tokens_per_s']:.0f} | "
              f"{r['gpu_peak_gb']} | {r['kernel_share']} |" for r in describe]
    errors = [f"- {r['family']} {r['what']}: {r['error']}" for r in rows if "error" in r]
    return "\n".join(lines + ([""] + errors if errors else [])) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.perf.lmm_pass", description=__doc__.split("\n\n")[0])
    parser.add_argument("--shape", choices=real_shape.SHAPES, default="tiny")
    parser.add_argument("--out", type=Path, required=True, help="folder for lmm.jsonl and lmm.md")
    parser.add_argument("--budget-s", type=float, default=420.0, help="no step starts after this many seconds")
    parser.add_argument("--families", default=",".join(real_shape.FAMILIES))
    args = parser.parse_args(argv)
    if args.shape == "7b":
        real_shape.require_cuda()
    rows = run_pass(args.shape, args.out, args.budget_s, [f for f in args.families.split(",") if f],
                    say=lambda line: print(line, flush=True))
    print(tables(rows))
    return 1 if any("error" in r for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
