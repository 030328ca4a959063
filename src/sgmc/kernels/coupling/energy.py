"""Energy estimators for the replica-exchange swap test (Deng et al. 2021, VR-reSGLD, Sec. 3).

Both estimate U(θ) = U₀(θ) + w Σ_i L_i(θ) on a minibatch B of size n (U₀ the exact prior term,
L_i the per-example energies, w the data weight):

- :func:`exact_energy`: U(θ) by a chunked full pass (N evaluations; no noise, σ̂² = 0) —
  for small problems, and to test the swap rule itself.
- :func:`minibatch_energy` (reSGLD):  Ũ(θ) = U₀(θ) + (wN/n) Σ_{i∈B} L_i(θ).
- :func:`cv_energy` (VR-reSGLD, eq. 5): with an anchor β̂ refreshed every m steps and its
  full-data sum L̂ = Σ_i L_i(β̂) (a chunked full pass),

      Ũ(θ) = U₀(θ) + (wN/n) Σ_{i∈B} L_i(θ) + c · ((wN/n) Σ_{i∈B} L_i(β̂) − w L̂),

  with c = −1 (eq. 5) or, ``adaptive=True``, c estimated as −Cov(X, Y)/Var(Y) of the plain
  term X and the control term Y over the variance replicates and smoothed like σ̂² (Alg. 2).
  The anchors are refreshed at every step t with t mod m = 0 (before that step's move),
  whatever the swap variance's own period: the anchor a swap at step t uses has age
  (t mod m) + 1 steps.

**Variance at the swap's own anchor age.** A control-variate energy's variance grows with
the anchor's age (Lemma 1: Var Ũ ≤ (D_R²/n) E‖θ_k − β̂‖², zero at a fresh anchor). With
sampling with replacement, ΔŨ = Ũ_k − Ũ_{k+1} is, up to a constant, (wN/n) Σ_{i∈B} d_i with
d_i = (L_i(θ_k) + c_k L_i(β̂_k)) − (L_i(θ_{k+1}) + c_{k+1} L_i(β̂_{k+1})) i.i.d. over i, so

    Var(ΔŨ | θ, β̂) = (wN/n)² · n · Var_i(d_i),

and :meth:`CVEnergy.diff_variance` returns its unbiased plug-in estimate
σ̃² = (wN/n)² · n · s²(d_i) (s² with ddof = 1) from one minibatch of per-example energies
(2Kn evaluations). :mod:`sgmc.kernels.coupling.replica` draws that minibatch independently of the
swap's and keeps one stochastic-approximation average per age (see there).

An estimator is a pytree dataclass with the fields ``batch_size``, ``period`` (the anchor
refresh period m; ``None`` for the estimators without anchors), ``adaptive`` and
``evals_per_datum`` (per-example energy evaluations per datum of an estimate), and the methods
``init(problem, position)`` (per-replica state), ``init_evals(problem)``,
``estimate(problem, state, θ, idx) -> (Ũ, evals)`` and ``refresh(problem, state, θ) ->
(state, evals)``. :class:`CVEnergy` adds ``terms(problem, state, θ, idx) -> (X, Y)`` (for the
adaptive coefficient) and ``diff_variance`` (above); its state is a :class:`CVEnergyState`
(anchor β̂, w L̂ and the coefficient c), whose anchor the coupling refreshes every ``period``
steps and whose ``coef`` field the coupling replaces with the smoothed estimate of c
(``state._replace(coef=c)``) when ``adaptive``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from sgmc import _validate as check
from sgmc._pytree import pytree_dataclass, static

__all__ = ["CVEnergy", "CVEnergyState", "ExactEnergy", "MinibatchEnergy", "cv_energy",
           "exact_energy", "minibatch_energy"]


@pytree_dataclass
class MinibatchEnergy:
    """Plain minibatch energy (reSGLD); see the module docstring."""

    batch_size: int | None = static(None)

    period = None
    adaptive = False
    evals_per_datum = 1

    def init(self, problem, position) -> tuple:
        return ()

    def init_evals(self, problem) -> int:
        return 0

    def estimate(self, problem, state, theta, idx):
        return problem.estimate_energy(theta, idx), idx.shape[0]

    def refresh(self, problem, state, theta):
        return state, 0


@pytree_dataclass
class ExactEnergy(MinibatchEnergy):
    """The exact energy by a chunked full pass; see the module docstring."""

    def estimate(self, problem, state, theta, idx):
        return problem.full_energy(theta), problem.num_data


class CVEnergyState(NamedTuple):
    anchor: Any          # β̂
    anchor_sum: Any      # w Σ_i L_i(β̂), from a chunked full pass
    coef: Any            # c


@pytree_dataclass
class CVEnergy:
    """Control-variate energy (VR-reSGLD, eq. 5 / Alg. 2); see the module docstring."""

    period: int = static(100)
    adaptive: bool = static(False)
    batch_size: int | None = static(None)

    evals_per_datum = 2  # L_i at θ and at the anchor

    def init(self, problem, position) -> CVEnergyState:
        return CVEnergyState(position, self._full(problem, position), jnp.float32(-1.0))

    def init_evals(self, problem) -> int:
        return problem.num_data

    @staticmethod
    def _full(problem, theta):
        return problem.data_weight * problem.full_data_sum(problem.chunk_energy_sum, theta)

    def terms(self, problem, state, theta, idx):
        """(X, Y): the plain estimate of U(θ) and the control term (mean zero)."""
        scale = problem.batch_scale(idx.shape[0])
        x = problem.exact_energy(theta) + scale * problem.batch_energy_sum(theta, idx)
        y = scale * problem.batch_energy_sum(state.anchor, idx) - state.anchor_sum
        return x, y

    def estimate(self, problem, state, theta, idx):
        x, y = self.terms(problem, state, theta, idx)
        return x + state.coef * y, 2 * idx.shape[0]

    def diff_variance(self, problem, state, positions, idx):
        """σ̃² per adjacent pair (k, k+1): the plug-in estimate (wN/n)² · n · s²(d_i) of
        Var(Ũ_k − Ũ_{k+1}) at the current states and anchors from the per-example terms of one
        minibatch ``idx`` of size n (see the module docstring); ``state`` and ``positions``
        are stacked over the K replicas. The same estimate for *plain* minibatch energies
        (d_i = L_i(θ_k) − L_i(θ_{k+1})), and their difference Ũ_k − Ũ_{k+1} itself, come from
        the same L_i(θ_k) at no cost (:mod:`sgmc.kernels.coupling.variance`). Returns ((K − 1,)
        variances, (K − 1,) plain variances, (K − 1,) plain differences, evaluations)."""
        n = idx.shape[0]
        x = jax.vmap(lambda th: problem.batch_energies(th, idx))(positions)        # (K, n)
        y = jax.vmap(lambda s: problem.batch_energies(s.anchor, idx))(state)       # (K, n)
        e = x + state.coef[:, None] * y
        d = e[:-1] - e[1:]                                                          # (K − 1, n)
        scale = problem.batch_scale(n)
        plug_in = lambda v: scale * scale * n * jnp.var(v, axis=1, ddof=1)
        plain = jax.vmap(problem.exact_energy)(positions) + scale * jnp.sum(x, axis=1)
        return (plug_in(d), plug_in(x[:-1] - x[1:]), plain[:-1] - plain[1:],
                2 * x.shape[0] * n)

    def refresh(self, problem, state, theta):
        """New anchor β̂ = θ and its full-data energy (N per-example energies)."""
        return state._replace(anchor=theta, anchor_sum=self._full(problem, theta)), \
            problem.num_data


def minibatch_energy(batch_size: int | None = None) -> MinibatchEnergy:
    """Plain minibatch energy estimates for the swap test (reSGLD).

    Args:
        batch_size: minibatch size of the energy estimate; ``None`` uses the sampler's.
    """
    if batch_size is not None:
        batch_size = check.integer("batch_size", batch_size, lo=1)
    return MinibatchEnergy(batch_size)


def exact_energy() -> ExactEnergy:
    """Exact energies for the swap test (a full data pass per replica per attempt)."""
    # batch_size=1: the coupling still draws minibatch indices for every estimator; this one
    # ignores them, so the cheapest draw will do.
    return ExactEnergy(1)


def cv_energy(period: int = 100, adaptive: bool = False,
              batch_size: int | None = None) -> CVEnergy:
    """Control-variate energy estimates for the swap test (VR-reSGLD, eq. 5; Alg. 2).

    Args:
        period: m ≥ 1, steps between anchor refreshes (one full data pass per replica each),
            at every step t with t mod m = 0 whatever the replica exchange's
            ``variance_period``.
        adaptive: estimate the coefficient c (Alg. 2) instead of fixing c = −1.
        batch_size: minibatch size of the energy estimate; ``None`` uses the sampler's.
    """
    if batch_size is not None:
        batch_size = check.integer("batch_size", batch_size, lo=1)
    return CVEnergy(check.integer("period", period, lo=1), bool(adaptive), batch_size)
