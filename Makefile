# PerfDojo: `make run` starts the product, `make test` runs the tests.
# Both create or reuse .venv and (re)install the project only when pyproject.toml changed.

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.perfdojo-installed
HOST   ?= 127.0.0.1
PORT   ?= 8000
STATE  ?= var
# pytest-xdist workers for `make test`
WORKERS ?= 2

.PHONY: run test install clean help

help:
	@echo "make run    start PerfDojo at http://$(HOST):$(PORT)/ (PORT=... to change)"
	@echo "make test   run the test suite (pytest -n $(WORKERS))"

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[test]'
	@touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	DOJO_STATE_DIR=$(abspath $(STATE)) $(PY) -m webapp.launch --host $(HOST) --port $(PORT)

test: $(STAMP)
	$(PY) -m pytest -q -n $(WORKERS) tests/

clean:
	rm -rf $(STATE) .pytest_cache .hypothesis
