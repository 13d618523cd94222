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

# Three quarters of the budget for the cancellation suite, the rest for the crash suite
# (SIGKILL + reopen); both always run, and the target fails if either found a violation.
stress: $(STAMP)
	@cancel=$$(( $(BUDGET) * 3 / 4 )); crash=$$(( $(BUDGET) - $(BUDGET) * 3 / 4 )); status=0; \
	$(BIN)/python -m stress --budget $$(( cancel > 0 ? cancel : 1 )) $(ARGS) || status=1; \
	$(BIN)/python -m stress.crash --budget $$(( crash > 0 ? crash : 1 )) $(CRASH_ARGS) || status=1; \
	exit $$status

bench: $(STAMP)
	$(BIN)/python -m stress.bench $(ARGS)

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
