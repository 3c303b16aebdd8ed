# sitemap-updater: `make test` and `make demo` work on a fresh machine with Python 3.11+ and PyPI access.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# checkov pins many packages of its own: it gets a virtual environment of its own.
TOOLS  := .venv-tools
TOOLS_STAMP := $(TOOLS)/.installed

.PHONY: venv test lint typecheck unit lock demo bench soak schema clean mutate

venv: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

$(TOOLS_STAMP):
	$(PYTHON) -m venv $(TOOLS)
	$(TOOLS)/bin/python -m pip install --quiet --upgrade pip
	$(TOOLS)/bin/python -m pip install --quiet 'checkov>=3.2'
	touch $(TOOLS_STAMP)

lint: venv $(TOOLS_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/cfn-lint template.yaml
	$(TOOLS)/bin/checkov --file template.yaml --framework cloudformation --quiet --compact 2>/dev/null

# Python 3.11 (the floor, what runs here) for everything, then the functions once more as Lambda's Python 3.12.
typecheck: venv
	$(BIN)/mypy
	$(BIN)/mypy --python-version 3.12 functions

unit: venv
	$(BIN)/pytest tests/unit -q

# Every core, a test file to a worker (the package tests build their package once per module).
test: lint typecheck
	$(BIN)/pytest -q -n auto --dist loadfile

# Re-lock the functions' dependencies after editing functions/requirements.in (exact versions and every wheel's
# hash, for Python 3.11+ on any platform: Lambda's arm64 3.12 and this machine). Pins are kept unless the input
# needs others; `make lock LOCK_ARGS=--upgrade` moves everything to the newest versions.
lock: venv
	$(BIN)/uv pip compile --quiet --universal --generate-hashes --python-version 3.11 \
	    --custom-compile-command 'make lock' $(LOCK_ARGS) functions/requirements.in -o functions/requirements.txt

schema: venv
	$(BIN)/sitemap-updater schema > docs/event.schema.json

demo: venv
	rm -rf out/demo
	$(BIN)/sitemap-updater local --site https://www.example.com --sections blog,news,products,videos \
	    --events events/wave-1.jsonl --events events/wave-2.jsonl --events events/wave-2.jsonl \
	    --webhooks events/webhooks/contentful/publish.json \
	    --out out/demo --report out/demo-report.json --log out/demo-functions.log
	@echo
	@echo "Published (out/demo), index first:"
	@cat out/demo/sitemap.xml
	@ls -l out/demo
	@echo "Per-wave JSON report: out/demo-report.json; function logs: out/demo-functions.log"

# Figures and tables into docs/benchmarks.md, the figures as PNGs in docs/benchmarks/ (matplotlib: the `bench`
# extra, part of `dev`); `python -m bench.full_build --doc-only` redraws them from bench/.cache.
bench: venv
	$(BIN)/python -m bench.full_build
	$(BIN)/python -m bench.url_shapes  # 5 URL shapes of 1,000,000 pages, 5 pairs each: about 3 min (+8 min to write the exports once)
	$(BIN)/python -m bench.local_scale
	$(BIN)/python -m bench.webhooks
	$(BIN)/python -m bench.bootstrap 1000000  # 1M pages through the state machine's harness: about 8 min of CPU and 1.9 GB (10M and up projected per page)
	$(BIN)/python -m bench.partitions  # 1M pages, 1,000/s and 50/s into one section at SectionPartitions 1 and 16 against DynamoDB's limits: about 8 min of CPU and 4.5 GB
	$(BIN)/python -m bench.scale  # 1M, 10M and 100M pages projected from the caches above (full_build's incremental run): seconds

# 10,000 simulated sequences with faults (not part of `make test`); writes its result into docs/reliability.md.
soak: venv
	$(BIN)/python -m tests.sim.soak --sequences $${SEQUENCES:-10000} --write docs/reliability.md

# Mutation testing of core/, the services, the AWS adapters and the notifier (not part of `make test`): a stratified
# sample of SAMPLE mutants (seed SEED), each run against the tests that cover its module; docs/testing.md.
mutate: venv
	$(BIN)/python -m tests.mutation --sample $${SAMPLE:-320} --seed $${SEED:-1} --jobs $${JOBS:-2}

clean:
	rm -rf $(VENV) $(TOOLS) out .mypy_cache .pytest_cache .ruff_cache .hypothesis bench/.cache
