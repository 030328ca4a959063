"""No change of behaviour: the draws of a fixed set of runs, recorded before the kernel
contract refactor (issue 17), are reproduced bitwise.

The runs (``tests/pinned_runs.py``) cover SGLD, SGHMC with all three integrators (one run
with a single, unbatched chain), SVRG-HMC, SAGA-LD, EWSG, pSGLD, minibatches by epoch
permutation, VR-reSGLD, a four-replica reSGLD ladder and GD×LD (``minimize``). They were
recorded on XLA:CPU; the comparison is bitwise (``assert_array_equal``) because every change
since was a reorganisation of the same operations on the same keys. A deliberate change of an
algorithm re-records them (``python tests/pinned_runs.py``) in the commit that makes it.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

from pinned_runs import PATH, _runs

pytestmark = pytest.mark.skipif(jax.default_backend() != "cpu",
                                reason="the pinned draws were recorded on XLA:CPU")


@pytest.fixture(scope="module")
def runs():
    return _runs()


def test_pinned_draws_are_reproduced(runs):
    pinned = np.load(PATH)
    assert sorted(runs) == sorted(pinned.files)
    for name in pinned.files:
        np.testing.assert_array_equal(runs[name], pinned[name], err_msg=name)
