"""The estimator contract (:class:`GradientEstimator`): how a gradient of U is estimated
from a minibatch.

An estimator is a pytree dataclass (numbers as leaves, structure static) with

* ``init(problem, position, key) -> state`` — its state lives inside the sampler state
  (SVRG snapshot, SAGA table, EWSG index chain; nothing for the uniform estimator), and
  ``init_evals(problem) -> int``, the per-example gradients ``init`` spends (default 0);
* ``estimate(problem, state, point, batch, rng, ctx) -> (grad, state, n_evals)`` — the
  gradient estimate at ``point``, the new state, and the number of per-example gradient
  evaluations spent (for data-pass accounting). ``rng`` is an :class:`sgmc.rng.Rng` (a raw
  key is accepted too: ``sgmc.rng.as_rng``).

``batch`` holds the minibatch indices drawn by the sampler (so that replicas of a
replica-exchange run can share them), or is ``None`` when the sampler uses the full data.
``ctx`` is a :class:`Context` the dynamics fills, because some estimators (EWSG) weight data
by the dynamics' own state.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol, runtime_checkable

import jax

PyTree = Any

__all__ = ["SAMPLING_SCHEMES", "Context", "Estimator", "GradientEstimator"]

#: How minibatch indices are drawn: i.i.d. uniform with replacement, or by walking a fresh
#: random permutation each epoch (without replacement within an epoch).
SAMPLING_SCHEMES = ("replacement", "permutation")


class Context(NamedTuple):
    """What the dynamics tells the estimator about the current step (``t``: 0-based index).

    Every dynamics moves one variable v by a *kick* v' = drift − h ∇̃U + noise_scale · ξ
    (v = θ for overdamped Langevin, the momentum for SGHMC). EWSG's weights need that kick
    and nothing else about the dynamics, so an integrator describes it here:

    * ``noise_scale``: the kick's noise standard deviation (√(2hτ); √(2Dhτ) for SGHMC);
    * ``drift``: v before the kick, gradient and noise left out (θ_k; (1 − Dh) r_k for the
      Euler forms; e^{−Dh/2} p_k for the splitting);
    * ``offset``: v' − drift under the reading "state unchanged" (None for 0, overdamped;
      Dh r_k for the Euler forms; (e^{Dh/2} − e^{−Dh/2}) p_k for the splitting);
    * ``preconditioner``: P = L Lᵀ (:mod:`sgmc.kernels.preconditioners`; None: the identity). With
      it the kick acts on whitened coordinates (v = L⁻¹θ, or the whitened momentum Lᵀp) and
      the gradient enters it as Lᵀ∇̃U: drift and offset are given in those coordinates.
    """

    t: jax.Array
    step_size: jax.Array
    temperature: jax.Array
    noise_scale: jax.Array | None = None
    drift: PyTree | None = None
    offset: PyTree | None = None
    preconditioner: Any = None


@runtime_checkable
class GradientEstimator(Protocol):
    """The contract every gradient estimator meets (see the module docstring); subclass
    :class:`Estimator` for its defaults."""

    #: How the sampler draws minibatches for it: ``"replacement"`` or ``"permutation"``.
    sampling: str
    #: True if the estimator is undefined at temperature 0 (EWSG's weights divide by σ).
    needs_temperature: bool
    #: True if it reads the kick the dynamics describe in the :class:`Context` (EWSG).
    needs_kick: bool

    def with_batch_size(self, batch_size: int | None) -> GradientEstimator: ...

    def check(self, problem: Any, position: PyTree, num_chains: int) -> None: ...

    def init(self, problem: Any, position: PyTree, key: jax.Array) -> PyTree: ...

    def init_evals(self, problem: Any) -> int: ...

    def estimate(self, problem: Any, state: PyTree, point: PyTree, batch: jax.Array | None,
                 rng: Any, ctx: Context) -> tuple[PyTree, PyTree, jax.Array]: ...

    def anchor_ages(self, problem: Any, batch_size: int) -> tuple[str, float] | None: ...

    def noise_proxy(self) -> GradientEstimator: ...

    def period_for(self, problem: Any) -> int | None: ...


class Estimator:
    """Base class for gradient estimators: the defaults of :class:`GradientEstimator`."""

    sampling: str
    #: True if the estimator is undefined at temperature 0 (EWSG's weights divide by σ).
    needs_temperature: bool = False
    #: True if it reads the kick the dynamics describe in the Context (EWSG): dynamics that
    #: describe none (pSGLD's preconditioned noise) refuse it.
    needs_kick: bool = False

    def with_batch_size(self, batch_size: int | None) -> Estimator:
        """The estimator configured for a sampler's minibatch size (most ignore it)."""
        return self

    def check(self, problem, position: PyTree, num_chains: int) -> None:
        """Validate against a problem and one position before compiling (default: nothing)."""

    def init(self, problem, position: PyTree, key: jax.Array) -> PyTree:
        raise NotImplementedError  # pragma: no cover

    def init_evals(self, problem) -> int:
        """Per-example gradient evaluations ``init`` spends (counted by the driver)."""
        return 0

    def estimate(self, problem, state: PyTree, point: PyTree, batch: jax.Array | None,
                 rng: Any, ctx: Context) -> tuple[PyTree, PyTree, jax.Array]:
        raise NotImplementedError  # pragma: no cover

    def anchor_ages(self, problem, batch_size: int) -> tuple[str, float] | None:
        """How many steps old, when a step reads it, the point is at which the state's stored
        gradients were taken (an SVRG anchor, a SAGA table entry): ``("uniform", m)`` for
        ages 0, …, m − 1 equally likely, ``("geometric", p)`` for P(age = k) = p(1 − p)^{k−1},
        k ≥ 1; None (the default) when the estimate does not depend on earlier points
        (uniform minibatches, a fixed centre). :func:`sgmc.warmup` measures the gradient
        noise with the stored point as far from the current one as these ages make it."""
        return None

    def noise_proxy(self) -> GradientEstimator:
        """The estimator whose gradient noise :func:`sgmc.warmup` measures in this one's
        place (itself by default; EWSG's weighted minibatches are bounded by their
        uniform ones)."""
        return self

    def period_for(self, problem) -> int | None:
        """The period (steps) of its periodic full-data work on ``problem`` (an SVRG
        snapshot), reported by :func:`sgmc.warmup`; None (the default) for none."""
        return None
