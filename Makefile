# Two commands for a fresh clone: `make plan` and `make test`.
VENV := .venv
BIN := $(VENV)/bin
STACK ?= dev

.PHONY: plan test lint format bench clean

$(BIN)/.installed: requirements.txt requirements-dev.txt pyproject.toml
	python3 -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	touch $@

plan: $(BIN)/.installed  ## offline plan of a stack (default dev) into out/$(STACK)/
	$(BIN)/aks-gpu plan $(STACK)

test: $(BIN)/.installed lint  ## lint, format check and the whole test suite
	$(BIN)/python -m pytest -q; status=$$?; \
	if [ $$status -eq 5 ]; then echo "pytest collected no tests: treating as a failure"; exit 1; fi; exit $$status

lint: $(BIN)/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(BIN)/.installed
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

bench: $(BIN)/.installed  ## benchmarks; print ratios measured in one run
	$(BIN)/python bench/plan_bench.py

clean:
	rm -rf out .pytest_cache
