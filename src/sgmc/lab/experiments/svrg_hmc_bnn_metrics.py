"""The SVRG-HMC paper's neural-network metrics (Li et al., Sec. 5.3), used by :mod:`.svrg_hmc_bnn`:
the curvature λ_max that scales the step grid, and the test metric of the trailing-half
Bayesian model average after each draw (RMSE in the target's units, or log-likelihood)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from sgmc.metrics import predictions

__all__ = ["curve", "lambda_max", "trailing_bma"]


def lambda_max(post, params, iters: int = 30, seed: int = 0) -> float:
    """Largest eigenvalue of the Hessian of the full energy U at ``params``, by power
    iteration on Hessian-vector products (the curvature the step-size grid is scaled by)."""
    grad = jax.grad(post.full_energy)

    @jax.jit
    def hvp(v):
        return jax.jvp(grad, (params,), (v,))[1]

    def norm(t):
        return jnp.sqrt(sum(jnp.sum(x ** 2) for x in jax.tree.leaves(t)))

    leaves, tdef = jax.tree.flatten(params)
    keys = jax.random.split(jax.random.key(seed), len(leaves))
    v = jax.tree.unflatten(tdef, [jax.random.normal(k, x.shape) for k, x in zip(keys, leaves,
                                                                                 strict=True)])
    lam = 0.0
    for _ in range(iters):
        scale = norm(v)
        v = jax.tree.map(lambda x: x / scale, v)  # noqa: B023 (used at once, in this pass)
        w = hvp(v)
        lam = float(sum(jnp.sum(a * b) for a, b in zip(jax.tree.leaves(v), jax.tree.leaves(w),
                                                       strict=True)))
        v = w
    return abs(lam)


def trailing_bma(per_draw: np.ndarray) -> np.ndarray:
    """BMA after each draw k (0-based) over draws ⌊k/2⌋..k, i.e. the later half so far.

    ``per_draw`` has the draw axis first; returns the same shape, in float64."""
    x = np.asarray(per_draw, np.float64)
    cs = np.concatenate([np.zeros_like(x[:1]), np.cumsum(x, axis=0)])
    k = np.arange(x.shape[0])
    start = k // 2
    count = (k - start + 1).reshape((-1,) + (1,) * (x.ndim - 1))
    return (cs[k + 1] - cs[start]) / count


def curve(post, task: str, draws, X: np.ndarray, y: np.ndarray, y_std: float) -> np.ndarray:
    """The metric after each draw, (chains, draws): test RMSE (original units) of the
    trailing-half BMA mean, or the test log-likelihood of its class probabilities."""
    chains, n_draws = jax.tree.leaves(draws)[0].shape[:2]
    flat = jax.tree.map(lambda a: a.reshape((chains * n_draws, *a.shape[2:])), draws)
    per = predictions(post.loglik.predict, flat, np.asarray(X, np.float32))
    per = per.reshape((chains, n_draws, *per.shape[1:]))
    out = np.empty((chains, n_draws))
    for c in range(chains):
        bma = trailing_bma(per[c])
        if task == "regression":
            out[c] = np.sqrt(np.mean((bma - y) ** 2, axis=1)) * y_std
        else:
            p = np.clip(bma[:, np.arange(len(y)), np.asarray(y, np.int64)], 1e-12, None)
            out[c] = np.mean(np.log(p), axis=1)
    return out
