"""Sample-quality diagnostics: kernel Stein discrepancy, Gaussian KL and 2-Wasserstein to a
reference, optimiser success rates, and (re-exported from :mod:`sgmc.metrics`) the predictive
metrics of Bayesian model averaging. ESS and R-hat come from ArviZ (:func:`ess`,
:func:`rhat`, or the table of :meth:`sgmc.Result.summary`).

**What a "draws" argument may be.** Every function here that takes ``samples`` accepts

* an array of shape (n, d) — n draws of a d-vector (the documented form);
* an array of shape (n, *shape) — each draw is flattened to a vector of size prod(shape)
  (a 1-D array of n scalars becomes (n, 1));
* a pytree (dict, list, tuple, namedtuple) of such arrays sharing the leading draw axis n —
  each draw is flattened to one vector in ``jax.flatten_util.ravel_pytree`` order;
* an :class:`sgmc.Result` — all chains pooled: leaves (chains, draws, ...) become
  (chains·draws, ...). For a replica-exchange run with ``output="all"`` select a replica
  first, e.g. ``jax.tree.map(lambda a: a[:, :, 0], res.samples)`` (then reshape the chains).

References:
    J. Gorham and L. Mackey, "Measuring sample quality with kernels", ICML 2017 (the IMQ
    kernel Stein discrepancy). C. R. Givens and R. M. Shortt, "A class of Wasserstein metrics
    for probability distributions", Michigan Math. J. 31 (1984) (W2 between Gaussians).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

from sgmc import _validate as check
from sgmc._optional import arviz
from sgmc.metrics import classification_metrics, predictions, regression_metrics, running_average

__all__ = ["classification_metrics", "empirical_w2_1d", "ess", "flatten_draws", "gaussian_kl",
           "gaussian_w2", "ksd", "normal_kl", "normal_w2", "predictions", "regression_metrics",
           "rhat", "running_average", "score_function", "success_probability"]

PyTree = Any


# -- draws as a matrix ---------------------------------------------------------------------
def _leading_axis_tree(samples: PyTree) -> PyTree:
    """``samples`` as a pytree whose leaves all share one leading draw axis."""
    from sgmc.result import Result

    if isinstance(samples, Result):
        if samples.has_replica_axis():
            raise ValueError("samples keep every replica (output='all'): select one, e.g. "
                             "jax.tree.map(lambda a: a[:, :, 0], res.samples) for the "
                             "coldest, and merge its (chain, draw) axes")

        def merge(a):
            a = np.asarray(a)
            return a.reshape((a.shape[0] * a.shape[1], *a.shape[2:]))
        return jax.tree.map(merge, samples.samples)
    if isinstance(samples, (str, bytes)) or samples is None:
        raise TypeError("samples must be an (n, d) array, a pytree of arrays with a leading "
                        f"draw axis, or an sgmc.Result; got {type(samples).__name__}")
    return samples


def flatten_draws(samples: PyTree, name: str = "samples"
                  ) -> tuple[np.ndarray, Callable[[jax.Array], PyTree]]:
    """Draws as an (n, d) float64 matrix, and the function that turns one row back into a
    draw of the original structure (see the module docstring for what ``samples`` may be)."""
    tree = _leading_axis_tree(samples)
    leaves = jax.tree.leaves(tree)
    if not leaves:
        raise ValueError(f"{name} holds no arrays")
    arrays = []
    for leaf in leaves:
        a = np.asarray(leaf)
        if a.dtype == object or not (np.issubdtype(a.dtype, np.number)
                                     or a.dtype == np.bool_):
            raise TypeError(f"{name} must hold numeric arrays, got dtype {a.dtype}")
        if a.ndim == 0:
            raise ValueError(f"{name} must have a leading draw axis; got a scalar")
        arrays.append(a)
    n = arrays[0].shape[0]
    if any(a.shape[0] != n for a in arrays):
        raise ValueError(f"every array in {name} must share the leading draw axis; got "
                         f"lengths {[a.shape[0] for a in arrays]}")
    if n == 0:
        raise ValueError(f"{name} holds no draws")
    x = np.concatenate([a.reshape(n, -1).astype(np.float64) for a in arrays], axis=1)
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name} contains NaN or inf")
    one = jax.tree.map(lambda a: jnp.asarray(np.asarray(a)[0]), tree)
    _, unravel = ravel_pytree(one)
    return x, unravel


# -- ESS and R-hat (ArviZ) -------------------------------------------------------------------
def _idata(result):
    az = arviz()

    from sgmc.result import Result

    if isinstance(result, Result):
        return result.to_arviz()
    if isinstance(result, az.InferenceData):
        return result
    raise TypeError(f"result must be an sgmc.Result or arviz.InferenceData, got "
                    f"{type(result).__name__}")


def ess(result, method: str = "bulk") -> dict[str, np.ndarray]:
    """Effective sample size of every variable (``arviz.ess``; Vehtari et al. 2021), pooled
    over chains: name -> array shaped like one draw of that variable.

    Args:
        result: an :class:`sgmc.Result` or ``arviz.InferenceData``.
        method: ``"bulk"``, ``"tail"``, ``"mean"``, ``"sd"``, … (see ``arviz.ess``).
    """
    az = arviz()

    out = az.ess(_idata(result), method=method)
    return {k: np.asarray(v.values) for k, v in out.data_vars.items()}


def rhat(result) -> dict[str, np.ndarray]:
    """Rank-normalised split R-hat of every variable (``arviz.rhat``; ≈ 1 when the chains
    agree, > 1.01 flags disagreement; needs ≥ 2 chains to mean much)."""
    az = arviz()

    out = az.rhat(_idata(result))
    return {k: np.asarray(v.values) for k, v in out.data_vars.items()}


# -- kernel Stein discrepancy ------------------------------------------------------------
def score_function(problem, temperature: float = 1.0) -> Callable[[PyTree], PyTree]:
    """θ ↦ ∇ log p(θ) = −∇U(θ)/τ for an :class:`sgmc.Posterior` or :class:`sgmc.Objective`
    (the target exp(−U/τ)), with the full-data gradient computed in chunks."""
    from sgmc.model.oracle import require_problem

    require_problem(problem)
    if problem.constrained:
        # Draws are reported as θ = T(z) but the energy is the density of z: its score at θ
        # would be a wrong answer, not an approximate one.
        raise ValueError("the problem has constrained parameters: its energy is a density "
                         "on the unconstrained scale, while draws are reported constrained; "
                         "compute the kernel Stein discrepancy on the unconstrained draws, "
                         "jax.vmap(problem.unconstrain)(draws), with the score "
                         "z ↦ −∇U(z)/τ (problem.full_grad)")
    tau = check.positive("temperature", temperature)
    return lambda theta: jax.tree.map(lambda g: -g / tau, problem.full_grad(theta))


def _scores(score, x: np.ndarray, unravel, batch: int) -> np.ndarray:
    """The (n, d) matrix of scores at the draws, from an array, a pytree, a problem or a
    callable (evaluated compiled, ``batch`` draws at a time)."""
    from sgmc.model.oracle import Problem

    n, d = x.shape
    if isinstance(score, Problem):
        score = score_function(score)
    if callable(score):
        def one(row):
            flat, _ = ravel_pytree(score(unravel(row)))
            return flat
        try:
            out_shape = jax.eval_shape(one, jnp.zeros(d, jnp.result_type(float)))
        except Exception as err:
            raise ValueError(f"score failed on one draw: {type(err).__name__}: {err}") from err
        if out_shape.shape != (d,):
            raise ValueError(f"score must return a gradient shaped like one draw ({d} "
                             f"numbers), got {out_shape.shape[0]} numbers")
        rows = jnp.asarray(x, jnp.result_type(float))
        s = jax.jit(lambda r: jax.lax.map(one, r, batch_size=min(batch, n)))(rows)
        s = np.asarray(s, np.float64)
    else:
        try:
            s, _ = flatten_draws(score, "score")
        except TypeError as err:
            raise TypeError("score must be an (n, d) array of ∇log p at the draws, a "
                            "function θ ↦ ∇log p(θ), or an sgmc.Posterior") from err
        if s.shape != (n, d):
            raise ValueError(f"score must have one gradient per draw, shape {(n, d)}; got "
                             f"{s.shape}")
    if not np.all(np.isfinite(s)):
        raise ValueError("score is not finite at some draws")
    return s


@functools.partial(jax.jit, static_argnames=("chunk_size",))
def _stein_row_sums(x, s, c2, beta, chunk_size: int):
    """Σ_j k_p(x_i, x_j) for every i, a chunk of rows at a time (memory O(chunk · n))."""
    n, d = x.shape
    n_chunks = -(-n // chunk_size)
    pad = n_chunks * chunk_size - n
    xr = jnp.pad(x, ((0, pad), (0, 0))).reshape(n_chunks, chunk_size, d)
    sr = jnp.pad(s, ((0, pad), (0, 0))).reshape(n_chunks, chunk_size, d)
    nx = jnp.sum(x * x, axis=1)
    a = jnp.sum(s * x, axis=1)

    both = jnp.concatenate([x, s], axis=0)             # (2n, d)

    def rows(args):
        xc, sc = args                                   # (m, d)
        m = xc.shape[0]
        # One product gives the four blocks x_i·x_j, x_i·s_j, s_i·x_j, s_i·s_j.
        g = jnp.concatenate([xc, sc], axis=0) @ both.T  # (2m, 2n)
        xx, xs, sx, ss = g[:m, :n], g[:m, n:], g[m:, :n], g[m:, n:]
        nxc, ac = jnp.sum(xc * xc, axis=1), jnp.sum(sc * xc, axis=1)
        r2 = jnp.maximum(nxc[:, None] + nx[None, :] - 2.0 * xx, 0.0)
        u = c2 + r2
        inv = 1.0 / u
        ub = jnp.exp(beta * jnp.log(u))                 # k(x_i, x_j); exp∘log: pow is ~8× slower
        ub1 = ub * inv                                  # u^(β−1)
        # (s_i − s_j)·(x_i − x_j) from inner products: no (m, n, d) difference tensor.
        cross = ac[:, None] + a[None, :] - sx - xs
        kp = (ub * ss - 2.0 * beta * ub1 * cross
              - 2.0 * beta * d * ub1 - 4.0 * beta * (beta - 1.0) * (ub1 * inv) * r2)
        return jnp.sum(kp, axis=1)

    return jax.lax.map(rows, (xr, sr)).reshape(-1)[:n]


def ksd(samples: PyTree, score, *, c: float = 1.0, beta: float = -0.5,
        chunk_size: int | None = None, statistic: str = "v", score_batch: int = 64) -> float:
    """Kernel Stein discrepancy with the inverse multiquadric (IMQ) kernel
    (Gorham & Mackey 2017).

    With k(x, y) = (c² + ‖x − y‖²)^β, u = c² + ‖r‖², r = x − y, s = ∇log p, the Stein kernel

        k_p(x, y) = s(x)·s(y) u^β − 2β u^(β−1) (s(x) − s(y))·r − 2βd u^(β−1)
                    − 4β(β − 1) u^(β−2) ‖r‖²

    has E_{y∼p} k_p(x, y) = 0, and the discrepancy of the draws x_1..x_n is

        KSD = sqrt( (1/n²) Σ_{i,j} k_p(x_i, x_j) )                  (V-statistic, default)
        KSD = sqrt( max(0, (1/(n(n−1))) Σ_{i≠j} k_p(x_i, x_j)) )    (``statistic="u"``)

    The V-statistic is ≥ 0 and ~ n^(−1/2) for exact draws; the U-statistic is unbiased for
    KSD² (and may be negative, hence the clip). For β ∈ (−1, 0) the IMQ KSD controls weak
    convergence (Gorham & Mackey, Thm. 8). The double sum runs in JAX in chunks of
    ``chunk_size`` rows (memory O(chunk_size · n); no n × n matrix), by inner products of
    the draws centred at their mean (the kernel is translation invariant), in JAX's default
    float precision; the row sums are added in float64.

    Args:
        samples: the draws (see the module docstring: (n, d) array, pytree, Result).
        score: ∇log p at the draws as an (n, d) array (or a pytree shaped like ``samples``);
            or a function θ ↦ ∇log p(θ) of one draw in its original structure; or an
            :class:`sgmc.Posterior` (score −∇U; for a tempered target use
            :func:`score_function` with ``temperature``).
        c: kernel scale c > 0.
        beta: kernel exponent β ∈ (−1, 0).
        chunk_size: rows of the Stein kernel matrix evaluated at once, ≥ 1. Default:
            2²¹ // n clipped to [8, 1024], so a chunk holds ~2 million kernel entries
            (~36 bytes of temporaries each; measured peak +88 MB at n = 10,000 and +153 MB
            at n = 40,000, d = 5). The speed hardly depends on it: n = 10,000, d = 5 took
            2.8 s on 2 busy cores with 64, 200 or 512 rows.
        statistic: ``"v"`` or ``"u"``.
        score_batch: draws per compiled batch when ``score`` is a function.
    """
    c = check.positive("c", c)
    beta = check.real("beta", beta, lo=-1.0, hi=0.0, lo_open=True, hi_open=True)
    chunk = None if chunk_size is None else check.integer("chunk_size", chunk_size, lo=1)
    batch = check.integer("score_batch", score_batch, lo=1)
    check.choice("statistic", statistic, ("v", "u"))
    x, unravel = flatten_draws(samples)
    n, d = x.shape
    if chunk is None:
        chunk = int(np.clip(2 ** 21 // n, 8, 1024))
    if statistic == "u" and n < 2:
        raise ValueError("the U-statistic needs at least 2 draws")
    from sgmc.model.oracle import Problem

    if not (callable(score) or isinstance(score, Problem) or hasattr(score, "shape")
            or isinstance(score, (dict, list, tuple))):
        raise TypeError("score must be an (n, d) array of ∇log p at the draws, a function "
                        f"θ ↦ ∇log p(θ), or an sgmc.Posterior; got {type(score).__name__}")
    s = _scores(score, x, unravel, batch)
    dtype = jnp.result_type(float)
    centred = x - x.mean(axis=0)
    rows = _stein_row_sums(jnp.asarray(centred, dtype), jnp.asarray(s, dtype),
                           jnp.asarray(c * c, dtype), jnp.asarray(beta, dtype),
                           chunk_size=min(chunk, n))
    total = float(np.sum(np.asarray(rows, np.float64)))
    if statistic == "v":
        value = total / n ** 2
    else:
        diag = c ** (2 * beta) * np.sum(s * s) - 2.0 * beta * d * c ** (2 * beta - 2) * n
        value = (total - diag) / (n * (n - 1))
    return float(np.sqrt(max(value, 0.0)))


# -- Gaussian references ------------------------------------------------------------------
def _mean_cov(mean, cov, d: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """A reference (mean (d,), cov (d, d)) checked for shape, symmetry and PSD."""
    try:
        m = np.atleast_1d(np.asarray(mean, np.float64))
        s = np.asarray(cov, np.float64)
    except (TypeError, ValueError) as err:
        raise TypeError(f"mean and cov must be numeric arrays: {err}") from None
    if s.ndim == 0:
        s = s.reshape(1, 1)
    if m.ndim != 1:
        raise ValueError(f"mean must be a vector, got shape {m.shape}")
    if d is not None and m.shape != (d,):
        raise ValueError(f"mean must have shape ({d},) to match the draws, got {m.shape}")
    if s.shape != (m.size, m.size):
        raise ValueError(f"cov must have shape ({m.size}, {m.size}), got {s.shape}")
    if not (np.all(np.isfinite(m)) and np.all(np.isfinite(s))):
        raise ValueError("mean and cov must be finite")
    scale = max(float(np.max(np.abs(s))), 1e-300)
    if not np.allclose(s, s.T, rtol=1e-6, atol=1e-9 * scale):
        raise ValueError("cov must be symmetric")
    eig = np.linalg.eigvalsh(s)
    if eig[0] < -1e-9 * max(scale, 1.0):
        raise ValueError(f"cov must be positive semi-definite; its smallest eigenvalue is "
                         f"{eig[0]:.3g}")
    return m, (s + s.T) / 2


def _logdet_pd(s: np.ndarray, name: str) -> float:
    sign, logdet = np.linalg.slogdet(s)
    if sign <= 0 or np.linalg.eigvalsh(s)[0] <= 0:
        raise ValueError(f"{name} must be positive definite (it is singular)")
    return float(logdet)


def normal_kl(mean1, cov1, mean2, cov2) -> float:
    """KL(N(m₁, Σ₁) ‖ N(m₂, Σ₂)) = ½ [tr(Σ₂⁻¹Σ₁) + (m₂ − m₁)ᵀ Σ₂⁻¹ (m₂ − m₁) − d
    + log det Σ₂ − log det Σ₁]; both covariances positive definite."""
    m1, s1 = _mean_cov(mean1, cov1)
    m2, s2 = _mean_cov(mean2, cov2, m1.size)
    ld1, ld2 = _logdet_pd(s1, "cov1"), _logdet_pd(s2, "cov2")
    diff = m2 - m1
    sol = np.linalg.solve(s2, np.column_stack([s1, diff]))
    value = 0.5 * (np.trace(sol[:, :-1]) + diff @ sol[:, -1] - m1.size + ld2 - ld1)
    return float(max(value, 0.0))


def _sqrtm_psd(s: np.ndarray) -> np.ndarray:
    """Symmetric square root by eigh, negative round-off eigenvalues set to 0."""
    w, v = np.linalg.eigh((s + s.T) / 2)
    return (v * np.sqrt(np.clip(w, 0.0, None))) @ v.T


def normal_w2(mean1, cov1, mean2, cov2, squared: bool = False) -> float:
    """2-Wasserstein distance between N(m₁, Σ₁) and N(m₂, Σ₂) (Givens & Shortt 1984):

        W2² = ‖m₁ − m₂‖² + tr(Σ₁ + Σ₂ − 2 (Σ₂^½ Σ₁ Σ₂^½)^½),

    with symmetric square roots by ``numpy.linalg.eigh`` (covariances PSD). Returns W2, or
    W2² with ``squared=True``."""
    m1, s1 = _mean_cov(mean1, cov1)
    m2, s2 = _mean_cov(mean2, cov2, m1.size)
    r2 = _sqrtm_psd(s2)
    cross = _sqrtm_psd(r2 @ s1 @ r2)
    value = max(float(np.sum((m1 - m2) ** 2) + np.trace(s1 + s2 - 2.0 * cross)), 0.0)
    return value if squared else float(np.sqrt(value))


def _moments(samples: PyTree, ddof: int) -> tuple[np.ndarray, np.ndarray]:
    x, _ = flatten_draws(samples)
    ddof = check.integer("ddof", ddof, lo=0, hi=1)
    if x.shape[0] <= x.shape[1]:
        raise ValueError(f"a {x.shape[1]}-dimensional covariance needs more than {x.shape[1]} "
                         f"draws, got {x.shape[0]}")
    cov = np.atleast_2d(np.cov(x, rowvar=False, ddof=ddof))
    return x.mean(axis=0), cov


def gaussian_kl(samples: PyTree, mean, cov, *, ddof: int = 1) -> float:
    """KL(N(x̄, Ĉ) ‖ N(mean, cov)): the KL divergence *from* the Gaussian moment-matched to
    the draws (sample mean x̄, sample covariance Ĉ with ``ddof``) *to* the reference.

    It compares only the first two moments: draws from any distribution with the reference's
    mean and covariance score ≈ 0. For exact draws it is ≈ d(d + 3)/(4n) > 0 (the estimation
    error of the moments). See :func:`normal_kl` for the formula; Ĉ must be non-singular
    (more draws than dimensions)."""
    m, c = _moments(samples, ddof)
    return normal_kl(m, c, *_mean_cov(mean, cov, m.size))


def gaussian_w2(samples: PyTree, mean, cov, *, ddof: int = 1, squared: bool = False) -> float:
    """2-Wasserstein distance between the Gaussian moment-matched to the draws (sample mean
    and covariance with ``ddof``) and the reference N(mean, cov) (:func:`normal_w2`). Like
    :func:`gaussian_kl` it sees only the first two moments."""
    m, c = _moments(samples, ddof)
    return normal_w2(m, c, *_mean_cov(mean, cov, m.size), squared=squared)


def empirical_w2_1d(x, y) -> float:
    """Exact 2-Wasserstein distance between two 1-D empirical distributions (any sizes):
    W2² = ∫₀¹ (F⁻¹(q) − G⁻¹(q))² dq with the step quantile functions of the samples."""
    a = np.sort(np.asarray(x, np.float64).ravel())
    b = np.sort(np.asarray(y, np.float64).ravel())
    for name, v in (("x", a), ("y", b)):
        if v.size == 0 or not np.all(np.isfinite(v)):
            raise ValueError(f"{name} must hold at least one finite number")
    q = np.union1d(np.arange(1, a.size + 1) / a.size, np.arange(1, b.size + 1) / b.size)
    widths = np.diff(np.concatenate([[0.0], q]))
    mid = q - widths / 2           # inside each piece, where both quantile functions are flat
    fa = a[np.minimum((mid * a.size).astype(np.int64), a.size - 1)]
    fb = b[np.minimum((mid * b.size).astype(np.int64), b.size - 1)]
    return float(np.sqrt(np.sum(widths * (fa - fb) ** 2)))


# -- optimisation -------------------------------------------------------------------------
def success_probability(opt, *, tol: float, f_star: float | None = None,
                        x_star=None, cumulative: bool = False) -> np.ndarray:
    """Fraction of an :class:`sgmc.OptimizeResult`'s replications that succeeded at each
    trace point (``opt.trace_steps``).

    Success is F(X_n) ≤ f_star + tol (give ``f_star``), or ‖X_n − x_star‖ ≤ tol (give
    ``x_star``; needs ``minimize(..., record_path=True)``). Non-finite values never count.
    With ``cumulative=True``: the fraction that has succeeded at some recorded point so far.
    """
    from sgmc.run.optimize import OptimizeResult

    if not isinstance(opt, OptimizeResult):
        raise TypeError(f"opt must be an sgmc.OptimizeResult, got {type(opt).__name__}")
    tol = check.nonnegative("tol", tol)
    if (f_star is None) == (x_star is None):
        raise ValueError("give exactly one of f_star (success: F ≤ f_star + tol) and x_star "
                         "(success: ‖X − x_star‖ ≤ tol)")
    if f_star is not None:
        hit = np.asarray(opt.trace) <= check.real("f_star", f_star) + tol
    else:
        if opt.path is None:
            raise ValueError("x_star needs the iterates: run minimize(..., record_path=True)")
        path = np.asarray(opt.path, np.float64)
        target = np.asarray(x_star, np.float64)
        if target.shape != path.shape[2:]:
            raise ValueError(f"x_star must have the iterates' shape {path.shape[2:]}, got "
                             f"{target.shape}")
        dist = np.sqrt(np.sum((path - target) ** 2, axis=tuple(range(2, path.ndim))))
        hit = dist <= tol
    if cumulative:
        hit = np.maximum.accumulate(hit, axis=1)
    return hit.mean(axis=0)
