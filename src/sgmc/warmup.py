"""Warm-up: choose a sampler's step size, friction and preconditioner from the problem.

``tuned, start = sgmc.warmup(problem, sampler, init)`` fills in what the sampler leaves unset
(``sgmc.sghmc(batch_size=100)``: step size and friction) and returns a start that
:func:`sgmc.sample` accepts. Its stages, each counted in data passes (per-example gradient
evaluations / N) and reported in :class:`WarmupReport`; none of its points is kept as a draw:

1. **Mode.** Adam (optax) on minibatch gradients of U from ``init`` (on the sampled,
   unconstrained scale), with a cosine-decayed learning rate; then, for small d
   (d ≤ ``dense_max``), damped Newton steps on the full-data energy with backtracking,
   which land on the mode of a log-concave posterior whatever its conditioning.
2. **Curvature and preconditioner** P = L Lᵀ ≈ H⁻¹, H = ∇²U at the mode, never forming H for
   large d: ``"dense"`` (small d: H from d Hessian-vector products, P = H⁻¹ with H's
   eigenvalues clipped to be positive), ``"diagonal"`` (P = diag(H)⁻¹, diag(H) exact for
   small d, else Hutchinson's estimate), ``"low_rank"`` (the diagonal, corrected along the
   ``rank`` Lanczos directions of the diagonally scaled Hessian that deviate most from 1) or
   ``"identity"``; ``"auto"`` = dense for d ≤ ``dense_max``, diagonal above.
3. **Whitened curvature and gradient noise.** The extreme eigenvalues λ_min, λ_max of the
   whitened Hessian Lᵀ H L (Lanczos, or exact for small d), and the largest eigenvalue B of
   the covariance of the sampler's *own* estimator's whitened error Lᵀ(∇̃U − ∇U), measured
   at ``noise_points`` Laplace draws θ = mode + √2 C ζ (C Cᵀ = H⁻¹; for large d at the point
   found only) with the estimator's state (SVRG anchor, SAGA table) taken at the mode — the
   √2 because anchor and point are then as far apart as two independent posterior draws.
   EWSG is bounded by its uniform minibatches.
4. **Rules** (:mod:`sgmc.tuning`): friction D = 2√λ_min (critical damping of the slowest
   whitened direction) when unset; step size h = the largest with predicted covariance
   inflation within 1 ± ``budget`` (default 10 %) in every whitened direction with curvature
   in [λ_min, λ_max], from the integrator's exact stationary covariance on a quadratic with
   gradient noise B. Replica exchange: one step size per temperature (gradient noise weighs
   less at higher τ). The SVRG period defaults to one epoch (:func:`sgmc.svrg`). pSGLD keeps
   its adaptive preconditioner; its step is set as for SGLD with P = its RMSprop
   preconditioner at the mode.
5. **Draws (optional, ``adapt_steps`` > 0).** Stan's windowed adaptation, one window: run the
   tuned sampler ``adapt_steps`` steps from the mode, re-estimate P from those draws
   (:func:`sgmc.preconditioners.from_draws`), then redo stage 3–4 with it. For posteriors
   that are far from Gaussian, whose covariance the mode's curvature misrepresents.

What it does not guarantee: the rules are exact for a Gaussian target sampled with Gaussian
gradient noise; for a multimodal target the curvature of the one mode found says nothing of
the others (use replica exchange, whose per-temperature steps come from the same mode), and
for a neural network the curvature is not stationary along the run (the diagonal
preconditioner and bias-budget step are then a starting point, not a bound).
"""

from __future__ import annotations

import dataclasses
import math
import time
import warnings
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.flatten_util import ravel_pytree

from . import _validate as check
from . import curvature, tuning
from . import preconditioners as precond
from .coupling.replica import ReplicaExchange
from .dynamics import PSGLD, Langevin, Underdamped
from .estimators import EWSG, Context, uniform
from .problem import Problem
from .pytree import replace
from .sampler import Sampler
from .schedules import as_schedule

