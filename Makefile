# Two commands on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
BUDGET ?= 120
ARGS ?=

.PHONY: run test lint stress bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/rawtrio $(ARGS)

test: $(STAMP)
	$(BIN)/pytest -q $(ARGS)

lint: $(STAMP)
	$(BIN)/ruff check rawtrio tests stress
	$(BIN)/ruff format --check rawtrio tests stress
	$(BIN)/mypy

stress: $(STAMP)
	$(BIN)/python -m stress --budget $(BUDGET) $(ARGS)

bench: $(STAMP)
	$(BIN)/python -m stress.bench $(ARGS)

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
