"""The mutant list (tools/mutants.py) stays in step with the code: every mutant's line occurs
exactly once in its module and names tests that exist, so ``make mutants`` never stops on a
line a refactor moved (it did once: ``run-error-bare`` after the pipelined host loop)."""

import importlib.util
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _mutants():
    spec = importlib.util.spec_from_file_location("sgmc_tools_mutants", os.path.join(ROOT, "tools",
                                                                          "mutants.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("sgmc_tools_mutants", module)  # (dataclasses look it up)
    spec.loader.exec_module(module)
    return module.MUTANTS


def test_every_mutant_applies_once_and_names_existing_tests():
    stale = []
    for m in _mutants():
        with open(os.path.join(ROOT, "src", "sgmc", m.path), encoding="utf-8") as fh:
            count = fh.read().count(m.old)
        if count != 1:
            stale.append(f"{m.id}: occurs {count} times in {m.path}")
        stale += [f"{m.id}: no test file {t}" for t in m.tests
                  if not os.path.exists(os.path.join(ROOT, t))]
    assert not stale, stale
