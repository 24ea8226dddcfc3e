# parabench: `make run` sets up and runs the pipeline; `make test` sets up and runs the tests.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export DVC_NO_ANALYTICS := 1
# Stages run `python`: the project's virtual environment comes first on PATH.
export PATH := $(CURDIR)/$(BIN):$(PATH)

.PHONY: run test setup clean

# DVC reads params.yaml while it parses dvc.yaml, before any stage: a missing or emptied one is named here first.
run: $(STAMP)
	python -m parabench.params_file
	dvc repro
	python -m parabench.report.summary

# Lint and format first (pyproject.toml's [tool.ruff]; `ruff format .` rewrites), then the tests on two workers,
# a test file each at a time, the longest files first (tests/conftest.py); the 15 slowest are listed.
test: $(STAMP)
	ruff check .
	ruff format --check .
	python -m pytest -n 2 --dist loadfile --no-loadscope-reorder --durations=15

setup: $(STAMP)

# uv when pip can fetch it (about 60 s against pip's 150 on a 2-core VM), with pip's own index settings; else pip
$(STAMP): pyproject.toml tools/install.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python tools/install.py $(VENV)
	touch $(STAMP)

clean:
	rm -rf $(VENV)
