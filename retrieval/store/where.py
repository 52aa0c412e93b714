"""``--where FIELD OP VALUE``: a filter on what the catalog knows of each file and unit, compiled to SQL whose
values are all parameters.

The SQL text is made only of this module's own fragments (a built-in field's column, or the user-field table
with the field name as a parameter); whatever a user typed after the operator reaches DuckDB as a bound value, so
``name = 'x'; DROP TABLE files; --`` looks for a file of that name and nothing else.  Conditions are ANDed.

Each field has a kind, and the operators are checked against it before any SQL is made: a built-in number field
takes ``= != < <= > >= in``; a text field all of ``OPERATORS``.  A user field is a number where every stored
value reads as one, text where none does, and mixed otherwise: there a value given that reads as a number is
compared with the numbers, any other with the text (``filters.notices`` says so).
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
# a built-in number field compares as a number: glob and has read text, which it has none of
NUMBER_OPERATORS = ("=", "!=", "<", "<=", ">", ">=", "in")
# a user field that holds numbers and other text: numbers compare as numbers where the value given reads as one
MIXED = "mixed"
MAX_CONDITIONS = 32  # each is a subquery; more is a typo or an attack, not a search
MAX_VALUE_CHARS = 1000
MAX_CONDITION_CHARS = MAX_VALUE_CHARS + 100  # one filter's text: its value, and room for its field and operator

_SYMBOLS = ("!=", "<=", ">=", "==", "=", "<", ">")  # the longest first: "<=" is not "<" then "="
_WORDS = ("in", "glob", "has")  # between spaces
_SURROGATE = re.compile("[\ud800-\udfff]")


class FilterError(ConvisError, ValueError):
    """A ``--where`` the catalog cannot answer: not ``FIELD OP VALUE``, an unknown field, an operator its field's
    kind does not take, or a value of the wrong kind for its field."""

    exit_code, http_status = 2, 400


@dataclass(frozen=True)
class Condition:
    field: str
    op: str
    value: str

    def __str__(self) -> str:
        return f"{self.field} {self.op} {self.value}"


def parse(text: str) -> Condition:
    """``"duration > 10"`` -> Condition("duration", ">", "10"); a value in matching quotes loses them.  The length
    is checked before anything is read, and the reading is one pass (``Reader``)."""
    text = str(text)
    if len(text) > MAX_CONDITION_CHARS:
        raise FilterError(f"--where is {len(text):,} characters; at most {MAX_CONDITION_CHARS:,}")
    read = split(Reader(text))
    if read is None:
        raise FilterError(f"--where {text!r} is not FIELD OP VALUE (operators: {' '.join(OPERATORS)}), "
                          "e.g. \"duration > 10\"")
    field, op, value = read
    value = _unquote(value)
    if not value:
        raise FilterError(f"--where {text!r} gives no value after {op}")
    if len(value) > MAX_VALUE_CHARS:
        raise FilterError(f"--where {field} {op}: the value is {len(value)} characters; at most {MAX_VALUE_CHARS}")
    if not storable(value):
        raise FilterError(f"--where {field} {op}: the value is not valid Unicode (a lone surrogate)")
    condition = Condition(field, op, value)
    check_operator(condition)
    return condition


class Reader:
    """A condition's text read left to right, each character looked at once or twice: the work grows with the
    length and no faster (a regular expression with two runs of spaces around a lazy value took quadratic time)."""

    def __init__(self, text: str):
        self.text, self.at, self.looked = text, 0, 0  # looked: characters examined, for the tests

    def run(self, takes) -> str:
        """The characters from here that ``takes`` accepts, read past."""
        start, text = self.at, self.text
        while self.at < len(text) and takes(text[self.at]):
            self.at += 1
        self.looked += self.at - start + 1
        return text[start:self.at]

    def symbol(self) -> str | None:
        """The symbol operator here, read past; None when there is none."""
        self.looked += 2
        found = next((s for s in _SYMBOLS if self.text.startswith(s, self.at)), None)
        self.at += len(found or "")
        return found

    def rest(self) -> str:
        self.looked += len(self.text) - self.at
        rest, self.at = self.text[self.at:], len(self.text)
        return rest.strip()


def split(reader: Reader) -> tuple[str, str, str] | None:
    """(field, operator, value) of FIELD OP VALUE, or None: a field is a letter or ``_`` then letters, digits,
    ``_ . -``; an operator a symbol (spaces around it or not) or a word between spaces."""
    reader.run(str.isspace)
    text = reader.text
    first = text[reader.at:reader.at + 1]
    if not (first == "_" or (first.isascii() and first.isalpha())):
        return None
    field = reader.run(_in_name)
    spaced = bool(reader.run(str.isspace))
    op = reader.symbol()
    if op is None and spaced:
        word = reader.run(str.isalpha).lower()
        after = reader.at < len(text) and text[reader.at].isspace()
        op = word if word in _WORDS and (after or reader.at == len(text)) else None
    if op is None:
        return None
    return field, "=" if op == "==" else op, reader.rest()


def _in_name(c: str) -> bool:
    return c.isalnum() or c in "_.-"


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def storable(text: str) -> bool:
    """Whether ``text`` can be written as UTF-8: it holds no lone surrogate (as JSON's ``\\ud800`` or a command
    line's undecodable bytes make)."""
    return _SURROGATE.search(text) is None


def check_operator(c: Condition) -> None:
    """A built-in number field takes only the operators that compare numbers: checked before any SQL is made."""
    builtin = BUILTIN.get(c.field.lower())
    if builtin is not None and builtin[1] == NUMBER and c.op not in NUMBER_OPERATORS:
        raise FilterError(f"--where {c}: {c.field.lower()} is a number field; it takes {' '.join(NUMBER_OPERATORS)}"
                          f" (glob and has read text)")


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
    check_operator(c)  # a Condition made without parse() is held to the same rule
    key = c.field.lower()
    if key in BUILTIN:
        column, kind = BUILTIN[key]
        if key == "mtime":
            return _comparison(column, c, NUMBER, _timestamp)
        return _comparison(column, c, kind)
    if c.field not in user_kinds:
        raise FilterError(f"--where: unknown field {c.field!r}; fields here: {', '.join(known_fields(user_kinds))}")
    kind = user_kinds[c.field]
    if kind == MIXED and c.op not in ("glob", "has"):
        sql, values = _mixed(c)
    else:
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
    values = _values(c)
    if kind == NUMBER:
        values = [(as_number or _number)(c, v) for v in values]
    if c.op == "in":
        return f"{column} IN ({_marks(values)})", values
    sql_op = "<>" if c.op == "!=" else c.op
    return f"{column} {sql_op} ?", values


def _mixed(c: Condition) -> tuple[str, list]:
    """A field of numbers and other text: each value given that reads as a number is compared with the stored
    numbers, any other with the stored text; a value stored as text matches no numeric comparison but ``!=``."""
    values = _values(c)
    numbers = [n for n in map(as_number, values) if n is not None]
    texts = [v for v in values if as_number(v) is None]
    if c.op in ORDERED:
        return (f"m.number {c.op} ?", numbers) if numbers else (f"m.value {c.op} ?", texts)
    parts = [f"coalesce({column} IN ({_marks(given)}), false)"
             for column, given in (("m.number", numbers), ("m.value", texts)) if given]
    either = "(" + " OR ".join(parts) + ")"
    return ("NOT " + either if c.op == "!=" else either), [*numbers, *texts]


def _values(c: Condition) -> list[str]:
    return [v.strip() for v in c.value.split(",")] if c.op == "in" else [c.value]


def _marks(values: list) -> str:
    return ", ".join("?" for _ in values)


def compares_numbers(c: Condition) -> bool:
    """Whether a condition on a user field compares numbers: an operator other than glob and has, with a value
    (or, for ``in``, one of them) that reads as a number."""
    return c.op not in ("glob", "has") and any(as_number(v) is not None for v in _values(c))


def as_number(value: str) -> float | None:
    """A finite number when ``value`` reads as one (nan and inf are text), else None."""
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def _number(c: Condition, value: str) -> float:
    number = as_number(value)
    if number is None:
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
