# One entry point for the common tasks. Every target installs what it needs first.
PY ?= python

.PHONY: install demo test test-slow lint bench

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
	$(PY) -m ruff check src tests benchmarks

bench:
	$(PY) benchmarks/bench_core.py && $(PY) benchmarks/bench_vr.py
