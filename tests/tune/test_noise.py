"""The gradient noise warm-up measures (sgmc.tune.noise, issue 31 item 1).

* The top eigenvalue of a noise covariance from m rows in d dimensions, cross-fitted: on
  isotropic rows (true value 1) the plain estimate is about (1 + √(d/m))² (Marchenko–Pastur;
  1.94 at d = 50, m = 128); the cross-fitted one is unbiased along the directions it finds.
  Tolerance: its mean over 20 replications within 4 SE of 1 (the SE from the replications).
* An SVRG or SAGA anchor is never where the noise is measured: on a linear regression the
  error is linear in the distance between point and anchor, so B at 1/8 of the independent
  distance (in variance) is 1/8 of B at independent draws (within the measurements' SEs,
  common random numbers), B₀ ≈ 0, and B > 0 for every d (before: 0 at the mode for
  d > dense_max, and the rule picked the stability edge).
* :func:`sgmc.tune.rules.anchor_decorrelation`'s closed forms against the sums they replace.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sgmc
from sgmc.kernels import preconditioners as precond
from sgmc.tune import noise
from sgmc.tune import rules as tuning


def _plain_top(rows):
    return float(np.linalg.svd(rows / np.sqrt(rows.shape[0]), compute_uv=False)[0] ** 2)


@pytest.mark.parametrize("spike", [1.0, 10.0])
def test_top_eigenvalue_is_not_inflated_by_the_dimension(spike):
    rng = np.random.default_rng(0)
    d, m = 50, 128
    scale = np.ones(d)
    scale[0] = np.sqrt(spike)
    est, plain = [], []
    for _ in range(20):
        rows = rng.standard_normal((m, d)) * scale
        est.append(noise.top_eigenvalue(rows)[0])
        plain.append(_plain_top(rows))
    mean, se = np.mean(est), np.std(est, ddof=1) / np.sqrt(len(est))
    if spike == 1.0:
        assert np.mean(plain) > 1.7  # the bias the cross-fit removes
        assert abs(mean - 1.0) <= 4 * se + 0.05, (mean, se)
    else:  # a clear top direction is found, and its variance measured without bias
        assert abs(mean / spike - 1.0) <= 4 * se / spike + 0.05, (mean, se)


def test_top_eigenvalue_standard_error_covers():
    rng = np.random.default_rng(1)
    vals, ses = zip(*(noise.top_eigenvalue(rng.standard_normal((64, 3)) * [2.0, 1, 1])
                      for _ in range(200)), strict=True)
    # The reported SE matches the spread over replications (within 25 %).
    assert np.std(vals) == pytest.approx(np.mean(ses), rel=0.25)


def _regression(d=20, n=2000):
    x, y, _ = sgmc.models.synthetic_linear_data(num_data=n, dim=d, correlation=0.5, seed=0)
    return sgmc.models.linear_regression(x, y, noise_std=1.0, prior_std=1.0)


@pytest.mark.parametrize("estimator", [sgmc.svrg(), sgmc.saga()], ids=["svrg", "saga"])
def test_anchored_noise_scales_with_the_anchor_distance(estimator):
    post = _regression()
    mode = jnp.zeros(20)
    lap = precond.diagonal(jnp.full(20, 1e-3))
    model, evals = noise.model_of(post, estimator, 50, mode, precond.identity(), lap, 8, 8,
                                  jax.random.key(0))
    far, _ = model.detail["independent"]
    near, _ = model.detail["near"]
    assert model.anchored and far > 0
    assert near == pytest.approx(far * (1 - noise.NEAR), rel=0.05)  # linear: exact ratio
    assert model.base <= 0.05 * far
    assert evals > 0


def test_large_d_noise_is_measured_away_from_the_anchor():
    """d > dense_max: B is positive and the step is not the stability edge (issue 31: SVRG
    tuned to h √λ_max = 2.00 and diverged)."""
    post = _regression(d=40)
    w = sgmc.warmup(post, sgmc.sghmc(batch_size=50, integrator="splitting",
                                     estimator=sgmc.svrg()),
                    jnp.zeros(40), dense_max=10, check=False)
    assert w.report.noise > 0
    h, lam = w.report.step_sizes[0], w.report.curvature[1]
    assert h * np.sqrt(lam) < 1.5, w.report
    assert "independent" in w.report.noise_detail and "near" in w.report.noise_detail


@pytest.mark.parametrize("dynamics, friction", [("langevin", None), ("euler", 2.0),
                                                ("splitting", 2.0)])
@pytest.mark.parametrize("ages", [("uniform", 7.0), ("geometric", 0.2)])
def test_anchor_decorrelation_closed_forms(dynamics, friction, ages):
    h, lam = 0.1, 1.5
    a, v = tuning._linear_map(dynamics, h, lam, friction)
    n, _ = tuning._increment(dynamics, h, np.array([lam]), friction)
    sigma = tuning._stationary(n, np.outer(v, v))[0]
    if ages[0] == "uniform":
        ks, ps = np.arange(7), np.full(7, 1 / 7)
    else:
        ks = np.arange(1, 400)
        ps = 0.2 * 0.8 ** (ks - 1)
    rho = sum(p * (np.linalg.matrix_power(a, k) @ sigma)[0, 0] for k, p in
              zip(ks, ps, strict=True)) / sigma[0, 0]
    got = tuning.anchor_decorrelation(dynamics, h, np.array([lam]), friction, ages)
    assert got == pytest.approx(1 - rho, rel=1e-6, abs=1e-9)


def test_estimators_declare_their_anchor_ages():
    post = _regression(n=1000)
    assert sgmc.uniform().anchor_ages(post, 50) is None
    assert sgmc.svrg().with_batch_size(50).anchor_ages(post, 50) == ("uniform", 20.0)
    assert sgmc.control_variate(jnp.zeros(20)).anchor_ages(post, 50) is None
    kind, p = sgmc.saga().anchor_ages(post, 50)
    assert kind == "geometric" and p == pytest.approx(1 - (1 - 1 / 1000) ** 50)
    assert isinstance(sgmc.ewsg().noise_proxy(), type(sgmc.uniform()))
