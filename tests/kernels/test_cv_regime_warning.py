"""Replica exchange with control-variate energies measures the plain minibatch energies'
σ̂² alongside (no extra evaluation) and warns when its control variate cannot help (issue
36, item 3): on the 1-D mixture (N = 800, n = 80, τ = (20, 800), h = 3e-4) the
:class:`ControlVariateWarning` comes with anchors every 20 steps and not with anchors every
step; the plug-in plain variance and difference are those of the minibatch energies; a
plain swap's acceptance ω is min(1, exp(a(ΔŨ − aσ̂²/2))). Checked to fail with the
warning's comparison reversed, with the plain variance replaced by the control variate's, and
with ω's energy difference reversed."""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sgmc
from sgmc import cv_energy, minibatch_energy, models, replica_exchange, sgld
from sgmc.kernels.coupling import variance as cvv

X = models.synthetic_mixture_data(800, seed=0)
POST = models.mixture_posterior(X)


def _run(energy, steps=400, seed=1):
    smp = replica_exchange(sgld(3e-4, batch_size=80), (20.0, 800.0), energy=energy,
                           variance_period=energy.period or 1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = sgmc.sample(POST, smp, jnp.array([30.0]), num_steps=steps, num_chains=4,
                          burn_in=40, seed=seed, progress=False, init_per_chain=False)
    return res, [w for w in caught if issubclass(w.category, sgmc.ControlVariateWarning)]


@pytest.mark.slow  # two compiled programs and 2 × 400 steps: ~15 s of CPU
def test_warns_when_anchors_are_too_old_and_not_when_fresh():
    res, caught = _run(cv_energy(period=20))
    assert len(caught) == 1
    msg = str(caught[0].message)
    assert "m = 20" in msg and "minibatch_energy()" in msg and "smaller step size" in msg
    reg = cvv.cv_regime(res.info)
    assert reg["ratio"][0] >= 1.0
    assert f"{reg['cv_w'][0]:.4g}" in msg and f"{reg['plain_w'][0]:.4g}" in msg
    assert res.meta["energy_period"] == 20

    res1, caught1 = _run(cv_energy(period=1))
    assert caught1 == []
    assert cvv.cv_regime(res1.info)["ratio"][0] < 0.6


def test_no_plain_entries_without_a_control_variate():
    smp = replica_exchange(sgld(3e-4, batch_size=80), (20.0, 800.0))
    assert "plain_energy_variance" not in smp.info_spec and "energy_period" not in smp.meta()
    assert cvv.cv_regime({"energy_variance": np.ones((1, 3, 1))}) is None
    cv = replica_exchange(sgld(3e-4, batch_size=80), (20.0, 800.0), energy=cv_energy(7))
    assert set(cvv.CV_KEYS) <= set(cv.info_spec) and cv.meta()["energy_period"] == 7


class _Result:
    def __init__(self, cv, plain, weight):
        shape = (2, len(cv), 1)
        self.info = {"energy_variance": np.broadcast_to(np.reshape(cv, (1, -1, 1)), shape),
                     "plain_energy_variance": np.broadcast_to(
                         np.reshape(plain, (1, -1, 1)), shape),
                     "plain_swap_weight": np.broadcast_to(np.reshape(weight, (1, -1, 1)),
                                                          shape)}
        self.meta = {"energy_period": 20}


def test_the_warning_compares_where_a_plain_swap_would_be_accepted():
    # Plain σ̂² tiny where swaps happen (ω = 1) and huge where they cannot (ω = 0): its mean
    # is 10× the CV one's, but where it matters the CV σ̂² is 4× the plain one's -> warn.
    bad = _Result(cv=[400.0, 400.0], plain=[100.0, 7900.0], weight=[1.0, 0.0])
    with pytest.warns(sgmc.ControlVariateWarning, match=r"m = 20.*σ̂² = 400.*σ̂² = 100"):
        cvv.warn_if_cv_cannot_help(bad)
    reg = cvv.cv_regime(bad.info)
    np.testing.assert_allclose(reg["ratio"], 4.0)
    np.testing.assert_allclose(reg["plain"], 4000.0)
    for good in (_Result([90.0, 90.0], [100.0, 7900.0], [1.0, 0.0]),   # CV below: no warning
                 _Result([90.0, 90.0], [100.0, 100.0], [0.0, 0.0])):   # no weight: nothing
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            cvv.warn_if_cv_cannot_help(good)
    with pytest.warns(sgmc.ControlVariateWarning):   # equal counts as "cannot help"
        cvv.warn_if_cv_cannot_help(_Result([100.0, 100.0], [100.0, 100.0], [1.0, 1.0]))


def test_plain_variance_and_difference_are_the_minibatch_energies():
    smp = replica_exchange(sgld(3e-4, batch_size=80), (20.0, 800.0),
                           energy=cv_energy(period=5))
    state = smp.init(POST, jnp.array([30.0]), jax.random.key(0))
    pos = jnp.array([[0.0], [12.0]])
    state = smp.with_positions(state, pos)
    # anchors apart (one shared anchor would cancel: the CV difference = the plain one)
    state = state._replace(energy=state.energy._replace(anchor=jnp.array([[2.0], [20.0]])))
    idx = jnp.arange(0, 800, 10, dtype=jnp.int32)
    cv, plain, diff, evals = smp.energy.diff_variance(POST, state.energy, pos, idx)
    scale = POST.batch_scale(80)
    x = np.stack([np.asarray(POST.batch_energies(p, idx), np.float64) for p in pos])
    np.testing.assert_allclose(plain[0], scale ** 2 * 80 * np.var(x[0] - x[1], ddof=1),
                               rtol=1e-4)
    u = [minibatch_energy().estimate(POST, (), p, idx)[0] for p in pos]
    np.testing.assert_allclose(diff[0], u[0] - u[1], rtol=1e-4)
    # the control variate's own σ̃² differs from the plain one's
    assert abs(float(cv[0]) - float(plain[0])) > 0.1 * float(plain[0])
    assert evals == 2 * 2 * 80   # the plain σ̃² costs no evaluation beyond the CV one


@pytest.mark.parametrize("diff", [-40.0, 0.0, 30.0])
def test_plain_swap_weight_is_the_plain_acceptance(diff):
    temps = jnp.array([20.0, 800.0])
    out = cvv._plain(jnp.array([500.0]), jnp.array([diff]), temps)
    a = 1 / 20 - 1 / 800
    np.testing.assert_allclose(out[0, 0], 500.0)
    np.testing.assert_allclose(out[0, 1], min(1.0, np.exp(a * (diff - a * 500.0 / 2))),
                               rtol=1e-5)
