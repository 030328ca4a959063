"""Building a replica-exchange coupling: the temperature ladder (:func:`geometric_ladder`),
:func:`replica_exchange` (every argument validated before anything is compiled) and how the
replicas travelled it (:func:`round_trips`). The coupling itself, and the conventions its
arguments follow, are in :mod:`sgmc.kernels.coupling.replica`."""

from __future__ import annotations

import dataclasses

import numpy as np

from sgmc import _validate as check
from sgmc._pytree import replace
from sgmc.contracts.exchange import ExchangeRule
from sgmc.contracts.replica import BASE_MEMBERS, ReplicaBase
from sgmc.kernels.coupling.energy import CVEnergy, MinibatchEnergy, minibatch_energy
from sgmc.kernels.coupling.replica import OUTPUTS, ReplicaExchange
from sgmc.kernels.coupling.rules import MetropolisRule, metropolis_rule
from sgmc.kernels.sampler import check_stability
from sgmc.schedules import Schedule, as_schedule

__all__ = ["geometric_ladder", "replica_exchange", "round_trips"]


def geometric_ladder(t_min: float, t_max: float, num: int) -> list[float]:
    """``num`` temperatures from t_min to t_max in geometric progression (the default ladder
    for K > 2)."""
    lo, hi = check.positive("t_min", t_min), check.positive("t_max", t_max)
    k = check.integer("num", num, lo=2)
    if hi <= lo:
        raise ValueError(f"t_max must be > t_min, got t_min={lo}, t_max={hi}")
    return [float(v) for v in np.geomspace(lo, hi, k)]


