"""The files a ``remove --from-file LIST`` names: a path a line, or the JSON ``convis dupes --json`` prints."""

from __future__ import annotations

from pathlib import Path

from retrieval.api import parse_json, read_limited
from retrieval.cli.options import UserError

MOST_BYTES = 64 << 20  # a list of a million paths; more is not a list of files


def read_drop_list(path: Path) -> list[str]:
    """The root-relative (or absolute) paths ``path`` lists, read by ``core.user_files``' rule (a regular file of
    at most ``MOST_BYTES``); UserError for a list that cannot be read as one. A path is its bytes as UTF-8:
    a line that is not names no indexed file (the index holds UTF-8 names only), so it is refused by number."""
    raw = read_limited(path, "the list", MOST_BYTES, UserError)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise UserError(f"cannot read the list {path}: line {line} is not UTF-8 (the index names files in UTF-8)") \
            from None
    if text.lstrip().startswith("{"):
        return _from_json(path, text)
    lines = (line.strip() for line in text.splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def _from_json(path: Path, text: str) -> list[str]:
    data = parse_json(text, str(path), UserError)
    drop = data.get("drop") if isinstance(data, dict) else None
    if not isinstance(drop, list) or not all(isinstance(p, str) for p in drop):
        raise UserError(f"{path} holds no drop list (the \"drop\" of `convis dupes --json`)")
    if data.get("level") == "unit":
        raise UserError(f"{path} is a unit-level drop list (parts of files); remove takes whole files: run "
                        "`convis dupes --level file --json`")
    return drop
