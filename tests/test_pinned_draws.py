"""No change of behaviour: the draws of a fixed set of runs, recorded before the kernel
contract refactor (issue 17), are reproduced bitwise.

The runs (``tests/pinned_runs.py``) cover SGLD, SGHMC with all three integrators (one run
with a single, unbatched chain), SVRG-HMC, SAGA-LD, EWSG, pSGLD, minibatches by epoch
permutation, VR-reSGLD, a four-replica reSGLD ladder and GD×LD (``minimize``). They were
recorded on XLA:CPU; the comparison is bitwise (the SHA-256 of each array's bytes, with shape
and dtype) because every change since was a reorganisation of the same operations on the
same keys. A deliberate change of an
algorithm re-records them (``python tests/pinned_runs.py``) in the commit that makes it.
"""

from __future__ import annotations

import json

import jax
import numpy as np
import pytest

from pinned_runs import PATH, _runs, fingerprint

pytestmark = pytest.mark.skipif(jax.default_backend() != "cpu",
                                reason="the pinned draws were recorded on XLA:CPU")


@pytest.fixture(scope="module")
def runs():
    return _runs()


def test_pinned_draws_are_reproduced(runs):
    with open(PATH) as fh:
        pinned = json.load(fh)
    assert sorted(runs) == sorted(pinned)
    changed = {}
    for name, want in pinned.items():
        got = fingerprint(np.asarray(runs[name]))
        if got != want:
            changed[name] = {"pinned head": want["head"], "now": got["head"],
                             "shape/dtype": (want["shape"], want["dtype"], got["shape"],
                                             got["dtype"])}
    assert not changed, f"draws differ from the pinned ones: {changed}"
