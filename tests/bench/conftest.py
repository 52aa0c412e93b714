"""Fixtures shared by the benchmark tests."""

from pathlib import Path

import pytest

from tests.paths import CONVIS_BENCH


@pytest.fixture(scope="session")
def convis_bench() -> Path:
    """The ConViS-Bench release files kept for tests: ground truth, computed similarities."""
    return CONVIS_BENCH


@pytest.fixture(scope="session")
def convis_bench_gt(convis_bench) -> Path:
    """Its human ratings, gt_conditioned_similarities.json."""
    return convis_bench / "gt_conditioned_similarities.json"
