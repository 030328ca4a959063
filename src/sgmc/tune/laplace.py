"""The Laplace approximation that :func:`sgmc.warmup` builds at the mode: the mode search
(Adam on minibatch gradients, then damped Newton for small d), the Hessian H = ∇²U or its
diagonal, the preconditioner P ≈ H⁻¹ in the requested form, and the extreme eigenvalues of
the whitened Hessian Lᵀ H L. Every stage adds its data passes (per-example gradient
evaluations / N; a Hessian-vector product counts 2, an energy pass 1) to ``passes``."""

from __future__ import annotations

import math
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.flatten_util import ravel_pytree

from sgmc.errors import SamplingWarning
from sgmc.kernels import preconditioners as precond
from sgmc.tune import curvature


def grad_estimate(problem, batch_size):
    """θ, key ↦ the uniform minibatch gradient (exact without a batch size)."""
    if batch_size is None or not problem.has_data:
        return lambda theta, key: problem.full_grad(theta)
    n = problem.data_rows

    def grad(theta, key):
        idx = jax.random.randint(key, (batch_size,), 0, n, dtype=jnp.int32)
        return problem.estimate_grad(theta, idx)
    return grad


def _adam_program(problem, batch_size, steps):
    """One compiled program ``(z, key, peak) -> z``: Adam (optax) for ``steps`` minibatch
    steps from z, the rate cosine-decayed 100-fold from ``peak`` (an argument, so rounds of
    any peak share the program)."""
    opt = optax.inject_hyperparams(optax.adam)(learning_rate=1.0)
    schedule = optax.cosine_decay_schedule(1.0, steps, alpha=1e-2)
    grad = grad_estimate(problem, batch_size)

    @jax.jit
    def run(z, key, peak):
        def body(carry, xs):
            z, s = carry
            k, t = xs
            s.hyperparams["learning_rate"] = peak * schedule(t)
            upd, s = opt.update(grad(z, k), s, z)
            return (optax.apply_updates(z, upd), s), None
        (z, _), _ = jax.lax.scan(body, (z, opt.init(z)),
                                 (jax.random.split(key, steps), jnp.arange(steps)))
        return z
    return run


def adam_mode(problem, z0, batch_size, steps, lr, key):
    """Adam on minibatch gradients, cosine-decayed learning rate, one compiled scan."""
    return _adam_program(problem, batch_size, steps)(z0, key, jnp.float32(lr))


def adam_until_flat(problem, z0, batch_size, lr, key, round_steps, max_rounds, passes):
    """Adam (optax) in rounds of ``round_steps`` minibatch steps, each with the rate
    cosine-decayed 100-fold from a peak of ``lr`` · 2⁻ᵏ in round k (warm restarts that
    refine: every round ends settled in the minibatch noise, so rounds compare), until a
    round lowers the full-data energy by less than 10⁻³ nats per datum (or ``max_rounds``):
    the mode a network's run starts from, and its MAP; the best round's point is returned.
    A fixed number of steps stops wherever it is, converged or not. Adds its data passes to
    ``passes["mode"]``."""
    n = max(problem.data_rows, 1)
    tol = 1e-3 * max(problem.data_weight * n, 1.0)
    run = _adam_program(problem, batch_size, round_steps)  # one program for every round
    energy = jax.jit(problem.full_energy)
    best, u = z0, math.inf
    for i in range(max_rounds):  # each round's peak half the last's: later rounds refine
        z = run(best, jax.random.fold_in(key, i), jnp.float32(lr * 0.5 ** min(i, 10)))
        new = float(energy(z))
        passes["mode"] += round_steps * batch_size / n + 1.0
        if not new < u - tol:
            if new < u:
                best = z
            break
        best, u = z, new
    return best


def spd_inverse(h: np.ndarray) -> tuple[np.ndarray, bool]:
    """H⁻¹ with H's eigenvalues replaced by max(|λ|, 1e-8 λ_max): positive definite whatever
    H is (a saddle-free inverse); also whether H itself was positive definite."""
    lam, vec = np.linalg.eigh(h)
    top = max(np.abs(lam).max(), 1e-30)
    fixed = np.maximum(np.abs(lam), 1e-8 * top)
    return (vec / fixed) @ vec.T, bool(lam.min() > 0)


