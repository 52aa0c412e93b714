"""Another process holding a DuckDB file, as a running `convis index` (or a second server) does."""

import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def writer_holding(path: Path):
    """Another process holding ``path`` open for writing (DuckDB locks are per process)."""
    holder = subprocess.Popen([sys.executable, "-c", "import duckdb, sys, time; db = duckdb.connect(sys.argv[1]); "
                               "print('locked', flush=True); time.sleep(60)", str(path)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        yield
    finally:
        holder.kill()
        holder.wait()
