import os

# No test may reach a model hub: an unreachable hub stalls each lookup for tens of seconds. Set here, the
# package's first line, so it holds before any test module or conftest imports a library that reads it.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# pytest-xdist starts its workers with COLUMNS=80 and LINES=24; a rich console made at import would keep 80
# columns for the whole run, and the tests that set COLUMNS for one command would see tables cut as on a narrow
# terminal. A worker sizes its consoles as a single pytest process does.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.pop("COLUMNS", None)
    os.environ.pop("LINES", None)
