# PerfDojo: `make run` starts the product, `make test` runs the tests.
# Both create or reuse .venv and (re)install the project only when pyproject.toml changed.

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.perfdojo-installed
# TVM MetaSchedule, a benchmark peer (bench/suite.py, bench/agents.py), in an environment of its
# own: its numpy and LLVM must not meet the product's; `make test` checks its TE twins
TVM_VENV  ?= .venv-tvm
TVM_STAMP := $(TVM_VENV)/.perfdojo-tvm-installed
TVM_PKGS  := apache-tvm==0.27.0.post1 apache-tvm-ffi==0.1.14.post1 numpy xgboost-cpu cloudpickle psutil
HOST   ?= 127.0.0.1
PORT   ?= 8000
STATE  ?= var
# pytest-xdist workers for `make test`
WORKERS ?= 2
# DEV=1: Django's debug pages (the developer flag DJANGO_DEBUG=1); off by default
DEV    ?= 0

.PHONY: run test install tvm clean help

help:
	@echo "make run    start PerfDojo at http://$(HOST):$(PORT)/ (PORT=... to change; DEV=1 for debug pages)"
	@echo "make test   run the test suite (pytest -n $(WORKERS))"

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[test]'
	@touch $(STAMP)

install: $(STAMP)

$(TVM_STAMP): | $(PY)
	$(PYTHON) -m venv $(TVM_VENV)
	$(TVM_VENV)/bin/python -m pip install --quiet $(TVM_PKGS)
	@touch $(TVM_STAMP)

tvm: $(TVM_STAMP)

run: $(STAMP)
	DOJO_STATE_DIR=$(abspath $(STATE)) $(if $(filter 1,$(DEV)),DJANGO_DEBUG=1) $(PY) -m webapp.launch --host $(HOST) --port $(PORT)

# the runner and job tests run on SQLite and, where PostgreSQL answers on 127.0.0.1:5432
# (.ci/run starts it), on PostgreSQL too (tests/runners/test_runners_postgres.py, tests/runners/test_jobs_integration.py)
test: $(STAMP) $(TVM_STAMP)
	$(PY) -m pytest -q -n $(WORKERS) tests/

clean:
	rm -rf $(STATE) .pytest_cache .hypothesis
