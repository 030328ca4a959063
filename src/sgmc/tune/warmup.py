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
   ``"identity"``; ``"auto"`` = dense for d ≤ ``dense_max``, low rank above.
3. **Whitened curvature and gradient noise.** The extreme eigenvalues λ_min, λ_max of the
   whitened Hessian Lᵀ H L (Lanczos, or exact for small d), and the largest eigenvalue B of
   the covariance of the sampler's *own* estimator's whitened error Lᵀ(∇̃U − ∇U), measured
   where a run is (:mod:`sgmc.tune.noise`): at ``noise_points`` Laplace draws (C Cᵀ = H⁻¹; for
   large d the preconditioner's factor), with the estimator's stored point (SVRG anchor,
   SAGA table) as far away as a stationary chain keeps it — a distance that depends on the
   step size, so B(h) is a model fitted to measurements at two distances and h is solved
   with its own noise, then checked by a measurement at that h's distance. The top
   eigenvalue is cross-fitted (no (1 + √(d/m))² sample-size bias), with its SE. EWSG is
   bounded by its uniform minibatches.
4. **Rules** (:mod:`sgmc.tune.rules`): friction D = 2√λ_min (critical damping of the slowest
   whitened direction) when unset; step size h = the largest with predicted covariance
   inflation within 1 ± ``budget`` (default 10 %) in every whitened direction with curvature
   in [λ_min, λ_max], from the integrator's exact stationary covariance on a quadratic with
   gradient noise B. Replica exchange: one step size per temperature (gradient noise weighs
   less at higher τ). The SVRG period defaults to one epoch (:func:`sgmc.svrg`). pSGLD keeps
   its adaptive preconditioner; its step is set as for SGLD with P = its RMSprop
   preconditioner at the mode.
5. **Draws (optional, ``adapt_steps`` > 0).** Stan's windowed adaptation, one window: run the
   tuned sampler ``adapt_steps`` steps from the mode, re-estimate P from those draws
   (:func:`sgmc.kernels.preconditioners.from_draws`), then redo stage 3–4 with it. For posteriors
   that are far from Gaussian, whose covariance the mode's curvature misrepresents.
6. **Self-check (``check=True``, the default).** A network (d > ``dense_max``, with data)
   gets :mod:`sgmc.tune.stationary`'s guard instead: the largest step, halved from the
   integrator's limit, whose pilots from the run's starts stop drifting (``report.burn_in``:
   the steps they needed), and its mode search runs Adam until the energy stops falling.
   Otherwise: the rules are exact for a Gaussian target;
   elsewhere their step can bias the draws by a good part of a posterior sd. Coupled pilots
   at h and h/2 (:mod:`sgmc.tune.selfcheck`) estimate that bias and h is halved until they agree
   within ``check_tolerance`` or ``check_budget`` data passes are spent; what each pilot
   found is in ``report.checks``, and a :class:`sgmc.SamplingWarning` says when the step
   could not be confirmed. A step size the user gave is kept (model units, no
   preconditioner added) and not checked.

What it does not guarantee: for a multimodal target the curvature of the one mode found says
nothing of the others (use replica exchange, whose per-temperature steps come from the same
mode), and the self-check compares draws near that mode; for a neural network the curvature
is not stationary along the run (the preconditioner and step are then a starting point: the
check and the drift test of :func:`sgmc.sample` are what tell whether the draws are
stationary).
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
from jax.flatten_util import ravel_pytree

from sgmc import _validate as check_arg
from sgmc.contracts import missing_text
from sgmc.contracts.tunable import TUNABLE_MEMBERS, Tunable
from sgmc.errors import SamplingWarning
from sgmc.kernels import preconditioners as precond
from sgmc.model.oracle import Problem, require_problem
from sgmc.pytree import replace
from sgmc.schedules import as_schedule
from sgmc.tune import noise, selfcheck, stationary
from sgmc.tune import rules as tuning
from sgmc.tune.laplace import (
    adam_mode,
    adam_until_flat,
    adapted_preconditioner,
    adaptive_metric,
    laplace_starts,
    newton_mode,
    preconditioner_for,
    spd_inverse,
    typical_factor,
    whitened_extremes,
)
from sgmc.tune.report import Warmup, WarmupReport, interrupted

__all__ = ["PRECONDITIONERS", "Warmup", "WarmupReport", "warmup"]

PyTree = Any
PRECONDITIONERS = ("auto", "identity", "diagonal", "dense", "low_rank")


# -- stage helpers ---------------------------------------------------------------------------

def _ready(base):
    """``base`` with placeholder values for what is unset, so that its other checks run."""
    return replace(base, dynamics=base.dynamics.tuned(friction=1.0),
                   step_size=base.step_size or as_schedule(1e-30))


def _rules(kind, lam, noise, temps, friction, budget, given=None):
    """(friction, step sizes, predicted inflations, the noise B at each step) from
    :mod:`sgmc.tune.rules`; ``noise`` a :class:`sgmc.tune.noise.NoiseModel`, whose B depends on the
    step when the estimator has an anchor (the step is then the largest that tolerates its
    own noise: h = largest_step(B(h)), by bisection, on the safe side). ``given``: the
    user's step sizes, kept (their inflation is reported)."""
    lo, hi = lam
    if kind != "langevin" and friction is None:
        friction = tuning.friction_rule(lo)
    grid = np.geomspace(lo, hi, 9)

    def noise_at(h):
        return noise.at(kind, h, grid, friction)

    def step_for(b, tau):
        # B bounds the noise of the noisiest direction; others have less, and an integrator
        # that deflates (the splitting at large h) is then worse off: the budget must hold
        # for any noise in [0, B]. Inflation grows with the noise, so the two ends suffice.
        return min(tuning.largest_step(kind, lo, hi, tau, friction, e, budget)
                   for e in ((0.0, b) if b > 0 else (0.0,)))

    steps = []
    for tau in temps:
        if not noise.anchored:
            steps.append(step_for(noise_at(1.0), tau))
            continue
        h_lo = step_for(noise.base + 2.0 * noise.linear, tau)  # the farthest anchor
        h_hi = step_for(noise.base, tau)                       # an anchor at the chain
        for _ in range(24):  # step_for(B(h)) − h decreases in h: bisect its root
            if h_hi / h_lo < 1.0 + 1e-3:
                break
            mid = math.sqrt(h_lo * h_hi)
            h_lo, h_hi = (mid, h_hi) if step_for(noise_at(mid), tau) >= mid else (h_lo, mid)
        steps.append(h_lo)
    if given is not None:
        steps = list(given)
    used = [noise_at(h) for h in steps]
    worst = [max((tuning.inflation(kind, h, c, tau, friction, b)
                  for c in grid for b in ((0.0, bh) if bh > 0 else (0.0,))),
                 key=lambda v: abs(v - 1.0))
             for h, tau, bh in zip(steps, temps, used, strict=True)]  # farthest from 1, signed
    return friction, steps, worst, used


def _with(sampler, pre, friction, steps, force=False):
    """The sampler with its preconditioner, friction and step sizes set (unset ones only,
    unless ``force``: the self-check's halved steps)."""
    base = sampler.tuning_base()
    base = replace(base, dynamics=base.dynamics.tuned(pre, friction))
    return sampler.with_tuning(base, steps, force)


def _scaled_se(model, used: float) -> float:
    """The SE of B at the step: the independent-draw measurement's, scaled as B is."""
    total = model.base + model.linear
    return model.se * used / total if total > 0 else model.se


def _fraction(name: str, value: float) -> float:
    value = check_arg.real(name, value, lo=0.0, hi=1.0)
    if not 0.0 < value < 1.0:
        raise ValueError(f"{name} must lie in (0, 1), got {value}")
    return value


def warmup(problem: Problem, sampler: Any, init: PyTree, *, num_chains: int | None = None,
           preconditioner: str = "auto", budget: float = 0.1, seed: int = 0,
           optimizer_steps: int | None = None, learning_rate: float = 0.05,
           newton_steps: int = 20, dense_max: int = 256, rank: int = 10,
           lanczos_iters: int = 30, hutchinson_probes: int = 16, noise_points: int = 16,
           noise_replicates: int = 8, adapt_steps: int = 0, check: bool = True,
           check_budget: float | None = None, check_chains: int = 8,
           check_tolerance: float = 0.1, verbose: bool = False) -> Warmup:
    """Tune ``sampler`` for ``problem``: see the module docstring for the stages and rules.

    Args:
        problem: an :class:`sgmc.Posterior` (or Objective sampled at τ > 0).
        sampler: :func:`sgmc.sgld`, :func:`sgmc.sghmc` (any integrator and estimator),
            :func:`sgmc.psgld`, or :func:`sgmc.replica_exchange` over one of them; its unset
            ``step_size`` (and ``friction``) are chosen, set ones are kept. A step size the
            sampler already holds is in model units and is kept as it is: warm-up then adds
            no preconditioner (which would change what the step means), ``preconditioner``
            must be ``"auto"`` or ``"identity"``, and the self-check is skipped (the report
            gives the step's predicted inflation). A sampler that already holds a
            non-identity preconditioner keeps it (``preconditioner`` must then be
            ``"auto"``).
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
        dense_max: the largest d for which H is formed (d Hessian-vector products); the
            self-check compares every coordinate up to this d.
        rank: directions corrected by the low-rank preconditioner.
        lanczos_iters: Lanczos steps for the extreme eigenvalues (large d).
        hutchinson_probes: probes for diag(H) (large d).
        noise_points: Laplace points at which the gradient noise is measured.
        noise_replicates: minibatches per noise point (≥ 2; rows = points × replicates).
        adapt_steps: > 0: re-estimate P from that many steps of the tuned sampler (stage 5).
        check: run the self-check (stage 6, :mod:`sgmc.tune.selfcheck`): coupled pilots at h and
            h/2, halving h while they disagree. ``False`` skips it.
        check_budget: data passes the self-check may spend (default: 10 × the other
            stages', at least 1,000).
        check_chains: pilot chains (≥ 2), started at Laplace draws around the mode.
        check_tolerance: the largest estimated bias accepted, in posterior sds for means and
            as a relative error of sds, in (0, 1); default 0.1.
        verbose: print the report.

    Returns:
        ``(tuned, start)`` (a :class:`Warmup`; ``.report`` is a :class:`WarmupReport`).

    Raises:
        sgmc.WarmupInterrupted: on Ctrl-C (a KeyboardInterrupt), in any stage; it carries the
            stage, the mode once found, the preconditioner and whitened curvature once
            measured, and the data passes spent; its message says how to start from the mode.
    """
    t0 = time.perf_counter()
    require_problem(problem)
    if not isinstance(sampler, Tunable):
        raise TypeError("sampler must be sgmc.sgld/sghmc/psgld(...) or replica_exchange over "
                        f"one, got {type(sampler).__name__}"
                        + missing_text(sampler, TUNABLE_MEMBERS, "sgmc.contracts.tunable"))
    base = sampler.tuning_base()  # raises for a kernel not tunable as a whole (cyclical)
    if base.dynamics.rule_family is None:
        raise TypeError(f"warmup cannot choose the step of {type(base.dynamics).__name__} "
                        "(its rule_family is None: sgmc.contracts.integrator); give its step "
                        "size (as sgmc.sgnht needs); warmup tunes sgld, sghmc and psgld")
    check_arg.choice("preconditioner", preconditioner, PRECONDITIONERS)
    budget = _fraction("budget", budget)
    tol = _fraction("check_tolerance", check_tolerance)
    seed = check_arg.integer("seed", seed, lo=0, hi=2**32 - 1)
    if num_chains is not None:
        num_chains = check_arg.integer("num_chains", num_chains, lo=1)
    for name, v in (("newton_steps", newton_steps), ("dense_max", dense_max),
                    ("adapt_steps", adapt_steps)):
        check_arg.integer(name, v, lo=0)
    for name, v in (("rank", rank), ("lanczos_iters", lanczos_iters),
                    ("hutchinson_probes", hutchinson_probes), ("noise_points", noise_points)):
        check_arg.integer(name, v, lo=1)
    check_arg.integer("noise_replicates", noise_replicates, lo=2)
    check_arg.integer("check_chains", check_chains, lo=2)
    if not isinstance(check, bool):
        raise TypeError(f"check must be True or False, got {check!r}")
    if check_budget is not None:
        check_budget = check_arg.positive("check_budget", check_budget)
    lr = check_arg.positive("learning_rate", learning_rate)
    temps = sampler.tuning_temperatures()
    if min(temps) <= 0.0:
        raise ValueError("warmup tunes samplers at temperature > 0 (the step-size rule bounds "
                         "the stationary variance, which is 0 at τ = 0); for optimisation "
                         "use sgmc.minimize")
    own = base.dynamics.preconditioner or precond.identity()
    if own.kind != "identity" and preconditioner != "auto":
        raise ValueError("the sampler already holds a preconditioner; leave "
                         "preconditioner='auto' to keep it, or build the sampler without one")
    given = sampler.given_steps()
    if given is not None and own.kind == "identity":
        if preconditioner not in ("auto", "identity"):
            raise ValueError(
                f"the sampler's step size is given (in model units), and preconditioner="
                f"{preconditioner!r} would change what it means (a preconditioned step acts "
                "on whitened coordinates). Leave the step size unset (e.g. "
                "sgmc.sghmc(batch_size=100)) for a step tuned with the preconditioner, or "
                "pass preconditioner='identity' to keep your step as it is")
        preconditioner = "identity"
    passes = {"mode": 0.0, "curvature": 0.0, "noise": 0.0}
    at = {"stage": "mode", "mode": None, "curvature": None, "preconditioner": None}
    try:
        # check_support takes per-chain points (a leading chain axis), as sample() passes them
        problem.check_support(jax.tree.map(lambda x: jnp.asarray(x)[None], init))
        z0 = jax.tree.map(lambda x: jnp.asarray(x, jnp.float32), problem.unconstrain(init))
        _ready(base).check(problem, z0, 1)  # batch size, estimator: all but the unset values
        d = ravel_pytree(z0)[0].size
        keys = jax.random.split(jax.random.key(seed), 6)

        # 1. Mode: Adam, then Newton for small d.
        b = base.batch_size if problem.has_data else None
        n_rows = problem.data_rows if problem.has_data else 1
        per_epoch = 1 if b is None else max(1, -(-n_rows // b))
        small = d <= dense_max
        network = not small and b is not None  # the mode search and the check for networks
        if optimizer_steps is None and network:  # Adam to the MAP
            z = adam_until_flat(problem, z0, b, lr, keys[0], max(500, 20 * per_epoch), 50,
                                passes)
        else:
            steps = optimizer_steps if optimizer_steps is not None else max(500, 20 * per_epoch)
            steps = check_arg.integer("optimizer_steps", steps, lo=1)
            z = adam_mode(problem, z0, b, steps, lr, keys[0])
            passes["mode"] += steps * (1.0 if b is None else b / n_rows)
        hess = None
        if small:
            z, hess = newton_mode(problem, z, newton_steps, passes)
        if not all(bool(jnp.all(jnp.isfinite(x))) for x in jax.tree.leaves(z)):
            raise FloatingPointError("warmup's mode search diverged (non-finite position): lower "
                                     "learning_rate, or start closer to the posterior's bulk")
        energy = float(problem.full_energy(z))
        passes["mode"] += 1.0
        at.update(stage="curvature", mode=z)

        # 2. Preconditioner.
        kind = preconditioner
        if own.kind != "identity":
            pre, kind = own, own.kind
        else:
            if kind == "auto":
                kind = "dense" if small else "low_rank"
            if kind == "dense" and not small:
                raise ValueError(f"preconditioner='dense' needs d ≤ dense_max = {dense_max} "
                                 f"(d = {d}); use 'low_rank' or 'diagonal'")
            if base.dynamics.metric == "adaptive":  # its own (pSGLD): size the step for it
                pre, kind = adaptive_metric(problem, base, z, noise_replicates, keys[1],
                                            passes), "psgld"
            else:
                pre = preconditioner_for(kind, problem, z, hess, rank, hutchinson_probes,
                                         lanczos_iters, seed, passes)
        at["preconditioner"] = pre
        raw = ((float(np.linalg.eigvalsh(hess)[0]), float(np.linalg.eigvalsh(hess)[-1]))
               if hess is not None else (math.nan, math.nan))
        dyn_kind = base.dynamics.rule_family

        def tune(pre, stage):
            lam = whitened_extremes(problem, z, pre, hess, lanczos_iters, seed, passes)
            if lam[0] <= 0.0:
                warnings.warn(f"warmup: the whitened Hessian at the point found has λ_min = "
                              f"{lam[0]:.3g} ≤ 0 (not a strict mode: a saddle, a flat direction, "
                              "or a non-log-concave target); the step-size rule uses "
                              "1e-3 λ_max in its place", UserWarning, stacklevel=3)
            # A non-positive λ_min is replaced by 1e-3 λ_max (the warning above); a positive one
            # is kept (an isotropic sampler on a badly conditioned target needs its friction).
            lam = (lam[0] if lam[0] > 0.0 else 1e-3 * lam[1], lam[1])
            at.update(stage=stage, curvature=lam)
            model = noise.for_sampler(problem, base, z, pre, laplace, noise_points,
                                      noise_replicates, keys[2], passes)
            fr = base.dynamics.friction
            fr, hs, infl, used = _rules(dyn_kind, lam, model, temps, fr, budget, given)
            if model.anchored and b is not None:  # the extrapolation, checked at the step's own
                g = tuning.anchor_decorrelation(dyn_kind, hs[0], np.geomspace(*lam, 9), fr,
                                                model.ages)  # anchor distance
                if g < 0.9:
                    rows, evals = noise.measure(
                        problem, base.estimator.noise_proxy().with_batch_size(b), b, z, pre,
                        laplace, noise_points, noise_replicates, max(1.0 - g, 0.0), keys[2])
                    passes["noise"] += evals / n_rows
                    direct = noise.top_eigenvalue(rows)
                    model = dataclasses.replace(model, detail={**model.detail,
                                                               "at step": (*direct, g)})
                    refit = noise.refit(model, direct[0], g)
                    if refit is not model:
                        model = refit
                        fr, hs, infl, used = _rules(dyn_kind, lam, model, temps, fr, budget,
                                                    given)
            return lam, model, fr, hs, infl, used

        # The Laplace approximation N(mode, H⁻¹) whose draws are the noise's points and the
        # starts (small d; large d has no H: the preconditioner's factor stands in for H^{-1/2},
        # shrunk until its draws' energies are a Gaussian's typical set's).
        laplace = (precond.dense(spd_inverse(hess)[0]) if small
                   else typical_factor(problem, z, pre, keys[1], passes))
        lam, model, fr, hs, infl, used = tune(pre, "noise")
        tuned = _with(sampler, pre if kind != "psgld" else own, fr, hs)

        # 5. Optional: P from warm-up draws, then the rules again.
        if adapt_steps > 0 and kind != "psgld":
            at["stage"] = "adapt"
            pre = adapted_preconditioner(problem, tuned, z, kind, rank, adapt_steps, seed, passes,
                                         all_replicas=sampler.draw_replicas)
            kind = pre.kind
            at.update(preconditioner=pre, curvature=None)  # λ is for the old P until retuned
            lam, model, fr, hs, infl, used = tune(pre, "adapt")
            tuned = _with(sampler, pre, fr, hs)

        # 6. The self-check: coupled pilots at h and h/2, h halved while they disagree.
        # (a network, d > dense_max with data: the stationarity guard in its place)
        checks, burn = (), None
        if check and given is None:
            at["stage"] = "check"
            starts = laplace_starts(z, laplace, check_chains, keys[4])
            if not network:
                factor, checks, cost, allowed = selfcheck.check_sampler(
                    problem, tuned.tuning_base(), temps[0], starts, dyn_kind, lam, fr, hs[0],
                    check_budget, max(1000.0, 10 * sum(passes.values())), small, tol, keys[5])
                failed = checks[-1].verdict != "agree"
            else:
                factor, checks, cost, burn = stationary.guard(
                    problem, tuned.tuning_base(), temps[0], dyn_kind, lam, fr, hs[0], budget,
                    check_budget, starts, keys[5])
                failed = burn is None
            passes["check"] = cost
            if factor != 1.0:
                hs = [h * factor for h in hs]
                tuned = _with(sampler, pre if kind != "psgld" else own, fr, hs, force=True)
                fr, hs, infl, used = _rules(dyn_kind, lam, model, temps, fr, budget, hs)
            if failed:
                warnings.warn(stationary.failure_message(checks, hs[0]) if network else
                              selfcheck.failure_message(checks, allowed, hs[0]),
                              SamplingWarning, stacklevel=2)

        period = None
        if problem.has_data:
            period = tuned.tuning_base().estimator.period_for(problem)

        # The start: the mode, or per-chain Laplace draws around it.
        if num_chains is None:
            start = problem.constrain(z)
        else:
            start = jax.vmap(problem.constrain)(laplace_starts(z, laplace, num_chains, keys[3]))
    except KeyboardInterrupt:  # Ctrl-C, or sgmc.Interrupted from stage 5's or the check's runs
        raise interrupted(problem, at, passes) from None
    report = WarmupReport(passes=dict(passes), seconds=time.perf_counter() - t0,
                          preconditioner=kind, curvature=lam, raw_curvature=raw,
                          noise=float(used[0]), step_sizes=tuple(hs),
                          friction=None if fr is None else float(fr),
                          inflation=tuple(infl), svrg_period=period, energy_at_mode=energy,
                          noise_se=_scaled_se(model, used[0]), noise_detail=dict(model.detail),
                          checks=tuple(checks), step_given=given is not None,
                          burn_in=burn)
    if verbose:
        print(report)
    return Warmup(tuned, start, report)