def newton_mode(problem, z, max_steps, passes):
    """Damped Newton with backtracking on the full-data energy (small d): z and its
    Hessian at the end. Adds its data passes to ``passes``."""
    flat, unravel = ravel_pytree(z)
    energy = jax.jit(lambda f: problem.full_energy(unravel(f)))
    grad = jax.jit(lambda f: ravel_pytree(problem.full_grad(unravel(f)))[0])
    d = flat.size
    x = np.asarray(flat, np.float64)
    e = float(energy(jnp.asarray(x, flat.dtype)))
    passes["mode"] += 1
    for _ in range(max_steps):
        g = np.asarray(grad(jnp.asarray(x, flat.dtype)), np.float64)
        h = curvature.hessian(problem, unravel(jnp.asarray(x, flat.dtype)))
        passes["mode"] += 1 + 2 * d
        inv, _ = spd_inverse(h)
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


def whitened_matvec(problem, z, pre):
    """v ↦ Lᵀ H L v on flat vectors."""
    _, unravel = ravel_pytree(z)

    @jax.jit
    def mv(v):
        w = pre.scale(unravel(v))
        return ravel_pytree(pre.scale_t(curvature.hvp(problem, z, w)))[0]
    return mv


def preconditioner_for(kind, problem, z, hess, rank, probes, iters, seed, passes):
    """P ≈ H⁻¹ at the mode z in the requested form."""
    flat, unravel = ravel_pytree(z)
    d = flat.size
    if kind == "identity":
        return precond.identity()
    if kind == "dense":
        inv, _ = spd_inverse(hess)
        return precond.dense(inv)
    if hess is not None:
        diag = np.diag(hess)
    else:
        diag, cost = fisher_diagonal(problem, z, probes, seed)
        passes["curvature"] += cost
    top = max(np.abs(diag).max(), 1e-30)
    var = 1.0 / np.maximum(np.abs(diag), 1e-8 * top)
    if kind == "diagonal":
        return precond.diagonal(unravel(jnp.asarray(var, flat.dtype)))
    # low rank: Lanczos on S^{1/2} H S^{1/2}; keep the Ritz directions farthest from 1.
    base = precond.diagonal(unravel(jnp.asarray(var, flat.dtype)))
    ritz, vecs = curvature.lanczos(whitened_matvec(problem, z, base), d, iters, seed)
    passes["curvature"] += 2 * len(ritz)
    mu = np.maximum(np.abs(ritz), 1e-8 * max(np.abs(ritz).max(), 1e-30))
    order = np.argsort(-np.abs(np.log(mu)))[:min(rank, len(mu))]
    basis, _ = np.linalg.qr(vecs[:, order])
    return precond.low_rank(var, basis, 1.0 / mu[order])


def fisher_diagonal(problem, z, probes, seed) -> tuple[np.ndarray, float]:
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


def whitened_extremes(problem, z, pre, hess, iters, seed, passes):
    if hess is not None:
        flat, unravel = ravel_pytree(z)
        eye = np.eye(flat.size)
        lmat = np.stack([np.asarray(ravel_pytree(pre.scale(unravel(jnp.asarray(
            col, flat.dtype))))[0], np.float64) for col in eye], axis=1)
        lam = np.linalg.eigvalsh(lmat.T @ hess @ lmat)
        return float(lam[0]), float(lam[-1])
    flat, _ = ravel_pytree(z)
    ritz, _ = curvature.lanczos(whitened_matvec(problem, z, pre), flat.size, iters, seed)
    passes["curvature"] += 2 * len(ritz)
    return float(ritz[0]), float(ritz[-1])


def adaptive_metric(problem, base, z, replicates, key, passes):
    """The constant metric an adaptive one (``base.dynamics.metric == "adaptive"``: pSGLD's
    RMSprop) settles to at the mode: ``settled_metric(V)``, V = E[ḡ²] over minibatch
    gradients ḡ = ∇̃U/(wN)."""
    grad = grad_estimate(problem, base.batch_size)
    wn = problem.data_weight * problem.num_data if problem.has_data else 1.0
    gs = jax.jit(jax.vmap(lambda k: ravel_pytree(grad(z, k))[0]))(
        jax.random.split(key, replicates))
    passes["noise"] += replicates * (base.batch_size or problem.num_data) / max(
        problem.num_data, 1)
    v = np.mean((np.asarray(gs, np.float64) / wn) ** 2, axis=0)
    leaves, treedef = jax.tree.flatten(z)   # V as a tree like z, kept in float64
    cuts = np.cumsum([np.size(x) for x in leaves])[:-1]
    parts = [p.reshape(np.shape(x)) for p, x in zip(np.split(v, cuts), leaves, strict=True)]
    return base.dynamics.settled_metric(jax.tree.unflatten(treedef, parts))


