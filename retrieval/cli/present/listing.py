"""What `convis info`, `ls`, `ls --removed`, `remove`, `repair` and `export` print, and the JSON of a listed file."""

from __future__ import annotations

from pathlib import Path

from rich.table import Table

from retrieval.api import format_time
from retrieval.cli.console import out, printable, shown
from retrieval.cli.layout import Block, labelled, print_table
from retrieval.cli.present.common import print_json


def print_info(summary: dict, as_json: bool) -> None:
    if as_json:
        print_json(summary)
        return
    # soft wrap: a line is never broken mid-field (a pipe gets 80 columns from rich, not the reader's width)
    out.print(f"index {shown(summary['index_dir'])} of {shown(summary['root'])} (protocol {summary['protocol']})",
              highlight=False, soft_wrap=True)
    unavailable, removed = summary.get("files_unavailable"), summary.get("files_removed")
    out.print(f"files ok {summary['files_ok']}, failed {summary['files_failed']}"
              + (f", unavailable {unavailable} (folder missing or not mounted; kept, not searched)" if unavailable
                 else "") + (f", removed {removed} (convis ls --removed)" if removed else "")
              + f", units {summary['units']} ({summary['units_by']})", highlight=False, soft_wrap=True)
    if summary.get("shots"):
        shots = summary["shots"]
        confidence = shots["mean_cut_confidence"]
        out.print(f"  shots: {shots['cuts']} cut(s) (mean confidence "
                  f"{'n/a' if confidence is None else f'{confidence:.2f}'}), {shots['splits']} split(s) of long "
                  f"shots, mean unit {shots['mean_unit_seconds']} s", highlight=False, soft_wrap=True)
    lance = summary.get("store", "faiss") != "faiss"
    if lance:  # FAISS, the default, goes without saying
        out.print(f"vectors served from Lance: {shown(summary['store'])}", highlight=False, soft_wrap=True)
    for row in summary["indexers"]:
        count = summary["vectors"].get(row["indexer"], 0)
        served = "lance" if lance else f"faiss {shown(row['faiss'])}"
        out.print(f"  {shown(row['indexer'])}  {row['kind']}  dim {row['dim']}  {count} vectors  {served}",
                  highlight=False, soft_wrap=True)
    for signal in summary["cross_modal_signals"]:
        out.print(f"  {signal}  cross-modal (--signal CONCEPT=clipscore)", highlight=False, soft_wrap=True)
    for row in summary.get("descriptions", []):
        out.print(f"  {shown(_described_line(row))}", highlight=False, soft_wrap=True)
    for failure in summary["failures"]:
        out.print(f"  [red]failed[/] {shown(failure['path'])}: {shown(failure['error'] or '')}", highlight=False,
                  soft_wrap=True)


def _described_line(row: dict) -> str:
    """``location descriptions: 9 unit(s) by file -> text#location``: who described a concept, and its signal."""
    from retrieval.api import FILE_KEY, scorer_label

    by = ", ".join(f"{units} unit(s) by {'text files' if model == FILE_KEY.model else scorer_label(model)}"
                   for model, units in row["described_by"].items())
    if row["signals"]:
        used = " -> " + ", ".join(map(scorer_label, row["signals"]))
    else:  # captions are the text indexer's own input; another concept unembedded is used by no query
        used = " (the text indexer's input)" if row["concept"] == "caption" else " (not embedded: no query uses them)"
    return f"{row['concept']} descriptions: {by}{used}"


def print_export(manifest: dict, folder: Path, as_json: bool) -> None:
    """The files an export wrote, a line each with its rows, then its manifest (or the manifest as JSON)."""
    if as_json:
        print_json(manifest)
        return
    for table in manifest["tables"]:
        out.print(f"{table['rows']:>9,} rows  {shown(folder / table['file'])}", highlight=False, soft_wrap=True)
    out.print(f"{'':>14}{shown(folder / 'manifest.json')}", highlight=False, soft_wrap=True)


def print_repair(where: Path, restored, as_json: bool) -> None:
    if as_json:
        print_json({"index_dir": str(where.resolve()), "repaired": restored is not None,
                    **({"kept_aside": str(restored.kept_aside), "snapshot_time": restored.snapshot_time,
                        "files": restored.files} if restored else {})})
        return
    out.print(printable(restored) if restored else f"the catalog in {printable(where)} is whole; nothing to repair",
              highlight=False, markup=False)


def print_removed(changed, undo: bool, as_json: bool) -> None:
    """What ``remove`` did (``changed``: the paths), or its undo (``changed``: an ``Undone``)."""
    if not undo:
        if as_json:
            print_json({"removed": changed})
            return
        out.print(f"removed {len(changed)} file(s) from the index: {printable(', '.join(changed))}; the files stay "
                  "on disk, their vectors are kept and later runs skip them (convis remove --undo FILE puts them "
                  "back; convis ls --removed lists them)", highlight=False, markup=False)
        return
    if as_json:
        print_json({"restored": changed.restored, "to_index": changed.to_index})
        return
    if changed.restored:
        out.print(f"restored {len(changed.restored)} file(s) with their stored vectors, searchable now: "
                  f"{printable(', '.join(changed.restored))}", highlight=False, markup=False)
    if changed.to_index:
        out.print(f"the next `convis index` run indexes {len(changed.to_index)} file(s) again (removed before "
                  f"vectors were kept): {printable(', '.join(changed.to_index))}", highlight=False, markup=False)


