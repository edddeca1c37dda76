# bearing — `make help` lists the targets. `make report` and `make test` do all set-up.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.bearing-installed
# pytest-xdist workers for `make test` / `make check`: CI has 2 cores and the suite is CPU-bound in one process
# (user time ≈ wall time). Measured 2026-12-06: fast lane 2 min 54 s; the whole suite 67.5 min against 71 in one
# process on a busy machine (the one worker holding the 27-report matrix is the critical path).
# `make test WORKERS=0` runs in one process.
WORKERS ?= 2

.DEFAULT_GOAL := help
.PHONY: help report test check lint bench lab clean

help: ## List the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN{FS=":.*## "}{printf "  make %-8s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "bearing needs Python 3.11 or newer (found " + sys.version.split()[0] + "); set PYTHON=python3.11")'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,dask]'
	touch $(STAMP)

report: $(STAMP) ## Build the capacity report from the bundled real data (prints its path)
	$(BIN)/bearing report --demo

test: $(STAMP) ## Lint, then run the whole test suite (notebooks included)
	$(BIN)/ruff check bearing_lib tests bench
	$(BIN)/python -m pytest -n $(WORKERS) --dist loadgroup

check: $(STAMP) ## Fast lane: ruff, then every test not marked slow (tests/slow_tests.txt); minutes, not the full suite
	$(BIN)/ruff check bearing_lib tests bench
	$(BIN)/python -m pytest -q -m "not slow" -n $(WORKERS) --dist loadgroup

lint: $(STAMP) ## ruff only
	$(BIN)/ruff check bearing_lib tests bench

bench: $(STAMP) ## Benchmarks (not tests): load+validate 10M rows, profile, limits on 1M rows, aggregation of 10M, scale, CLI start-up
	$(BIN)/python -m pip install --quiet -e '.[bench]'
	$(BIN)/python bench/bench_load.py
	$(BIN)/python bench/bench_profile.py
	$(BIN)/python bench/bench_limits.py
	$(BIN)/python bench/bench_scale.py
	$(BIN)/python bench/bench_startup.py
	$(BIN)/python bench/bench_twin.py

lab: $(STAMP) ## Open JupyterLab on the notebooks
	$(BIN)/jupyter lab notebooks/

clean: ## Remove the virtual environment and caches
	rm -rf $(VENV) .pytest_cache .ruff_cache