def laplace_starts(z, pre, num, key):
    """``num`` points mode + L ζ on the sampled scale, stacked (pSGLD: its preconditioner)."""
    flat, unravel = ravel_pytree(z)

    def draw(k):
        zeta = unravel(jax.random.normal(k, flat.shape, flat.dtype))
        return jax.tree.map(jnp.add, z, pre.scale(zeta))
    return jax.vmap(draw)(jax.random.split(key, num))


def adapted_preconditioner(problem, tuned, z, kind, rank, adapt_steps, seed, passes,
                           all_replicas=False):
    """Stage 5: P re-estimated from ``adapt_steps`` steps of the tuned sampler."""
    from sgmc.run.api import sample  # the driver imports this package's pieces

    pdraw = "dense" if kind == "dense" else ("low_rank" if kind == "low_rank" else "diagonal")
    res = sample(problem, tuned, init=problem.constrain(z), num_steps=adapt_steps,
                 num_chains=4, seed=seed + 1, burn_in=adapt_steps // 2, progress=False)
    passes["draws"] = float(np.sum(res.info["grad_evals"][:, -1])) / max(
        problem.data_rows if problem.has_data else 1, 1)
    draws = jax.vmap(jax.vmap(problem.unconstrain))(res.samples) \
        if problem.constrained else res.samples
    if all_replicas:
        draws = jax.tree.map(lambda x: x[:, :, 0], draws)
    flat_draws = jax.tree.map(lambda x: x.reshape(-1, *x.shape[2:]), draws)
    return precond.from_draws(flat_draws, pdraw, rank)


class ScaledFactor:
    """``s`` times a preconditioner's factor L, for Laplace draws mode + s L ζ."""

    def __init__(self, pre, s: float):
        self.pre, self.s = pre, float(s)

    def scale(self, tree):
        return jax.tree.map(lambda x: self.s * x, self.pre.scale(tree))


def typical_factor(problem, z, pre, key, passes, points: int = 8, rounds: int = 4):
    """The preconditioner's factor, shrunk until its Laplace draws lie where a Gaussian's
    typical set would: for L Lᵀ = H⁻¹ the energy rises by d/2 on average at mode + L ζ. For
    large d, where P comes from a diagonal (or Fisher) estimate, an underestimated
    curvature (a unit of a network that barely moves the likelihood) makes P, and the
    draws, far too wide; each round measures the mean rise ΔU at ``points`` draws and,
    while it exceeds d (twice the Gaussian's), scales the factor by √((d/2)/ΔU) (ΔU grows
    as the scale squared). Never widens P. Full-data energies, counted in ``passes``."""
    flat, unravel = ravel_pytree(z)
    d = flat.size
    energy = jax.jit(jax.vmap(problem.full_energy))
    base = float(problem.full_energy(z))
    zeta = jax.vmap(lambda k: unravel(jax.random.normal(k, flat.shape, flat.dtype)))(
        jax.random.split(key, points))
    steps = jax.vmap(pre.scale)(zeta)
    s = 1.0
    for _ in range(rounds):
        rise = float(np.mean(np.asarray(energy(jax.tree.map(
            lambda m, v, s=s: m + s * v, z, steps)))) - base)
        passes["curvature"] += points + 1
        if not np.isfinite(rise):
            s *= 0.1
            continue
        if rise <= d:
            break
        s *= float(np.sqrt(0.5 * d / rise))
    else:  # still atypical after every round: the starts (and the noise points) may be junk
        warnings.warn(f"warmup: its Laplace draws around the mode (the dispersed starts of "
                      f"num_chains, and where the gradient noise is measured) raise the energy "
                      f"by {rise:.4g} on average after {rounds} rounds of shrinking, more than "
                      f"the d = {d} a Gaussian's typical set allows: the starts may fit the "
                      "data far worse than the mode. Sample from the mode (num_chains=None) "
                      "or check the starts' predictions", SamplingWarning, stacklevel=4)
    return pre if s == 1.0 else ScaledFactor(pre, s)
