# Two commands do everything on a fresh machine:  make demo  |  make test
VENV   ?= .venv
PYTHON ?= python3
PY     := $(VENV)/bin/python
CONVIS := $(VENV)/bin/convis
DEMO   := out/demo-index
# The bundled demo and the tests run offline; a hub lookup would only stall.
export HF_HUB_OFFLINE ?= 1

.PHONY: install ffmpeg browser demo bench-demo docs test test-slow clean

install: ffmpeg $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $@

# box.mp4 by location, then by main objects: the bundled descriptions of each concept give two rankings
demo: install
	$(CONVIS) index examples/videos --captions examples/captions --index-dir $(DEMO)
	$(CONVIS) query --anchor examples/videos/campus_01.mp4 --concept location --index-dir $(DEMO) -k 5
	$(CONVIS) query --anchor examples/videos/box.mp4 --concept location --index-dir $(DEMO) -k 3
	$(CONVIS) query --anchor examples/videos/box.mp4 --concept main-objects --index-dir $(DEMO) -k 3
	$(CONVIS) query --anchor examples/videos/box.mp4 --concept main-action=0.6 --concept main-objects=0.4 \
		--index-dir $(DEMO) -k 5
	$(CONVIS) query --anchor examples/videos/box.mp4 --change "a cup instead of a box" --index-dir $(DEMO) -k 3
	$(CONVIS) search "a hand holding a cup" --index-dir $(DEMO) -k 3
	$(CONVIS) search --concept location "the campus square" --index-dir $(DEMO) -k 5
	@echo "demo index: $(DEMO); commands run in examples/videos find it (examples/videos/.convis-index names it)"

# Every Table 3 family from one `bench run`, on a ConViS-Bench-shaped folder of the example clips, with tiny
# random models (offline): it shows the files and tables, not model quality
bench-demo: install
	$(PY) -m bench.tiny out/bench-demo
	$(CONVIS) bench run --dataset out/bench-demo/dataset --out out/bench-demo/run --protocol paper \
		-i efficientnet-lite0 -i clip:out/bench-demo/models/clip/tiny \
		--captioner out/bench-demo/models/qwen2-vl/tiny --vqascore out/bench-demo/models/llava-onevision/tiny

# The documentation site from docs/ (mkdocs-material; the API reference read from retrieval/api.py), offline, into
# out/site: --strict fails on a broken link, a missing page or a page left out of the nav
docs: install
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict
	@echo "documentation: out/site/index.html"

# torchcodec decodes with the system's FFmpeg shared libraries (Debian's ffmpeg package brings them); OpenCV,
# which the shot detector imports, needs libGL and GLib; the speech tests speak with espeak-ng
ffmpeg:
	(test -x /usr/bin/ffmpeg && test -x /usr/bin/espeak-ng && ldconfig -p | grep -q 'libGL.so.1 ' && ldconfig -p | grep -q libgthread-2.0) || \
		(apt-get update -qq && apt-get install -y -qq ffmpeg libgl1 libglib2.0-0 espeak-ng)

# The browser tests drive Debian's Chromium (no browser download happens anywhere); run as root once. Without it
# `make test` still passes: those tests skip, saying how to get it.
browser:
	test -x /usr/bin/chromium || (apt-get update -qq && apt-get install -y -qq chromium)

# lint first: a layer broken or a name unused fails in seconds, before the suite's minutes; the 15 slowest tests
# are listed at the end, where a new slow one shows. The suite runs in TEST_WORKERS processes (pytest-xdist), a
# module's tests on one worker (--dist loadfile) so its module fixtures are built once. Tests marked slow (each
# more than about 10 s: processes killed mid-run, Ray, perf smoke runs, real-weight sweeps) run in test-slow; CI
# runs both.
TEST_WORKERS ?= 2
PYTEST := $(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile --durations=15

test: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports
	$(PYTEST) -m "not slow"

test-slow: install
	$(PYTEST) -m slow

clean:
	rm -rf out .pytest_cache
