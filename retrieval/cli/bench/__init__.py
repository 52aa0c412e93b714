"""`convis bench`: the benchmark commands, one module per sub-app, gathered in ``app`` (the `bench` typer app).

``app`` is built when first asked for: SciPy and the perf harness load only for `convis bench ...`, and importing
one command's module (``retrieval.cli.bench.covr``) costs no more than that module's own imports."""

from __future__ import annotations

from functools import cache

import typer


@cache
def _app() -> typer.Typer:
    from retrieval.cli.bench import captions, covr, fusion, paper, perf, text_search, viddiff

    app = typer.Typer(
        name="bench",
        help="Reproduce the ConViS-Bench paper's metrics from score files in its released formats.",
        no_args_is_help=True,
        add_completion=False,
    )
    for module in (fusion, perf, captions, text_search, paper, covr, viddiff):  # typer lists commands, then groups
        module.register(app)
    return app


def __getattr__(name: str):
    if name == "app":
        return _app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
