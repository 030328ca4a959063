"""The gradient noise a run meets, as :func:`sgmc.warmup` measures it.

B is the largest eigenvalue of the covariance of the sampler's own estimator's whitened
error e = Lᵀ(∇̃U(θ) − ∇U(θ)) (P = L Lᵀ the preconditioner), at points θ where a run is:
Laplace draws θ = mode + C ζ (C Cᵀ = H⁻¹ for small d; the preconditioner's factor for large
d, where H is not formed), never at the point where the estimator stored its gradients.

**Where the anchor is.** An estimator with a state that remembers earlier points (an SVRG
anchor, SAGA's table; :meth:`~sgmc.contracts.estimator.Estimator.anchor_ages`) has an error that
grows with the distance between θ and the stored point a. A stationary chain keeps its anchor
k steps old, k distributed as the estimator says, and θ − a then has covariance
2(1 − ρ(k)) Var θ (ρ the chain's lag-k autocorrelation, a function of the step size:
:func:`sgmc.tune.rules.anchor_decorrelation`). The error is measured with a and θ two Laplace
draws of correlation ρ: at ρ = 0 (independent, B₁) and at ρ = 7/8 (B_q). For per-datum
gradients linear in θ the error is linear in θ − a, so B(ρ) = B₀ + B_lin (1 − ρ), and the
two measurements give B₀ (what no anchor removes) and B_lin; :class:`NoiseModel` then gives
B at the anchor distance of any step size, and warm-up solves for the step size whose own
noise it tolerates. A third measurement at that step's distance checks the extrapolation
(models with curved per-datum gradients) and replaces it when it is larger.

**Top eigenvalue without the sample-size bias.** The largest eigenvalue of a sample
second-moment matrix of m rows in d dimensions overstates the truth by about
(1 + √(d/m))² (Marchenko–Pastur; 3.6× at d = 50, m = 64). Here it is cross-fitted: the top
directions are found on one half of the rows and their variance measured on the other (and
the other way round), which is unbiased for the variance along the direction found (at most
the top eigenvalue: when the top directions are not resolved by m rows, it is the variance of
a direction among them); its standard error comes from the same rows.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

from sgmc.kernels.estimators import Context
from sgmc.tune import rules as tuning

__all__ = ["NoiseModel", "for_sampler", "measure", "model_of", "refit", "top_eigenvalue"]

PyTree = Any
#: Correlation of anchor and point of the near measurement (their distance is 1/8 of two
#: independent draws' in variance).
NEAR = 0.875


def top_eigenvalue(rows: np.ndarray) -> tuple[float, float]:
    """The largest eigenvalue of E[e eᵀ] from rows e (m × d), cross-fitted (module
    docstring): (estimate, standard error). The rows are split into alternate halves; the
    leading right singular vector of each is the direction whose mean squared projection is
    measured on the other (one direction: the largest of several would be biased upward
    again), and the two are averaged."""
    rows = np.asarray(rows, np.float64)
    m = rows.shape[0]
    if m < 4:
        raise ValueError(f"need at least 4 rows to cross-fit, got {m}")
    halves = (rows[0::2], rows[1::2])
    values, ses = [], []
    for fit, test in (halves, halves[::-1]):
        _, _, vt = np.linalg.svd(fit, full_matrices=False)
        proj2 = (test @ vt[0]) ** 2
        values.append(proj2.mean())
        ses.append(proj2.std(ddof=1) / math.sqrt(proj2.shape[0]))
    return float(np.mean(values)), float(0.5 * math.sqrt(ses[0] ** 2 + ses[1] ** 2))


def measure(problem, estimator, batch_size: int, mode: PyTree, pre, laplace,
            num_points: int, replicates: int, rho: float, key: jax.Array
            ) -> tuple[np.ndarray, int]:
    """Whitened error rows Lᵀ(∇̃U − ∇U) of ``estimator`` (m = ``num_points`` ×
    ``replicates``), and the per-example gradient evaluations spent. Each point is a Laplace
    draw θ = mode + C ζ (``laplace`` holds C); the estimator's state is set at
    a = θ + √(1 − ρ) C (ζ_a − ζ) (at ρ = 0 an independent Laplace draw; θ − a has
    covariance 2(1 − ρ) C Cᵀ, as two draws of correlation ρ, and is the same direction for
    every ρ, so that a linear model's error scales exactly), its first estimate taken there
    (an SVRG snapshot, a SAGA table), and ``replicates`` minibatch estimates are taken at
    θ."""
    n = problem.data_rows
    b = batch_size
    ctx0 = Context(t=jnp.int32(0), step_size=jnp.float32(1.0), temperature=jnp.float32(1.0))
    ctx1 = ctx0._replace(t=jnp.int32(1))

    def laplace_draw(k):
        zeta = jax.tree.map(lambda x: jax.random.normal(k, jnp.shape(x), x.dtype), mode)
        return laplace.scale(zeta)

    @jax.jit
    def errors(key):
        k_a, k_p, k_init, k_reps = jax.random.split(key, 4)
        da, dp = laplace_draw(k_a), laplace_draw(k_p)
        point = jax.tree.map(jnp.add, mode, dp)
        anchor = jax.tree.map(lambda x, u, v: x + math.sqrt(1.0 - rho) * (u - v), point, da,
                              dp)
        idx0 = jax.random.randint(k_init, (b,), 0, n, dtype=jnp.int32)
        state = estimator.init(problem, anchor, k_init)
        _, state, n0 = estimator.estimate(problem, state, anchor, idx0, k_init, ctx0)
        full = problem.full_grad(point)

        def one(k):
            k_idx, k_rng = jax.random.split(k)
            idx = jax.random.randint(k_idx, (b,), 0, n, dtype=jnp.int32)
            g, _, cnt = estimator.estimate(problem, state, point, idx, k_rng, ctx1)
            err = jax.tree.map(jnp.subtract, g, full)
            return ravel_pytree(pre.scale_t(err))[0], cnt
        rows, counts = jax.vmap(one)(jax.random.split(k_reps, replicates))
        return rows, jnp.sum(counts) + n0

    rows, evals = [], int(estimator.init_evals(problem)) * num_points
    for k in jax.random.split(key, num_points):
        r, c = errors(k)
        rows.append(np.asarray(r, np.float64))
        evals += int(c) + n
    return np.concatenate(rows), evals


@dataclasses.dataclass(frozen=True)
class NoiseModel:
    """B as a function of the step size: B₀ + B_lin · g(h), g(h) =
    :func:`sgmc.tune.rules.anchor_decorrelation` for the estimator's anchor ages (g ≡ 1 without
    an anchor, where B₀ = 0 and B_lin is the one measurement). ``se`` is the standard error
    of the independent-draw measurement; ``detail`` records how each number was measured."""

    base: float              # B₀
    linear: float            # B_lin
    ages: tuple | None       # the estimator's anchor ages, or None
    se: float
    detail: dict

    def at(self, dynamics: str, step_size: float, curvatures: np.ndarray,
           friction: float | None) -> float:
        if self.ages is None:
            return self.base + self.linear
        g = tuning.anchor_decorrelation(dynamics, step_size, curvatures, friction, self.ages)
        return self.base + self.linear * g

    @property
    def anchored(self) -> bool:
        return self.ages is not None


def model_of(problem, estimator, batch_size: int, mode: PyTree, pre, laplace, num_points: int,
          replicates: int, key: jax.Array) -> tuple[NoiseModel, int]:
    """The :class:`NoiseModel` of ``estimator`` (one measurement without an anchor, two with
    one) and the per-example gradient evaluations spent."""
    est = estimator.noise_proxy().with_batch_size(batch_size)
    ages = est.anchor_ages(problem, batch_size)
    # The same points (and minibatches) at every distance: common random numbers, so that
    # the measurements differ by the distance alone (exactly in proportion for a linear
    # model), not by which few points were drawn.
    rows, evals = measure(problem, est, batch_size, mode, pre, laplace, num_points,
                          replicates, 0.0, key)
    far, far_se = top_eigenvalue(rows)
    detail = {"rows": int(rows.shape[0]), "independent": (far, far_se)}
    if ages is None:
        return NoiseModel(0.0, far, None, far_se, detail), evals
    rows, more = measure(problem, est, batch_size, mode, pre, laplace, num_points,
                         replicates, NEAR, key)
    near, near_se = top_eigenvalue(rows)
    detail["near"] = (near, near_se)
    detail["ages"] = ages
    # B(ρ) = B₀ + B_lin (1 − ρ) through the two measurements, neither part negative.
    frac = 1.0 - NEAR
    base = min(max((near - frac * far) / (1.0 - frac), 0.0), far)
    return NoiseModel(base, far - base, ages, far_se, detail), evals + more


def refit(noise: NoiseModel, measured: float, g: float) -> NoiseModel:
    """The model through a direct measurement B(g) when it exceeds the extrapolation
    (curved per-datum gradients): B_lin raised so that B₀ + B_lin g = ``measured``."""
    if g <= 0.0 or measured <= noise.base + noise.linear * g:
        return noise
    return dataclasses.replace(noise, linear=(measured - noise.base) / g)


def for_sampler(problem, base, z: PyTree, pre, laplace, points: int, replicates: int,
                key: jax.Array, passes: dict) -> NoiseModel:
    """The estimator's :class:`sgmc.tune.noise.NoiseModel` (zero without minibatches)."""
    b = base.batch_size
    if b is None or not problem.has_data:
        return NoiseModel(0.0, 0.0, None, 0.0, {"rows": 0})
    model, evals = model_of(problem, base.estimator, b, z, pre, laplace, points,
                               replicates, key)
    passes["noise"] += evals / problem.data_rows
    return model
