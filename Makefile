# Everything runs from a virtualenv this Makefile creates: a fresh machine
# needs only python3 (with venv and pip), gcc and git.
PYTHON ?= python3
HG ?= 7.2.4
VENV ?= .venv-hg$(HG)
BIN = $(VENV)/bin
STAMP = $(VENV)/.installed

.PHONY: all demo test bench clean

all: test

$(STAMP): setup.py hgext3rd/fastio/_fdclose.c
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q "mercurial==$(HG)" pytest cram
	$(BIN)/python -m pip install -q -e .
	touch $@

venv: $(STAMP)

# a sample repository applied stock and with fastio, side by side
demo: $(STAMP)
	$(BIN)/python bench/bench.py --demo

# the whole test suite: unit tests and tests/*.t cram tests
test: $(STAMP)
	$(BIN)/python -m pytest -q tests

# the full benchmark table (several minutes)
bench: $(STAMP)
	$(BIN)/python bench/bench.py

clean:
	rm -rf .venv-hg* bench/build .pytest_cache
