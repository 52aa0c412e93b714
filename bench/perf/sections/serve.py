"""The server under load: `convis serve` answering each route alone, then client threads while index runs write."""

from __future__ import annotations

from dataclasses import dataclass

from bench.perf.section import Check, Section, one_table
from bench.perf.targets import TARGET_HEALTH_P99_MS, TARGET_QUERY_SHARE


@dataclass(frozen=True)
class ServeLoadResult:
    route: str  # e.g. "/query"
    phase: str  # "alone" (one request at a time) or "load" (the client threads at once, index runs writing)
    requests: int
    p50_ms: float
    p99_ms: float
    max_ms: float
    errors: int  # answers other than 200 and 503, and requests that got no answer
    busy: int  # 503 answers: the server at capacity (or the index busy), with Retry-After
    in_flight: float = 0.0  # under load: the route's requests outstanding on average
    cores: int = 0  # the cores the measuring process could run on
    detail: str = ""


HEAD = ["route", "asked", "requests", "p50 ms", "p99 ms", "max ms", "errors", "503s", "in flight", "detail"]


def _row(r: ServeLoadResult) -> list:
    return [f"`{r.route}`", r.phase, r.requests, f"{r.p50_ms:.1f}", f"{r.p99_ms:.1f}", f"{r.max_ms:.1f}", r.errors,
            r.busy, f"{r.in_flight:.1f}" if r.phase == "load" else "", r.detail]


def serve_checks(rows: list[ServeLoadResult]) -> list[Check]:
    """/health's p99 under load, and a query's p50 under load against its share of the cores: its time alone
    times the queries in flight per core (at least one)."""
    found = []
    health = _serve_row(rows, "/health", "load")
    if health is not None:
        found.append((f"/health p99 under load < {TARGET_HEALTH_P99_MS:g} ms", f"{health.p99_ms:.1f} ms",
                      health.p99_ms < TARGET_HEALTH_P99_MS))
    query, alone = _serve_row(rows, "/query", "load"), _serve_row(rows, "/query", "alone")
    if query is not None and alone is not None:
        share = max(1.0, query.in_flight / max(1, query.cores))
        bound = TARGET_QUERY_SHARE * alone.p50_ms * share
        found.append((f"/query p50 under load <= {TARGET_QUERY_SHARE:g}x its p50 alone x queries in flight per core",
                      f"{query.p50_ms:.0f} ms; bound {TARGET_QUERY_SHARE:g} x {alone.p50_ms:.0f} ms x "
                      f"{share:.2f} ({query.in_flight:.1f} in flight on {query.cores} cores) = {bound:.0f} ms",
                      query.p50_ms <= bound))
    return found


def _serve_row(rows: list[ServeLoadResult], route: str, phase: str) -> ServeLoadResult | None:
    return next((r for r in rows if r.route == route and r.phase == phase), None)


SECTION = Section(
    "serve", "`convis serve` over a copy of the examples' index: each route alone, then 20 client threads asking "
             "/query, /search, /videos and /health in turn (--serve-requests each) while index runs add files: "
             "p50/p99/max, errors, 503s",
    ServeLoadResult, "bench.perf.serve_load:run_serve_load", one_table("The server under load", HEAD, _row),
    checks=serve_checks, needs_clips=False)