def print_removed_listing(root: Path, removed: list, as_json: bool) -> None:
    """The files taken out of the index (``RemovedFile``s): when, and whether an undo restores them at once."""
    if as_json:
        print_json({"root": str(root), "removed": [{"path": f.path, "removed_at": f.removed_at, "kept": f.kept,
                                                    "units": f.units, "status": f.status} for f in removed]})
        return
    table = Table(title=f"{len(removed)} removed file(s) in {shown(str(root))} (convis remove --undo FILE puts one "
                  "back)", title_justify="left")
    columns = ("path", "removed", "units", "undo")
    for col in columns:  # names, times and counts are never cut
        table.add_column(col, no_wrap=col != "undo", justify="right" if col == "units" else "left")
    rows = [(shown(f.path), f.removed_at.replace("T", " "), str(f.units),
             "restores its vectors" if f.kept else "next index run re-embeds") for f in removed]
    for row in rows:
        table.add_row(*row)
    print_table(out, table, lambda: (Block(row[0], labelled(columns[1:], row[1:])) for row in rows))


def print_listing(root: Path, files: list, as_json: bool) -> None:
    if as_json:
        print_json({"root": str(root), "files": [listing_record(f) for f in files]})
        return
    table = Table(title=f"{len(files)} file(s) in {shown(str(root))}", title_justify="left")
    columns = ("path", "duration", "resolution", "fps", "codec", "size", "units", "status", "caption", "tags")
    for col in columns:  # a status's reason and the tags may wrap; names and numbers are never cut
        table.add_column(col, no_wrap=col not in ("status", "tags"), justify="right" if col in RIGHT else "left")
    rows = [(shown(f.path), format_time(f.duration) if f.duration is not None else "", *_media_cells(f),
             str(len(f.units)), _shown_status(f), "yes" if f.captioned else "", _tags(f)) for f in files]
    for row in rows:
        table.add_row(*row)
    print_table(out, table, lambda: (Block(row[0], labelled(columns[1:], row[1:])) for row in rows))


RIGHT = ("duration", "resolution", "fps", "size", "units")


def _media_cells(f) -> tuple[str, str, str, str]:
    """Resolution, frame rate, codec and size as a person reads them: ``1280x720``, ``25``, ``h264``, ``1.0 MB``."""
    resolution = f"{f.width}x{f.height}" if f.width and f.height else ""
    fps = f"{f.fps:.4g}" if f.fps else ""
    size = f"{f.size / 1e6:.1f} MB" if f.size else ""
    return resolution, fps, shown(f.codec or ""), size


def _tags(f) -> str:
    """The file's fields (`convis tag`, --metadata) as ``name=value``, comma separated."""
    return shown(", ".join(f"{name}={value}" for name, value in sorted(f.fields.items())))


def _shown_status(f) -> str:
    """ok (with what of a damaged file could not be decoded), unavailable (its folder offline: vectors kept), or
    failed with the reason."""
    if f.status == "ok":
        return f"ok ({shown(f.error)})" if f.error else "ok"
    return f"failed: {shown(f.error or '')}" if f.status == "failed" else f.status


def listing_record(f) -> dict:
    failed = f.status == "failed"
    return {"path": f.path, "status": f.status, "error": f.error if failed else None,
            "undecoded": None if failed else f.error,  # a damaged file indexed from what decodes: what did not
            "duration": f.duration, "width": f.width, "height": f.height, "captioned": f.captioned,
            "units_by": f.units_by or None, "size": f.size, "mtime": f.mtime, "fps": f.fps, "codec": f.codec,
            "fields": dict(f.fields),
            "units": [{"segment": seg, "start": start, "end": end, **_cut_record(f, i),
                       **_unit_lines(f, start, end)} for i, (seg, start, end) in enumerate(f.units)]}


def _unit_lines(f, start: float, end: float) -> dict:
    """A unit's timed lines (those whose time overlaps it, as search counts them); nothing when it has none."""
    from retrieval.api import in_unit, line_as_dict

    shown = [line_as_dict(x) for x in getattr(f, "lines", ()) if in_unit(x, start, end)]
    return {"lines": shown} if shown else {}


def _cut_record(f, i: int) -> dict:
    """A shot unit's boundary (what starts it: start, cut or split) and the cut's confidence; nothing for fixed
    units."""
    if i >= len(f.cuts) or f.cuts[i][0] is None:
        return {}
    boundary, confidence = f.cuts[i]
    return {"boundary": boundary, "confidence": None if confidence is None else round(confidence, 4)}
