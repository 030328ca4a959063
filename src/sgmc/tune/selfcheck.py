"""Warm-up's check of its own step size: coupled pilots at h and h/2.

The step-size rules of :mod:`sgmc.tune.rules` are exact for a Gaussian target; on other targets
the step they choose can bias the draws by a good part of a posterior sd (0.2 sd on a
logistic regression, 0.45 sd on eight schools, measured). The bias of a discretisation
shrinks with the step, so comparing a run at h with one at h/2 over the same simulated
time measures it: for a scheme of order one, bias(h) ≈ 2 (E_h[f] − E_{h/2}[f]).

**Coupling.** Two independent pilots would need thousands of effective draws each to see
0.1 sd. The pilots here are coupled instead (the synchronous coupling of multilevel Monte
Carlo): chain c runs the fine sampler (h/2) two steps for every step of the coarse one (h),
from the same start, and the coarse step's Gaussian draws are (ξ₁ + ξ₂)/√2 of the fine
steps' (so both inject the same Brownian increment), its other draws (minibatch indices,
keys) the first fine step's. Each pilot is the sampler exactly as it runs in
:func:`sgmc.sample` (its ``init``, ``step`` and ``draw``, the kernel contract's members; the
draws come through :class:`sgmc.rng.Rng`, whose record mode tells normals from other draws),
and the two stay close, so the difference of their averages has a small variance.

**Statistics** f, at kept draws after the first half (burn-in from dispersed starts): for
d ≤ ``param_max`` every coordinate's mean and sd; for any d the energy, the log prior and the
log-likelihood per datum, each evaluated on one fixed evaluation minibatch shared by both
pilots (what they differ by is then the draws, not the minibatch). Each is put in units of
the fine pilot's sd of f (means) or as a log ratio (sds), doubled (the order-one bias
extrapolation above, safe for second-order schemes too), with a standard error from the
spread over chains × halves.

**Verdict** per pilot: "disagree" when some statistic's bias exceeds its tolerance and
``z_crit`` standard errors (a Student-t quantile, Bonferroni-corrected over the statistics);
"agree" when none does and every standard error is small enough that a bias at the
tolerance would have been seen; else "not resolved". Warm-up halves h while pilots disagree,
lengthens a pilot that does not resolve (once: a second "not resolved" halves h too, the safe
side), and stops at the first "agree" or when the pass budget is spent.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

from sgmc.pytree import replace
from sgmc.rng import Rng, Tape
from sgmc.schedules import as_schedule

__all__ = ["Check", "at_step", "check_sampler", "coupled_pilots", "failure_message", "judge",
           "self_check"]

PyTree = Any
#: Draw kinds of :class:`sgmc.rng.Rng` that are standard Gaussians (summed by the coupling).
GAUSSIAN = ("normal", "normal_like")


@dataclasses.dataclass(frozen=True)
class Check:
    """One pair of coupled pilots: the coarse step size h (the fine pilot ran at h/2), the
    coarse steps per chain, chains, data passes spent, the statistic whose estimated bias
    is largest relative to its tolerance, that bias ± its SE (sd units for means, relative
    error for sds), and the verdict ("agree", "disagree", "not resolved"; "skipped" when
    the budget did not allow one pilot pair: ``steps`` is then the shortest pilot and
    ``se`` the passes it would have cost)."""

    step_size: float
    steps: int
    chains: int
    passes: float
    statistic: str
    bias: float
    se: float
    verdict: str

    def __str__(self) -> str:
        if self.verdict == "skipped":
            return (f"h = {self.step_size:.4g}: skipped (a pilot pair of {self.steps} steps "
                    f"on {self.chains} chains needs {self.se:.0f} passes)")
        what = self.statistic if self.statistic.startswith("rms") else \
            f"{self.statistic} bias"
        return (f"h = {self.step_size:.4g}: {self.verdict} ({what} {self.bias:+.3f} ± "
                f"{self.se:.3f}; {self.chains} chains × {self.steps} steps, "
                f"{self.passes:.0f} passes)")


def _couple(kind: str, first: Any, second: Any) -> Any:
    if kind in GAUSSIAN:
        return jax.tree.map(lambda a, b: (a + b) * (1.0 / math.sqrt(2.0)), first, second)
    return first


def statistics(problem, eval_idx: jax.Array | None, coordinates: bool
               ) -> tuple[Callable[[PyTree], jax.Array], list[str]]:
    """f(θ) as one vector, and its names: coordinates (if asked), then the energy, the log
    prior and the log-likelihood per datum on the evaluation rows (the latter two for a
    problem with data)."""
    def stats(z):
        parts = [ravel_pytree(z)[0]] if coordinates else []
        exact = problem.exact_energy(z)
        if eval_idx is None:
            return jnp.concatenate([*parts, jnp.atleast_1d(exact)])
        per = problem.batch_energies(z, eval_idx)
        energy = exact + problem.batch_scale(eval_idx.shape[0]) * jnp.sum(per)
        return jnp.concatenate([*parts, jnp.stack([energy, -exact, -jnp.mean(per)])])
    return stats, ["energy"] + (["log prior", "loglik per datum"] if eval_idx is not None
                                else [])


def coupled_pilots(problem, coarse, fine, starts: PyTree, num_keep: int, thin: int,
                   stats: Callable, key: jax.Array, stat_evals: int = 0
                   ) -> tuple[np.ndarray, np.ndarray, int]:
    """Run the coupled pilots (module docstring) from ``starts`` (chains on a leading axis):
    ``num_keep`` × ``thin`` coarse steps; the statistics of both at every ``thin``-th
    coarse step, shapes (num_keep, chains, k + 1) (the last column: 1 where the draw is
    finite), and the per-example evaluations (the sampler's gradients, and ``stat_evals``
    per chain and kept pair for the statistics)."""
    chains = jax.tree.leaves(starts)[0].shape[0]

    def with_finite(z):  # the statistics, then 1 where the draw itself is finite
        finite = jnp.all(jnp.stack([jnp.all(jnp.isfinite(x)) for x in jax.tree.leaves(z)]))
        return jnp.append(stats(z), finite.astype(jnp.float32))

    @jax.jit
    def run(starts, key):
        k_init, k_run = jax.random.split(key)
        init_keys = jax.random.split(k_init, chains)
        s_c = jax.vmap(lambda p, k: coarse.init(problem, p, k))(starts, init_keys)
        s_f = jax.vmap(lambda p, k: fine.init(problem, p, k))(starts, init_keys)
        chain_keys = jax.random.split(k_run, chains)

        def one(sc, sf, ck, t):
            k1, k2 = jax.random.split(jax.random.fold_in(ck, t))
            tape1, tape2 = Tape(), Tape()
            sf, i1 = fine.step(problem, sf, Rng(k1, tape1), 2 * t)
            sf, i2 = fine.step(problem, sf, Rng(k2, tape2), 2 * t + 1)
            if tape1.kinds != tape2.kinds:  # pragma: no cover - the contract's rule
                raise RuntimeError("a step's draws depend on its step index")
            vals = [_couple(kind, a, b)
                    for kind, a, b in zip(tape1.kinds, tape1.values, tape2.values,
                                          strict=True)]
            sc, ic = coarse.step(problem, sc, Rng(None, Tape(vals)), t)
            return sc, sf, ic["grad_evals"] + i1["grad_evals"] + i2["grad_evals"]

        def step(carry, t):
            s_c, s_f, ev = carry
            s_c, s_f, e = jax.vmap(one, in_axes=(0, 0, 0, None))(s_c, s_f, chain_keys, t)
            return (s_c, s_f, ev + jnp.sum(e)), None

        def block(carry, j):
            s_c, s_f = carry
            (s_c, s_f, ev), _ = jax.lax.scan(step, (s_c, s_f, jnp.int32(0)),
                                             j * thin + jnp.arange(thin, dtype=jnp.int32))
            fc = jax.vmap(lambda s: with_finite(coarse.draw(s)))(s_c)
            ff = jax.vmap(lambda s: with_finite(fine.draw(s)))(s_f)
            return (s_c, s_f), (fc, ff, ev)

        _, (fc, ff, ev) = jax.lax.scan(block, (s_c, s_f),
                                       jnp.arange(num_keep, dtype=jnp.int32))
        return fc, ff, ev

    fc, ff, ev = run(starts, key)
    evals = int(np.sum(np.asarray(ev, np.int64))) + chains * (
        int(coarse.init_evals(problem)) + int(fine.init_evals(problem))
        + num_keep * stat_evals)
    return np.asarray(fc, np.float64), np.asarray(ff, np.float64), evals


def _units(x: np.ndarray, batches: int) -> np.ndarray:
    """(draws, chains, k) → (chains · batches, k): the batch means of each chain's draws,
    the units whose spread gives the standard errors."""
    size = x.shape[0] // batches
    x = x[:size * batches].reshape(batches, size, *x.shape[1:])
    return x.transpose(2, 0, 1, 3).reshape(-1, size, x.shape[-1])


def judge(fc: np.ndarray, ff: np.ndarray, names: list[str], tol_mean: np.ndarray,
          tol_sd: np.ndarray, batches: int = 1, coords: int = 0, level: float = 0.05
          ) -> tuple[str, str, float, float]:
    """The verdict of one pair of pilots (module docstring) from their statistics (the
    burn-in, the first half, dropped here), with per-statistic tolerances for the means
    (sd units) and the sds (log ratio), and ``batches`` batch means per chain (each several
    relaxation times long) as the units of the standard errors: (verdict, worst statistic,
    its bias, its SE). The first ``coords`` statistics are coordinates: each can only
    disagree; whether they are resolved is judged by their root-mean-square bias (in
    units of their tolerance; the report gives it and the SE of its square)."""
    from scipy import stats as sps

    if not (np.all(fc[..., -1] == 1.0) and np.all(ff[..., -1] == 1.0)):
        return "disagree", "non-finite draws (diverged)", math.inf, 0.0
    # A statistic that overflows where the draws are finite (an energy far in a tail) is
    # left out; the coordinates and the other statistics still judge.
    # (coordinates are finite wherever the draws are: the flags above)
    usable = np.all(np.isfinite(fc[..., :-1]), axis=(0, 1)) & np.all(
        np.isfinite(ff[..., :-1]), axis=(0, 1))
    names = [n for n, u in zip(names, usable, strict=True) if u]
    tol_mean = np.broadcast_to(tol_mean, usable.shape)[usable]
    tol_sd = np.broadcast_to(tol_sd, usable.shape)[usable]
    fc, ff = fc[..., :-1][..., usable], ff[..., :-1][..., usable]
    keep = fc.shape[0] // 2
    batches = max(1, min(batches, (fc.shape[0] - keep) // 2))
    uc, uf = _units(fc[keep:], batches), _units(ff[keep:], batches)  # (units, draws, k)
    units = uc.shape[0]
    pooled = ff[keep:].reshape(-1, ff.shape[2])
    centre, var = pooled.mean(axis=0), np.maximum(pooled.var(axis=0), 1e-300)
    mean_diff = 2.0 * (uc.mean(axis=1) - uf.mean(axis=1)) / np.sqrt(var)   # (units, k)
    # sd_h/sd − 1 ≈ ½ · 2 (v_h − v_{h/2})/v: second moments about one centre, a difference
    # of unit averages (no within-unit variance, whose bias differs between h and h/2)
    sd_diff = (((uc - centre) ** 2).mean(axis=1) - ((uf - centre) ** 2).mean(axis=1)) / var
    rows = [(f"mean {n}", mean_diff[:, j], tol_mean[j]) for j, n in enumerate(names)]
    rows += [(f"sd {n}", sd_diff[:, j], tol_sd[j]) for j, n in enumerate(names)]
    crit = float(sps.t.ppf(1.0 - level / (2.0 * len(rows)), units - 1))
    found = {"disagree": [], "not resolved": [], "agree": []}
    for i, (name, vals, tol) in enumerate(rows):
        bias = float(np.mean(vals))
        se = float(np.std(vals, ddof=1) / math.sqrt(units))
        if abs(bias) > tol + crit * se:    # a bias beyond the tolerance, beyond doubt
            verdict = "disagree"
        elif crit * se > tol and i % len(names) >= coords:
            verdict = "not resolved"       # a bias of twice the tolerance could hide here
        else:                              # (coordinates: resolved by the RMS below)
            verdict = "agree"
        found[verdict].append(((abs(bias) - crit * se) / tol, name, bias, se))
    if coords:
        # Many coordinates: their root-mean-square bias, an unbiased U-statistic over the
        # units with a jackknife SE, resolves with far fewer draws than each one alone.
        z = float(sps.norm.ppf(1.0 - level / 4.0))
        # Means: RMS within half the tolerance, so that the worst of many stays near it (a
        # discretisation moves a few means most); sds: within the tolerance (it shrinks or
        # inflates them all alike).
        for what, diff, tol in (("mean", mean_diff, 0.5 * tol_mean), ("sd", sd_diff, tol_sd)):
            msq, se = _mean_square(diff[:, :coords] / tol[:coords])
            if msq - z * se > 1.0:
                verdict = "disagree"
            elif msq + z * se > 1.0:
                verdict = "not resolved"
            else:
                verdict = "agree"
            unit = float(tol[0])
            found[verdict].append((math.sqrt(max(msq, 0.0)), f"rms bias of {what}s",
                                   math.sqrt(max(msq, 0.0)) * unit,
                                   se * unit / (2.0 * math.sqrt(max(msq, 0.25)))))
    for verdict in ("disagree", "not resolved", "agree"):
        if found[verdict]:
            _, name, bias, se = max(found[verdict])
            return verdict, name, bias, se
    raise ValueError("no statistics to judge")  # pragma: no cover


def _mean_square(vals: np.ndarray) -> tuple[float, float]:
    """(1/k) Σ_j β_j² from units' estimates v_uj of β_j (units × k): the U-statistic
    Σ_{u≠u'} v_u·v_u' / (U(U − 1)k), unbiased whatever each unit's noise, and its
    jackknife standard error over the units."""
    units, k = vals.shape

    def stat(total, squares, n):
        return (np.sum(total ** 2) - np.sum(squares)) / (n * (n - 1) * k)
    total, squares = vals.sum(axis=0), (vals ** 2).sum(axis=0)
    jack = np.array([stat(total - v, squares - v ** 2, units - 1) for v in vals])
    se = math.sqrt((units - 1) / units * np.sum((jack - jack.mean()) ** 2))
    return float(stat(total, squares, units)), se


def relaxation_time(dynamics: str, curvature_min: float, friction: float | None) -> float:
    """The time (steps × h) in which the slowest whitened direction forgets its start:
    1/λ_min for Langevin; for SGHMC 1/r with r = (D − √max(D² − 4λ_min, 0))/2, the slower
    root of the damped oscillator (√λ_min at critical damping)."""
    if dynamics == "langevin":
        return 1.0 / curvature_min
    d = float(friction)
    rate = 0.5 * (d - math.sqrt(max(d * d - 4.0 * curvature_min, 0.0)))
    return 1.0 / max(rate, 1e-300)


def self_check(problem, kernel_at: Callable[[float], Any], step_size: float, starts: PyTree,
               relax_time: float, budget: float, per_step: float, names: list[str],
               stats: Callable, key: jax.Array, tol_mean: np.ndarray, tol_sd: np.ndarray,
               stat_evals: int = 0, coords: int = 0, time_units: float = 50.0,
               max_keep: int = 200
               ) -> tuple[float, list[Check], float]:
    """Halve the step from ``step_size`` while coupled pilots disagree (module docstring),
    within ``budget`` data passes. ``kernel_at(h)`` is the sampler at step h, ``per_step`` an
    estimate of one coarse step's passes per chain (three sampler steps), used to size the
    pilots; each pilot runs ``time_units`` relaxation times (half of them burn-in), at least
    10 within the budget. Returns (h, the checks, passes)."""
    chains = jax.tree.leaves(starts)[0].shape[0]
    n_rows = max(problem.data_rows if problem.has_data else 1, 1)
    h, spent, checks = float(step_size), 0.0, []
    length = time_units
    for i in range(64):
        steps = max(40, math.ceil(length * relax_time / h))
        # (per step as the last pilot cost: the budget can be overshot by a few passes)
        affordable = int((budget - spent) / max(per_step * chains, 1e-300))
        shortest = max(40, math.ceil(10.0 * relax_time / h))
        if affordable < shortest:
            if not checks:  # not one pilot: say what it would have cost
                checks.append(Check(h, shortest, chains, 0.0, "budget", math.nan,
                                    per_step * chains * shortest, "skipped"))
            break
        steps = min(steps, affordable)
        thin = -(-steps // max_keep)
        keep = -(-steps // thin)
        fc, ff, evals = coupled_pilots(problem, kernel_at(h), kernel_at(h / 2), starts, keep,
                                       thin, stats, jax.random.fold_in(key, i), stat_evals)
        passes = evals / n_rows
        spent += passes
        per_step = passes / (chains * keep * thin)
        # batch means of ≥ 5 relaxation times each, over the kept second half
        batches = int(0.5 * keep * thin * h / (5.0 * relax_time))
        verdict, stat, bias, se = judge(fc, ff, names, tol_mean, tol_sd, max(batches, 1),
                                        coords)
        checks.append(Check(h, keep * thin, chains, passes, stat, bias, se, verdict))
        if verdict == "agree":
            break
        if verdict == "disagree" or length > time_units:
            # disagreement, or still not resolved by a pilot twice as long: the smaller step
            h, length = h / 2.0, time_units
        else:  # not resolved: a longer pilot at the same step
            length *= 2.0
    return h, checks, spent


def at_step(base, temperature: float) -> Callable[[float], Any]:
    """``h ↦`` the sampler ``base`` at step size h (a constant schedule) and ``temperature``:
    what a pilot runs."""
    tau = jnp.asarray(temperature, jnp.float32)
    return lambda h: replace(base, step_size=as_schedule(h), temperature=tau)


def check_sampler(problem, base, temperature: float, starts: PyTree, dynamics: str,
                  curvature: tuple, friction: float | None, step_size: float,
                  budget: float | None, floor: float, coordinates: bool, tol: float,
                  key: jax.Array) -> tuple[float, list[Check], float, float]:
    """Warm-up's stage 6 on the sampler ``base`` at ``temperature`` from ``starts``: the
    factor by which its step sizes are to be multiplied, the checks, their data passes and
    the budget (``budget``, or by default ``floor``).

    Tolerances: ``tol`` for the coordinates' means (sd units) and sds (relative); the
    energy-like statistics sum over d coordinates, so that a relative error ε of every
    coordinate's variance moves their mean by about ε √(d/2) of their sd and their variance
    by 2ε: their tolerances are tol √(d/2) and 2 tol."""
    k_eval, k_run = jax.random.split(key)
    eval_idx, rows = None, 0
    n = problem.data_rows if problem.has_data else 1
    if problem.has_data:
        rows = min(n, 64)
        eval_idx = jnp.sort(jax.random.choice(k_eval, n, (rows,), replace=False))
    stats, names = statistics(problem, eval_idx, coordinates)
    d = ravel_pytree(jax.tree.map(lambda x: x[0], starts))[0].size
    tol_mean = np.full(len(names), tol * math.sqrt(max(d, 2) / 2.0))
    tol_sd = np.full(len(names), 2.0 * tol)
    if coordinates:
        names = [f"θ[{i}]" for i in range(d)] + names
        tol_mean = np.concatenate([np.full(d, tol), tol_mean])
        tol_sd = np.concatenate([np.full(d, tol), tol_sd])
    kernel_at = at_step(base, temperature)
    # three steps of at most two minibatch gradients each, and the statistics' evaluations
    per_step = 6.0 * (base.batch_size or n) / n
    relax = relaxation_time(dynamics, curvature[0], friction)
    if budget is None:
        budget = floor
    final, checks, spent = self_check(problem, kernel_at, step_size, starts, relax, budget,
                                      per_step, names, stats, k_run, tol_mean, tol_sd,
                                      stat_evals=2 * rows, coords=d if coordinates else 0)
    return final / step_size, checks, spent, budget


def failure_message(checks: list[Check], allowed: float, returned: float) -> str:
    """What the warning says when warm-up's self-check ends without an "agree" (``returned``:
    the step size warm-up returns)."""
    spent = sum(c.passes for c in checks)
    if checks[-1].verdict == "skipped":
        needed = checks[-1].se
        return (f"warmup's self-check could not afford one pair of pilots (10 relaxation "
                f"times at h on every chain) within check_budget = {allowed:.0f} data "
                f"passes ({needed:.0f} needed): the step size is unchecked. Pass a larger "
                "check_budget to check it, or check=False to skip the check knowingly.")
    last = checks[-1]
    what = ("the pilots at h and h/2 still disagreed" if last.verdict == "disagree" else
            "the pilots at h and h/2 could not resolve a bias at the tolerance")
    smaller = (f"it returns the halved step {returned:.4g}, unconfirmed"
               if returned < last.step_size else f"it returns h = {returned:.4g}, unconfirmed")
    return (f"warmup's self-check stopped at its budget ({spent:.0f} of {allowed:.0f} data "
            f"passes) before it could confirm the step size: {what} ({last}); {smaller}. "
            "The draws may be biased by more than the tolerance: give a larger "
            f"check_budget, or sample at {returned / 2:.4g} and compare, or more warm-up "
            "(adapt_steps).")
