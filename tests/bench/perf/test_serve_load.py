"""`convis bench perf --sections serve`: the server's routes alone and under client threads, reported and judged.

No timing is asserted (the machine is shared); only that the rows are made from real answers, read back and
checked.
"""

from bench.perf.markdown import markdown
from bench.perf.report import PerfReport, checks
from bench.perf.sections.serve import ServeLoadResult
from bench.perf.serve_load import ROUTES, Route, alone_row, load, load_rows, percentile, time_alone
from tests.retrieval.serve.test_browser import serving

MACHINE = {"date": "", "cpus": 2, "memory_gb": 1, "python": "", "torch": "", "torch_threads": 1, "faiss": "",
           "faiss_threads": 1, "blas_threshold": 20, "load_before": ""}


def test_percentiles_are_nearest_rank():
    values = [float(v) for v in range(1, 101)]
    assert (percentile(values, 50), percentile(values, 99), percentile(values, 100)) == (50.0, 99.0, 100.0)
    assert percentile([3.0], 99) == 3.0


def test_each_route_is_timed_alone_and_under_client_threads(example_index):
    routes = ROUTES[1:] + (Route("missing", "GET", "/media/missing.mp4"),)  # a 404 counts as an error
    with serving(example_index) as url:
        alone = [alone_row(route, time_alone(url, route, 2)) for route in ROUTES[2:]]
        answers, wall = load(url, routes, threads=4, requests=3)
    assert [r.route for r in alone] == ["/videos", "/health"] and all(r.requests == 2 for r in alone)
    assert sum(len(got) for got in answers.values()) == 4 * 3 and wall > 0
    rows = load_rows(answers, wall, "while nothing wrote")
    by_route = {r.route: r for r in rows}
    assert by_route["missing"].errors == by_route["missing"].requests > 0
    assert by_route["/videos"].errors == by_route["/health"].errors == 0 and by_route["/videos"].busy == 0
    assert all(0 < r.p50_ms <= r.p99_ms <= r.max_ms for r in rows) and all(r.in_flight > 0 for r in rows)
    report = PerfReport(MACHINE, {}, serve=alone + rows)
    assert PerfReport.from_dict(report.as_dict()).serve == alone + rows
    assert "## The server under load" in markdown(report)


def test_the_targets_are_judged_from_the_rows():
    def judged(query_p50: float, health_p99: float) -> dict[str, bool]:
        rows = [ServeLoadResult("/query", "alone", 5, 100, 120, 120, 0, 0, 0.0, 2),
                ServeLoadResult("/query", "load", 50, query_p50, 900, 900, 0, 0, 7.0, 2),
                ServeLoadResult("/health", "load", 50, 10, health_p99, health_p99, 0, 0, 0.1, 2)]
        return {target: met for target, _, met in checks(PerfReport(MACHINE, {}, serve=rows))}

    health, query = "/health p99 under load < 50 ms", \
        "/query p50 under load <= 1.5x its p50 alone x queries in flight per core"
    assert judged(525, 49) == {health: True, query: True}  # 1.5 x 100 ms x (7 in flight / 2 cores) = 525 ms
    assert judged(526, 50) == {health: False, query: False}
