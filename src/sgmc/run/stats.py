"""The statistics every kept draw records for the drift check (:mod:`sgmc.stationarity`).

At each kept draw — and only there: the loop evaluates them under a real ``lax.cond`` on the
draw's step, never at the steps between draws nor at burn-in's draws — each chain evaluates,
at its draw z = ``kernel.draw(state)`` (the sampled scale, before ``Problem.constrain``), on
a minibatch B of n rows drawn for the purpose:

* ``"energy"``: Û_B(z) = U₀(z) + (w N / n) Σ_{i∈B} L_i(z), the unbiased minibatch estimate
  of the energy U (``Problem.estimate_energy``'s formula; for a posterior
  −log p(z) − (N/n) Σ_B log p(x_i | z), for an :class:`sgmc.Objective` its minibatch mean);
* ``"log_prior"``: −U₀(z), exact (no data) — the log prior density, on the sampled scale
  (with the log-Jacobian of constrained parameters); posteriors only;
* ``"loglik"``: −(1/n) Σ_{i∈B} L_i(z), the minibatch mean log-likelihood per datum;
  posteriors with data only.

So for a posterior "energy" = −"log_prior" − N·"loglik" (N the data's rows, ``num_data``).
Temperatures do not enter (a replica's statistics are those of U itself). n is the kernel's
``batch_size``; a full-batch kernel (``batch_size=None``, or n ≥ the rows) evaluates every
row (in chunks, ``Problem.full_data_sum``; the rows of the buffer for streamed data). The
minibatch is drawn uniformly with replacement from its own random stream — chain c's key
``fold_in(fold_in(run_key_c, STREAM), t)`` for the draw after step t — so the chains' draws
are bitwise those of a run that records nothing, and the statistics do not depend on how the
run is cut into blocks. A kernel whose draw stacks its replicas (``replica_exchange(...,
output="all")``) gets them per replica (one minibatch for all), a trailing replica axis.

Cost: one energy evaluation (a forward pass) on n rows per kept draw and chain.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from sgmc.model.oracle import Problem
from sgmc.model.posterior import Objective

__all__ = ["NAMES", "STREAM", "names", "stacks_replicas", "statistics"]

#: Folded into each chain's run key (then the draw's step) for the statistics' minibatches.
STREAM = 0x57A75

#: Every statistic a draw may record, in the order they are listed.
NAMES = ("energy", "log_prior", "loglik")


def names(problem: Problem) -> tuple[str, ...]:
    """The statistics recorded for ``problem``: ``energy`` always; ``log_prior`` for a
    posterior, and ``loglik`` for one with data (module docstring)."""
    if isinstance(problem, Objective):
        return ("energy",)
    return NAMES if problem.has_data else NAMES[:2]


def stacks_replicas(kernel: Any, state: Any) -> bool:
    """Whether ``kernel.draw(state)`` (one chain's) holds every replica's point: a kernel of
    several replicas whose draw is shaped as the replica-stacked ``state.position``."""
    if kernel.num_replicas == 1:
        return False
    shapes = jax.eval_shape(lambda s: (kernel.draw(s), s.position), state)
    drawn, position = (jax.tree.map(lambda x: (x.shape, x.dtype), t) for t in shapes)
    return drawn == position


def statistics(problem: Problem, kernel: Any):
    """``(state, key) -> {name: float32 array}``: one chain's statistics (:func:`names`) at
    its draw, the minibatch from ``key`` (module docstring)."""
    keys = names(problem)
    rows = problem.data_rows
    n = kernel.batch_size
    full = problem.has_data and (n is None or n >= rows)
    chunked = full and problem.stream is None

    def at(z, idx):
        exact = problem.exact_energy(z)
        out = {"energy": exact, "log_prior": -exact}
        if problem.has_data:
            if chunked:
                total = problem.full_data_sum(problem.chunk_energy_sum, z)
                count, scale = rows, problem.data_weight
            else:
                total = problem.batch_energy_sum(z, idx)
                count, scale = idx.shape[0], problem.batch_scale(idx.shape[0])
            out["energy"] = exact + scale * total
            out["loglik"] = -total / count
        return {k: jnp.asarray(out[k], jnp.float32) for k in keys}

    def stats(state, key):
        z = kernel.draw(state)
        if not problem.has_data or chunked:
            idx = None
        elif full:
            idx = jnp.arange(rows, dtype=jnp.int32)
        else:
            idx = jax.random.randint(key, (n,), 0, rows, dtype=jnp.int32)
        if stacks_replicas(kernel, state):
            return jax.vmap(at, in_axes=(0, None))(z, idx)
        return at(z, idx)

    return stats
