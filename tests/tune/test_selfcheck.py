"""Warm-up's self-check (sgmc.tune.selfcheck, issue 31 items 2 and 4).

* **Coupled pilots keep each sampler's law.** On a standard Gaussian with exact gradients the
  splitting integrator's stationary variance is x/sinh x of the target's, x = Dh/2 (its
  closed form, :func:`sgmc.tune.rules.inflation`); the coarse pilot (h) and the fine one (h/2)
  must each show theirs: pooled variance over 64 chains × 200 draws (SE ≈ 0.01), tolerance
  4 SE. The coupling is what makes the check cheap: the two pilots' draws are correlated
  (> 0.9 here), and with the coupling broken (independent noise) they are not.
* **The verdict** on planted traces: a bias of 3 × the tolerance disagrees, none agrees,
  noise too large to see the tolerance is "not resolved".
* **Warm-up halves a step that is too large.** With a variance budget of 0.6 the rule picks a
  splitting step whose variance is ~40 % low; the check (tolerance 0.1) must disagree and
  halve it until a pilot agrees.
* **The user's step in model units** is kept, with no preconditioner added, and described by
  the report; combined with a preconditioner it is refused with a message saying how to ask
  for a tuned step.
* A check that its budget cannot afford says so with a SamplingWarning.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sgmc
from sgmc.pytree import replace
from sgmc.rng import Tape
from sgmc.schedules import as_schedule
from sgmc.tune import rules as tuning
from sgmc.tune import selfcheck

D = 4


def _gaussian():
    return sgmc.Posterior(lambda th, x: 0.0 * jnp.sum(x), lambda th: -0.5 * jnp.sum(th ** 2),
                          jnp.zeros((4, 1)))


def _pilots(h, couple=True, chains=64):
    post = _gaussian()
    s = sgmc.sghmc(h, friction=2.0, integrator="splitting")
    starts = jax.random.normal(jax.random.key(0), (chains, D))
    if not couple:  # independent noise for the coarse pilot: the coupling broken
        orig = selfcheck._couple
        selfcheck._couple = lambda kind, a, b: jax.tree.map(lambda x: -x, b) \
            if kind in selfcheck.GAUSSIAN else a
    try:
        return selfcheck.coupled_pilots(post, s, replace(s, step_size=as_schedule(h / 2)),
                                        starts, 400, 1, lambda z: z, jax.random.key(1))
    finally:
        if not couple:
            selfcheck._couple = orig


def test_coupled_pilots_keep_each_samplers_law():
    h = 0.8
    fc, ff, _ = _pilots(h)
    assert np.all(fc[..., -1] == 1) and np.all(ff[..., -1] == 1)  # the finite flags
    for x, step in ((fc, h), (ff, h / 2)):
        draws = x[200:, :, :D]
        chain_var = draws.var(axis=0).mean(axis=1)               # per chain
        v, se = chain_var.mean(), chain_var.std(ddof=1) / np.sqrt(len(chain_var))
        want = tuning.inflation("splitting", step, 1.0, 1.0, 2.0)
        assert abs(v - want) <= 4 * se, (step, v, want, se)
    corr = np.corrcoef(fc[200:, :, :D].ravel(), ff[200:, :, :D].ravel())[0, 1]
    assert corr > 0.9
    fc2, ff2, _ = _pilots(h, couple=False)
    assert np.corrcoef(fc2[200:, :, :D].ravel(), ff2[200:, :, :D].ravel())[0, 1] < 0.5


def test_coupling_sums_only_gaussian_draws():
    a, b = jnp.ones(3), 2 * jnp.ones(3)
    assert np.allclose(selfcheck._couple("normal_like", [a], [b]),
                       [3 / np.sqrt(2) * np.ones(3)])
    assert selfcheck._couple("randint", a, b) is a
    tape = Tape()
    sgmc.rng.Rng(jax.random.key(0), tape).randint((2,), 0, 5)
    assert tape.kinds == ["randint"]


def _traces(bias, noise, units=16, draws=40, k=3, seed=0):
    rng = np.random.default_rng(seed)
    ff = rng.standard_normal((draws, units, k))
    fc = ff + bias / 2 + noise * rng.standard_normal((draws, units, 1))
    flag = np.ones((draws, units, 1))
    return np.concatenate([fc, flag], -1), np.concatenate([ff, flag], -1)


@pytest.mark.parametrize("bias, noise, units, verdict", [(0.3, 0.05, 16, "disagree"),
                                                         (-0.3, 0.05, 16, "disagree"),
                                                         (0.0, 0.05, 16, "agree"),
                                                         (0.0, 0.05, 3, "not resolved")])
def test_judge_on_planted_traces(bias, noise, units, verdict):
    fc, ff = _traces(bias, noise, units=units)
    got = selfcheck.judge(fc, ff, ["a", "b", "c"], 0.1, 0.1, batches=1)
    assert got[0] == verdict, got


def test_judge_calls_a_divergence():
    fc, ff = _traces(0.0, 0.05)
    fc[-1, 0, -1] = 0.0  # one draw not finite
    assert selfcheck.judge(fc, ff, ["a", "b", "c"], 0.1, 0.1)[1].startswith("non-finite")


def _regression():
    x, y, _ = sgmc.models.synthetic_linear_data(num_data=400, dim=D, correlation=0.5)
    return sgmc.models.linear_regression(x, y, noise_std=1.0, prior_std=1.0)


def test_warmup_halves_a_step_that_is_too_large():
    post = _regression()
    sampler = sgmc.sghmc(integrator="splitting")
    rule = sgmc.warmup(post, sampler, jnp.zeros(D), budget=0.6, check=False)
    w = sgmc.warmup(post, sampler, jnp.zeros(D), budget=0.6, check_budget=20_000)
    checks = w.report.checks
    assert checks[0].verdict == "disagree" and checks[-1].verdict == "agree", w.report
    assert w.report.step_sizes[0] <= 0.5 * rule.report.step_sizes[0] * (1 + 1e-6)
    assert float(w[0].step_size(0)) == pytest.approx(w.report.step_sizes[0])
    assert w.report.passes["check"] == pytest.approx(sum(c.passes for c in checks))
    # the predicted inflation is that of the step used
    assert abs(w.report.inflation[0] - 1) < abs(rule.report.inflation[0] - 1)


def test_the_rules_step_passes_on_a_gaussian():
    w = sgmc.warmup(_regression(), sgmc.sghmc(integrator="splitting"), jnp.zeros(D),
                    check_budget=20_000)
    assert [c.verdict for c in w.report.checks][-1] == "agree"
    assert w.report.checks[-1].step_size == pytest.approx(w.report.checks[0].step_size)
    assert "check" in str(w.report)


def test_user_step_is_kept_in_model_units():
    post = _regression()
    w = sgmc.warmup(post, sgmc.sghmc(1e-3, integrator="splitting"), jnp.zeros(D))
    tuned = w[0]
    assert w.report.step_given and w.report.checks == ()
    assert w.report.preconditioner == "identity"
    assert tuned.dynamics.preconditioner.kind == "identity"
    assert w.report.step_sizes == (pytest.approx(1e-3),)
    lo, hi = w.report.curvature  # identity: the raw curvature
    assert (lo, hi) == pytest.approx(w.report.raw_curvature, rel=1e-3)
    worst = max((tuning.inflation("splitting", 1e-3, c, 1.0, w.report.friction)
                 for c in np.geomspace(lo, hi, 9)), key=lambda v: abs(v - 1))
    assert w.report.inflation[0] == pytest.approx(worst, rel=1e-6)
    with pytest.raises(ValueError, match=r"step size is given.*preconditioner='identity'"):
        sgmc.warmup(post, sgmc.sghmc(1e-3), jnp.zeros(D), preconditioner="dense")


def test_a_check_the_budget_cannot_afford_warns():
    post = _regression()
    with pytest.warns(sgmc.SamplingWarning, match="check_budget"):
        w = sgmc.warmup(post, sgmc.sghmc(batch_size=20, integrator="splitting"),
                        jnp.zeros(D), check_budget=1.0)
    assert w.report.checks[-1].verdict == "skipped"
    with pytest.raises(TypeError, match="check must be"):
        sgmc.warmup(post, sgmc.sghmc(integrator="splitting"), jnp.zeros(D), check="yes")
    with pytest.raises(ValueError, match="check_tolerance"):
        sgmc.warmup(post, sgmc.sghmc(integrator="splitting"), jnp.zeros(D),
                    check_tolerance=1.5)
