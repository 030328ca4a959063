# One entry point for the common tasks. Every target installs what it needs first.
PY ?= python

.PHONY: install demo test test-slow lint bench mutants

install:
	$(PY) -m pip install -e ".[dev]"

demo:
	$(PY) -m pip install -e ".[all]" && sgmc demo

test:
	$(PY) -m pip install -e ".[dev]" && $(PY) -m pytest

# Long statistical checks (tighter Monte Carlo tolerances); minutes, not part of CI.
test-slow:
	$(PY) -m pip install -e ".[dev]" && $(PY) -m pytest -m slow

lint:
	$(PY) -m ruff check src tests benchmarks tools

bench:
	$(PY) benchmarks/bench_core.py && $(PY) benchmarks/bench_vr.py

# Mutation testing of the algorithm modules (tools/mutants.py): each curated mutant runs the
# fast tests that guard its module on a mutated copy; prints the score and the survivors.
mutants:
	$(PY) -m pip install -e ".[dev]" && $(PY) tools/mutants.py
