"""What `convis index` and `convis describe` print: notes and progress bars while they run, then the report."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

from rich.table import Table

from retrieval.cli.console import err, out, printable, shown
from retrieval.cli.layout import Block, print_table
from retrieval.cli.present.common import note, print_json


class IndexProgress:
    """The run's notes, printed as they come, then a bar that appears once the run knows its files, and one
    for the captioner's pass when there is one."""

    def __init__(self, bar, describing=None):  # rich.progress.Progress bars
        self.bar, self.task, self.noted = bar, None, []
        self.describing, self.described = describing, None
        self.calls, self.seconds = 0, 0.0

    def __call__(self, event: str, data: dict) -> None:
        if event == "note":
            self.noted.append(data["text"])
            note(data["text"])
        elif event == "start" and data["total"]:  # nothing to do: no bar
            self.bar.start()
            self.task = self.bar.add_task("index", total=data["total"], frames=0, rate="", current="")
        elif event == "describe" and self.describing is not None:
            self.stop()  # one live display at a time: the files are done
            self.describing.start()
            self.described = self.describing.add_task("describe", total=data["total"], rate="")
        elif event == "described" and self.described is not None:
            self.calls, self.seconds = self.calls + data["calls"], self.seconds + data["seconds"]
            rate = f"{self.calls / self.seconds:.2f} captions/s" if self.seconds > 0 else ""
            self.describing.update(self.described, advance=1, rate=rate)
        elif event == "file" and self.task is not None:
            self._advance(data)

    def stop(self) -> None:
        if self.task is not None:  # stopping a bar never shown would print an empty line
            self.bar.stop()
            self.task = None
        if self.described is not None:
            self.describing.stop()
            self.described = None

    def _advance(self, data: dict) -> None:
        task = self.bar.tasks[self.task]
        frames = task.fields["frames"] + data["frames"]
        rate = f"{frames / task.elapsed:.1f} frames/s" if task.elapsed else ""
        # file names are the user's: escaped, or rich would read "[bold]a.mp4" as markup
        self.bar.update(self.task, advance=1, frames=frames, rate=rate, current=shown(Path(data["path"]).name[:40]))


@contextmanager
def index_progress(disable: bool):
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = [TextColumn("[bold]indexing"), BarColumn(), MofNCompleteColumn(), TextColumn("files"),
               TextColumn("{task.fields[frames]} frames"), TextColumn("{task.fields[rate]}"), TimeElapsedColumn(),
               TextColumn("{task.fields[current]}")]
    describing = [TextColumn("[bold]describing"), BarColumn(), MofNCompleteColumn(), TextColumn("units"),
                  TextColumn("{task.fields[rate]}"), TimeElapsedColumn()]
    events = IndexProgress(Progress(*columns, console=err, disable=disable, transient=False),
                           Progress(*describing, console=err, disable=disable, transient=False))
    try:
        yield events
    finally:
        events.stop()


def index_summary(report, notices, progress: IndexProgress, folder: Path, as_json: bool) -> None:
    """After an index run: the notes not printed while it ran, the report, and a warning for a folder without
    videos."""
    for notice in notices:
        if notice not in progress.noted:  # the rest were printed before the progress bar
            note(notice)
    if as_json:
        print_json(report.as_dict())
    elif report.found or report.failed:
        print_index_report(report)
    if not report.found:
        err.print(f"[yellow]warning:[/] no video files in {shown(str(folder))} (.mp4, .mov, .mkv, .webm, .avi "
                  "and other video extensions); nothing was indexed or recorded", highlight=False, soft_wrap=True)


def describe_summary(report, as_json: bool) -> None:
    if as_json:
        print_json(report.as_dict())
        return
    c = report.counts
    rate = f", {c.per_second:.2f} captions/s" if c.seconds else ""
    out.print(f"described {c.described} of {report.units} unit(s) lacking {printable(', '.join(report.concepts))}: "
              f"{c.calls} model calls{rate}; {report.description_vectors} description(s) embedded; "
              f"{report.seconds:.1f} s", highlight=False, markup=False)


def print_index_report(report) -> None:
    failed = f"failed {len(report.failed)}"
    if report.excluded:
        failed += (f"; {report.excluded} removed file{'s' if report.excluded != 1 else ''} skipped (convis ls "
                   "--removed lists them; convis remove --undo FILE puts one back)")
    if report.failed_earlier:
        failed += f" ({report.failed_earlier} unchanged since an earlier run, not retried: --retry-failed)"
    out.print(f"indexed {report.indexed} file(s), {report.units} unit(s), {report.frames} frames in "
              f"{report.seconds:.1f} s; unchanged {report.unchanged}; forgotten {report.forgotten}; "
              + (f"unavailable {report.unavailable} (kept, not searched); " if report.unavailable else "") + failed
              + (f"; captions {report.captioned}" if report.captioned else "")
              + (f"; described {report.described} unit(s) ({report.describe_calls} model calls)"
                 if report.described else ""), highlight=False)
    out.print(f"indexers: {printable(', '.join(report.indexers))}", highlight=False, markup=False)
    if report.failed:
        table = Table(title="skipped files", title_justify="left")
        table.add_column("file", no_wrap=True)
        table.add_column("reason", overflow="fold")
        for path, reason in report.failed:
            table.add_row(shown(path), shown(reason))
        print_table(out, table, lambda: (Block(shown(path), [shown(reason)]) for path, reason in report.failed))
