"""The one shape of progress a long operation reports: ``progress(event, data)``.

Index runs send "note" {text} (before "start"), "start" {total}, "file" {path, frames, ok}; a describe pass sends
"describe" {total} when it starts and "described" {calls, seconds} after each unit.  "file" comes after the file
is stored or recorded failed, and an exception the callback raises stops the run there (what is committed stays,
the next run resumes).  A diff ranking sends "candidate" {done, total} after each candidate.
"""

from __future__ import annotations

from typing import Callable

Progress = Callable[[str, dict], None]


def silent(event: str, data: dict) -> None:
    """The progress of a caller that watches none."""
