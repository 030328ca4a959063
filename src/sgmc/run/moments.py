"""Running moments of ``predict(draw)`` over a run's kept draws (``sample(..., predict=fn)``).

Each chain adds x = fn(draw) at every kept draw by Welford's update

    n ← n + 1,   δ = x − μ,   μ ← μ + δ / n,   M₂ ← M₂ + δ·(x − μ),

which stays accurate in float32 over millions of draws (a running sum of squares would
cancel). The compiled loop (:mod:`sgmc.run.loop`) carries them; checkpoints store them.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

__all__ = ["Moments", "welford"]


class Moments(NamedTuple):
    """Per-chain running moments of ``predict(draw)`` over the kept draws (module docstring):
    count n, mean μ and M₂ = Σ (x − μ)², leaves (num_chains, ...) (checkpointed as leaves)."""

    count: jax.Array  # int32 (num_chains,)
    mean: jax.Array   # (num_chains, *out), float32 (float64 for a float64 output)
    m2: jax.Array

    @staticmethod
    def dtype(out: Any) -> Any:
        """The accumulators' dtype for an output of dtype ``out.dtype``."""
        return jnp.promote_types(out.dtype, jnp.float32) if jnp.issubdtype(
            out.dtype, jnp.floating) else jnp.dtype(jnp.float32)

    @classmethod
    def template(cls, num_chains: int, out: Any) -> Moments:
        """Shapes and dtypes of ``num_chains`` chains' moments of an output shaped ``out``."""
        shape, dtype = (num_chains, *out.shape), cls.dtype(out)
        return cls(jax.ShapeDtypeStruct((num_chains,), jnp.int32),
                   jax.ShapeDtypeStruct(shape, dtype), jax.ShapeDtypeStruct(shape, dtype))

    @classmethod
    def start(cls, num_chains: int, out: Any) -> Moments:
        """Empty moments (no draw yet)."""
        return jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), cls.template(num_chains, out))


def welford(m: Moments, x: jax.Array) -> Moments:
    """One chain's moments with x added: n ← n + 1, δ = x − μ, μ ← μ + δ/n, M₂ ← M₂ + δ(x − μ)."""
    n = m.count + 1
    x = jnp.asarray(x, m.mean.dtype)
    delta = x - m.mean
    mean = m.mean + delta / n.astype(m.mean.dtype)
    return Moments(n, mean, m.m2 + delta * (x - mean))