__all__ = ["PRECONDITIONERS", "Warmup", "WarmupReport", "warmup"]

PyTree = Any
PRECONDITIONERS = ("auto", "identity", "diagonal", "dense", "low_rank")


@dataclasses.dataclass(frozen=True)
class WarmupReport:
    """What :func:`warmup` measured and chose; passes are full data passes (per-example
    gradient evaluations / N; a Hessian-vector product counts 2)."""

    passes: dict          # by stage: "mode", "curvature", "noise", "draws"
    seconds: float
    preconditioner: str   # identity | diagonal | dense | low_rank
    curvature: tuple      # (λ_min, λ_max) of the whitened Hessian Lᵀ H L
    raw_curvature: tuple  # (λ_min, λ_max) of H itself (estimated; exact for small d)
    noise: float          # B: the largest eigenvalue of the whitened gradient-noise covariance
    step_sizes: tuple     # one per replica (one for a plain sampler)
    friction: float | None
    inflation: tuple      # at each step size, the predicted variance ratio farthest from 1
    svrg_period: int | None
    energy_at_mode: float

    @property
    def total_passes(self) -> float:
        return float(sum(self.passes.values()))

    def __str__(self) -> str:
        h = ", ".join(f"{v:.4g}" for v in self.step_sizes)
        lines = [f"warmup: {self.total_passes:.1f} data passes ("
                 + ", ".join(f"{k} {v:.1f}" for k, v in self.passes.items())
                 + f"), {self.seconds:.1f} s",
                 f"  preconditioner {self.preconditioner}; whitened curvature "
                 f"[{self.curvature[0]:.3g}, {self.curvature[1]:.3g}] (raw "
                 f"[{self.raw_curvature[0]:.3g}, {self.raw_curvature[1]:.3g}]); gradient "
                 f"noise B = {self.noise:.3g}",
                 f"  step size {h}" + ("" if self.friction is None
                                       else f", friction {self.friction:.4g}")
                 + "; predicted inflation "
                 + ", ".join(f"{v:.3f}" for v in self.inflation)]
        if self.svrg_period is not None:
            lines.append(f"  SVRG period {self.svrg_period}")
        return "\n".join(lines)


class Warmup(tuple):
    """``(tuned, start)``, as unpacked by ``tuned, start = sgmc.warmup(...)``, with the
    :class:`WarmupReport` as ``.report``."""

    report: WarmupReport

    def __new__(cls, tuned: Any, start: PyTree, report: WarmupReport) -> Warmup:
        out = super().__new__(cls, (tuned, start))
        out.report = report
        return out


# -- stage helpers ---------------------------------------------------------------------------

def _base(sampler):
    return sampler.sampler if isinstance(sampler, ReplicaExchange) else sampler


def _temperatures(sampler) -> list[float]:
    if isinstance(sampler, ReplicaExchange):
        return [float(s(0)) for s in sampler.temperatures]
    return [float(sampler.temperature)]


def _grad_estimate(problem, batch_size):
    """θ, key ↦ the uniform minibatch gradient (exact without a batch size)."""
    if batch_size is None or not problem.has_data:
        return lambda theta, key: problem.full_grad(theta)
    n = problem.data_rows

    def grad(theta, key):
        idx = jax.random.randint(key, (batch_size,), 0, n, dtype=jnp.int32)
        return problem.estimate_grad(theta, idx)
    return grad


def _adam(problem, z0, batch_size, steps, lr, key):
    """Adam on minibatch gradients, cosine-decayed learning rate, one compiled scan."""
    opt = optax.adam(optax.cosine_decay_schedule(lr, steps, alpha=1e-2))
    grad = _grad_estimate(problem, batch_size)

    @jax.jit
    def run(z, key):
        def body(carry, k):
            z, s = carry
            upd, s = opt.update(grad(z, k), s, z)
            return (optax.apply_updates(z, upd), s), None
        (z, _), _ = jax.lax.scan(body, (z, opt.init(z)), jax.random.split(key, steps))
        return z
    return run(z0, key)


