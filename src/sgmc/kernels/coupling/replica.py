"""Replica exchange (parallel tempering) SG-MCMC with the bias-corrected swap rule
(Deng, Feng, Gao, Liang & Lin, reSGLD; Deng et al., VR-reSGLD, Alg. 1–2, eq. 5).

K replicas of one base sampler run at temperatures τ_1 < … < τ_K (and their own step sizes),
stacked on a leading axis and moved with ``vmap``: the same minibatch for every replica in a
step, independent noise. Every ``swap_every`` steps adjacent pairs (k, k+1) attempt to swap
positions with probability min(1, S_k),

    S_k = exp( a_k · (Ũ_k − Ũ_{k+1} − a_k σ̂_k² / (2F_t)) ),    a_k = 1/τ_k − 1/τ_{k+1},

(the paper's eq. 4 / Alg. 1–2 swap rate with its appendix's a²σ²/2 convention, below) where
Ũ are energy estimates on one fresh minibatch (shared by all replicas; see
:mod:`sgmc.kernels.coupling.energy`) and σ̂_k² estimates Var(Ũ_k − Ũ_{k+1}) of *this* estimator (for
control-variate energies: at the swap's own anchor age, σ̂_{k,j}² below).

**Correction convention.** If Ũ_k − Ũ_{k+1} = D + ε with ε ~ N(0, σ²), then
E[exp(a(D + ε))] = exp(aD + a²σ²/2), so subtracting a²σ²/2 makes S̃ unbiased for the exact
exp(aD) when F = 1. The paper prints a²σ̂²/F (twice this correction at F = 1; its reference
code uses both forms). Here F = 1 is the unbiased rule and F > 1 shrinks the correction,
trading bias for swaps exactly as the paper's F does.

**σ̂², plain minibatch energies (reSGLD; Alg. 1's σ̂² update).** Every ``variance_period``
steps (v), before the dynamics step, σ̃_k² is the sample variance of Ũ_k − Ũ_{k+1} over
``num_replicates`` independent minibatches at the current states, and
σ̂_k² ← (1 − γ) σ̂_k² + γ σ̃_k². All replicas start from one point, so the measurement at
step 0 gives 0: the second measurement (step v) replaces it, and no swap is attempted before
it.

**σ̂² per anchor age, control-variate energies (VR-reSGLD).** Anchors are refreshed at every
step t with t mod m = 0 (m the ``cv_energy`` period, whatever v is), before the move, so the
swap at step t uses anchors of age j + 1 with j = t mod m, and the variance of its ΔŨ grows
with j (Lemma 1; measured on the mixture: ~1.0e3 at age 1, 7.7e3 at age 40). Alg. 1 measures
σ̂² once per period, at the oldest anchor, and applies it to every swap, which over-penalises
all younger ones. Here σ̂² is a table over ages: at each swap attempt, on a minibatch B′ drawn
independently of the swap's,

    σ̃_{k,j}² = (wN/n)² · n · s²_{i∈B′}(d_i)    (the plug-in Var(ΔŨ_k | θ, β̂); see
                                                  :mod:`sgmc.kernels.coupling.energy`),
    σ̂_{k,j}² ← (1 − γ) σ̂_{k,j}² + γ σ̃_{k,j}²   (σ̃² itself at an age's first measurement),

and the swap uses σ̂_{k,j}² of its own age j. Each age's entry is thus updated once per anchor
period, as Alg. 1 updates its single σ̂² every m steps; the cost is one extra minibatch of
energies per attempt (2Kn evaluations, the swap test's own cost) instead of ``num_replicates``
minibatches every v steps. The replicas are already apart when the first swap is tested, so
swaps start at step 0. The same per-example energies L_i(θ_k) give, at no extra cost, the σ̃²
of *plain* minibatch energies at these states and a plain swap's acceptance there, kept
alongside (``plain_energy_variance``, ``plain_swap_weight`` in the info) so that a run can
tell whether its control variate helps (:mod:`sgmc.kernels.coupling.variance`).
``variance_by_age=False`` restores Alg. 1's single σ̂² measured by
replicates every v steps before the anchors are refreshed (v = m: at the oldest anchor).
With ``cv_energy(adaptive=True)`` the replicates (every v steps, before the refresh: with
v = m at the oldest anchor, as Alg. 2 and its reference code) give each replica's coefficient
c = −Cov(X, Y)/Var(Y), smoothed the same way; σ̂² per age then uses the current c.

**Cool-down and annealed F** (the paper's deep-learning protocol, Sec. 5.2, and its
reference code). ``cooldown=L`` allows at most one accepted swap per window of L steps
(windows [wL, (w + 1)L); L = the steps of one epoch gives "at most one swap per epoch"):
after a swap, no swap is attempted in the rest of its window. ``correction`` may be a
schedule F_t, e.g. ``schedules.geometric(F0, 1.02, epoch, stop=burn_in)`` annealed with
τ_t = τ₀/1.02^k so that the correction a_t σ̂²/(2F_t) keeps its scale while a_t grows.

**Swaps.** Positions swap; energy anchors and their cached full energies travel with them
(a pitfall of the VR-reSGLD paper's public reference code). Momenta, preconditioners and
gradient-estimator state (SVRG snapshots, SAGA tables) stay with their temperature slot: the
target is a product over slots, so swapping positions alone is a valid Metropolis move, the
estimators stay unbiased, and no O(N) table is copied. Pairs attempted: with
``schedule="even_odd"`` pairs with k ≡ j (mod 2) at the j-th attempt (deterministic even–odd,
non-reversible); with ``"stochastic"`` the parity is drawn at random. With two replicas the
one pair is attempted every time.

**Exchange rules.** The swap test is a rule object called only through the
:class:`~sgmc.contracts.exchange.ExchangeRule` contract: the Metropolis test above is
:class:`~sgmc.kernels.coupling.rules.MetropolisRule` (the default), and the same coupling with
:class:`~sgmc.kernels.coupling.rules.GreedyRule` is GD×LD / SGD×SGLD (Dong & Tong 2021,
Alg. 1–2; :mod:`sgmc.kernels.coupling.rules`). Per step, the coupling: (if the rule uses
energies) the replicate σ̂² / c measurement and the anchor refresh; one dynamics step of every
replica; ``rule.project``; then, every ``swap_every`` steps outside a cool-down (and, for an
energy rule, once σ̂² is measured), ``rule.attempt`` inside a ``lax.cond`` that carries only
the positions, energy states, labels and σ̂² (never an estimator's O(N) table), and applies
the permutation it returns to the positions, the energy states and the labels.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from sgmc import _validate as check
from sgmc._pytree import pytree_dataclass, replace, static
from sgmc.kernels.coupling.energy import CVEnergy
from sgmc.kernels.coupling.rules import PAIR_SCHEDULES, ExchangeContext
from sgmc.kernels.coupling.variance import age_variance, replicate_variance
from sgmc.kernels.dynamics import StepParams
from sgmc.rng import Rng, as_rng
from sgmc.schedules import Schedule, as_schedule

__all__ = ["OUTPUTS", "SCHEDULES", "ReplicaExchange", "ReplicaState"]

SCHEDULES = PAIR_SCHEDULES
OUTPUTS = ("coldest", "all")


class ReplicaState(NamedTuple):
    """Replicas stacked on axis 0 (dynamics states), the shared batcher state, per-replica
    energy-estimator states, σ̂² per pair, slot labels and the number of σ̂² updates."""

    dyn: Any
    batch: Any
    energy: Any
    variance: jax.Array   # (K − 1, A): σ̂² per pair and anchor age (A = m, or 1)
    plain: jax.Array      # (K − 1, 2): plain energies' σ̂² and swap acceptance (.variance)
    labels: jax.Array     # (K,) int32: the chain each slot holds
    measured: jax.Array   # int32: replicate σ̂² (or c) updates so far
    last_swap: jax.Array  # int32: cool-down window of the last accepted swap (−1: none)

    @property
    def position(self):
        return self.dyn.position


@pytree_dataclass
class ReplicaExchange:
    """Replica exchange over a base sampler (:class:`ReplicaBase`) with an exchange rule
    (:class:`sgmc.kernels.coupling.ExchangeRule`); see :func:`replica_exchange`."""

    sampler: Any
    temperatures: tuple
    step_sizes: tuple
    energy: Any
    rule: Any
    smoothing: Any
    swap_every: int = static(1)
    variance_period: int = static(1)
    num_replicates: int = static(10)
    output: str = static("coldest")
    name: str = static("replica_exchange")
    cooldown: Any = 0
    variance_by_age: bool = static(True)

    @property
    def num_replicas(self) -> int:
        return len(self.temperatures)

    @property
    def correction(self) -> Schedule:
        """F_t of the Metropolis rule (``rule.correction``)."""
        return self.rule.correction

    @property
    def schedule(self) -> str:
        """The Metropolis rule's pair schedule (``rule.schedule``)."""
        return self.rule.schedule

    #: ReplicaState fields stacked over replicas (a device mesh may split them).
    replica_stacked = ("dyn", "energy")

    #: The info of a step (the kernel contract, :class:`sgmc.contracts.kernel.Kernel`): counts are
    #: summed over a draw's steps, states (σ̂², the labels) kept at the draw.
    #: With control-variate energies also ``plain_energy_variance``: σ̂² of plain minibatch
    #: energy differences at the same states, ages and minibatches (:mod:`.variance`).
    @property
    def info_spec(self) -> MappingProxyType:
        cv = dict.fromkeys(("plain_energy_variance", "plain_swap_weight"),
                           "last") if self._cv else {}
        return MappingProxyType({"grad_evals": "total", "swaps": "sum",
                                 "swap_attempts": "sum", "energy_variance": "last",
                                 "replica_labels": "last", **cv})

    batch_size = property(lambda self: self.sampler.batch_size)
    run_length = property(lambda self: self.sampler.run_length)  # a cyclical base's K

    def meta(self) -> dict:
        period = {"energy_period": self.energy.period} if self._cv else {}
        return {"output": self.output, **period}

    @property
    def positive_schedules(self) -> tuple[str, ...]:
        """F_t divides σ̂²; a rule that uses energies divides by τ (a = 1/τ_k − 1/τ_{k+1})."""
        return ("correction",) + (("temperatures",) if self.rule.uses_energy else ())

    @property
    def draw_replicas(self) -> bool:
        """Whether a draw stacks every replica's point on a leading axis."""
        return self.output == "all"

    def keeps(self, t):
        """As the base sampler's (a cyclical base keeps its sampling stages only)."""
        return self.sampler.keeps(t)

    def draw(self, state: ReplicaState):
        """What a draw records: the coldest replica's position, or all replicas'."""
        if self.output == "all":
            return state.position
        return jax.tree.map(lambda x: x[0], state.position)

    @staticmethod
    def with_positions(state: ReplicaState, positions) -> ReplicaState:
        """``state`` with every replica's position replaced by ``positions`` (stacked on the
        leading replica axis, in slot order). Momenta, estimator states (SVRG snapshots, SAGA
        tables), energy anchors and labels are kept as they are: e.g. to start the replicas
        from different points after :meth:`init`, or to project them onto a box."""
        return state._replace(dyn=state.dyn._replace(position=positions))

    def params(self, t) -> StepParams:
        """Per-replica step sizes and temperatures at step t, t itself unbatched."""
        return StepParams(
            jnp.stack([jnp.asarray(s(t), jnp.float32) for s in self.step_sizes]),
            jnp.stack([jnp.asarray(s(t), jnp.float32) for s in self.temperatures]),
            jnp.asarray(t, jnp.int32))

    @property
    def _cv(self) -> bool:
        """Control-variate swap energies used by the rule (σ̂² of plain ones measured too)."""
        return isinstance(self.energy, CVEnergy) and self.rule.uses_energy

    @property
    def _by_age(self) -> bool:
        """σ̂² kept per anchor age (control-variate energies, ``variance_by_age``)."""
        return isinstance(self.energy, CVEnergy) and self.variance_by_age

    @property
    def _ages(self) -> int:
        return self.energy.period if self._by_age else 1

    @property
    def _replicates(self) -> bool:
        """Whether the replicate measurement runs: σ̂² (not per age) or an adaptive c."""
        return not self._by_age or self.energy.adaptive

    # -- the tuning contract (sgmc.contracts.tunable.Tunable): one base, K temperatures --
    def tuning_base(self):
        return self.sampler.tuning_base()

    def tuning_temperatures(self) -> list[float]:
        return [float(s(0)) for s in self.temperatures]

    def given_steps(self) -> list[float] | None:
        if any(s is None for s in self.step_sizes):
            return None
        return [float(s(0)) for s in self.step_sizes]

    def with_tuning(self, base, steps: list[float], force: bool = False) -> ReplicaExchange:
        step_sizes = self.step_sizes
        if force or any(s is None for s in step_sizes):
            step_sizes = tuple(as_schedule(h) for h in steps)
        return replace(self, sampler=self.sampler.with_tuning(base, steps, force),
                       step_sizes=step_sizes)

    def _energy_batch(self, problem) -> int:
        """Minibatch size of the swap energies: the energy's, else the sampler's, else N."""
        return self.energy.batch_size or self.sampler.batch_size or problem.data_rows

    # -- init ---------------------------------------------------------------------------
    def init(self, problem, position, key) -> ReplicaState:
        k = self.num_replicas
        keys = jax.random.split(key, k + 1)
        p0 = self.params(0)
        base = self.sampler

        def one(kk, h, tau):
            return base.dynamics.init(problem, base.estimator, position, kk,
                                      StepParams(h, tau, p0.t))

        dyn = jax.vmap(one)(keys[:k], p0.step_size, p0.temperature)
        energy = jax.vmap(lambda _: self.energy.init(problem, position))(jnp.arange(k))
        # −1 marks an age not yet measured (σ̂² ≥ 0 otherwise).
        variance = jnp.full((k - 1, self._ages), -1.0 if self._by_age else 0.0, jnp.float32)
        return ReplicaState(dyn, base.batcher.init(problem.data_rows, keys[k]), energy,
                            variance, jnp.full((k - 1, 2), -1.0, jnp.float32),
                            jnp.arange(k, dtype=jnp.int32), jnp.int32(0), jnp.int32(-1))

    def init_evals(self, problem) -> int:
        k = self.num_replicas
        return k * (self.sampler.init_evals(problem) + self.energy.init_evals(problem))

    def check(self, problem, position, num_chains: int = 1) -> None:
        if self.rule.uses_energy and not problem.has_data:
            raise ValueError("replica exchange with minibatch energies needs a problem with "
                             "data; use a sampler without coupling for data-free problems")
        self.sampler.check(problem, position, num_chains * self.num_replicas)
        self.rule.check(problem)
        if self.rule.uses_energy:
            check.integer("energy batch_size", self._energy_batch(problem), lo=1,
                          hi=problem.data_rows)

    # -- one step -----------------------------------------------------------------------
    def _measure(self, problem, state: ReplicaState, key, t=0):
        """The replicate σ̂² / c measurement at step t's temperatures
        (:func:`~sgmc.kernels.coupling.variance.replicate_variance`). Returns (state, evals)."""
        return replicate_variance(self, problem, state, key, self.params(t).temperature)

    def _refresh(self, problem, energy, positions):
        """New anchors β̂ = θ for every replica (a full data pass each)."""
        energy, n_ref = jax.vmap(lambda s, th: self.energy.refresh(problem, s, th))(
            energy, positions)
        return energy, jnp.sum(n_ref)

    def _swap(self, problem, state: ReplicaState, key, params: StepParams, attempt,
              allowed=True):
        """One exchange attempt: σ̂² of this step's anchor age when kept per age (on the
        fourth key of ``jax.random.split(key, 4)``; the Metropolis rule draws from the other
        three), then ``rule.attempt`` with σ̂² in its context, and the permutation it returns
        applied to the positions, energy states and labels. ``allowed`` (a per-chain bool):
        False makes the attempt a no-op (no swap, no σ̂² update, nothing counted) — the
        chain's cool-down, or σ̂² not yet measured. Returns (state, accepted, attempted,
        evals)."""
        n_var = 0
        if self.rule.uses_energy and self._by_age:
            k_var = jax.random.split(key, 4)[3]
            table, plain, var, n_var = age_variance(self, problem, state, k_var, params.t,
                                                    params.temperature)
            state = state._replace(variance=jnp.where(allowed, table, state.variance),
                                   plain=jnp.where(allowed, plain, state.plain))
        else:
            var = state.variance[:, 0]
        ctx = ExchangeContext(params.temperature, params.t, attempt, var, self.energy,
                              state.energy, self._energy_batch(problem))
        ex = self.rule.attempt(problem, state.position, key, ctx)
        perm = jnp.where(allowed, ex.perm, jnp.arange(ex.perm.shape[0], dtype=ex.perm.dtype))
        take = lambda x: x[perm]
        state = self.with_positions(state, jax.tree.map(take, state.position))
        state = state._replace(energy=jax.tree.map(take, state.energy),
                               labels=state.labels[perm])
        return (state, ex.accepted & allowed, ex.attempted & allowed,
                jnp.where(allowed, ex.evals + n_var, 0))

    def _move(self, problem, state: ReplicaState, r_batch: Rng, r_dyn: Rng, params):
        """One dynamics step of every replica (``vmap`` over state, randomness, step size and
        temperature; t unbatched) on one shared minibatch."""
        batch, batch_state = self.sampler.batcher.draw(state.batch, r_batch, problem.data_rows)
        dyn, n_dyn = r_dyn.map_split(
            self.num_replicas,
            lambda r, dyn, p: self.sampler.transition(problem, dyn, batch, r, p),
            state.dyn, params, in_axes=(0, StepParams(0, 0, None)))
        return state._replace(dyn=dyn, batch=batch_state), n_dyn

    def _periodic(self, problem, state: ReplicaState, r_var: Rng, t):
        """Before the move, for a rule that uses the swap energies: the replicate σ̂² / c
        measurement (every v steps) and the anchor refresh (every m steps). Returns (state,
        replicate evals, refresh evals)."""
        zero = jnp.int32(0)
        n_var = n_ref = zero
        if self._replicates:
            k_var = r_var.key()  # drawn inside the branch
            small = (state.dyn.position, state.energy, state.variance, state.plain,
                     state.measured)

            def measure(parts):
                pos, energy, var, plain, measured = parts
                st = state._replace(energy=energy, variance=var, plain=plain,
                                    measured=measured)
                st, n = self._measure(problem, st, k_var, t)
                return ((pos, st.energy, st.variance, st.plain, st.measured),
                        jnp.asarray(n, jnp.int32))

            # Only small parts go through the branch (never an estimator's O(N) table).
            small, n_var = jax.lax.cond(t % self.variance_period == 0, measure,
                                        lambda parts: (parts, zero), small)
            state = state._replace(energy=small[1], variance=small[2], plain=small[3],
                                   measured=small[4])

        if isinstance(self.energy, CVEnergy):
            # Anchors every m steps, after the replicate measurement (at the oldest anchor).
            def refresh(energy):
                energy, n = self._refresh(problem, energy, state.dyn.position)
                return energy, jnp.asarray(n, jnp.int32)

            energy, n_ref = jax.lax.cond(t % self.energy.period == 0, refresh,
                                         lambda e: (e, zero), state.energy)
            state = state._replace(energy=energy)

        return state, n_var, n_ref

    def step(self, problem, state: ReplicaState, rng: Rng | jax.Array, t):
        """Step t: (for a rule that uses the swap energies) the replicate σ̂² / c measurement
        and the anchor refresh; one dynamics step of every replica on one shared minibatch;
        ``rule.project``; then, every ``swap_every`` steps outside a cool-down, the rule's
        exchange attempt (:meth:`_swap`)."""
        k = self.num_replicas
        r_var, r_batch, r_dyn, r_swap = as_rng(rng).split(4)
        params = self.params(t)
        zero = jnp.int32(0)
        n_var = n_ref = zero
        if self.rule.uses_energy:
            state, n_var, n_ref = self._periodic(problem, state, r_var, t)
        state, n_dyn = self._move(problem, state, r_batch, r_dyn, params)
        state = self.with_positions(state, self.rule.project(state.position))
        k_swap = r_swap.key()  # drawn inside the branch

        attempt = (t + 1) // self.swap_every - 1
        swap_parts = (state.position, state.energy, state.labels, state.variance, state.plain)

        def swap(parts):
            pos, energy, labels, var, plain = parts
            st = self.with_positions(state, pos)._replace(energy=energy, labels=labels,
                                                           variance=var, plain=plain)
            st, acc, act, n = self._swap(problem, st, k_swap, params, attempt, allowed)
            return ((st.position, st.energy, st.labels, st.variance, st.plain), acc, act,
                    jnp.asarray(n, jnp.int32))

        def no_swap(parts):
            return parts, jnp.zeros(k - 1, bool), jnp.zeros(k - 1, bool), zero

        # Cool-down: at most one accepted swap per window of ``cooldown`` steps.
        window = t // jnp.maximum(self.cooldown, 1)
        allowed = ~((self.cooldown > 0) & (state.last_swap == window))
        if self.rule.uses_energy and not self._by_age:
            # No swaps before σ̂² has been measured at distinct states (the second measurement).
            allowed = allowed & (state.measured >= 2)
        # The branch's predicate depends on t alone, so it stays unbatched under the vmap
        # over chains; the per-chain conditions mask the attempt inside it. (A *batched*
        # predicate turns the cond into a select of both branches, and XLA:CPU (jax 0.10.2)
        # then computed the exact energies of ≥ 32 chains wrongly: see
        # tests/kernels/test_replica.py::test_exact_energy_swaps_with_many_chains.) Only small parts
        # go through the branch (never an estimator's O(N) table).
        attempt_now = (t + 1) % self.swap_every == 0
        swap_parts, acc, act, n_swap = jax.lax.cond(attempt_now, swap, no_swap, swap_parts)
        state = self.with_positions(state, swap_parts[0])._replace(
            energy=swap_parts[1], labels=swap_parts[2], variance=swap_parts[3],
            plain=swap_parts[4],
            last_swap=jnp.where(jnp.any(acc), window, state.last_swap).astype(jnp.int32))
        # σ̂² this step's swap used (its anchor age's entry when kept per age; 0 if unmeasured).
        used = jnp.maximum(state.variance[:, t % self._ages], 0.0)
        info = {"grad_evals": jnp.sum(n_dyn) + n_var + n_ref + n_swap,
                "swaps": acc.astype(jnp.float32), "swap_attempts": act.astype(jnp.float32),
                "energy_variance": used,
                "replica_labels": state.labels.astype(jnp.float32)}
        if self._cv:  # the plain energies' σ̂² at the same age, alongside (.variance)
            info["plain_energy_variance"] = jnp.maximum(state.plain[:, 0], 0.0)
            info["plain_swap_weight"] = jnp.maximum(state.plain[:, 1], 0.0)
        return state, info
