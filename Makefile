# Every target builds or refreshes .venv itself, so any of them works first on a fresh clone.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
UV_VERSION := 0.13.9
STAMP := $(VENV)/.installed
CHAPTERS ?=
CH ?=
# Matplotlib wants a writable config dir; the backend is left to the kernel (inline).
export MPLCONFIGDIR := $(CURDIR)/$(VENV)/mplconfig
export JUPYTER_PLATFORM_DIRS := 1
export PYDEVD_DISABLE_FILE_VALIDATION := 1
# Cache bytecode (in .venv and the git-ignored __pycache__/ dirs). With
# PYTHONDONTWRITEBYTECODE set, as on some CI machines, every worker, kernel and
# pytest process would compile matplotlib, pytest and friends from source again.
unexport PYTHONDONTWRITEBYTECODE
NBVAL_TIMEOUT := 180

.PHONY: help venv verify check lint test nbval exercises-check notebooks \
        checkpoints exercise solution lab bench clean book site-test site-check \
        stress

help:
	@echo "make lab          open the book in JupyterLab (headless; prints the URL)"
	@echo "make book         the book as a website: open _build/html/index.html"
	@echo "make site-test    make book, then check every page in headless Chromium"
	@echo "make verify       lint, tests, pairs, nbval, checkpoints (quick), exercises, site"
	@echo "make test | make nbval   the runtime tests alone | the notebooks alone"
	@echo "make notebooks [CHAPTERS='00 01']  rebuild .ipynb from .md and execute"
	@echo "make checkpoints [CHAPTERS='06 07']  each checkpoint in full mode; evidence in artifacts/runs/"
	@echo "make exercise CH=01 [EX=apply_checked] [DETAIL=1]   grade your answers in exercises/ch01"
	@echo "make solution CH=01 [EX=apply_checked]   grade the reference answers"
	@echo "make stress [REPEATS=2] [STRESS_FLAGS='--no-notebooks']  quick checkpoints and"
	@echo "                  notebooks beside CPU hogs, a twin and a PostgreSQL killer (issue 36)"
	@echo "make clean        remove the virtual environments and caches"
	@echo "make bench [BENCHES='harness pg_queues']  measurements (bench/), in artifacts/bench/"

venv: $(STAMP)

# Chapter 12's Restate server: the npm package (its native binary comes in a
# per-platform package beside it), into .cache/restate, once per version.
# --ignore-scripts: the package's only install script is a telemetry ping.
# Without npm the step says so and goes on: the Restate trials then fail to
# start the server, with the command to run.
RESTATE_VERSION := 1.7.12
RESTATE_DIR := .cache/restate
RESTATE_STAMP := $(RESTATE_DIR)/.installed-$(RESTATE_VERSION)
$(RESTATE_STAMP):
	@if command -v npm > /dev/null; then \
	  timeout 600 npm install --prefix $(RESTATE_DIR) --ignore-scripts --no-audit \
	    --no-fund --loglevel=error @restatedev/restate-server@$(RESTATE_VERSION) \
	  && touch $@; \
	else echo "venv: no npm here, Restate's server not installed (chapter 12)"; fi

# pip's resolver is slow against this machine's local indexes; uv installs the lock in seconds.
$(STAMP): pyproject.toml requirements-book.txt | $(RESTATE_STAMP)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --isolated --quiet --disable-pip-version-check uv==$(UV_VERSION)
	$(VENV)/bin/uv pip install --quiet --python $(PY) -r requirements-book.txt -e .
	$(PY) -m ipykernel install --sys-prefix --name python3 > /dev/null
	mkdir -p $(MPLCONFIGDIR)
	touch $(STAMP)

# One after the other: the browser test of the site cannot run beside the
# pytest session, whose chapter 10 tests add and remove network interfaces
# (Chromium then drops its page loads: net::ERR_NETWORK_CHANGED, tried).
verify: lint check site-check
	@if [ -x "$(CHROMIUM)" ]; then echo "verify: all checks passed"; \
	else echo "verify: all checks passed, but the browser test of the site was" \
	  "SKIPPED ($(NO_CHROMIUM))"; fi

# Tests, nbval and exercise grading in ONE session, so both cores stay busy until
# the last test. --dist loadscope with the scopes of tests/scheduling.py: every
# notebook's cells on one worker (and one kernel), a file with a module-scoped
# fixture on one worker, every other test scheduled alone, the longest first
# (--no-loadscope-reorder keeps that order). --grade-both runs each exercise test
# on solutions/ (must pass) and on the untouched stubs in exercises/ (strict
# xfail: a passing stub asserts nothing).
NBVAL_FLAGS = --nbval --nbval-sanitize-with book/sanitize.cfg \
  --nbval-cell-timeout $(NBVAL_TIMEOUT)
