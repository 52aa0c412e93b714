"""The ``convis`` app: its commands, usage errors and failures as one line each, ``--version``, ``main``.

Start-up is most of what `convis --help`, `query` (an indexed anchor), `info` and `ls` cost, so the command
modules import only typer, rich and constants when the app is built; each command imports the engine when it
runs, and the engine what it uses (models, decoders, FastAPI, the bench commands' SciPy are imported by the
commands that run them). `convis bench perf --section cli` measures it; tests/retrieval/cli/test_light_imports.py
checks what is imported.
"""

from __future__ import annotations

import sys

import typer
from typer.core import TyperGroup

try:  # typer carries its own copy of click since 0.22
    from typer._click import exceptions as click_errors
except ImportError:
    from click import exceptions as click_errors

from retrieval.api import ConvisError
from retrieval.cli import admin, compare, dupes, export, index, pages, query, tag
from retrieval.cli.console import PlainUsage, err, fail, fail_with, out, shown
from retrieval.cli.present.common import damaged, refused

BENCH_HELP = "Reproduce ConViS-Bench metrics and measure convis on them."

EXIT_CODES = ("exit codes: 0 done, 1 nothing usable came out of the run, a model's weights are missing, or the "
              "system refused (disk full, permission), 2 usage or input error, 130 interrupted")


class OneLineErrors(TyperGroup):
    """Usage errors (unknown option, missing value, bad choice) as one line on stderr, exit code 2; a command's
    failure as one line with its exit code (``failed``).

    The ``bench`` sub-app is loaded when a command line names it: until then it is a placeholder carrying its
    one-line help, which is all ``convis --help`` shows of it."""

    _listing = False  # True while the help lists the commands: the placeholder's help is enough

    def get_command(self, ctx, cmd_name: str):
        if cmd_name == "bench" and not self._listing and getattr(self.commands.get(cmd_name), "placeholder", False):
            self.commands[cmd_name] = _bench_group()
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx, formatter) -> None:
        self._listing = True
        try:
            super().format_commands(ctx, formatter)
        finally:
            self._listing = False

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            fail("interrupted; what was committed stays indexed, run the same command to resume", 130)
        except Exception as exc:
            failed(exc)
            raise

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode: bool = True, **extra):
        try:
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click_errors.NoArgsIsHelpError as exc:
            out.print(exc.format_message(), highlight=False, markup=False)  # a bare `convis` prints its help
            code = 0
        except click_errors.ClickException as exc:
            hint = f" (see {exc.ctx.command_path} --help)" if getattr(exc, "ctx", None) else ""
            err.print(f"[bold red]error:[/] {shown(exc.format_message())}{shown(hint)}", highlight=False,
                      soft_wrap=True)
            code = exc.exit_code
        except typer.Abort:
            code = 130
        if not standalone_mode:
            return code
        sys.exit(code if isinstance(code, int) else 0)


def failed(exc: Exception) -> None:
    """The one handler of a command's failure: a ConvisError is its one line and its exit code; a missing file
    or folder is the user's to fix (2); a damaged catalog, or the system refusing (a full disk, a permission), is
    1. Anything else returns, and the caller re-raises it: a traceback is a bug's report."""
    if isinstance(exc, typer.Exit):  # --help and --version end this way: nothing failed, nothing to load
        return
    import duckdb

    from retrieval.api import is_damage

    if isinstance(exc, ConvisError):
        fail_with(exc)
    if isinstance(exc, (NotADirectoryError, FileNotFoundError)):
        fail(str(exc).strip() or type(exc).__name__)
    if isinstance(exc, duckdb.Error) and is_damage(exc):
        damaged(exc)
    if isinstance(exc, OSError):  # the system refused: a full disk, a permission, a file where a folder should be
        refused(exc)


app = typer.Typer(cls=OneLineErrors, add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                  context_settings={"help_option_names": ["-h", "--help"]},
                  help="Concept-conditioned video retrieval: find clips like this one, in terms of a concept.",
                  epilog=EXIT_CODES)
# what `--help` ends with: a few commands to copy (options say one sentence each; docs/ holds the rest)
EXAMPLES = {
    "index": ("Examples:\n"
              "  convis index videos/                              # EfficientNet-Lite0, one unit a file\n"
              "  convis index videos/ --captions captions/         # + captions and <clip>.<concept>.txt\n"
              "  convis index videos/ -i dinov2 -i text --segment 10s --captioner qwen2.5-vl\n"
              "  convis index videos/ -i fingerprint                # for `convis dupes`\n"
              "Guides: docs/indexing.md"),
    "query": ("Examples:\n"
              "  convis query --anchor box.mp4 -c location\n"
              "  convis query --anchor box.mp4 -c main-action=0.6 -c main-objects=0.4 -k 5\n"
              "  convis query --anchor box.mp4 --change \"a cup instead of a box\"\n"
              "  convis query --anchor long.mp4 --start 1:00 --end 1:20 -c \"camera angle\" --free-text\n"
              "  convis query --anchor box.mp4 -c location --where \"width >= 1280\" --json\n"
              "Concepts: location, main-action, main-subjects, main-objects, order-of-actions, or free text.\n"
              "Guides: docs/querying.md"),
}
for command in (index.index, index.describe, query.query, query.search, compare.compare, compare.diff, pages.serve,
                admin.info, admin.repair, admin.remove, tag.tag, export.export, dupes.dupes):
    app.command(cls=PlainUsage, epilog=EXAMPLES.get(command.__name__))(command)
app.command("ls", cls=PlainUsage)(admin.list_files)
app.command(cls=PlainUsage)(admin.models)


class _BenchPlaceholder(TyperGroup):
    """Stands for ``bench`` in the command list; OneLineErrors.get_command swaps in the real group."""

    placeholder = True


app.add_typer(typer.Typer(), name="bench", help=BENCH_HELP, cls=_BenchPlaceholder)


def _bench_group():
    """The ``bench`` sub-app as a click group, built as ``app.add_typer(bench_app, ...)`` would build it."""
    from retrieval.cli.bench import app as bench_app  # SciPy, the perf harness: only `convis bench ...` pays for them

    holder = typer.Typer(rich_markup_mode=app.rich_markup_mode, add_completion=False)
    holder.add_typer(bench_app, name="bench", help=BENCH_HELP)
    return typer.main.get_group(holder).commands["bench"]


def _print_version(value: bool) -> None:
    if value:
        out.print(f"convis {_version()}", highlight=False)
        raise typer.Exit()


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("convis")
    except metadata.PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown (not installed)"


@app.callback()
def _options(version: bool = typer.Option(False, "--version", callback=_print_version, is_eager=True,
                                          help="Print the version and exit.")) -> None:
    """Concept-conditioned video retrieval: find clips like this one, in terms of a concept."""


def main() -> None:
    app()
