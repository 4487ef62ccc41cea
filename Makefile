# Two entry points: `make serve` and `make test`. Each builds the venv it needs.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -e '.[test]'
	touch $@

.PHONY: serve test bench
serve: $(BIN)/.installed
	$(BIN)/sweepbot serve

test: $(BIN)/.installed
	$(BIN)/python -m pytest

bench: $(BIN)/.installed
	$(BIN)/python bench/intake.py
