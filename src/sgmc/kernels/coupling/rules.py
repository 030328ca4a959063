"""Exchange rules: how the replicas of :func:`sgmc.replica_exchange` exchange positions after
their dynamics step (``rule=...``), and the contract they implement (:class:`ExchangeRule`).

Two rules are built in:

* :class:`MetropolisRule` (:func:`metropolis_rule`, the default) — the bias-corrected
  Metropolis swap of reSGLD (Deng, Feng, Gao, Liang & Lin 2020, "Non-convex learning via
  replica exchange stochastic gradient MCMC", eq. 4 and Alg. 1) and VR-reSGLD (Deng et al.
  2021, "Accelerating convergence of replica exchange stochastic gradient MCMC via variance
  reduction", Alg. 1–2): adjacent pairs (k, k+1), chosen by an even–odd or a stochastic
  schedule, swap with probability min(1, S_k),

      S_k = exp( a_k · (Ũ_k − Ũ_{k+1} − a_k σ̂_k² / (2F_t)) ),    a_k = 1/τ_k − 1/τ_{k+1},

  on energy estimates Ũ of one fresh minibatch (:func:`log_swap_ratio`; the correction
  convention is in :mod:`sgmc.kernels.coupling.replica`).
* :class:`GreedyRule` (:func:`greedy_rule`) — GD×LD / SGD×SGLD (Dong & Tong 2021, "Replica
  exchange for non-convex optimization", Alg. 1–2): two replicas, X at τ = 0 and Y at τ = γ;
  if F̂(Y) < F̂(X) − t0 they swap (X, Y) ← (Y, X), or with ``copy=True`` copy (X, Y) ← (Y, Y).

The contract they implement is :mod:`sgmc.contracts.exchange`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp

from sgmc import _validate as check
from sgmc._pytree import pytree_dataclass, replace, static
from sgmc.contracts.exchange import (
    PAIR_SCHEDULES,
    Exchange,
    ExchangeContext,
    ExchangeRule,
    Rule,
)
from sgmc.rng import Rng, as_rng
from sgmc.schedules import Constant, Schedule, as_schedule

__all__ = ["Exchange", "ExchangeContext", "ExchangeRule", "GreedyRule", "MetropolisRule",
           "Rule", "greedy_rule", "log_swap_ratio", "metropolis_rule", "pair_permutation",
           "swap_energies"]

PyTree = Any


def pair_permutation(accepted: jax.Array) -> jax.Array:
    """The permutation of K slots that swaps the accepted adjacent pairs (K − 1,) bool;
    accepted pairs must be disjoint (each slot moves by at most one)."""
    up = accepted.astype(jnp.int32)
    k = accepted.shape[0] + 1
    return jnp.arange(k) + jnp.pad(up, (0, 1)) - jnp.pad(up, (1, 0))


# -- the bias-corrected Metropolis swap (reSGLD, VR-reSGLD) -----------------------------------
def swap_energies(problem, energy, energy_state, position, idx):
    """Ũ per replica on the minibatch ``idx`` shared by all replicas (``energy`` the swap
    energy estimator, its states and the positions stacked over replicas), and the
    evaluations spent."""
    u, n = jax.vmap(lambda s, th: energy.estimate(problem, s, th, idx))(energy_state, position)
    return u, jnp.sum(n)


def log_swap_ratio(a, diff, variance, correction):
    """log S = a·(ΔŨ − a σ̂²/(2F)) with ΔŨ = Ũ_low − Ũ_high, a = 1/τ_low − 1/τ_high: with
    ΔŨ ~ N(D, σ²) and σ̂² = σ², E[S] = exp(aD) exactly when F = 1."""
    return a * (diff - a * variance / (2.0 * correction))


@pytree_dataclass
class MetropolisRule(Rule):
    """The bias-corrected Metropolis swap (module docstring); see :func:`metropolis_rule`."""

    correction: Any                        # F_t, a schedule
    schedule: str = static("even_odd")     # the pair schedule (PAIR_SCHEDULES)

    uses_energy = True

    def pairs(self, k: int, attempt, key) -> jax.Array:
        """The adjacent pairs (K − 1,) bool tested at this attempt: with ``"even_odd"``
        pairs k ≡ j (mod 2) at the j-th attempt, with ``"stochastic"`` a random parity."""
        if k == 2:
            return jnp.ones(1, bool)
        parity = (attempt % 2 if self.schedule == "even_odd"
                  else jax.random.bernoulli(key).astype(jnp.int32))
        return jnp.arange(k - 1) % 2 == parity

    def energies(self, problem, position, key, ctx: ExchangeContext):
        """Ũ per replica on one fresh minibatch shared by all replicas, and the evaluations."""
        idx = jax.random.randint(key, (ctx.energy_batch,), 0, problem.data_rows,
                                 dtype=jnp.int32)
        return swap_energies(problem, ctx.energy, ctx.energy_state, position, idx)

    def attempt(self, problem, position, key, ctx: ExchangeContext) -> Exchange:
        """Test the scheduled pairs with probability min(1, S_k) (σ̂² = ``ctx.variance``).
        ``key`` is split in four: minibatch, uniforms, parity; the fourth is the coupling's,
        for the σ̂² of this attempt it measures first (the split predates the rule object, and
        keeps the draws)."""
        k = ctx.temperature.shape[0]
        k_idx, k_u, k_par, _ = jax.random.split(key, 4)
        u, evals = self.energies(problem, position, k_idx, ctx)
        tau = ctx.temperature
        a = 1.0 / tau[:-1] - 1.0 / tau[1:]
        log_s = log_swap_ratio(a, u[:-1] - u[1:], ctx.variance, self.correction(ctx.t))
        active = self.pairs(k, ctx.attempt, k_par)
        accept = active & (jnp.log(jax.random.uniform(k_u, (k - 1,))) < log_s)
        return Exchange(pair_permutation(accept), accept, active, evals)


def metropolis_rule(correction: float | Schedule = 1.0,
                    schedule: str = "even_odd") -> MetropolisRule:
    """The bias-corrected Metropolis swap of reSGLD / VR-reSGLD for :func:`replica_exchange`
    (the default rule; ``replica_exchange(correction=..., schedule=...)`` builds it too).

    Args:
        correction: F > 0, or a schedule F_t (e.g. ``sgmc.schedules.geometric(F0, 1.02,
            epoch, stop=burn_in)``, annealed with τ as in the reSGLD paper's Sec. 5.2);
            F = 1 is the unbiased correction, larger F swaps more.
        schedule: ``"even_odd"`` (deterministic, non-reversible) or ``"stochastic"`` choice of
            the pairs tested at an attempt (K > 2).
    """
    f = as_schedule(correction, "correction")
    if float(f(0)) <= 0:
        raise ValueError(f"correction must be > 0, got F_0 = {float(f(0))}")
    check.choice("schedule", schedule, PAIR_SCHEDULES)
    return MetropolisRule(f, schedule)


# -- the greedy GD×LD exchange ---------------------------------------------------------------
@pytree_dataclass
class GreedyRule(Rule):
    """The GD×LD / SGD×SGLD exchange (Dong & Tong, Alg. 1–2); see the module docstring and
    :func:`greedy_rule`."""

    threshold: Any
    bound: Any = None
    copy: bool = static(False)
    batch_size: int | None = static(None)
    box: tuple | None = static(None)
    boundary: str = static("clip")

    BOUNDARIES = ("clip", "reflect")

    @staticmethod
    def to_box(x, lo, hi, boundary: str = "clip"):
        """Map x coordinate-wise into [lo, hi]: ``"clip"`` projects, min(max(x, lo), hi);
        ``"reflect"`` folds at the faces like a mirror, x ↦ lo + (L − |((x − lo) mod 2L) − L|)
        with L = hi − lo (so hi + a ↦ hi − a and lo − a ↦ lo + a for 0 ≤ a ≤ L)."""
        if boundary == "clip":
            return jnp.clip(x, lo, hi)
        width = hi - lo
        y = jnp.mod(x - lo, 2.0 * width)
        return lo + (width - jnp.abs(y - width))

    def with_box(self, box, boundary: str = "clip") -> GreedyRule:
        """The same rule, projecting onto ``box`` = (lo, hi) by ``boundary``."""
        return replace(self, box=box, boundary=boundary)

    def ladder(self, temperatures: Sequence) -> tuple[Schedule, ...]:
        if len(temperatures) != 2:
            raise ValueError("the greedy rule couples exactly 2 replicas (X at temperature 0, "
                             f"Y at γ); got {len(temperatures)} temperatures")
        temps = tuple(v if isinstance(v, Schedule) else Constant(check.nonnegative(
            "temperature", v)) for v in temperatures)
        start = [float(s(0)) for s in temps]
        if min(start) < 0 or start[1] < start[0]:
            raise ValueError(f"temperatures must satisfy 0 ≤ τ_1 ≤ τ_2, got {start}")
        return temps

    def kernel_name(self, sampler_name: str) -> str:
        return "gd_x_ld"

    def check(self, problem) -> None:
        if self.batch_size is not None:
            if not problem.has_data:
                raise ValueError("the greedy rule's batch_size must be None for an objective "
                                 f"without data (got batch_size={self.batch_size})")
            check.integer("batch_size", self.batch_size, lo=1, hi=problem.data_rows)

    def project(self, position):
        """Map onto the box by ``boundary`` (:meth:`to_box`; identity without a box)."""
        if self.box is None:
            return position
        lo, hi = self.box
        return jax.tree.map(lambda x: self.to_box(x, lo, hi, self.boundary), position)

    def values(self, problem, position, rng: Rng | jax.Array):
        """F̂ per replica (exact, or a minibatch mean on one fresh batch) and the evals."""
        if self.batch_size is None:
            fn = problem.full_energy if problem.has_data else problem.exact_energy
            return jax.vmap(fn)(position), 2 * max(problem.num_data, 1)
        idx = as_rng(rng).randint((self.batch_size,), 0, problem.data_rows, dtype=jnp.int32)
        u = jax.vmap(lambda th: problem.estimate_energy(th, idx))(position)
        return u, 2 * self.batch_size

    def exchange(self, problem, position, rng: Rng | jax.Array):
        """(perm over the two slots, exchanged?, evals): X is slot 0, Y slot 1."""
        u, evals = self.values(problem, position, rng)
        accept = u[1] < u[0] - self.threshold
        if self.bound is not None:
            norms = jax.vmap(lambda th: jnp.sqrt(sum(
                jnp.sum(jnp.square(x)) for x in jax.tree.leaves(th))))(position)
            accept = accept & jnp.all(norms <= self.bound)
        moved = jnp.array([1, 1] if self.copy else [1, 0], jnp.int32)
        perm = jnp.where(accept, moved, jnp.arange(2, dtype=jnp.int32))
        return perm, accept, jnp.asarray(evals, jnp.int32)

    def attempt(self, problem, position, key, ctx: ExchangeContext) -> Exchange:
        """:meth:`exchange` on the one pair, attempted every time."""
        perm, accept, evals = self.exchange(problem, position, key)
        return Exchange(perm, accept[None], jnp.ones(1, bool), evals)


def greedy_rule(threshold: float = 0.0, copy: bool = False, bound: float | None = None,
                batch_size: int | None = None, box=None, boundary: str = "clip") -> GreedyRule:
    """The greedy GD×LD exchange rule for :func:`replica_exchange` (``rule=``).

    Args:
        threshold: t0 ≥ 0; exchange when F̂(Y) < F̂(X) − t0.
        copy: False swaps (GD×LD), True copies Y onto X (nGD×LD).
        bound: M_v > 0 or None; no exchange unless ‖X‖, ‖Y‖ ≤ M_v.
        batch_size: size of the comparison minibatch (None: the exact objective).
        box: optional (lo, hi) with lo < hi: both replicas are mapped into [lo, hi]^d after
            every dynamics step, before the exchange test (Dong & Tong, Sec. 3.2, restrict
            Rastrigin and Griewank to [−5, 5]^d without saying how).
        boundary: how: ``"clip"`` (projection onto the box; a coordinate that leaves sticks to
            the face) or ``"reflect"`` (mirror reflection at the faces; :meth:`GreedyRule.to_box`).
    """
    t0 = check.nonnegative("threshold", threshold)
    if bound is not None:
        bound = check.positive("bound", bound)
    if batch_size is not None:
        batch_size = check.integer("batch_size", batch_size, lo=1)
    if box is not None:
        box = check.interval("box", box)
    boundary = check.choice("boundary", boundary, GreedyRule.BOUNDARIES)
    return GreedyRule(t0, bound, bool(copy), batch_size, box, boundary)
