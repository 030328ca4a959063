"""Uniform subsampling: the plain stochastic gradient of SGLD/SGHMC.

    ∇̃U(θ) = ∇U₀(θ) + (w N / n) Σ_{i∈B} ∇L_i(θ)

(Welling & Teh 2011, eq. 4), unbiased when B is drawn uniformly, with replacement
or as consecutive slices of a random permutation. With the full data (``batch_size=None``)
it is the exact gradient ∇U, computed in chunks.
"""

from __future__ import annotations

import jax.numpy as jnp

from sgmc import _validate as check
from sgmc._pytree import pytree_dataclass, static
from sgmc.contracts.estimator import SAMPLING_SCHEMES, Estimator

__all__ = ["Uniform", "uniform"]


@pytree_dataclass
class Uniform(Estimator):
    """Uniform minibatch gradient estimator; see :func:`uniform`."""

    sampling: str = static("replacement")

    def init(self, problem, position, key):
        return ()

    def estimate(self, problem, state, point, batch, rng, ctx):
        if batch is None:
            return problem.full_grad(point), state, jnp.asarray(problem.num_data, jnp.int32)
        return (problem.estimate_grad(point, batch), state,
                jnp.asarray(batch.shape[0], jnp.int32))


def uniform(sampling: str = "replacement") -> Uniform:
    """The uniform minibatch estimator.

    Args:
        sampling: ``"replacement"`` (i.i.d. indices, the default) or ``"permutation"``
            (each epoch walks a fresh pseudo-random permutation, computed, not stored).
    """
    return Uniform(check.choice("sampling", sampling, SAMPLING_SCHEMES))
