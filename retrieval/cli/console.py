"""What every command of both CLIs (`convis`, `convis bench`) shares with the user: plain help, the consoles,
text a user or a file supplied made safe to print, the one way a command fails, notes on stderr, progress bars."""

from __future__ import annotations

import re
from contextlib import contextmanager
from typing import Callable, Iterator, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from typer.core import TyperCommand

from retrieval.api import ConvisError

# emoji=False: model ids such as "package:..." must print as written
out = Console(emoji=False)
err = Console(stderr=True, emoji=False)


class PlainUsage(TyperCommand):
    """Help as people write it: ``convis index FOLDER``, ``--gt GT``; typer would add braces round arguments and
    each parameter's Python type (``<path>``, ``<list[str]>``)."""

    def collect_usage_pieces(self, ctx) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if param.param_type_name != "argument":
                continue
            name = (param.metavar or param.name.upper()) + ("..." if param.nargs != 1 else "")
            pieces.append(name if param.required else f"[{name}]")
        return pieces

    def format_options(self, ctx, formatter) -> None:
        records = [(param, _brief(param.get_help_record(ctx))) for param in self.get_params(ctx)]
        args = [((param.metavar or param.name.upper()) + ("..." if param.nargs != 1 else ""), record[1])
                for param, record in records if record and param.param_type_name == "argument"]
        opts = [(_TYPE_TAG.sub(" " + (param.name or "").upper(), record[0]), record[1])
                for param, record in records if record and param.param_type_name == "option"]
        for title, rows in (("Arguments", args), ("Options", opts)):
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)


    def format_epilog(self, ctx, formatter) -> None:
        """Examples as written (one a line, never rewrapped), then the rest of the epilog."""
        if self.epilog:
            formatter.write_paragraph()
            for line in self.epilog.splitlines():
                formatter.write(f"{line}\n")


_TYPE_TAG = re.compile(r" <[^>]+>")  # what typer shows for an option without a metavar
_SENTENCE_END = re.compile(r"[.;:](?=\s|$)")
_LABEL_WORDS = 4  # a colon ends a sentence only after this many words: "Reranker scoring:" labels what follows
_DEFAULT = re.compile(r"\s*(\[(?:default|env var|required)[^\]]*\])\s*$")


def _brief(record: tuple[str, str] | None) -> tuple[str, str] | None:
    """An option's help as ``brief`` gives it, keeping its ``[default: ...]``: the list reads at a glance; the
    documentation pages hold the rest."""
    if record is None:
        return None
    name, text = record
    default = _DEFAULT.search(text)
    short = brief(text[:default.start()] if default else text)
    return name, f"{short} {default.group(1)}" if default else short


def brief(text: str) -> str:
    """What an option's help says in a list: its first sentence, and the sentence that states its default."""
    first = _first_sentence(text)  # text up to its sentence's end, that end written as "."
    rest = text[len(first):]
    at = rest.find("Default")
    return f"{first} {_first_sentence(rest[at:])}" if at >= 0 else first


def _first_sentence(text: str) -> str:
    """Up to the first ``.``, ``;`` or ``:`` that ends a sentence outside parentheses (not ``e.g.``; a colon only
    after a clause, not after a label such as "vector:")."""
    for end in _SENTENCE_END.finditer(text):
        head = text[:end.start()]
        if end.group() == ":" and len(head.split()) < _LABEL_WORDS:
            continue
        if head.count("(") == head.count(")") and not head.endswith(("e.g", "i.e")):
            return head + "."
    return text


# Characters a terminal acts on instead of showing: C0 and C1 controls (ESC starts a sequence that can clear the
# screen or retitle the window, CR overwrites the line) and the line and bidirectional overrides that reorder it.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def printable(text: object) -> str:
    """``text`` (a file name, a reason, a model's answer: anything a user or a file supplied) as a terminal shows
    it: each control character written as its Python escape (``\\x1b``, ``\\r``), so a hostile name cannot steer
    the terminal and an odd one is seen for what it is."""
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), str(text))


def shown(text: object) -> str:
    """Text a user or a file supplied, ready for a rich print: control characters escaped (``printable``), and
    brackets too, so "[bold]a.mp4" is a name, not markup."""
    return escape(printable(text))


def fail(message: str, code: int = 2) -> NoReturn:
    """How every command of both CLIs fails: ``error: message`` as one line on stderr (control characters
    escaped, so a file's name cannot break it or steer the terminal), then exit ``code``."""
    err.print(f"[bold red]error:[/] {shown(message)}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def fail_with(exc: ConvisError) -> NoReturn:
    """A ConvisError as the line its kind words for a reader (``public``), with its kind's exit code (2, the
    user's to fix, unless the kind says otherwise)."""
    fail(exc.public(), exc.exit_code)


def note(message: str) -> None:
    # stderr, so --json output on stdout stays parseable; a note of several lines keeps them
    typer.echo("\n".join(map(printable, message.split("\n"))), err=True)


@contextmanager
def counting(what: str, total: int, quiet: bool) -> Iterator[Callable[[int, int], None]]:
    """A progress bar on stderr for work done a piece at a time (hidden when ``quiet`` or not a terminal);
    ``progress(done, total)`` advances it."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    with Progress(TextColumn(what), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console,
                  transient=True, disable=quiet or not console.is_terminal) as bar:
        task = bar.add_task(what, total=total)
        yield lambda done, _total: bar.update(task, completed=done)
