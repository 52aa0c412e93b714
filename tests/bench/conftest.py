"""Fixtures shared by the benchmark tests."""

from pathlib import Path

import pytest

from tests.bench.few_clips import few_clip_dataset
from tests.paths import CONVIS_BENCH


@pytest.fixture(scope="session")
def convis_bench() -> Path:
    """The ConViS-Bench release files kept for tests: ground truth, computed similarities."""
    return CONVIS_BENCH


@pytest.fixture(scope="session")
def convis_bench_gt(convis_bench) -> Path:
    """Its human ratings, gt_conditioned_similarities.json."""
    return convis_bench / "gt_conditioned_similarities.json"


@pytest.fixture(scope="module")
def few_clips(tmp_path_factory, example_videos) -> Path:
    """A module's ConViS-Bench-shaped folder of three example clips (tests/bench/few_clips.py)."""
    return few_clip_dataset(tmp_path_factory.mktemp("convis-bench"), example_videos)
