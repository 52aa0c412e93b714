"""What `convis dupes` prints: each group of near-duplicates, keeper first, then the threshold and the drop list."""

from __future__ import annotations

from retrieval.cli.console import out, printable


def print_groups(result) -> None:
    """Each group, keeper first, with similarities and times; then the threshold and the drop list."""
    said = "chosen by --auto from the index's background" if result.chosen == "auto" else "given"
    out.print(f"{len(result.groups)} group(s) of near-duplicate {result.level}s by {result.signal}, "
              f"threshold {result.threshold:.4f} ({said})", highlight=False, markup=False)
    for number, group in enumerate(result.groups, 1):
        out.print(f"group {number}: {len(group.members)} {result.level}s, similarity >= "
                  f"{group.similarity:.4f}", highlight=False, markup=False)
        for m in sorted(group.members, key=lambda m: not m.keep):
            role = ("keep" if m.keep else "drop") if result.proposes_drop else "alike"
            out.print(f"  {role}  {printable(m.path)}  {m.start:.1f}-{m.end:.1f} s  similarity {m.similarity:.4f} "
                      "(to its nearest member)", highlight=False, markup=False)
    if result.drop:
        out.print(f"drop list ({len(result.drop)}): save with --json, then `convis remove --from-file`",
                  highlight=False, markup=False)
    elif result.withheld:
        out.print(result.withheld, highlight=False, markup=False)