def _spd_inverse(h: np.ndarray) -> tuple[np.ndarray, bool]:
    """H⁻¹ with H's eigenvalues replaced by max(|λ|, 1e-8 λ_max): positive definite whatever
    H is (a saddle-free inverse); also whether H itself was positive definite."""
    lam, vec = np.linalg.eigh(h)
    top = max(np.abs(lam).max(), 1e-30)
    fixed = np.maximum(np.abs(lam), 1e-8 * top)
    return (vec / fixed) @ vec.T, bool(lam.min() > 0)


def _newton(problem, z, max_steps, passes):
    """Damped Newton with backtracking on the full-data energy (small d): z and its
    Hessian at the end. Adds its data passes to ``passes``."""
    flat, unravel = ravel_pytree(z)
    energy = jax.jit(lambda f: problem.full_energy(unravel(f)))
    grad = jax.jit(lambda f: ravel_pytree(problem.full_grad(unravel(f)))[0])
    d = flat.size
    x = np.asarray(flat, np.float64)
    e = float(energy(jnp.asarray(x, flat.dtype)))
    for _ in range(max_steps):
        g = np.asarray(grad(jnp.asarray(x, flat.dtype)), np.float64)
        h = curvature.hessian(problem, unravel(jnp.asarray(x, flat.dtype)))
        passes["mode"] += 1 + 2 * d
        inv, _ = _spd_inverse(h)
        step = inv @ g
        decrement = float(g @ step)
        if not np.isfinite(decrement) or decrement < 1e-8 * max(1.0, d):
            break
        t = 1.0
        for _ in range(30):
            cand = x - t * step
            e_new = float(energy(jnp.asarray(cand, flat.dtype)))
            passes["mode"] += 1
            if np.isfinite(e_new) and e_new <= e - 1e-4 * t * decrement:
                break
            t *= 0.5
        else:
            break
        x, e = cand, e_new
    z = unravel(jnp.asarray(x, flat.dtype))
    h = curvature.hessian(problem, z)
    passes["curvature"] += 2 * d
    return z, h


def _whitened_matvec(problem, z, pre):
    """v ↦ Lᵀ H L v on flat vectors."""
    _, unravel = ravel_pytree(z)

    @jax.jit
    def mv(v):
        w = pre.scale(unravel(v))
        return ravel_pytree(pre.scale_t(curvature.hvp(problem, z, w)))[0]
    return mv


def _preconditioner(kind, problem, z, hess, rank, probes, iters, seed, passes):
    """P ≈ H⁻¹ at the mode z in the requested form."""
    flat, unravel = ravel_pytree(z)
    d = flat.size
    if kind == "identity":
        return precond.identity()
    if kind == "dense":
        inv, _ = _spd_inverse(hess)
        return precond.dense(inv)
    if hess is not None:
        diag = np.diag(hess)
    else:
        diag, cost = _fisher_diagonal(problem, z, probes, seed)
        passes["curvature"] += cost
    top = max(np.abs(diag).max(), 1e-30)
    var = 1.0 / np.maximum(np.abs(diag), 1e-8 * top)
    if kind == "diagonal":
        return precond.diagonal(unravel(jnp.asarray(var, flat.dtype)))
    # low rank: Lanczos on S^{1/2} H S^{1/2}; keep the Ritz directions farthest from 1.
    base = precond.diagonal(unravel(jnp.asarray(var, flat.dtype)))
    ritz, vecs = curvature.lanczos(_whitened_matvec(problem, z, base), d, iters, seed)
    passes["curvature"] += 2 * len(ritz)
    mu = np.maximum(np.abs(ritz), 1e-8 * max(np.abs(ritz).max(), 1e-30))
    order = np.argsort(-np.abs(np.log(mu)))[:min(rank, len(mu))]
    basis, _ = np.linalg.qr(vecs[:, order])
    return precond.low_rank(var, basis, 1.0 / mu[order])


