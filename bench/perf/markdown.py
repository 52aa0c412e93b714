"""The report as a markdown page: who produced it, each section's table(s), the targets, and how it was measured."""

from __future__ import annotations

from bench.perf.report import PerfReport, checks
from bench.perf.section import table
from bench.perf.sections import SECTIONS


def markdown(report: PerfReport) -> str:
    parts = ["# Performance\n"] + [_run_line(run) for run in report.runs or [report.machine]]
    for name in report.measured():
        parts += SECTIONS[name].markdown(report.rows(name))
    found = checks(report)
    if found:
        parts += ["## Targets\n", table(["target", "measured", "met"],
                                        [[t, v, "yes" if ok else "**no**"] for t, v, ok in found])]
    parts += ["## How it was measured\n", "\n".join(f"- {n}" for n in report.notes) + "\n"]
    return "\n".join(parts)


def _run_line(m: dict) -> str:
    parts = f" ({', '.join(m['parts'])})" if m.get("parts") else ""
    return (f"Produced by `{m.get('command', 'convis bench perf')}`{parts} on {m['date']}: {m['cpus']} CPUs, "
            f"{m['memory_gb']} GiB RAM, Python {m['python']}, torch {m['torch']} ({m['torch_threads']} threads), "
            f"FAISS {m['faiss']} ({m['faiss_threads']} threads, distance_compute_blas_threshold "
            f"{m['blas_threshold']}); load average {m['load_before']} before, {m.get('load_after', '?')} after.\n")
