# Two commands on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,controller]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/workerclass check examples
	$(BIN)/workerclass resolve examples

test: $(STAMP)
	$(BIN)/ruff check src tests
	$(BIN)/mypy
	$(BIN)/lint-imports pyproject.toml --no-cache
	$(BIN)/pytest

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