def _fisher_diagonal(problem, z, probes, seed) -> tuple[np.ndarray, float]:
    """diag(H) for large d, flat: the data term by the empirical Fisher w Σ_i (∇L_i)² (one
    pass of per-example gradients; nonnegative, unlike a Hutchinson estimate of an indefinite
    network Hessian, and the Hessian's expectation for a well-specified model), the exact term
    (prior) by Hutchinson's estimate (no data). Batched likelihoods, which have no
    per-example gradients, use Hutchinson's estimate of the whole Hessian."""
    if not problem.has_data or getattr(problem, "batched", False):
        diag = curvature.diagonal(problem, z, probes, seed)
        return np.asarray(ravel_pytree(diag)[0], np.float64), 2.0 * probes

    def squares(p, chunk):
        return jax.tree.map(lambda g: jnp.sum(g ** 2, axis=0), problem.chunk_grads(p, chunk))

    fisher = jax.jit(lambda p: problem.full_data_sum(squares, p))(z)
    flat, unravel = ravel_pytree(z)
    exact = jax.jit(lambda v: jax.jvp(problem.exact_grad, (z,), (unravel(v),))[1])
    total = jnp.zeros_like(flat)
    for key in jax.random.split(jax.random.key(seed), probes):
        v = jax.random.rademacher(key, flat.shape, flat.dtype)
        total = total + v * ravel_pytree(exact(v))[0]
    diag = (problem.data_weight * np.asarray(ravel_pytree(fisher)[0], np.float64)
            + np.asarray(total, np.float64) / probes)
    return diag, 1.0


def _whitened_extremes(problem, z, pre, hess, iters, seed, passes):
    if hess is not None:
        flat, unravel = ravel_pytree(z)
        eye = np.eye(flat.size)
        lmat = np.stack([np.asarray(ravel_pytree(pre.scale(unravel(jnp.asarray(
            col, flat.dtype))))[0], np.float64) for col in eye], axis=1)
        lam = np.linalg.eigvalsh(lmat.T @ hess @ lmat)
        return float(lam[0]), float(lam[-1])
    flat, _ = ravel_pytree(z)
    ritz, _ = curvature.lanczos(_whitened_matvec(problem, z, pre), flat.size, iters, seed)
    passes["curvature"] += 2 * len(ritz)
    return float(ritz[0]), float(ritz[-1])


def _noise(problem, base, z, pre, laplace, num_points, replicates, key, passes) -> float:
    """B: the top eigenvalue of the covariance of Lᵀ(∇̃U − ∇U) for the sampler's estimator
    (its state at the mode z), at Laplace points z + √2 C ζ, C Cᵀ = H⁻¹ (``laplace``, a
    preconditioner holding C; it is not P when P is not H⁻¹: identity, diagonal, the
    user's own)."""
    b = base.batch_size
    if b is None or not problem.has_data:
        return 0.0
    est = base.estimator
    if isinstance(est, EWSG):  # bounded by its uniform minibatches (or its SVRG terms)
        est = uniform() if est.control is None else est.control.with_batch_size(b)
    n = problem.data_rows
    k_init, k_pts, k_est = jax.random.split(key, 3)
    ctx0 = Context(t=jnp.int32(0), step_size=jnp.float32(1.0), temperature=jnp.float32(1.0))
    ctx1 = ctx0._replace(t=jnp.int32(1))
    idx0 = jax.random.randint(k_init, (b,), 0, n, dtype=jnp.int32)
    # The state at the mode: init, then one estimate at t = 0 (an SVRG snapshot there).
    state = est.init(problem, z, k_init)
    _, state, n0 = est.estimate(problem, state, z, idx0, k_init, ctx0)
    evals = int(est.init_evals(problem)) + int(n0)

    @jax.jit
    def errors(point, key):
        full = problem.full_grad(point)

        def one(k):
            k_idx, k_rng = jax.random.split(k)
            idx = jax.random.randint(k_idx, (b,), 0, n, dtype=jnp.int32)
            g, _, cnt = est.estimate(problem, state, point, idx, k_rng, ctx1)
            err = jax.tree.map(jnp.subtract, g, full)
            return ravel_pytree(pre.scale_t(err))[0], cnt
        return jax.vmap(one)(jax.random.split(key, replicates))

    rows = []
    for i, (kp, ke) in enumerate(zip(jax.random.split(k_pts, num_points),
                                     jax.random.split(k_est, num_points), strict=True)):
        zeta = jax.tree.map(lambda x, kk=kp: jax.random.normal(kk, jnp.shape(x), x.dtype), z)
        point = z if i == 0 else jax.tree.map(lambda a, v: a + math.sqrt(2.0) * v, z,
                                              laplace.scale(zeta))
        err, cnt = errors(point, ke)
        rows.append(np.asarray(err, np.float64))
        evals += int(np.sum(cnt)) + n
    e = np.concatenate(rows)
    passes["noise"] += evals / n
    sv = np.linalg.svd(e / math.sqrt(e.shape[0]), compute_uv=False)
    return float(sv[0] ** 2)


