"""Setting user fields: ``convis tag PATH... --set key=value --unset key``, and the metadata file an index run
reads (``--metadata FILE``), re-read by later runs when it changed."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from retrieval.core.errors import ConvisError
from retrieval.store import metadata_file
from retrieval.store.catalog import Catalog
from retrieval.store.where import BUILTIN, MAX_VALUE_CHARS, storable

METADATA_FILE, METADATA_STAMP = "metadata_file", "metadata_stamp"  # catalog settings: the file and its state


class FieldError(ConvisError, ValueError):
    """A ``--set``/``--unset`` that cannot be stored: not key=value, a built-in field's name, an overlong value."""

    exit_code, http_status = 2, 400


def parse_assignments(assignments: Sequence[str], unset: Sequence[str]) -> tuple[dict[str, str], list[str]]:
    """``["team=red", "tags=goal,corner"]`` -> {"team": "red", "tags": "goal,corner"}, and the names to unset,
    each name checked."""
    values = {}
    for text in assignments:
        key, sep, value = text.partition("=")
        if not sep or not value.strip():
            raise FieldError(f"--set {text!r}: give KEY=VALUE, e.g. --set team=red (--unset KEY removes one)")
        values[_name(key.strip(), "--set")] = _value(key.strip(), value.strip())
    names = [_name(key.strip(), "--unset") for key in unset]
    if not values and not names:
        raise FieldError("give --set KEY=VALUE or --unset KEY")
    return values, names


def _name(key: str, option: str) -> str:
    if key.lower() in BUILTIN:
        raise FieldError(f"{option} {key}: {key} is a built-in field, read from the file itself "
                         f"(built-in: {', '.join(BUILTIN)})")
    if not metadata_file.FIELD_NAME.fullmatch(key):
        raise FieldError(f"{option} {key!r}: a field name is a letter, then letters, digits, '_', '-' or '.'")
    return key


def _value(key: str, value: str) -> str:
    if len(value) > MAX_VALUE_CHARS:
        raise FieldError(f"--set {key}: the value is {len(value)} characters; at most {MAX_VALUE_CHARS}")
    if not storable(value):
        raise FieldError(f"--set {key}: the value is not valid Unicode (a lone surrogate, as from bytes that are "
                         "not UTF-8)")
    return value


def apply_metadata(catalog: Catalog, given: Path | None, notices: list[str]) -> int | None:
    """Read ``given`` (else the file an earlier run read, if it changed since) into the catalog's fields; how many
    files have fields from it, or None when nothing was read. Each kind of problem in it is one line of
    ``notices``."""
    path = Path(given).resolve() if given is not None else _stored(catalog)
    if path is None:
        return None
    if given is None and not path.is_file():
        notices.append(f"the metadata file {path} read before is gone: the fields it gave are kept")
        return None
    if given is None and _stamp(path) == catalog.setting(METADATA_STAMP):
        return None  # unchanged since it was read
    read = metadata_file.read(path, set(catalog.file_states()))
    for reason, count in catalog.replace_file_fields(read.rows).items():
        read.problems[reason] += count  # past a cap, or not storable: said with the file's own problems
    catalog.set_setting(METADATA_FILE, str(path))
    catalog.set_setting(METADATA_STAMP, _stamp(path))
    notices.extend(read.lines(path.name))
    return len({row[0] for row in read.rows})


def _stored(catalog: Catalog) -> Path | None:
    stored = catalog.setting(METADATA_FILE)
    return Path(stored) if stored else None


def _stamp(path: Path) -> str:
    """What tells a changed file: its size and modification time."""
    st = path.stat()
    return f"{st.st_size}:{st.st_mtime_ns}"