def replica_exchange(sampler: ReplicaBase, temperatures, step_sizes=None,
                     correction: float | Schedule | None = None,
                     energy: MinibatchEnergy | CVEnergy | None = None, swap_every: int = 1,
                     schedule: str | None = None, variance_period: int | None = None,
                     smoothing: float = 0.3, num_replicates: int = 10,
                     output: str = "coldest", rule: ExchangeRule | None = None,
                     cooldown: int = 0, variance_by_age: bool = True) -> ReplicaExchange:
    """Replica exchange (parallel tempering) over K replicas of one sampler; by default with
    the bias-corrected swaps of reSGLD / VR-reSGLD (Alg. 1–2), whose conventions are in
    :mod:`sgmc.kernels.coupling.replica`.

    The arguments come in groups: the replicas (``sampler``, ``temperatures``,
    ``step_sizes``, ``output``); the exchange rule (``rule``, or the Metropolis rule's own
    options ``correction`` and ``schedule``, shortcuts for ``rule=metropolis_rule(correction,
    schedule)``); when attempts happen (``swap_every``, ``cooldown``); and, for a rule that
    uses the swap energies (the Metropolis rule), their estimator and σ̂² (``energy``,
    ``variance_period``, ``smoothing``, ``num_replicates``, ``variance_by_age``).

    Samples are the coldest replica's (``output="coldest"``) or every replica's (``"all"``: an
    extra replica axis after the draw axis). ``res.info`` gains ``swaps`` and ``swap_attempts``
    per pair (counts per draw interval), ``energy_variance`` (σ̂² per pair) and
    ``replica_labels`` (which chain each slot holds; round trips follow from it).
    Gradient-evaluation counts include energy evaluations, anchor passes and replicates.

    Args:
        sampler: the base sampler, e.g. ``sgmc.sgld(...)`` or ``sgmc.sghmc(...)`` with any
            estimator (anything with the members of :class:`ReplicaBase`); its temperature is
            replaced by the ladder.
        temperatures: τ_1 < … < τ_K (floats or schedules, e.g. annealing during burn-in);
            K ≥ 2. See :func:`geometric_ladder`. The rule validates the ladder (the greedy
            rule: exactly two, 0 ≤ τ_1 ≤ τ_2).
        step_sizes: one step size (float or schedule) per replica; default: the base
            sampler's for all (the paper's deep-learning runs use η_2 = 1.5 η_1).
        correction: the Metropolis rule's F > 0, or a schedule F_t (e.g.
            ``sgmc.schedules.geometric(F0, 1.02, epoch, stop=burn_in)``, annealed with τ as in
            the paper's Sec. 5.2); F = 1 (default) is the unbiased correction, larger F swaps
            more (the paper uses F ≥ 1). See :func:`sgmc.kernels.coupling.metropolis_rule`.
        energy: :func:`sgmc.minibatch_energy` (reSGLD, default) or :func:`sgmc.cv_energy`
            (VR-reSGLD).
        swap_every: attempt swaps every k ≥ 1 steps.
        schedule: the Metropolis rule's choice of pairs (K > 2): ``"even_odd"`` (default,
            deterministic) or ``"stochastic"``.
        variance_period: v, steps between replicate measurements of σ̂² (plain energies, or
            ``variance_by_age=False``) and of the adaptive c (default: the cv_energy period,
            else 1). Anchors are refreshed every cv_energy period whatever v is.
        smoothing: γ ∈ (0, 1], the stochastic-approximation weight of a new σ̃².
        num_replicates: independent minibatches per σ̃² measurement, ≥ 2.
        output: ``"coldest"`` (draws of replica 1) or ``"all"`` (every replica).
        rule: any :class:`sgmc.kernels.coupling.ExchangeRule`; None: the Metropolis rule
            (:func:`sgmc.kernels.coupling.metropolis_rule` with ``correction`` and ``schedule``);
            :func:`sgmc.kernels.coupling.greedy_rule` is GD×LD / SGD×SGLD (exactly two replicas,
            temperatures 0 ≤ τ_1 ≤ τ_2; the energy and variance settings are then unused).
            With a rule given, ``correction`` and ``schedule`` belong to it: passing them too
            is an error for a :class:`MetropolisRule` and ignored for the others (as before).
        cooldown: L ≥ 0; with L > 0 at most one accepted swap per window [wL, (w + 1)L) of
            steps (L = steps per epoch: the paper's "at most one swap per epoch"); 0: none.
        variance_by_age: with :func:`sgmc.cv_energy`, keep σ̂² per anchor age and use the
            swap's own age (default); False: one σ̂² from replicates every v steps, used for
            every swap (Alg. 1 as printed; with v = m it is the oldest anchor's variance).
    """
    missing = [m for m in BASE_MEMBERS if not hasattr(sampler, m)]
    if missing or not dataclasses.is_dataclass(sampler):
        lacks = f"; it lacks {', '.join(missing)}" if missing else " (not a dataclass)"
        raise TypeError("sampler must be an sgmc sampler such as sgmc.sgld(...) (replica "
                        "exchange uses the members of sgmc.kernels.coupling.ReplicaBase), got "
                        f"{type(sampler).__name__}{lacks}")
    if isinstance(temperatures, (int, float)) or len(temperatures) < 2:
        raise ValueError("temperatures must list at least 2 values (τ_1 < … < τ_K)")
    if rule is None:
        rule = metropolis_rule(1.0 if correction is None else correction,
                               "even_odd" if schedule is None else schedule)
    elif not isinstance(rule, ExchangeRule):
        raise TypeError("rule must be None or an exchange rule "
                        "(sgmc.kernels.coupling.ExchangeRule: "
                        "e.g. sgmc.kernels.coupling.greedy_rule(...) or metropolis_rule(...)), got "
                        f"{type(rule).__name__}")
    elif isinstance(rule, MetropolisRule) and (correction is not None or schedule is not None):
        raise ValueError("correction and schedule are options of the Metropolis rule: give "
                         "them to sgmc.kernels.coupling.metropolis_rule(...), not next to rule=")
    temps = rule.ladder(tuple(temperatures))
    start = [float(s(0)) for s in temps]
    k = len(temps)
    if step_sizes is None:
        steps = (sampler.step_size,) * k
    else:
        if isinstance(step_sizes, (int, float, Schedule)) or len(step_sizes) != k:
            raise ValueError(f"step_sizes must list one step size per replica ({k})")
        steps = tuple(as_schedule(v, "step_sizes") for v in step_sizes)
        for i, h in enumerate(steps):  # the base sampler's own bound (SGHMC's friction · h)
            check_stability(sampler.dynamics, h, f"step_sizes[{i}] (replica {i})")
    if energy is None:
        energy = minibatch_energy()
    if not isinstance(energy, (MinibatchEnergy, CVEnergy)):
        raise TypeError("energy must be sgmc.minibatch_energy() or sgmc.cv_energy(...), got "
                        f"{type(energy).__name__}")
    cool = check.integer("cooldown", cooldown, lo=0)
    every = check.integer("swap_every", swap_every, lo=1)
    if variance_period is None:
        variance_period = energy.period or 1
    period = check.integer("variance_period", variance_period, lo=1)
    gamma = check.real("smoothing", smoothing, lo=0.0, hi=1.0)
    if gamma == 0.0:
        raise ValueError("smoothing must lie in (0, 1], got 0.0")
    reps = check.integer("num_replicates", num_replicates, lo=2)
    check.choice("output", output, OUTPUTS)
    if sampler.estimator.needs_temperature and min(start) <= 0:
        raise ValueError("temperatures must be > 0 with this estimator")
    base = replace(sampler, temperature=1.0)
    return ReplicaExchange(base, temps, steps, energy, rule, gamma, every, period, reps,
                           output, rule.kernel_name(sampler.name), cool,
                           bool(variance_by_age))


def round_trips(labels: np.ndarray) -> np.ndarray:
    """Completed round trips per chain from ``res.info["replica_labels"]`` (chains, draws, K):
    a round trip is a replica's journey from the coldest slot to the hottest and back."""
    lab = np.asarray(labels).astype(np.int64)
    n_chains, _, k = lab.shape
    out = np.zeros(n_chains, np.int64)
    for c in range(n_chains):
        for r in range(k):
            slot = np.argmax(lab[c] == r, axis=1)   # where replica r sits at each draw
            state, trips = None, 0                  # last extreme visited
            for s in slot:
                if s == 0:
                    if state == "hot":
                        trips += 1
                    state = "cold"
                elif s == k - 1 and state == "cold":
                    state = "hot"
            out[c] += trips
    return out

