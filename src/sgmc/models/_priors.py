"""Priors as value-hashable callables (so equal models share one compiled program)."""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp


@dataclass(frozen=True)
class GaussianLogPrior:
    """log N(θ; 0, std² I), summed over every leaf of θ."""

    std: float

    def __call__(self, params) -> jax.Array:
        var = self.std ** 2
        total = 0.0
        for x in jax.tree.leaves(params):
            total = total - 0.5 * jnp.sum(x ** 2) / var - 0.5 * x.size * jnp.log(2 * jnp.pi * var)
        return total