# LangGraph brings langsmith's pytest plugin: a second of imports per pytest
# process, for nothing the book uses. More workers than cores: most of the
# suite waits (leases, kills, servers). On the two-core machine, with other
# jobs running, `make check` took 7 min 39 s with 2 workers and 5 min 28 s
# with 4; from fresh clones, 5 min 24 s with 4 and 4 min 51 s with 6.
JOBS ?= 6
PYTEST_DIST = -p no:langsmith_plugin -n $(JOBS) --dist loadscope --no-loadscope-reorder
check: $(STAMP)
	timeout --kill-after=10 1200 $(PY) -m pytest -q $(PYTEST_DIST) \
	  --durations=10 $(NBVAL_FLAGS) tests book exercises --grade-both

# The stubs in exercises/ are the reader's to edit: lint the graders, not them.
lint: $(STAMP)
	$(VENV)/bin/ruff check src tests checkpoints solutions tools bench site \
	  exercises/conftest.py $(wildcard exercises/ch*/test_*.py)

# Unit, process, pair-check and quick-checkpoint tests.
test: $(STAMP)
	timeout --kill-after=10 900 $(PY) -m pytest -q $(PYTEST_DIST) --durations=10 tests

nbval: $(STAMP)
	timeout --kill-after=10 900 $(PY) -m pytest -q $(PYTEST_DIST) $(NBVAL_FLAGS) book

# The same grading as in `check`, as two separate runs.
exercises-check: $(STAMP)
	CRASHCOURSE_ANSWERS=solutions timeout 600 $(PY) -m pytest -q exercises
	timeout 600 $(PY) -m pytest -q exercises --stubs-must-fail

notebooks: $(STAMP)
	$(PY) tools/notebooks.py build $(CHAPTERS)

checkpoints: $(STAMP)
	$(PY) tools/run_checkpoints.py $(CHAPTERS)

# Adversity as a test matrix (issue 36), NOT part of verify: each checkpoint's
# --quick mode and each notebook, REPEATS times beside each adversity (CPU-bound
# processes, a second copy of itself, a loop that starts and SIGKILLs its own
# PostgreSQL server). Never retries; writes bench/results/stress.json.
# `python tools/stress.py --help` for the flags (STRESS_FLAGS).
REPEATS ?= 2
STRESS_FLAGS ?=
stress: $(STAMP)
	$(PY) tools/stress.py --repeats $(REPEATS) $(STRESS_FLAGS)

# One line per exercise, under it one line per failing test (its name and
# what went wrong: exercises/conftest.py); EX=name grades one exercise.
# DETAIL=1 adds pytest's own report of each failure (traceback, Hypothesis's
# falsifying example and explanation, warnings) above those lines.
GRADE_FLAGS = -q $(if $(DETAIL),--tb=short,--tb=no --disable-warnings) -rN -p no:cacheprovider \
  --exercise-summary
EXERCISE_TESTS = exercises/ch$(CH)$(if $(EX),/test_ch$(CH)_$(EX).py)
exercise: $(STAMP)
	@test -n "$(CH)" || { echo "usage: make exercise CH=01 [EX=apply_checked]"; exit 2; }
	@test -e "$(EXERCISE_TESTS)" || { echo "no such exercise: $(EXERCISE_TESTS)"; exit 2; }
	$(PY) -m pytest $(GRADE_FLAGS) $(EXERCISE_TESTS)

solution: $(STAMP)
	@test -n "$(CH)" || { echo "usage: make solution CH=01 [EX=apply_checked]"; exit 2; }
	@test -e "$(EXERCISE_TESTS)" || { echo "no such exercise: $(EXERCISE_TESTS)"; exit 2; }
	CRASHCOURSE_ANSWERS=solutions $(PY) -m pytest $(GRADE_FLAGS) $(EXERCISE_TESTS)

# JupyterLab gets a venv of its own: its extras (jsonschema format checkers that
# cost seconds on every nbformat import) must not slow the book's tests. Its
# kernel is still the book's .venv, found through JUPYTER_PATH.
LAB_VENV := .venv-lab
# Reading must leave `git status` clean: autosave is off (the reader saves on
# purpose), and the notebooks already carry the kernel's own display name.
LAB_SETTINGS := $(LAB_VENV)/share/jupyter/lab/settings
$(LAB_VENV)/.installed: $(STAMP)
	test -x $(LAB_VENV)/bin/python || $(PYTHON) -m venv $(LAB_VENV)
	$(VENV)/bin/uv pip install --quiet --python $(LAB_VENV)/bin/python jupyterlab==4.6.6
	touch $@

# No news or update pop-up greets a reader: nothing to dismiss.
LAB_OVERRIDES = {"@jupyterlab/docmanager-extension:plugin": {"autosave": false}, \
  "@jupyterlab/apputils-extension:notification": \
  {"fetchNews": "false", "checkForUpdates": false}}
$(LAB_SETTINGS)/overrides.json: $(LAB_VENV)/.installed Makefile
	mkdir -p $(LAB_SETTINGS)
	echo '$(LAB_OVERRIDES)' > $@

