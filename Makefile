# Two commands on a fresh machine: `make run` and `make test`.
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
BUDGET ?= 120
ARGS ?=

# rawtrio needs Python >= 3.11: the first of these that is recent enough, unless PYTHON is
# given (`make PYTHON=python3.12 run`).
PY_OK := import sys; sys.exit(sys.version_info < (3, 11))
ifeq ($(origin PYTHON),undefined)
PYTHON := $(or $(shell for p in python3 python3.13 python3.12 python3.11; do \
	$$p -c '$(PY_OK)' 2>/dev/null && { echo $$p; break; }; done),python3)
endif
PY_VERSION := import sys; print(*sys.version_info[:2], sep=".")
# A venv made by another Python (an older `make` with 3.10, an upgraded system Python) is
# rebuilt, not reused.
ifneq ($(shell $(PYTHON) -c '$(PY_VERSION)' 2>/dev/null),$(shell $(BIN)/python -c '$(PY_VERSION)' 2>/dev/null))
$(STAMP): rebuild-venv
endif

.PHONY: tmux chromium dashboard run test lint stress bench clean python-version rebuild-venv

python-version:
	@$(PYTHON) -c '$(PY_OK)' 2>/dev/null || { \
		echo "rawtrio needs Python 3.11 or newer; $(PYTHON) is" \
			"$$($(PYTHON) --version 2>&1 || echo 'not installed')." >&2; \
		echo "Install Python 3.11+ and run e.g. 'make PYTHON=python3.11 run'." >&2; exit 1; }

rebuild-venv:

$(STAMP): pyproject.toml | python-version
	$(PYTHON) -m venv --clear $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP)

# The ACP conformance suite's client: the official TypeScript SDK, pinned in the lockfile.
# Without npm the ACP tests skip on a developer's machine; under CI=true this fails.
ACP_NODE := tests/acp/node_modules/.installed
$(ACP_NODE): tests/acp/package.json tests/acp/package-lock.json
	@if command -v npm >/dev/null 2>&1; then \
		npm ci --prefix tests/acp --no-audit --no-fund --loglevel=error && touch $@; \
	elif [ "$$CI" = "true" ]; then \
		echo "npm (Node 20) is required for the ACP tests under CI=true" >&2; exit 1; \
	else echo "warning: npm not found: the ACP conformance tests will be skipped" >&2; fi

# The dashboard's web app: sources in rawtrio/dashboard/web/ (npm packages pinned in its
# lockfile), built by esbuild into rawtrio/dashboard/static/, which is committed so that an
# install serves it with no Node. `make dashboard` rebuilds it after a change to web/;
# tests/dashboard_browser/test_assets.py fails when the committed build is stale.
DASH_WEB := rawtrio/dashboard/web
DASH_NODE := $(DASH_WEB)/node_modules/.installed
$(DASH_NODE): $(DASH_WEB)/package.json $(DASH_WEB)/package-lock.json
	@if command -v npm >/dev/null 2>&1; then \
		npm ci --prefix $(DASH_WEB) --no-audit --no-fund --loglevel=error && touch $@; \
	elif [ "$$CI" = "true" ]; then \
		echo "npm (Node 20) is required for the dashboard asset test under CI=true" >&2; exit 1; \
	else echo "warning: npm not found: the dashboard asset test will be skipped" >&2; fi

dashboard: $(DASH_NODE)
	cd $(DASH_WEB) && node build.mjs

run: $(STAMP)
	$(BIN)/rawtrio $(ARGS)

# Two workers: most tests wait on real processes and sockets, not on the CPU.
WORKERS ?= 2
test: $(STAMP) $(ACP_NODE) $(DASH_NODE) tmux chromium
	$(BIN)/pytest -q -n $(WORKERS) $(ARGS)

# The terminal chat's tests (tests/tui) drive rawtrio in tmux; under CI it is installed.
tmux:
	@command -v tmux >/dev/null 2>&1 || [ "$$CI" != true ] || \
		{ apt-get update -qq && apt-get install -y -qq tmux >/dev/null; }

# The dashboard's browser tests (tests/dashboard_browser) and bench drive Debian's headless
# Chromium through Playwright (never a downloaded browser); under CI it is installed.
chromium:
	@command -v chromium >/dev/null 2>&1 || [ "$$CI" != true ] || \
		{ apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium >/dev/null; }

lint: $(STAMP)
	$(BIN)/ruff check rawtrio tests stress
	$(BIN)/ruff format --check rawtrio tests stress
	$(BIN)/mypy

# 55 % of the budget for the cancellation suite, 25 % for the crash suite (SIGKILL +
# reopen), 10 % for ACP sessions over WebSocket with random cancels and reconnects, the rest
# for attached turns cancelled from a second client of the host; then, on top of the budget,
# SIGKILLs aimed at checkpoint snapshots, records, undos and redos (10 % of it, between 20
# and 60 s: CI's BUDGET=280 adds 28 s). All five always run, and the target fails if any
# found a violation.
# Each suite's last line is its summary; they are repeated at the end, one per suite.
stress: $(STAMP)
	@cancel=$$(( $(BUDGET) * 55 / 100 )); crash=$$(( $(BUDGET) * 25 / 100 )); \
	acp=$$(( $(BUDGET) * 10 / 100 )); host=$$(( $(BUDGET) - cancel - crash - acp )); \
	ckpt=$$(( $(BUDGET) / 10 < 20 ? 20 : $(BUDGET) / 10 > 60 ? 60 : $(BUDGET) / 10 )); \
	status=0; out=$$(mktemp -d); \
	{ $(BIN)/python -m stress --budget $$(( cancel > 0 ? cancel : 1 )) $(ARGS) || echo 1 > $$out/failed; } | tee $$out/cancel; \
	{ $(BIN)/python -m stress.crash --budget $$(( crash > 0 ? crash : 1 )) $(CRASH_ARGS) || echo 1 > $$out/failed; } | tee $$out/crash; \
	{ $(BIN)/python -m stress.acp_ws --budget $$(( acp > 0 ? acp : 1 )) || echo 1 > $$out/failed; } | tee $$out/acp; \
	{ $(BIN)/python -m stress.host_attach --budget $$(( host > 0 ? host : 1 )) || echo 1 > $$out/failed; } | tee $$out/host; \
	{ $(BIN)/python -m stress.checkpoint_crash --budget $$ckpt --files 2000 || echo 1 > $$out/failed; } | tee $$out/ckpt; \
	echo "== summary"; for s in cancel crash acp host ckpt; do tail -n 1 $$out/$$s; done; \
	[ -e $$out/failed ] && status=1; rm -rf $$out; exit $$status

bench: $(STAMP) chromium
	$(BIN)/python -m stress.bench $(ARGS)

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
