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
# `make test` runs the test files on this many processes (pytest-xdist; a file stays on one, so its fixtures are
# built once), each torch with one thread: the tests are small models and subprocesses, one core each
TEST_JOBS ?= $(shell nproc 2>/dev/null || echo 1)
DEMO_DIR ?= demo-out
BENCH_DIR ?= bench-out

.PHONY: install test test-slow demo bench bench-length clean mutate

# glibc keeps freed buffers instead of returning them to the system after every training step (on a CPU a
# quarter of fairseq-train's time went to page faults; see syntax_nmt/demo/settings.py, CPU_MALLOC_ENV)
MALLOC_ENV := MALLOC_MMAP_THRESHOLD_=1073741824 MALLOC_TRIM_THRESHOLD_=1073741824 MALLOC_TOP_PAD_=268435456

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip setuptools wheel

$(STAMP): setup.py | $(PY)
	@$(PY) -c "import torch" 2>/dev/null && echo "torch already installed: $$($(PY) -c 'import torch; print(torch.__version__)')" \
		|| $(PY) -m pip install $(TORCH_SPEC)
	$(PY) -m pip install -e ".[dev]"
	@# the extra deploy (CTranslate2, for syntax-nmt-export --ctranslate2 and its test) where its wheel installs
	$(PY) -m pip install -e ".[dev,deploy]" || echo "make install: CTranslate2 (the extra deploy) did not install here: its tests are skipped" >&2
	@touch $@

install: $(STAMP)

test: install
	$(MALLOC_ENV) OMP_NUM_THREADS=$${OMP_NUM_THREADS:-1} $(PY) -m pytest tests -m "not slow" -n $(TEST_JOBS) --dist loadfile \
		--durations=15 $(PYTEST_ARGS)

test-slow: install
	$(MALLOC_ENV) $(PY) -m pytest tests -m slow -rP $(PYTEST_ARGS)  # -rP: print the table the check judged

# Mutation testing of the core modules with their fast tests (mutmut; config in setup.cfg). Slow (hours
# for everything on 2 cores), not part of CI. MUTATE_ARGS picks mutants, e.g. MUTATE_ARGS='"syntax_nmt.syntax.tree*"';
# rerunning resumes; `$(VENV)/bin/mutmut browse` / `show NAME` inspect the survivors.
MUTATE_ARGS ?=
MUTATE_EXAMPLES ?= 25
mutate: install
	@if [ "$$(id -u)" = 0 ]; then echo "make mutate: warning: running as root; each mutant runs the code with its file operations changed (one once removed /etc), so prefer an unprivileged user or a throwaway container" >&2; fi
	@# mutmut maps each test to the functions it calls once, and later only adds new tests: a changed test gets mapped again
	@if [ -f mutants/mutmut-stats.json ] && [ -n "$$(find tests setup.cfg -newer mutants/mutmut-stats.json -name '*.py' -o -newer mutants/mutmut-stats.json -name setup.cfg | head -1)" ]; then \
		echo "make mutate: tests changed since mutmut mapped them: mapping them again" >&2; rm -f mutants/mutmut-stats.json; fi
	OMP_NUM_THREADS=1 SYNTAX_NMT_PROPERTY_EXAMPLES=$(MUTATE_EXAMPLES) $(abspath $(VENV))/bin/mutmut run $(MUTATE_ARGS); \
	status=$$?; $(abspath $(VENV))/bin/mutmut results; $(abspath $(VENV))/bin/mutmut export-cicd-stats >/dev/null && \
	$(PY) -c 'import json; s = json.load(open("mutants/mutmut-cicd-stats.json")); \
	k = s["killed"] + s["timeout"] + s["segfault"]; run = k + s["survived"] + s["no_tests"] + s["suspicious"]; \
	print("mutation score: {} of the {} mutants run killed ({:.1%}); survived {}, no tests {} ({} generated, {} not run: \
	MUTATE_ARGS)".format(k, run, k / max(run, 1), s["survived"], s["no_tests"], s["total"], s["total"] - run))'; exit $$status

demo: install
	PATH="$(abspath $(VENV))/bin:$$PATH" $(PY) -m syntax_nmt.demo --out $(DEMO_DIR) $(DEMO_ARGS)

bench: install
	PATH="$(abspath $(VENV))/bin:$$PATH" $(PY) -m syntax_nmt.bench --out $(BENCH_DIR) $(BENCH_ARGS)

# the encoders of the methods against the stock encoder at T = 32 ... 512 (syntax_nmt/bench/length.py)
BENCH_LENGTH_ARGS ?=
bench-length: install
	$(MALLOC_ENV) $(PY) -m syntax_nmt.bench.length --out $(BENCH_DIR) $(BENCH_LENGTH_ARGS)

clean:
	rm -rf $(DEMO_DIR) $(BENCH_DIR) .pytest_cache mutants .hypothesis
