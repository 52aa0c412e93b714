"""Every command of `convis` and of `convis bench` is shown in the documentation pages, so a new verb comes with
its page."""

import re

import click
import typer

from retrieval.cli.app import app
from tests.paths import ROOT


def commands(group: click.Group) -> list[str]:
    return group.list_commands(click.Context(group))


def docs_text() -> str:
    return "\n".join(page.read_text() for page in sorted((ROOT / "docs").glob("*.md")))


def test_every_command_is_shown_in_the_docs():
    main = typer.main.get_command(app)
    bench = main.get_command(click.Context(main), "bench")
    named = [f"convis {name}" for name in commands(main)] + [f"convis bench {name}" for name in commands(bench)]
    text = docs_text()
    assert len(named) > 20
    assert [n for n in named if not re.search(rf"{re.escape(n)}\b", text)] == []
