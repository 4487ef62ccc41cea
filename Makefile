# Two entry points: `make serve` and `make test` (`make test-fast`: the quick tiers only). Each builds the virtual
# environment it needs: serving needs only the bot's own dependencies; the tests add theirs (pytest, Playwright,
# linters) on top.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PIP := $(BIN)/pip install --quiet --disable-pip-version-check --no-compile

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(BIN)/.serve-installed: pyproject.toml | $(BIN)/python
	$(PIP) -e .
	touch $@

$(BIN)/.installed: pyproject.toml | $(BIN)/python
	$(PIP) -e '.[test]'
	touch $(BIN)/.serve-installed $@

.PHONY: serve test test-fast lint bench
serve: $(BIN)/.serve-installed
	$(BIN)/sweepbot serve

# Lint, format and types first (a few seconds), then every test with pytest-xdist, one worker a core, each test
# wherever a worker is free (`--dist load`). Two a core was faster on a quiet machine but overloaded a busy one
# until timing-bound tests failed (bench/RESULTS.md, "test tiers"). `make test WORKERS=1` for one.
WORKERS ?= $(shell nproc 2>/dev/null || echo 1)
test: lint
	$(BIN)/python -m pytest -n $(WORKERS) --dist load

lint: $(BIN)/.installed
	$(BIN)/ruff check
	$(BIN)/ruff format --check
	$(BIN)/mypy

# The rules and the handlers against the in-memory fake GitHub: no bot served, no process, no database, no browser.
test-fast: $(BIN)/.installed
	$(BIN)/python -m pytest -n auto --dist load -m "rules or handler"

bench: $(BIN)/.installed
	$(BIN)/python bench/intake.py
