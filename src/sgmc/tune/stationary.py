"""Warm-up's guard for networks: the largest step whose draws are stationary.

For a network (d > ``dense_max``) the self-check's coupled pilots (:mod:`sgmc.tune.selfcheck`)
cannot be afforded — the curvature is not stationary and its smallest eigenvalue is not
positive, so a relaxation time from λ_min is meaningless — and the noise-limited step of the
rules (:mod:`sgmc.tune.rules`, 10 % variance inflation against a minibatch noise B of 10⁴ or
more) mixes too slowly to be of use: on scikit-learn's digits (64-100-10 MLP, batch 100) it is
≈ 6·10⁻⁶, while the weights settle in 2,000 steps at 100 times that. What a network run needs
first is that its draws stop drifting: a step too large lets the weights grow for the whole
run while the predictions look fine.

**The search.** From the step the rules allow without gradient noise (the integrator's own
limit, at the warm-up's ``budget``), pilots run the tuned sampler, as :func:`sgmc.sample` would,
from the run's own dispersed starts (``check_chains`` chains, Laplace draws around the mode)
for ``pilot_steps`` steps, recording at every thinned step the statistics of
:func:`sgmc.tune.selfcheck.statistics` on fixed evaluation rows: the energy, the log prior and
the log-likelihood per datum (a pilot a tenth as long first, while the steps diverge). A
pilot is *stationary* when, over its second half, the drift
test of :func:`sgmc.stationarity.drift` (Geweke's, batch-means SE) finds no drift in any
statistic of any chain at the Bonferroni threshold of :data:`sgmc.stationarity.ALPHA`, and its
draws stay finite. The step is halved until a pilot is stationary, and halved once more for a
margin (at the edge the verdict is a coin flip: on digits a pilot at 3.6·10⁻³ passed and a
run at that step ran away); it never goes below the rules' noise-limited step (the safe one).
The burn-in is the pilot's whole length, twice the half it needed at the larger step (a
halved step relaxes about half as fast): ``report.burn_in``.

**What it does not promise.** Stationary is not unbiased: at the step found, the gradient
noise heats the noisiest directions (the report's predicted inflation says by how much, on
the quadratic model of the rules), and the log prior's stationary level moves with the step
(docs/neural-networks.md gives the measurements). A doubled step is the edge the pilots
found; a quadrupled one, by construction, a step whose pilot drifted or diverged.
"""

from __future__ import annotations

import dataclasses
import math
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from scipy import stats as sps

from sgmc import stationarity
from sgmc.rng import Rng
from sgmc.tune import rules
from sgmc.tune.selfcheck import at_step, statistics

__all__ = ["PILOT_STEPS", "Pilot", "failure_message", "guard", "pilot", "search", "verdict"]

PyTree = Any
#: Kept points per pilot (the drift test's batches come from these).
KEEP = 200
#: Steps per pilot chain: half burn-in, half tested (on digits the weights settle in ~2,000
#: steps at the step found).
PILOT_STEPS = 4000
#: The default budget, in pilots: enough to halve from the integrator's limit to the rules'
#: noise-limited step on the networks measured.
PILOTS = 16


@dataclasses.dataclass(frozen=True)
class Pilot:
    """One pilot of the search: its step size, steps per chain, chains, data passes (its
    short screening pilot's included), verdict ("stationary", "drifts", "diverged"), the
    statistic with the largest |z| and that z."""

    step_size: float
    steps: int
    chains: int
    passes: float
    verdict: str
    statistic: str
    z: float

    def __str__(self) -> str:
        what = ("non-finite draws" if self.verdict == "diverged"
                else f"largest drift {self.statistic}: z = {self.z:.3g}")
        return (f"h = {self.step_size:.4g}: {self.verdict} ({what}; {self.chains} chains × "
                f"{self.steps} steps, {self.passes:.0f} passes)")


def pilot(problem, kernel, starts: PyTree, num_keep: int, thin: int, stats, key: jax.Array
          ) -> tuple[np.ndarray, np.ndarray, int]:
    """Run ``kernel`` from ``starts`` (chains on a leading axis) for ``num_keep`` × ``thin``
    steps: the statistics at every ``thin``-th step, (num_keep, chains, k), whether each
    chain's draws stayed finite, (chains,), and the per-example gradient evaluations. One
    compiled program for every pilot of a search (the step size is a leaf of ``kernel``)."""
    vals, finite, ev = _run(problem, kernel, starts, key, stats, num_keep, thin)
    chains = jax.tree.leaves(starts)[0].shape[0]
    evals = int(ev) + chains * int(kernel.init_evals(problem))
    return np.asarray(vals, np.float64), np.asarray(finite), evals


@partial(jax.jit, static_argnames=("stats", "num_keep", "thin"))
def _run(problem, kernel, starts, key, stats, num_keep, thin):
    chains = jax.tree.leaves(starts)[0].shape[0]
    k_init, k_run = jax.random.split(key)
    states = jax.vmap(lambda p, k: kernel.init(problem, p, k))(
        starts, jax.random.split(k_init, chains))
    chain_keys = jax.random.split(k_run, chains)

    def step(carry, t):
        states, ev = carry
        states, info = jax.vmap(
            lambda s, k: kernel.step(problem, s, Rng(jax.random.fold_in(k, t)), t))(
            states, chain_keys)
        return (states, ev + jnp.sum(info["grad_evals"])), None

    def block(carry, j):
        carry, _ = jax.lax.scan(step, carry, j * thin + jnp.arange(thin, dtype=jnp.int32))
        z = jax.vmap(kernel.draw)(carry[0])
        finite = jnp.all(jnp.stack([jnp.all(jnp.isfinite(x), axis=tuple(range(1, x.ndim)))
                                    for x in jax.tree.leaves(z)]), axis=0)
        return carry, (jax.vmap(stats)(z), finite)

    (_, ev), (vals, finite) = jax.lax.scan(block, (states, jnp.int32(0)),
                                           jnp.arange(num_keep, dtype=jnp.int32))
    return vals, jnp.all(finite, axis=0), ev


