"""No change of behaviour: the draws of a fixed set of runs, recorded before the kernel
contract refactor (issue 17), are reproduced bitwise.

The runs (``tests/pinned_runs.py``) cover SGLD, SGHMC with all three integrators (one run
with a single, unbatched chain), SVRG-HMC, SAGA-LD, EWSG, pSGLD, minibatches by epoch
permutation, VR-reSGLD, a four-replica reSGLD ladder and GD×LD (``minimize``). They were
recorded on XLA:CPU. Under the JAX and jaxlib they were recorded with, on the same kind of
CPU (``pinned_runs.versions``: XLA:CPU compiles for the host's vector instructions), the
comparison is bitwise (the SHA-256 of each array's bytes, with shape and dtype) because
every change since was a reorganisation of the same operations on the same keys. Another JAX
version or CPU compiles the same operations with other roundings (JAX 0.10 moved four of
these runs by about 1e-7; an AVX2-only AMD EPYC moved four by 1–2 ulp, at most 2.4e-7), so
there float draws are compared to the pinned values within ``RTOL``/``ATOL`` — far above a
few float32 roundings carried through ten draws (~1e-6), far below any change of an update
rule (a changed coefficient or a dropped term moves these draws by 1e-3 or more) — and
counts (gradient evaluations, swaps) exactly. A deliberate change of an algorithm re-records
them (``python tests/pinned_runs.py``) in the commit that makes it.
"""

from __future__ import annotations

import json

import jax
import numpy as np
import pytest

from pinned_runs import PATH, VERSIONS_KEY, _runs, fingerprint, versions

pytestmark = pytest.mark.skipif(jax.default_backend() != "cpu",
                                reason="the pinned draws were recorded on XLA:CPU")


RTOL, ATOL = 1e-4, 1e-5


@pytest.fixture(scope="module")
def runs():
    return _runs()


def _differs(want: dict, got: dict, bitwise: bool) -> bool:
    if (want["shape"], want["dtype"]) != (got["shape"], got["dtype"]):
        return True
    if bitwise or not np.issubdtype(np.dtype(want["dtype"]), np.floating):
        return want["sha256"] != got["sha256"]
    return not np.allclose(got["values"], want["values"], rtol=RTOL, atol=ATOL)


def test_pinned_draws_are_reproduced(runs):
    with open(PATH) as fh:
        pinned = json.load(fh)
    recorded_with = pinned.pop(VERSIONS_KEY)
    bitwise = recorded_with == versions()
    assert sorted(runs) == sorted(pinned)
    changed = {}
    for name, want in pinned.items():
        got = fingerprint(np.asarray(runs[name]))
        if _differs(want, got, bitwise):
            dev = (np.max(np.abs(np.subtract(got["values"], want["values"])))
                   if want["shape"] == got["shape"] else None)
            changed[name] = {"pinned head": want["values"][:4], "now": got["values"][:4],
                             "max |difference|": dev,
                             "shape/dtype": (want["shape"], want["dtype"], got["shape"],
                                             got["dtype"])}
    how = "bitwise" if bitwise else f"within rtol={RTOL}, atol={ATOL} (pinned with {recorded_with})"
    assert not changed, f"draws differ from the pinned ones ({how}): {changed}"
