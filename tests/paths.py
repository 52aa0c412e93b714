"""Where the test data and the repository are, whichever folder a test module sits in."""

from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
DATA = TESTS / "data"
CONVIS_BENCH = DATA / "convis-bench"  # the paper's released annotations and score files (a sample)
EXAMPLES = ROOT / "examples" / "videos"
