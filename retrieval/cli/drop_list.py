"""The files a ``remove --from-file LIST`` names: a path a line, or the JSON ``convis dupes --json`` prints."""

from __future__ import annotations

import json
from pathlib import Path

from retrieval.cli.options import UserError

MOST_BYTES = 64 << 20  # a list of a million paths; more is not a list of files


def read_drop_list(path: Path) -> list[str]:
    """The root-relative (or absolute) paths ``path`` lists; UserError for a list that cannot be read as one."""
    try:
        if path.stat().st_size > MOST_BYTES:
            raise UserError(f"{path} is over {MOST_BYTES >> 20} MB: not a list of files")
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"cannot read the list {path}: {exc.strerror if isinstance(exc, OSError) else exc}") from None
    if text.lstrip().startswith("{"):
        return _from_json(path, text)
    lines = (line.strip() for line in text.splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def _from_json(path: Path, text: str) -> list[str]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UserError(f"{path} is not JSON: {exc}") from None
    drop = data.get("drop") if isinstance(data, dict) else None
    if not isinstance(drop, list) or not all(isinstance(p, str) for p in drop):
        raise UserError(f"{path} holds no drop list (the \"drop\" of `convis dupes --json`)")
    if data.get("level") == "unit":
        raise UserError(f"{path} is a unit-level drop list (parts of files); remove takes whole files: run "
                        "`convis dupes --level file --json`")
    return drop
