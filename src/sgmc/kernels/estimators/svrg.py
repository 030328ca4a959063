"""SVRG and the fixed-centre control variate (Li et al., SVRG-HMC, Alg. 1 and 3; Baker et al. 2019).

Every ``period`` steps (K) the anchor w moves to the current evaluation point and one chunked
full pass stores g = Σ_i ∇L_i(w); in between

    ∇̃U(θ) = ∇U₀(θ) + (w N / n) Σ_{i∈B} (∇L_i(θ) − ∇L_i(w)) + w g

(SVRG-LD of Dubey et al. 2016; SVRG-HMC, Alg. 1 line 8, and SVRG2nd-HMC, Alg. 3, of Li et al.;
here w is the problem's data weight, 1 for posteriors). The prior gradient is exact. With the
splitting integrator the dynamics evaluate the gradient at the half step θ + (h/2)p, so the
anchor is taken there, as Alg. 3 prescribes. The paper's default is K = N/n.

Cost per step: 2n per-example gradients (the minibatch at θ and at w, one gather), plus N on a
snapshot step.

With ``centre`` given and no period the anchor is fixed (a control variate at a fixed centre,
e.g. a mode found by SGD; Baker et al. 2019): one full pass at the first step, 2n after.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from sgmc import _validate as check
from sgmc._pytree import pytree_dataclass, replace, static
from sgmc._tree import zeros_like
from sgmc.contracts.estimator import SAMPLING_SCHEMES, Estimator

__all__ = ["SVRG", "SVRGState", "control_variate", "svrg"]


class SVRGState(NamedTuple):
    anchor: Any       # w
    anchor_grad: Any  # Σ_i ∇L_i(w)


@pytree_dataclass
class SVRG(Estimator):
    """Anchored control-variate gradient; see :func:`svrg` and :func:`control_variate`."""

    centre: Any = None
    period: int | None = static(None)
    sampling: str = static("replacement")
    batch_size: int | None = static(None)

    def with_batch_size(self, batch_size: int | None) -> SVRG:
        return replace(self, batch_size=batch_size)

    def period_for(self, problem) -> int | None:
        """Steps between snapshots: ``period``, else (no fixed centre) one epoch ⌈N/n⌉, the
        papers' K = N/n; None for a fixed centre (one snapshot, at step 0)."""
        if self.period is not None or self.centre is not None:
            return self.period
        n = self.batch_size or problem.data_rows
        return max(1, -(-problem.data_rows // n))

    def anchor_ages(self, problem, batch_size: int) -> tuple[str, float] | None:
        """Ages 0, …, K − 1 of the anchor, equally likely (K = :meth:`period_for`); None
        for a fixed centre, whose distance from the chain does not depend on its age."""
        period = self.period_for(problem)
        return None if period is None else ("uniform", float(period))

    def check(self, problem, position, num_chains: int) -> None:
        """A fixed centre must be shaped like the position (before compiling)."""
        if self.centre is None:
            return
        want, got = jax.tree.structure(position), jax.tree.structure(self.centre)
        shapes = [jnp.shape(x) for x in jax.tree.leaves(position)]
        found = [jnp.shape(x) for x in jax.tree.leaves(self.centre)]
        if want != got or shapes != found:
            raise ValueError("control_variate(centre=...) must be shaped like one position: "
                             f"expected {jax.tree.unflatten(want, shapes)}, found "
                             f"{jax.tree.unflatten(got, found)}")

    def init(self, problem, position, key):
        return SVRGState(position, zeros_like(position))  # filled by the snapshot at t = 0

    def _snapshot_due(self, problem, t):
        period = self.period_for(problem)
        if period is None:
            return t == 0
        return t % period == 0

    def estimate(self, problem, state, point, batch, rng, ctx):
        if batch is None:
            raise ValueError("variance-reduced estimators need a minibatch (batch_size)")

        state, n_snap = self.refresh(problem, state, point, ctx.t)
        chunk = problem.take(batch)
        at_point = problem.chunk_grad_sum(point, chunk)
        at_anchor = problem.chunk_grad_sum(state.anchor, chunk)
        scale, w = problem.batch_scale(batch.shape[0]), problem.data_weight
        grad = jax.tree.map(lambda g0, a, b, g: g0 + scale * (a - b) + w * g,
                            problem.exact_grad(point), at_point, at_anchor, state.anchor_grad)
        return grad, state, (2 * batch.shape[0] + n_snap).astype(jnp.int32)

    def refresh(self, problem, state: SVRGState, point, t) -> tuple[SVRGState, jax.Array]:
        """Take a snapshot (anchor and Σ_i ∇L_i at it) when one is due at step t; return the
        state and the per-example gradients spent (N or 0)."""
        def snapshot():
            anchor = point if self.centre is None else self.centre
            return SVRGState(anchor, problem.full_data_sum(problem.chunk_grad_sum, anchor))

        due = self._snapshot_due(problem, t)
        return jax.lax.cond(due, snapshot, lambda: state), jnp.where(due, problem.num_data, 0)


def svrg(period: int | None = None, sampling: str = "replacement") -> SVRG:
    """SVRG gradient estimator with a snapshot (anchor and full gradient) every ``period``
    steps; the papers use period = N / batch_size, the default.

    Args:
        period: K ≥ 1, steps between snapshots; None: one epoch, ⌈N / batch_size⌉ (one
            snapshot per data pass of minibatches: at most twice the uniform estimator's
            per-example gradients).
        sampling: minibatch scheme, ``"replacement"`` or ``"permutation"``.
    """
    return SVRG(None, None if period is None else check.integer("period", period, lo=1),
                check.choice("sampling", sampling, SAMPLING_SCHEMES))


def control_variate(centre: Any, sampling: str = "replacement") -> SVRG:
    """Control variate at a fixed centre (SVRG whose anchor never moves).

    Args:
        centre: the anchor, a point shaped like the position (e.g. a mode found by SGD), on
            the sampled scale: for a problem with constrained parameters (a NumPyro model,
            ``Posterior(constraints=...)``) pass ``problem.unconstrain(theta)``.
        sampling: minibatch scheme, ``"replacement"`` or ``"permutation"``.
    """
    leaves = jax.tree.leaves(centre)
    if not leaves:
        raise ValueError("centre must be an array or pytree of arrays shaped like the position")
    centre = jax.tree.map(lambda x: jnp.asarray(x, jnp.float32), centre)
    if not all(bool(jnp.all(jnp.isfinite(x))) for x in jax.tree.leaves(centre)):
        raise ValueError("centre contains non-finite values")
    return SVRG(centre, None, check.choice("sampling", sampling, SAMPLING_SCHEMES))
