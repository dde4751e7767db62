# syntax-nmt: `make test` runs the test suite, `make demo` the end-to-end demo,
# `make bench` the speed/memory benchmark. Each creates .venv and installs
# everything it needs on first use.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.syntax-nmt-installed
# Keep a CUDA torch that is already installed; otherwise take the CPU wheel.
TORCH_SPEC ?= torch==2.13.0
PYTEST_ARGS ?=
DEMO_DIR ?= demo-out
BENCH_DIR ?= bench-out

.PHONY: install test test-slow demo bench clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip setuptools wheel

$(STAMP): setup.py | $(PY)
	@$(PY) -c "import torch" 2>/dev/null && echo "torch already installed: $$($(PY) -c 'import torch; print(torch.__version__)')" \
		|| $(PY) -m pip install $(TORCH_SPEC)
	$(PY) -m pip install -e ".[dev]"
	@touch $@

install: $(STAMP)

test: install
	$(PY) -m pytest tests -m "not slow" $(PYTEST_ARGS)

test-slow: install
	$(PY) -m pytest tests -m slow -rP $(PYTEST_ARGS)  # -rP: print the table the check judged

demo: install
	PATH="$(abspath $(VENV))/bin:$$PATH" $(PY) -m syntax_nmt.demo --out $(DEMO_DIR) $(DEMO_ARGS)

bench: install
	PATH="$(abspath $(VENV))/bin:$$PATH" $(PY) -m syntax_nmt.bench --out $(BENCH_DIR) $(BENCH_ARGS)

clean:
	rm -rf $(DEMO_DIR) $(BENCH_DIR) .pytest_cache
