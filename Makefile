# sitemap-updater: `make test` and `make demo` work on a fresh machine with Python 3.11+ and PyPI access.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: venv test lint typecheck unit demo bench schema clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: venv
	$(BIN)/mypy

unit: venv
	$(BIN)/pytest tests/unit -q

test: lint typecheck
	$(BIN)/pytest -q

schema: venv
	$(BIN)/sitemap-updater schema > docs/event.schema.json

demo: venv
	rm -rf out/demo
	$(BIN)/sitemap-updater build --site https://www.example.com \
	    --events events/pages.jsonl --out out/demo --as-of 2026-11-21T12:00:00Z
	@echo
	@echo "Files in out/demo:"
	@ls -l out/demo
	@echo
	@echo "Index (out/demo/sitemap.xml):"
	@cat out/demo/sitemap.xml

bench: venv
	$(BIN)/python -m bench.full_build

clean:
	rm -rf $(VENV) out .mypy_cache .pytest_cache .ruff_cache .hypothesis bench/.cache
