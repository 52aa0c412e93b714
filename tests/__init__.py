import os

# No test may reach a model hub: an unreachable hub stalls each lookup for tens of seconds. Set here, the
# package's first line, so it holds before any test module or conftest imports a library that reads it.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
