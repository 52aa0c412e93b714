"""Tables that never cut what they show: the first layout that fits the terminal's width, else one block a row.

A table is drawn only when every column it must keep whole (numbers, file names, model ids: ``no_wrap``
columns) fits at its full width and every other column at its longest word; otherwise rich would shrink
columns until scores print as ``0.…`` and names break mid-word. Callers try their layouts widest first
(secondary headers, then shorter ones); when none fits, each row is printed as a block of lines, written
without inserted line breaks, so a name is one line of the output however narrow the terminal.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable

from rich.console import Console
from rich.measure import Measurement
from rich.table import Table

UNLIMITED = 100_000  # a width no content reaches: what a column needs, measured unconstrained


def needed_width(console: Console, table: Table) -> int:
    """Columns drawn with nothing cut: each ``no_wrap`` column at its widest cell, any other at its longest word,
    plus the borders and cell padding."""
    options = console.options.update_width(UNLIMITED)
    total = 0
    for column in table.columns:
        cells = [column.header, *column.cells] if table.show_header else list(column.cells)
        sizes = [Measurement.get(console, options, cell) for cell in cells]
        total += max((s.maximum if column.no_wrap else s.minimum for s in sizes), default=1)
        total += table.padding[1] + table.padding[3]
    edges = 2 if table.box is not None and table.show_edge else 0
    return total + edges + (len(table.columns) - 1 if table.box is not None else 0)


def fits(console: Console, table: Table) -> bool:
    """Whether ``table`` can be drawn at the console's width with nothing cut."""
    return needed_width(console, table) <= console.width


@dataclass
class Block:
    """One row of a table as lines: a heading (rich markup) and ``label: value`` lines under it."""

    heading: str
    lines: list[str] = field(default_factory=list)


def labelled(columns: Iterable[str], values: Iterable[str]) -> list[str]:
    """``column: value`` lines for a block, empty values left out."""
    return [f"{col}: {value}" for col, value in zip(columns, values, strict=True) if value]


def print_table(console: Console, table: Table, blocks: Callable[[], Iterable[Block]], note: str | None = None) -> None:
    """``table`` when it fits the console, else its rows as ``blocks()`` under its title (and ``note``, its
    caption)."""
    if fits(console, table):
        console.print(table)
    else:
        print_blocks(console, table.title, blocks(), note)


def print_blocks(console: Console, title: str | None, blocks: Iterable[Block], note: str | None = None) -> None:
    """A table's rows as blocks of lines, each line printed whole (soft wrap: no line break inserted in it)."""
    if title:
        console.print(title, highlight=False)
    for block in blocks:
        console.print(block.heading, highlight=False, soft_wrap=True)
        for line in block.lines:
            console.print(f"    {line}", highlight=False, soft_wrap=True)
    if note:
        console.print(note, highlight=False)
