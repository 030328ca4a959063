"""The VR-reSGLD paper's 1-D Gaussian-mixture posterior (Deng et al. 2021, Sec. 5.1).

Data x_i ~ ½ N(β, σ²) + ½ N(φ − β, σ²) with known φ and σ; a flat prior on β. The likelihood
is symmetric under β ↔ φ − β, so the posterior has two modes of exactly equal weight (at
β* and φ − β*; the paper: φ = 20, β* = −5, σ = 5, modes at −5 and 25). The density on a grid
(:func:`mixture_density`) is the exact reference.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np

from sgmc import _validate as check
from sgmc.model.posterior import Posterior

__all__ = ["mixture_density", "mixture_posterior", "synthetic_mixture_data"]


@dataclass(frozen=True)
class MixtureLoglik:
    """log(½ N(x; β, σ²) + ½ N(x; φ − β, σ²)) of one datum x (β a scalar or shape (1,))."""

    phi: float
    sigma: float

    def __call__(self, beta, x):
        b = jnp.reshape(beta, ())
        z1 = -0.5 * ((x - b) / self.sigma) ** 2
        z2 = -0.5 * ((x - (self.phi - b)) / self.sigma) ** 2
        return jnp.logaddexp(z1, z2) - jnp.log(2.0 * self.sigma * jnp.sqrt(2.0 * jnp.pi))


@dataclass(frozen=True)
class _Flat:
    def __call__(self, beta):
        return jnp.zeros((), jnp.result_type(beta))


def synthetic_mixture_data(num_data: int = 1000, beta: float = -5.0, phi: float = 20.0,
                           sigma: float = 5.0, seed: int = 0) -> np.ndarray:
    """N draws of ½ N(β, σ²) + ½ N(φ − β, σ²) (seeded), as float32."""
    n = check.integer("num_data", num_data, lo=1)
    s = check.positive("sigma", sigma)
    rng = np.random.default_rng(seed)
    centre = np.where(rng.random(n) < 0.5, beta, phi - beta)
    return (centre + s * rng.standard_normal(n)).astype(np.float32)


def mixture_posterior(x, phi: float = 20.0, sigma: float = 5.0,
                      chunk_size: int = 1024) -> Posterior:
    """The posterior of β given data x (N,) under a flat prior; parameters have shape (1,)."""
    x = np.asarray(x, np.float32)
    if x.ndim != 1:
        raise ValueError(f"x must be a 1-D array of data, got shape {x.shape}")
    return Posterior(MixtureLoglik(check.real("phi", phi), check.positive("sigma", sigma)),
                     _Flat(), x, chunk_size=chunk_size)


def mixture_density(x, grid, phi: float = 20.0, sigma: float = 5.0,
                    temperature: float = 1.0) -> np.ndarray:
    """The exact tempered posterior density ∝ exp(log p(x | β)/τ) on ``grid`` (normalised by
    the trapezoid rule), computed in float64."""
    x = np.asarray(x, np.float64)
    g = np.asarray(grid, np.float64)
    ll = np.zeros_like(g)
    for start in range(0, len(x), 4096):  # O(chunk × grid) memory
        xs = x[start:start + 4096, None]
        z1 = -0.5 * ((xs - g) / sigma) ** 2
        z2 = -0.5 * ((xs - (phi - g)) / sigma) ** 2
        ll += np.logaddexp(z1, z2).sum(0)
    logp = ll / temperature
    p = np.exp(logp - logp.max())
    return p / np.trapezoid(p, g)

