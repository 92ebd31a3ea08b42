# Two commands on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test testbed lint typecheck bench clean bytecode

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,controller,helm]'
	touch $(STAMP)

# Bytecode for the editable install, as pip writes it for an installed package: a shell that sets
# PYTHONDONTWRITEBYTECODE would otherwise compile every module on every command (0.2 s a start).
bytecode: $(STAMP)
	$(BIN)/python -m compileall -q src >/dev/null

demo: $(STAMP) bytecode
	$(BIN)/workerclass check examples
	$(BIN)/workerclass resolve examples

# The e2e tier's test bed (kube-apiserver, etcd, Cluster API) built from Go modules and cached
# outside the repository (scripts/testbed.py; rebuilt only when a version changes).
testbed:
	$(PYTHON) scripts/testbed.py build

test: $(STAMP) bytecode
	$(BIN)/ruff check src tests
	$(BIN)/mypy
	$(BIN)/lint-imports pyproject.toml --no-cache
	$(PYTHON) scripts/testbed.py build --for-tests
	@# the e2e tiers (mostly waiting on their API servers) run beside the rest (CPU-bound); the fault
	@# cases restart and pause an API server, so they have a test bed of their own
	@e2e=$$(mktemp); faults=$$(mktemp); \
	$(BIN)/pytest -m 'e2e and not faults' -rs -p no:cacheprovider >"$$e2e" 2>&1 & tier=$$!; \
	$(BIN)/pytest -m 'e2e and faults' -rs -p no:cacheprovider >"$$faults" 2>&1 & broken=$$!; \
	trap 'kill $$tier $$broken 2>/dev/null; rm -f "$$e2e" "$$faults"' INT TERM; \
	$(BIN)/pytest -m 'not e2e' -rs; rest=$$?; \
	wait $$tier; code=$$?; wait $$broken; fault=$$?; \
	echo "--- the e2e tier (pytest -m 'e2e and not faults')"; cat "$$e2e"; \
	echo "--- the fault cases (pytest -m 'e2e and faults')"; cat "$$faults"; rm -f "$$e2e" "$$faults"; \
	test $$rest -eq 0 && test $$code -eq 0 && test $$fault -eq 0

lint: $(STAMP)
	$(BIN)/ruff check src tests
	$(BIN)/lint-imports pyproject.toml --no-cache
	$(BIN)/ruff format --check src

typecheck: $(STAMP)
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python bench/core_bench.py
	$(BIN)/python bench/render_bench.py
	$(BIN)/python bench/webhook_bench.py

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info
