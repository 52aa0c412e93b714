"""`convis bench captions`: embed caption sets, write their pair scores in the release format, and print their
correlation with the human ratings (the SBERT rows of the paper's Table 3), side by side.

Mounted with ``register(app)`` on the bench typer app.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.measure import Measurement

from bench import report
from bench.console import JsonOpt, PlainUsage, note, user_errors
from bench.evaluate import CorrelationRow, file_correlation
from bench.loaders import SIMILARITIES_SUFFIX, BenchDataError, GtPair, PairKey, ScoreFile, base_name, load_gt_pairs
from indexers.errors import ModelUnavailableError
from indexers.factory import create_indexer
from indexers.text import MINILM, pair_similarity, read_captions
from retrieval.core.registry import UnknownModelError

HELP = ("Embed captions, write pair scores (cos+1)/2, and print their correlation (paper Table 3, SBERT rows); "
        "repeat --captions to compare caption sets side by side.")


def register(app: typer.Typer) -> None:
    """Add the `captions` command to a typer app (the `bench` sub-app)."""
    app.command("captions", help=HELP, cls=PlainUsage)(captions)


def captions(
    captions_dirs: Annotated[list[Path], typer.Option(
        "--captions", help="Folder of <video stem>.txt captions; repeat for several caption sets.")],
    pairs: Annotated[Path, typer.Option("--pairs", help="Human ratings: gt_conditioned_similarities.json.")],
    out: Annotated[Path, typer.Option("--out", help="Where to write the pair similarities (release format): a "
                                      ".json file for one caption set, else a folder, filled as "
                                      f"OUT/<set>/<set>{SIMILARITIES_SUFFIX}.")],
    model: Annotated[
        str, typer.Option("--model", help="Text indexer spec: text, a sentence-transformers id or folder.")
    ] = "text",
    device: Annotated[Optional[str], typer.Option("--device", help="torch device, e.g. cpu or cuda.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Score every caption set against the human ratings and report them side by side."""
    with user_errors():
        gt = load_gt_pairs(pairs)
        sets = [(folder, _read_captions(folder)) for folder in captions_dirs]  # bad folders fail before the model loads
        _check_out(out, len(sets))
        indexer = _text_indexer(model, device)  # once, for every set
        names = _set_names([folder for folder, _ in sets], indexer)
        rows: list[CorrelationRow] = []
        for name, (_, texts) in zip(names, sets):
            rows += _score_set(name, texts, gt, indexer, _out_path(out, name, len(sets)))
        _emit(rows, as_json, pairs)


def _read_captions(folder: Path) -> dict[str, str]:
    texts = read_captions(folder)
    if not texts:
        raise BenchDataError(f"no .txt captions in {folder}")
    return texts


def _check_out(out: Path, n_sets: int) -> None:
    if n_sets > 1 and _is_file(out):
        raise BenchDataError(f"--out {out} is a file; with several --captions it is a folder, filled as "
                             f"OUT/<set>/<set>{SIMILARITIES_SUFFIX}")


def _is_file(out: Path) -> bool:
    return out.suffix == ".json" and not out.is_dir()


def _out_path(out: Path, name: str, n_sets: int) -> Path:
    """One set with a .json --out writes that file; otherwise the release layout under the --out folder."""
    if n_sets == 1 and _is_file(out):
        return out
    return out / name / f"{name}{SIMILARITIES_SUFFIX}"


def _text_indexer(spec: str, device: str | None):
    # a bare folder is read as sentence-transformers weights, whatever its config calls itself
    spec = f"text:{spec}" if Path(spec).expanduser().is_dir() else spec
    try:
        indexer = create_indexer(spec, device=device)
    except (UnknownModelError, ModelUnavailableError) as e:
        raise BenchDataError(str(e)) from None
    if indexer.kind != "text":
        raise BenchDataError(f"{spec} is a {indexer.kind} model; captions need a text model")
    return indexer


def _set_names(folders: list[Path], indexer) -> list[str]:
    names = [_caption_model_name(folder, indexer) for folder in folders]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        # the folder names the set and its output file, so two alike would overwrite each other
        raise BenchDataError(f"two caption folders are both named {twice[0]}; rename one")
    return names


def _caption_model_name(captions_dir: Path, indexer) -> str:
    """The caption folder names the row, as in the release; another text model is added to the name."""
    folder = captions_dir.resolve().name
    return folder if indexer.source == MINILM else f"{Path(indexer.source).name}_{folder}"


def stem(video: str) -> str:
    """`videos_trimmed/1754_007.mp4` -> `1754_007`, the caption file's name."""
    return Path(base_name(video)).stem


def _score_set(name: str, texts: dict[str, str], gt: dict[PairKey, GtPair], indexer,
               path: Path) -> list[CorrelationRow]:
    """Write one set's pair scores to ``path`` and return its correlation rows."""
    scores = _caption_scores(name, gt, texts, indexer)
    path.parent.mkdir(parents=True, exist_ok=True)
    report.write_json(
        path, [{"video1": gt[k].video1, "video2": gt[k].video2, "similarity": s} for k, s in scores.items()]
    )
    note(f"wrote {path}: {len(scores)} pairs")
    return file_correlation(ScoreFile(path, name, None), scores, gt)


def _caption_scores(name: str, gt: dict[PairKey, GtPair], texts: dict[str, str], indexer) -> dict[PairKey, float]:
    keys = [k for k in gt if stem(k[0]) in texts and stem(k[1]) in texts]
    if not keys:
        raise BenchDataError(f"{name}: no pair has captions for both videos")
    if len(keys) < len(gt):
        note(f"warning: {name}: {len(gt) - len(keys)} of {len(gt)} pairs lack a caption and are skipped")
    names = sorted({stem(v) for k in keys for v in k})
    vectors = indexer.embed_texts([texts[n] for n in names])
    row = {n: i for i, n in enumerate(names)}
    sims = pair_similarity(vectors[[row[stem(k[0])] for k in keys]], vectors[[row[stem(k[1])] for k in keys]])
    return {k: float(s) for k, s in zip(keys, sims)}


def _emit(rows: list[CorrelationRow], as_json: bool, pairs: Path) -> None:
    if as_json:
        typer.echo(report.to_json({"gt": str(pairs), "results": report.records(rows)}))
        return
    console = Console()
    tables = report.correlation_tables(rows, side_by_side=True)
    if not console.is_terminal:
        # piped output has no screen to fit: keep each concept on one line rather than fold the numbers
        unbounded = console.options.update_width(10_000)
        console.width = max(console.width, *(Measurement.get(console, unbounded, t).maximum for t in tables))
    for table in tables:
        console.print(table)