# Headless-friendly: no browser is opened; Jupyter prints the URL to open. It
# serves the whole repository (book/ and exercises/) and opens at book/.
# Containers often run as root, which Jupyter refuses unless told.
# One entry per chapter: the .md sources (the notebooks' jupytext pairs) are
# hidden from the file browser, with the server's usual hidden files; the
# .ipynb beside each opens as a notebook.
LAB_HIDDEN = ['__pycache__', '*.pyc', '*.pyo', '.DS_Store', '*~', '*.so', \
  '*.dylib', '[0-9][0-9]_*.md']
lab: $(LAB_VENV)/.installed $(LAB_SETTINGS)/overrides.json
	JUPYTER_PATH=$(CURDIR)/$(VENV)/share/jupyter \
	  $(LAB_VENV)/bin/jupyter lab --no-browser --ip=127.0.0.1 --notebook-dir=. \
	  --ServerApp.default_url=/lab/tree/book \
	  --ContentsManager.hide_globs="$(LAB_HIDDEN)" \
	  --LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate \
	  $$( [ "$$(id -u)" = 0 ] && echo --allow-root )

# Peers measured side by side (e.g. DBOS) are bench-only: never runtime or verify deps.
# They live in .venv-bench, next to the runtime, so they never enter the book's
# .venv (a peer's packages could slow or change every later verify there).
BENCH_VENV := .venv-bench
$(BENCH_VENV)/.installed: $(STAMP) pyproject.toml requirements-bench.txt
	test -x $(BENCH_VENV)/bin/python || $(PYTHON) -m venv $(BENCH_VENV)
	$(VENV)/bin/uv pip install --quiet --python $(BENCH_VENV)/bin/python \
	  -r requirements-bench.txt -e '.[frameworks]'
	touch $@

bench: $(BENCH_VENV)/.installed
	$(BENCH_VENV)/bin/python bench/run_all.py $(BENCHES)

# The website: Jupyter Book 1.x renders the executed notebooks in book/ (execution
# off: the outputs shown are the ones nbval checks) into _build/html/. It lives in .venv-site
# with the browser test's Playwright: Jupyter Book needs markdown-it-py 3, the book's
# jupytext pin needs 4, and the book's .venv stays as fast to install as it was.
SITE_VENV := .venv-site
SITE_DIR := _build/html
# Debian's chromium (apt-get install -y chromium); Playwright only drives it.
CHROMIUM ?= /usr/bin/chromium
# `uv venv` makes it in a fraction of a second (no pip inside: uv installs into it).
$(SITE_VENV)/.installed: $(STAMP) requirements-site.txt
	test -x $(SITE_VENV)/bin/python || \
	  $(VENV)/bin/uv venv --quiet --python $(PYTHON) $(SITE_VENV)
	$(VENV)/bin/uv pip install --quiet --python $(SITE_VENV)/bin/python \
	  -r requirements-site.txt
	touch $@

# A clean build each time: no page of a removed chapter is left behind, and every
# warning (a broken reference, a duplicate page) is reported and fails the build.
book: $(SITE_VENV)/.installed
	rm -rf _build
	timeout --kill-after=10 300 $(SITE_VENV)/bin/jupyter-book build --quiet \
	  --warningiserror --keep-going . --config site/_config.yml --toc site/_toc.yml \
	  > /dev/null
	@echo "book: built $(SITE_DIR)/ -- open $(SITE_DIR)/index.html, or serve it:" \
	  "python3 -m http.server -d $(SITE_DIR) -b 127.0.0.1 8000"

# Every page in headless Chromium at desktop and phone width; screenshots in
# artifacts/site/. Two workers, each with its own Chromium and server: loading
# pages is the cost. --noconftest: the test needs none of the runtime's fixtures.
# The bound ends a hung browser; 111 pages took 280 s at load 22 on two cores.
SITE_TEST = CHROMIUM=$(CHROMIUM) timeout --kill-after=10 900 \
  $(SITE_VENV)/bin/python -m pytest -q -n 2 --noconftest tests/book/test_site.py
NO_CHROMIUM = no Chromium at $(CHROMIUM); install it with: apt-get install -y chromium
site-test: book
	@test -x "$(CHROMIUM)" || { echo "site-test: $(NO_CHROMIUM)"; exit 1; }
	$(SITE_TEST)

# What verify runs: the site is always built; the browser test when Chromium is here.
site-check: book
	@if [ -x "$(CHROMIUM)" ]; then echo "$(SITE_TEST)"; $(SITE_TEST); \
	else echo "verify: SKIPPED the browser test of the site: $(NO_CHROMIUM)"; fi

clean:
	rm -rf $(VENV) $(LAB_VENV) $(BENCH_VENV) $(SITE_VENV) _build .pytest_cache .ruff_cache $(RESTATE_DIR)
