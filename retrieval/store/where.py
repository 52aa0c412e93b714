"""``--where FIELD OP VALUE``: a filter on what the catalog knows of each file and unit, compiled to SQL whose
values are all parameters.

The SQL text is made only of this module's own fragments (a built-in field's column, or the user-field table
with the field name as a parameter); whatever a user typed after the operator reaches DuckDB as a bound value, so
``name = 'x'; DROP TABLE files; --`` looks for a file of that name and nothing else.  Conditions are ANDed.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import datetime, timezone

from retrieval.core.errors import ConvisError

NUMBER, TEXT = "number", "text"
# built-in field -> (SQL over files f and units u, its kind); folder is the path's directory ("" at the root)
BUILTIN = {
    "path": ("f.path", TEXT),
    "folder": ("regexp_replace(f.path, '/?[^/]*$', '')", TEXT),
    "name": ("regexp_extract(f.path, '[^/]*$')", TEXT),
    "duration": ("f.duration", NUMBER),
    "size": ("f.size", NUMBER),
    "mtime": ("f.mtime", NUMBER),
    "width": ("f.width", NUMBER),
    "height": ("f.height", NUMBER),
    "fps": ("f.fps", NUMBER),
    "codec": ("f.codec", TEXT),
    "start": ("u.start_s", NUMBER),
    "end": ("u.end_s", NUMBER),
}
OPERATORS = ("=", "!=", "<", "<=", ">", ">=", "in", "glob", "has")
ORDERED = {"<", "<=", ">", ">="}
MAX_CONDITIONS = 32  # each is a subquery; more is a typo or an attack, not a search
MAX_VALUE_CHARS = 1000

_CONDITION = re.compile(r"\s*([A-Za-z_][\w.-]*)\s*(!=|<=|>=|==|=|<|>|\s(?:in|glob|has)\s)\s*(.*?)\s*",
                        re.IGNORECASE | re.DOTALL)


class FilterError(ConvisError, ValueError):
    """A ``--where`` the catalog cannot answer: not ``FIELD OP VALUE``, an unknown field, or a value of the wrong
    kind for its field."""

    exit_code, http_status = 2, 400


@dataclass(frozen=True)
class Condition:
    field: str
    op: str
    value: str

    def __str__(self) -> str:
        return f"{self.field} {self.op} {self.value}"


def parse(text: str) -> Condition:
    """``"duration > 10"`` -> Condition("duration", ">", "10"); a value in matching quotes loses them."""
    match = _CONDITION.fullmatch(str(text))
    if match is None:
        raise FilterError(f"--where {text!r} is not FIELD OP VALUE (operators: {' '.join(OPERATORS)}), "
                          "e.g. \"duration > 10\"")
    field, op, value = match.group(1), match.group(2).strip().lower(), _unquote(match.group(3))
    op = "=" if op == "==" else op
    if not value:
        raise FilterError(f"--where {text!r} gives no value after {op}")
    if len(value) > MAX_VALUE_CHARS:
        raise FilterError(f"--where {field} {op}: the value is {len(value)} characters; at most {MAX_VALUE_CHARS}")
    return Condition(field, op, value)


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


@dataclass(frozen=True)
class Compiled:
    """A WHERE clause over files ``f`` and units ``u`` and its bound values, in order."""

    sql: str
    params: list


def compile_all(conditions: list[Condition], user_kinds: dict[str, str]) -> Compiled:
    """The conditions ANDed; ``user_kinds``: the user fields the catalog holds and their kinds."""
    if len(conditions) > MAX_CONDITIONS:
        raise FilterError(f"{len(conditions)} --where conditions; at most {MAX_CONDITIONS}")
    parts, params = [], []
    for condition in conditions:
        sql, values = _compile(condition, user_kinds)
        parts.append(sql)
        params.extend(values)
    return Compiled(" AND ".join(parts) or "true", params)


def _compile(c: Condition, user_kinds: dict[str, str]) -> tuple[str, list]:
    key = c.field.lower()
    if key in BUILTIN:
        column, kind = BUILTIN[key]
        if key == "mtime":
            return _comparison(column, c, NUMBER, _timestamp)
        return _comparison(column, c, kind)
    if c.field not in user_kinds:
        raise FilterError(f"--where: unknown field {c.field!r}; fields here: {', '.join(known_fields(user_kinds))}")
    kind = user_kinds[c.field]
    column = "m.number" if kind == NUMBER and c.op not in ("glob", "has") else "m.value"
    sql, values = _comparison(column, c, kind)
    return ("EXISTS (SELECT 1 FROM file_fields m WHERE m.path = f.path AND m.key = ? AND " + sql + ")",
            [c.field, *values])


def _comparison(column: str, c: Condition, kind: str, as_number=None) -> tuple[str, list]:
    """``column OP ?`` with the value(s) bound, checked against the field's kind."""
    if c.op == "glob":
        return f"{column} GLOB ?", [c.value]
    if c.op == "has":  # a comma-separated list (tags) holds the value as one of its items
        return f"list_contains(regexp_split_to_array(trim({column}), '\\s*,\\s*'), ?)", [c.value.strip()]
    values = [v.strip() for v in c.value.split(",")] if c.op == "in" else [c.value]
    if kind == NUMBER:
        values = [(as_number or _number)(c, v) for v in values]
    if c.op == "in":
        return f"{column} IN ({', '.join('?' for _ in values)})", values
    sql_op = "<>" if c.op == "!=" else c.op
    return f"{column} {sql_op} ?", values


def _number(c: Condition, value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not math.isfinite(number):
        raise FilterError(f"--where {c}: {c.field} is a number and {value!r} is not one")
    return number


def _timestamp(c: Condition, value: str) -> float:
    """mtime: seconds since 1970, or an ISO date/time (UTC unless it says otherwise)."""
    try:
        return _number(c, value)
    except FilterError:
        pass
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise FilterError(f"--where {c}: mtime takes seconds since 1970 or a date like 2024-05-01, "
                          f"not {value!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp()


def known_fields(user_kinds: dict[str, str]) -> list[str]:
    """Every field a filter may name: the built-in ones, then the user's."""
    return [*BUILTIN, *sorted(f for f in user_kinds if f.lower() not in BUILTIN)]