def _ready(base):
    """``base`` with placeholder values for what is unset, so that its other checks run."""
    dyn = base.dynamics
    if getattr(dyn, "friction", 0.0) is None:
        dyn = replace(dyn, friction=1.0)
    return replace(base, dynamics=dyn, step_size=base.step_size or as_schedule(1e-30))


def _dynamics_kind(dyn) -> str:
    if isinstance(dyn, Underdamped):
        return dyn.integrator
    return "langevin"


def _psgld_preconditioner(problem, base, z, replicates, key, passes):
    """pSGLD's RMSprop preconditioner G = 1/(λ + √V) at the mode, V = E[ḡ²] over minibatch
    gradients ḡ = ∇̃U/(wN): what its running average settles to there."""
    grad = _grad_estimate(problem, base.batch_size)
    wn = problem.data_weight * problem.num_data if problem.has_data else 1.0
    gs = jax.jit(jax.vmap(lambda k: ravel_pytree(grad(z, k))[0]))(
        jax.random.split(key, replicates))
    passes["noise"] += replicates * (base.batch_size or problem.num_data) / max(
        problem.num_data, 1)
    v = np.mean((np.asarray(gs, np.float64) / wn) ** 2, axis=0)
    g = 1.0 / (float(base.dynamics.eps) + np.sqrt(v))
    return precond.diagonal(ravel_pytree(z)[1](jnp.asarray(g, jnp.float32)))


def _rules(kind, lam, noise, temps, friction, budget):
    """(friction, step sizes, predicted inflations) from :mod:`sgmc.tuning`."""
    lo, hi = lam
    if kind != "langevin" and friction is None:
        friction = tuning.friction_rule(lo)
    # B bounds the noise of the noisiest direction; others have less, and an integrator
    # that deflates (the splitting at large h) is then worse off: the budget must hold for
    # any noise in [0, B]. Inflation grows with the noise, so the two ends suffice.
    ends = (0.0, noise) if noise > 0 else (0.0,)
    steps = [min(tuning.largest_step(kind, lo, hi, tau, friction, b, budget) for b in ends)
             for tau in temps]
    worst = [max((tuning.inflation(kind, h, c, tau, friction, b)
                  for c in np.geomspace(lo, hi, 9) for b in ends), key=lambda v: abs(v - 1.0))
             for h, tau in zip(steps, temps, strict=True)]  # the farthest from 1, signed
    return friction, steps, worst


def _with(sampler, pre, friction, steps):
    """The sampler with its preconditioner, friction and step sizes set."""
    base = _base(sampler)
    dyn = base.dynamics
    if isinstance(dyn, (Langevin, Underdamped)):
        dyn = replace(dyn, preconditioner=pre)
    if isinstance(dyn, Underdamped) and dyn.friction is None:
        dyn = replace(dyn, friction=jnp.float32(friction))
    new_base = replace(base, dynamics=dyn, step_size=base.step_size
                       if base.step_size is not None else as_schedule(steps[0]))
    if not isinstance(sampler, ReplicaExchange):
        return new_base
    step_sizes = sampler.step_sizes
    if any(s is None for s in step_sizes):
        step_sizes = tuple(as_schedule(h) for h in steps)
    return replace(sampler, sampler=new_base, step_sizes=step_sizes)


