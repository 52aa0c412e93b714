"""A query's or a search's ``--json`` output re-read into a results table, written as an index export's tables
are (``retrieval.store.export.files``): one row a hit, ranked as printed."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pyarrow as pa

from retrieval.core.errors import one_line
from retrieval.core.user_files import DATA_FILE_LIMIT, read_json
from retrieval.store.export.files import (
    EXPORT_VERSION,
    ExportError,
    check_format,
    copy_arrow,
    prepare_out,
    write_manifest,
)

# what makes a file the JSON of `convis query --json` / `convis search --json` (QueryResult.as_dict)
RESULT_KEYS = {"anchor", "concepts", "scored_by", "hits"}
HIT_KEYS = {"rank", "path", "segment", "start", "end", "total"}
RESULTS_SCHEMA = pa.schema([
    ("rank", pa.int32()), ("path", pa.string()), ("segment", pa.int32()), ("start", pa.float64()),
    ("end", pa.float64()), ("total", pa.float64()), ("confidence", pa.string()),
    ("scores", pa.map_(pa.string(), pa.float64())),  # concept key -> score in [0, 1]
    ("anchor", pa.string()), ("text", pa.string()),  # the query's anchor; a search's text (else null)
    ("hit", pa.string()),  # the hit as the JSON holds it, whole (evidence, ratings, ranks of each mode...)
])


def export_results(results: Path, out: Path, fmt: str = "parquet", force: bool = False) -> dict:
    """Write the hits of the query or search JSON in ``results`` to ``out`` as a ``results`` table and return
    the manifest (also written there)."""
    check_format(fmt)
    answer = read_results(results)
    table = _table(answer)
    out = prepare_out(out, force)
    # the whole hit as JSON: nested in a JSONL line, a JSON column in parquet
    written = copy_arrow(table.to_reader(), out, "results", fmt, columns="* REPLACE (hit::JSON AS hit)")
    manifest = {"convis_export": EXPORT_VERSION, "format": fmt,
                "exported_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "results": {"source": str(Path(results).resolve()), "root": answer.get("root"),
                            "anchor": answer["anchor"], "text": answer.get("text"),
                            "scored_by": answer["scored_by"],
                            "concepts": [c.get("key") for c in answer["concepts"] if isinstance(c, dict)]},
                "tables": [written.as_dict()]}
    write_manifest(out, manifest)
    return manifest


def read_results(path: Path) -> dict:
    """The JSON a query or a search printed; ExportError when ``path`` holds anything else."""
    not_ours = f"{path} is not the --json output of convis query or convis search"
    # a size and nesting limit: a wrong path (a video, /dev/urandom) costs one line, not the machine's memory
    answer = read_json(path, "results file", DATA_FILE_LIMIT, ExportError)
    if not isinstance(answer, dict) or not RESULT_KEYS <= answer.keys() or not isinstance(answer["hits"], list):
        raise ExportError(f"{not_ours} (it lacks {', '.join(sorted(RESULT_KEYS))})")
    for i, hit in enumerate(answer["hits"], 1):
        if not isinstance(hit, dict) or not HIT_KEYS <= hit.keys() or not isinstance(hit.get("scores", {}), dict):
            raise ExportError(f"{not_ours} (hit {i} lacks {', '.join(sorted(HIT_KEYS))} or its scores)")
    return answer


def _table(answer: dict) -> pa.Table:
    """One row a hit; ExportError when a value is not of its column's type."""
    hits = answer["hits"]
    text = answer.get("text")
    columns = {
        "rank": [h["rank"] for h in hits], "path": [h["path"] for h in hits],
        "segment": [h["segment"] for h in hits], "start": [h["start"] for h in hits],
        "end": [h["end"] for h in hits], "total": [h["total"] for h in hits],
        "confidence": [h.get("confidence") for h in hits],
        "scores": [list((h.get("scores") or {}).items()) for h in hits],
        "anchor": [answer["anchor"]] * len(hits), "text": [text] * len(hits),
        "hit": [json.dumps(h, ensure_ascii=False) for h in hits],
    }
    try:
        return pa.table(columns, schema=RESULTS_SCHEMA)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:  # OverflowError: a rank of 10**30
        raise ExportError(f"a hit's value is not of its column's type: {one_line(exc)}") from None
    except UnicodeEncodeError:  # JSON may escape half a surrogate pair ("\ud800"): text no file can hold
        raise ExportError("a hit holds text that is not Unicode (half of a surrogate pair): not --json output of "
                          "convis query or convis search") from None