def verdict(vals: np.ndarray, finite: np.ndarray, names: list[str]) -> tuple[str, str, float]:
    """The pilot's verdict from its statistics (num_keep, chains, k): the drift test of each
    chain's trace of each statistic over the second half, Bonferroni-corrected at
    :data:`sgmc.stationarity.ALPHA` (module docstring). Returns (verdict, statistic, z)."""
    if not np.all(finite) or not np.all(np.isfinite(vals)):
        return "diverged", "", math.inf
    half = vals[vals.shape[0] // 2:]
    tests = [(f"{name} of chain {c}", stationarity.drift(half[:, c, j]).z)
             for c in range(half.shape[1]) for j, name in enumerate(names)]
    crit = float(sps.norm.ppf(1.0 - stationarity.ALPHA / (2.0 * len(tests))))
    name, z = max(tests, key=lambda t: -1.0 if math.isnan(t[1]) else abs(t[1]))
    return ("drifts" if abs(z) > crit else "stationary"), name, float(z)


def search(problem, kernel_at, top: float, floor: float, starts: PyTree, steps: int,
           budget: float, key: jax.Array) -> tuple[float, int | None, list[Pilot], float]:
    """Halve the step from ``top`` until a pilot of ``steps`` steps is stationary, never below
    ``floor`` (module docstring); ``kernel_at(h)`` is the tuned sampler at step h. Stops
    when ``budget`` data passes are spent. Returns (h, burn-in steps or None when no pilot
    was stationary, the pilots, passes)."""
    n = problem.data_rows if problem.has_data else 1
    k_eval, k_run = jax.random.split(key)
    rows = min(n, 64)
    eval_idx = jnp.sort(jax.random.choice(k_eval, n, (rows,), replace=False))
    stats, names = statistics(problem, eval_idx, coordinates=False)
    chains = jax.tree.leaves(starts)[0].shape[0]
    thin = max(1, -(-steps // KEEP))
    keep = -(-steps // thin)
    h, pilots, spent = max(top, floor), [], 0.0
    screen = max(1, keep // 10)  # a tenth of a pilot tells divergence: halve until finite
    short, cost = True, 0.0      # cost: the passes of this step's pilots (screen included)
    for i in range(64):
        vals, finite, evals = pilot(problem, kernel_at(h), starts, screen if short else keep,
                                    thin, stats, jax.random.fold_in(k_run, i))
        passes = (evals + chains * vals.shape[0] * rows) / n  # the sampler's, the statistics'
        spent, cost = spent + passes, cost + passes
        found, name, z = verdict(vals, finite, names)
        if short and found != "diverged":  # finite for a tenth: the full pilot at this step
            short = False
            continue
        pilots.append(Pilot(h, vals.shape[0] * thin, chains, cost, found, name, z))
        cost = 0.0
        if found == "stationary":  # at the edge a verdict is a coin flip: one halving of
            # margin (measured on digits: a pilot stationary at 3.6e-3 ran away in a run)
            return max(h / 2.0, floor), keep * thin, pilots, spent
        if h <= floor or spent + passes > budget:
            break
        h = max(h / 2.0, floor)
    return max(h / 2.0, floor), None, pilots, spent  # the last pilot's step did not pass


def guard(problem, base, temperature: float, dynamics: str, curvature: tuple,
          friction: float | None, step_size: float, budget: float, check_budget: float | None,
          starts: PyTree, key: jax.Array) -> tuple[float, list[Pilot], float, int | None]:
    """Warm-up's network stage on the tuned sampler ``base`` at ``temperature`` (module
    docstring): from the rules' step without gradient noise, at the warm-up's ``budget``,
    down to ``step_size`` (the rules' noise-limited step). Returns (the factor on the step
    sizes, the pilots, their data passes, the burn-in or None)."""
    top = rules.largest_step(dynamics, curvature[0], curvature[1], temperature, friction, 0.0,
                             budget)
    n = problem.data_rows if problem.has_data else 1
    chains = jax.tree.leaves(starts)[0].shape[0]
    one = chains * PILOT_STEPS * 2.0 * (base.batch_size or n) / n  # ≤ 2 gradients a step
    allowed = check_budget if check_budget is not None else PILOTS * one
    h, burn, pilots, spent = search(problem, at_step(base, temperature), top, step_size,
                                    starts, PILOT_STEPS, allowed, key)
    return h / step_size, pilots, spent, burn


def failure_message(pilots: list[Pilot], returned: float) -> str:
    """The warning when no pilot was stationary (``returned``: the step warm-up returns)."""
    spent = sum(p.passes for p in pilots)
    return (f"warmup's stationarity guard found no step whose draws stopped drifting within "
            f"{PILOT_STEPS} steps ({len(pilots)} pilots, {spent:.0f} data passes; the last: "
            f"{pilots[-1]}); it returns h = {returned:.4g}, unconfirmed, and no burn-in. Run "
            "longer with a long burn_in and check res.diagnose(), give check_budget for more "
            "pilots, or a smaller step.")
