"""What `convis models` prints: the registered indexers, rerankers and pair signals, with their weights."""

from __future__ import annotations

from rich.table import Table

from retrieval.cli.console import out, shown
from retrieval.cli.layout import Block, labelled, print_table
from retrieval.cli.options import UserError
from retrieval.cli.present.common import print_json


def model_rows(protocol: str) -> list[dict]:
    """The registered indexers (as ``protocol`` builds them), rerankers and pair signals, as `models` lists them."""
    from retrieval.api import INDEXERS, PROTOCOLS, RERANKERS, SIGNALS, available_indexers, available_rerankers

    if protocol not in PROTOCOLS:
        raise UserError(f"--protocol is one of {', '.join(PROTOCOLS)}, got {protocol!r}")
    rows = [_model_row("indexer", INDEXERS.entry(n), protocol, INDEXERS.entry(n).card.get(protocol, {}))
            for n in available_indexers()]
    rows += [_model_row("reranker", RERANKERS.entry(n), None, RERANKERS.entry(n).card) for n in available_rerankers()]
    return rows + [_signal_row(SIGNALS.entry(n)) for n in SIGNALS.names()]


MODELS_CAPTION = ("weights: bundled (installed with a package), cached (Hugging Face cache), local folder, download "
                  "on first use (the hub answers), missing (not cached, and the hub is offline or unreachable), or "
                  "unsupported (convis cannot run that model)")


MODEL_COLUMNS = ("kind", "name", "default", "weights")


FED_COLUMNS = ("frames", "size", "pooling", "dtype")  # --full: what each model is fed
WHY_COLUMNS = ("license", "evidence")  # --full: the weights' license and the published figure behind the family
RUN_COLUMNS = ("backends",)  # --full: where a captioner can generate (the vLLM releases it supports)


def print_models(rows: list[dict], full: bool, as_json: bool) -> None:
    if as_json:
        print_json(rows)
        return
    fed = (*FED_COLUMNS, *RUN_COLUMNS, *WHY_COLUMNS) if full else ()
    table = Table(caption=MODELS_CAPTION, caption_justify="left")
    for col in (*MODEL_COLUMNS, *fed):  # names, ids and weights are never cut; what a model is fed may wrap
        table.add_column(col, no_wrap=col in MODEL_COLUMNS)
    for row in rows:
        table.add_row(*(shown(str(row.get(c, ""))) for c in (*MODEL_COLUMNS, *fed)))
    print_table(out, table, lambda: (Block(f"[bold]{shown(row['name'])}[/] ({row['kind']})", labelled(
        ("default", "weights", *fed), (shown(str(row.get(c, ""))) for c in ("default", "weights", *fed))))
        for row in rows), MODELS_CAPTION)
    if full:
        print_instructions(rows)


def print_instructions(rows: list[dict]) -> None:
    """What each instruction-following family is told: its generic, query and per-concept instructions."""
    for row in rows:
        said = row.get("instructions")
        if not said:
            continue
        out.print(f"\n[bold]{shown(row['name'])}[/] instructions (version {shown(said['version'])}; "
                  f"{shown(said['source'])}):")
        told = [("generic", said["generic"]), ("query", said["query"]), *said["concepts"].items(),
                ("any other concept", said["template"])]
        for use, text in told:
            out.print(f"  {shown(use)}: {shown(text)}")


def _signal_row(entry) -> dict:
    """A registered pair signal (CLIPScore, VQAScore): the model it asks by default and its definition."""
    kind = entry.build(None)
    return {"kind": "signal", "name": entry.name, "default": kind.model or "the index's first CLIP-family indexer",
            "weights": "-", "description": kind.definition, "family": kind.family, "cost": kind.cost,
            # what it is fed is its model's: the CLIP-family indexer's frames, the LMM's own frame rule
            **{field: "its model's" for field in ("frames", "size", "pooling", "dtype")}}


def _model_row(kind: str, entry, variant: str | None, card: dict) -> dict:
    return {"kind": kind, "name": entry.name, "default": entry.source_for(variant),
            "weights": entry.weights_for(variant), "description": entry.description, "license": entry.license,
            "evidence": entry.evidence, **card}