def warmup(problem: Problem, sampler: Any, init: PyTree, *, num_chains: int | None = None,
           preconditioner: str = "auto", budget: float = 0.1, seed: int = 0,
           optimizer_steps: int | None = None, learning_rate: float = 0.05,
           newton_steps: int = 20, dense_max: int = 256, rank: int = 10,
           lanczos_iters: int = 30, hutchinson_probes: int = 16, noise_points: int = 4,
           noise_replicates: int = 16, adapt_steps: int = 0,
           verbose: bool = False) -> Warmup:
    """Tune ``sampler`` for ``problem``: see the module docstring for the stages and rules.

    Args:
        problem: an :class:`sgmc.Posterior` (or Objective sampled at τ > 0).
        sampler: :func:`sgmc.sgld`, :func:`sgmc.sghmc` (any integrator and estimator),
            :func:`sgmc.psgld`, or :func:`sgmc.replica_exchange` over one of them; its unset
            ``step_size`` (and ``friction``) are chosen, set ones are kept. A sampler that
            already holds a non-identity preconditioner keeps it (``preconditioner`` must
            then be ``"auto"``).
        init: one position, as :func:`sgmc.sample` takes it (constrained, for a problem with
            constraints): where the mode search starts.
        num_chains: None returns one start (the mode); k returns k starts stacked on a leading
            axis (Laplace draws mode + L ζ), for ``sample(..., num_chains=k,
            init_per_chain=True)``.
        preconditioner: ``"auto"`` (dense for d ≤ ``dense_max``, else diagonal),
            ``"identity"``, ``"diagonal"``, ``"dense"`` or ``"low_rank"``.
        budget: the largest predicted relative inflation (or deflation) of the stationary
            variance in any whitened direction, in (0, 1); default 0.1.
        seed: seeds every random stage.
        optimizer_steps: Adam steps (default: 20 epochs of minibatches, at least 500).
        learning_rate: Adam's initial learning rate (cosine-decayed 100-fold).
        newton_steps: the most damped Newton steps after Adam (d ≤ ``dense_max`` only).
        dense_max: the largest d for which H is formed (d Hessian-vector products).
        rank: directions corrected by the low-rank preconditioner.
        lanczos_iters: Lanczos steps for the extreme eigenvalues (large d).
        hutchinson_probes: probes for diag(H) (large d).
        noise_points: Laplace points at which the gradient noise is measured.
        noise_replicates: minibatches per noise point.
        adapt_steps: > 0: re-estimate P from that many steps of the tuned sampler (stage 5).
        verbose: print the report.

    Returns:
        ``(tuned, start)`` (a :class:`Warmup`; ``.report`` is a :class:`WarmupReport`).
    """
    t0 = time.perf_counter()
    if not isinstance(problem, Problem):
        raise TypeError("problem must be an sgmc.Posterior or sgmc.Objective, got "
                        f"{type(problem).__name__}")
    base = _base(sampler)
    if not isinstance(base, Sampler):
        raise TypeError("sampler must be sgmc.sgld/sghmc/psgld(...) or replica_exchange over "
                        f"one, got {type(sampler).__name__}")
    if type(base) is not Sampler:  # a recipe over a sampler (sgmc.cyclical)
        raise TypeError(f"warmup tunes a plain sampler, got {type(base).__name__}: warm up "
                        "the base sampler, then wrap the tuned one (e.g. "
                        "sgmc.cyclical(tuned, num_cycles, num_steps=K))")
    if not isinstance(base.dynamics, (Langevin, Underdamped, PSGLD)):
        raise TypeError(f"warmup tunes sgld, sghmc and psgld; {type(base.dynamics).__name__} "
                        "(e.g. sgmc.sgnht) needs its step size given")
    check.choice("preconditioner", preconditioner, PRECONDITIONERS)
    budget = check.real("budget", budget, lo=0.0, hi=1.0)
    if not 0.0 < budget < 1.0:
        raise ValueError(f"budget must lie in (0, 1), got {budget}")
    seed = check.integer("seed", seed, lo=0, hi=2**32 - 1)
    if num_chains is not None:
        num_chains = check.integer("num_chains", num_chains, lo=1)
    for name, v in (("newton_steps", newton_steps), ("dense_max", dense_max),
                    ("adapt_steps", adapt_steps)):
        check.integer(name, v, lo=0)
    for name, v in (("rank", rank), ("lanczos_iters", lanczos_iters),
                    ("hutchinson_probes", hutchinson_probes), ("noise_points", noise_points)):
        check.integer(name, v, lo=1)
    check.integer("noise_replicates", noise_replicates, lo=2)
    lr = check.positive("learning_rate", learning_rate)
    temps = _temperatures(sampler)
    if min(temps) <= 0.0:
        raise ValueError("warmup tunes samplers at temperature > 0 (the step-size rule bounds "
                         "the stationary variance, which is 0 at τ = 0); for optimisation "
                         "use sgmc.minimize")
    own = getattr(base.dynamics, "preconditioner", precond.identity())
    if own.kind != "identity" and preconditioner != "auto":
        raise ValueError("the sampler already holds a preconditioner; leave "
                         "preconditioner='auto' to keep it, or build the sampler without one")
    # check_support takes per-chain points (a leading chain axis), as sample() passes them
    problem.check_support(jax.tree.map(lambda x: jnp.asarray(x)[None], init))
    z0 = jax.tree.map(lambda x: jnp.asarray(x, jnp.float32), problem.unconstrain(init))
    _ready(base).check(problem, z0, 1)  # batch size, estimator: all but the unset values
    d = ravel_pytree(z0)[0].size
    keys = jax.random.split(jax.random.key(seed), 5)
    passes = {"mode": 0.0, "curvature": 0.0, "noise": 0.0}

    # 1. Mode: Adam, then Newton for small d.
    b = base.batch_size if problem.has_data else None
    n_rows = problem.data_rows if problem.has_data else 1
    per_epoch = 1 if b is None else max(1, -(-n_rows // b))
    steps = optimizer_steps if optimizer_steps is not None else max(500, 20 * per_epoch)
    steps = check.integer("optimizer_steps", steps, lo=1)
    z = _adam(problem, z0, b, steps, lr, keys[0])
    passes["mode"] += steps * (1.0 if b is None else b / n_rows)
    small = d <= dense_max
    hess = None
    if small:
        z, hess = _newton(problem, z, newton_steps, passes)
    if not all(bool(jnp.all(jnp.isfinite(x))) for x in jax.tree.leaves(z)):
        raise FloatingPointError("warmup's mode search diverged (non-finite position): lower "
                                 "learning_rate, or start closer to the posterior's bulk")
    energy = float(problem.full_energy(z))

    # 2. Preconditioner.
    kind = preconditioner
    if own.kind != "identity":
        pre, kind = own, own.kind
    else:
        if kind == "auto":
            kind = "dense" if small else "diagonal"
        if kind == "dense" and not small:
            raise ValueError(f"preconditioner='dense' needs d ≤ dense_max = {dense_max} "
                             f"(d = {d}); use 'low_rank' or 'diagonal'")
        if isinstance(base.dynamics, PSGLD):
            pre, kind = _psgld_preconditioner(problem, base, z, noise_replicates, keys[1],
                                              passes), "psgld"
        else:
            pre = _preconditioner(kind, problem, z, hess, rank, hutchinson_probes,
                                  lanczos_iters, seed, passes)
    raw = ((float(np.linalg.eigvalsh(hess)[0]), float(np.linalg.eigvalsh(hess)[-1]))
           if hess is not None else (math.nan, math.nan))

    def tune(pre):
        lam = _whitened_extremes(problem, z, pre, hess, lanczos_iters, seed, passes)
        if lam[0] <= 0.0:
            warnings.warn(f"warmup: the whitened Hessian at the point found has λ_min = "
                          f"{lam[0]:.3g} ≤ 0 (not a strict mode: a saddle, a flat direction, "
                          "or a non-log-concave target); the step-size rule uses "
                          "1e-3 λ_max in its place", UserWarning, stacklevel=3)
        # A non-positive λ_min is replaced by 1e-3 λ_max (the warning above); a positive one
        # is kept (an isotropic sampler on a badly conditioned target needs its friction).
        lam = (lam[0] if lam[0] > 0.0 else 1e-3 * lam[1], lam[1])
        # Small d: at Laplace points around the mode. Large d (a network, no mode to speak
        # of): where the optimiser stopped, with as many minibatches in all.
        points, reps = ((noise_points, noise_replicates) if small
                        else (1, noise_points * noise_replicates))
        noise = _noise(problem, base, z, pre, laplace, points, reps, keys[2], passes)
        fr = getattr(base.dynamics, "friction", None)
        fr, hs, infl = _rules(_dynamics_kind(base.dynamics), lam, noise, temps, fr, budget)
        return lam, noise, fr, hs, infl

    # The Laplace approximation N(mode, H⁻¹), where the noise is measured (small d; large d
    # measures it at the point found only, so any factor does).
    laplace = precond.dense(_spd_inverse(hess)[0]) if small else pre
    lam, noise, fr, hs, infl = tune(pre)
    tuned = _with(sampler, pre if kind != "psgld" else own, fr, hs)

    # 5. Optional: P from warm-up draws, then the rules again.
    if adapt_steps > 0 and kind != "psgld":
        from .driver.api import sample  # the driver imports this package's pieces

        pdraw = "dense" if kind == "dense" else ("low_rank" if kind == "low_rank"
                                                 else "diagonal")
        k_chains = 4
        res = sample(problem, tuned, init=problem.constrain(z), num_steps=adapt_steps,
                     num_chains=k_chains, seed=seed + 1, burn_in=adapt_steps // 2,
                     progress=False)
        passes["draws"] = float(np.sum(res.info["grad_evals"][:, -1])) / max(n_rows, 1)
        draws = jax.vmap(jax.vmap(problem.unconstrain))(res.samples) \
            if problem.constrained else res.samples
        if isinstance(sampler, ReplicaExchange) and sampler.output == "all":
            draws = jax.tree.map(lambda x: x[:, :, 0], draws)
        flat_draws = jax.tree.map(lambda x: x.reshape(-1, *x.shape[2:]), draws)
        pre = precond.from_draws(flat_draws, pdraw, rank)
        kind = pre.kind
        lam, noise, fr, hs, infl = tune(pre)
        tuned = _with(sampler, pre, fr, hs)

    period = None
    est = _base(tuned).estimator
    if hasattr(est, "period_for") and problem.has_data:
        period = est.period_for(problem)

    # The start: the mode, or per-chain Laplace draws around it.
    if num_chains is None:
        start = problem.constrain(z)
    else:
        flat, unravel = ravel_pytree(z)

        def draw(k):  # a Laplace draw mode + L ζ (pSGLD: its preconditioner at the mode)
            zeta = unravel(jax.random.normal(k, flat.shape, flat.dtype))
            return problem.constrain(jax.tree.map(jnp.add, z, pre.scale(zeta)))
        start = jax.vmap(draw)(jax.random.split(keys[3], num_chains))
    report = WarmupReport(passes=dict(passes), seconds=time.perf_counter() - t0,
                          preconditioner=kind, curvature=lam, raw_curvature=raw,
                          noise=noise, step_sizes=tuple(hs),
                          friction=None if fr is None else float(fr),
                          inflation=tuple(infl), svrg_period=period, energy_at_mode=energy)
    if verbose:
        print(report)
    return Warmup(tuned, start, report)
