# Two commands for a fresh clone: `make plan` and `make test`.
VENV := .venv
BIN := $(VENV)/bin
STACK ?= dev
# Tests and lint write nothing into the checkout: bytecode goes to the temp folder.
export PYTHONPYCACHEPREFIX ?= $(or $(TMPDIR),/tmp)/aks-gpu-inference-pycache

.PHONY: plan test test-fast lint format snapshots docs bench clean

$(BIN)/.installed: requirements.txt requirements-dev.txt pyproject.toml
	@echo "» installing into $(VENV): the Pulumi, Azure and Kubernetes SDKs, Helm's SDK and the test tools (requirements-dev.txt);"
	@echo "  about a minute and a half here with pip's cache warm, several minutes on a cold one; an existing $(VENV) is reused"
	python3 -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	@echo "» compiling the venv's modules once (about 20 s), so that no command recompiles them (PYTHONDONTWRITEBYTECODE)"
	-env -u PYTHONPYCACHEPREFIX $(BIN)/python -m compileall -q -j 0 $(VENV)/lib > /dev/null
	touch $@

plan: $(BIN)/.installed  ## offline plan of a stack (default dev) into out/$(STACK)/
	$(BIN)/aks-gpu plan $(STACK)

test: $(BIN)/.installed lint  ## lint, format check and the whole test suite
	$(BIN)/python -m pytest -q -n 2; status=$$?; \
	if [ $$status -eq 5 ]; then echo "pytest collected no tests: treating as a failure"; exit 1; fi; exit $$status

test-fast: $(BIN)/.installed  ## the fast lane (under a minute): everything but whole-stack plans and chart renders
	$(BIN)/python -m pytest -q -x -n 2 -m "not slow"

lint: $(BIN)/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(BIN)/.installed
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

snapshots: $(BIN)/.installed  ## refresh tests/snapshots after an intended change to rendered output
	UPDATE_SNAPSHOTS=1 $(BIN)/python -m pytest -q tests/test_snapshots.py

docs: $(BIN)/.installed  ## regenerate the generated parts of docs/ (the rule table, the fit formula, the pins table, the stack-file reference) and the lazy packages' type stubs
	$(BIN)/python -m aks_gpu_inference.policies.rule_table --write docs/policies.md
	$(BIN)/python -m aks_gpu_inference.planner.docgen
	$(BIN)/python -m aks_gpu_inference.components.stack.reference --write docs/stack-file.md
	$(BIN)/python tools/lazy_stubs.py --write

bench: $(BIN)/.installed  ## benchmarks; print ratios measured in one run
	$(BIN)/python bench/plan_bench.py
	$(BIN)/python bench/rules_bench.py
	$(BIN)/python bench/scan_vs_checkov.py

clean:
	rm -rf out .pytest_cache
