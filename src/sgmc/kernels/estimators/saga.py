"""SAGA, dense and lightweight (Li et al., SVRG-HMC, Alg. 2 and 4).

A table holds, for every datum, the gradient ∇L_i(α_i) at the last point α_i where it was
evaluated, and g = Σ_i ∇L_i(α_i). With a minibatch B (SAGA-LD, Dubey et al. 2016; SAGA-HMC,
Alg. 2, and SAGA2nd-HMC, Alg. 4, of Li et al.):

    ∇̃U(θ) = ∇U₀(θ) + (w N / n) Σ_{k∈B} (∇L_k(θ) − ∇L_k(α_k)) + w g,

then α_k ← θ for k ∈ B and g is updated by the change of the table. The prior gradient is
exact; the table is filled by one chunked full pass at initialisation (counted).

Dense SAGA stores the gradients: O(N·d) memory per chain. For a generalised linear model —
a per-datum energy ``predictor_loss(z, datum)`` of a predictor ``z = predictor(θ, datum)``
linear in θ (``sgmc.models`` linear and logistic regression) — ∇L_i(θ) is the vector-Jacobian
product of the predictor with s_i = ∂L_i/∂z, so the table stores only s_i (one scalar per datum
for a scalar predictor): lightweight SAGA, O(N) memory. Both give the same chain.

A minibatch drawn with replacement may hold a datum twice: the estimate uses every copy (it
stays unbiased) while the table and g change once per distinct datum.

Cost per step: n per-example gradients (the stored ones are not recomputed), plus N at
initialisation (``init_evals``, added to the run's count).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from sgmc import _validate as check
from sgmc._pytree import pytree_dataclass, static
from sgmc.contracts.estimator import SAMPLING_SCHEMES, Estimator

__all__ = ["SAGA", "SAGAState", "is_glm", "saga"]

#: Default cap on the dense table's memory over all chains.
MAX_TABLE_BYTES = 2 * 2**30


class SAGAState(NamedTuple):
    table: Any      # dense: ∇L_i(α_i), leaves (N, ...); lightweight: s_i, (N, *z_shape)
    table_sum: Any  # g = Σ_i ∇L_i(α_i), shaped like the position


def is_glm(problem) -> bool:
    """True if the problem's per-datum energy exposes the GLM structure lightweight SAGA uses
    (on the sampled scale: not with constrained parameters, whose predictor would see T(z),
    nor with a batched loglik, whose predictor is per batch)."""
    if getattr(problem, "constraints", None) is not None or getattr(problem, "batched", False):
        return False
    lik = getattr(problem, "loglik", None)
    return callable(getattr(lik, "predictor", None)) and callable(
        getattr(lik, "predictor_loss", None))


def _first_occurrence(idx: jax.Array) -> jax.Array:
    """1.0 where idx[k] does not occur among idx[:k], else 0.0 (O(n²) for a small batch)."""
    same = idx[:, None] == idx[None, :]
    earlier = jnp.tril(same, k=-1)
    return (~jnp.any(earlier, axis=1)).astype(jnp.float32)


def _weighted(tree, weights):
    """Multiply each leaf (leading axis n) by ``weights`` (n,)."""
    return jax.tree.map(lambda a: a * weights.reshape(-1, *([1] * (a.ndim - 1))), tree)


@pytree_dataclass
class SAGA(Estimator):
    """SAGA gradient estimator; see :func:`saga`."""

    lightweight: bool | None = static(None)
    sampling: str = static("replacement")
    max_table_bytes: int = static(MAX_TABLE_BYTES)

    def _light(self, problem) -> bool:
        return is_glm(problem) if self.lightweight is None else self.lightweight

    # -- the per-example "table entries" and their gradient contributions ----------------
    def _entries(self, problem, point, chunk):
        """Table entries at ``point`` for a data chunk: gradients, or s_i = ∂L_i/∂z."""
        if not self._light(problem):
            return problem.chunk_grads(point, chunk)
        lik = problem.loglik
        z = jax.vmap(lik.predictor, in_axes=(None, 0))(point, chunk)
        return jax.vmap(jax.grad(lik.predictor_loss))(z, chunk)

    def _gradient_sum(self, problem, point, chunk, entries):
        """Σ_k of the gradients that table entries stand for (a plain sum when dense)."""
        if not self._light(problem):
            return jax.tree.map(lambda a: a.sum(0), entries)
        predict = jax.vmap(problem.loglik.predictor, in_axes=(None, 0))
        # The predictor is linear in θ, so its VJP at any point maps s to Σ_k s_k ∂z_k/∂θ.
        _, vjp = jax.vjp(lambda th: predict(th, chunk), point)
        return vjp(entries)[0]

    # -- interface ----------------------------------------------------------------------
    def check(self, problem, position, num_chains: int) -> None:
        if self.lightweight and not is_glm(problem):
            raise ValueError("lightweight SAGA needs a generalised linear model: the "
                             "problem's loglik must define predictor(θ, datum) and "
                             "predictor_loss(z, datum) (as sgmc.models linear and logistic "
                             "regression do)")
        if not problem.has_data:
            raise ValueError("SAGA needs a problem with data")
        if problem.stream is not None:
            raise ValueError("SAGA cannot run on streamed data (sgmc.Stream): its table is "
                             "indexed by buffer rows, which change every block; use svrg(...)")
        datum = jax.tree.map(lambda a: a[:1], problem.data)
        entry = jax.eval_shape(self._entries, problem, position, datum)
        per_datum = sum(int(np.prod(e.shape[1:])) * e.dtype.itemsize
                        for e in jax.tree.leaves(entry))
        total = per_datum * problem.data_rows * num_chains
        if total > self.max_table_bytes:
            hint = ("use sgmc.saga(lightweight=True) (this model is a GLM) or sgmc.svrg"
                    if is_glm(problem) and not self._light(problem) else "use sgmc.svrg")
            raise ValueError(
                f"the SAGA table would take {total / 2**30:.2f} GiB ({problem.data_rows} data × "
                f"{per_datum} bytes × {num_chains} chains), above max_table_bytes = "
                f"{self.max_table_bytes / 2**30:.2f} GiB; {hint}, or raise max_table_bytes")

    def init(self, problem, position, key):
        # The table is filled here, not by a branch at the first step: a branch that passes
        # an O(N) table through would copy it at every step.
        table = problem.full_data_map(lambda p, c: self._entries(problem, p, c), position)
        return SAGAState(table, problem.full_data_sum(problem.chunk_grad_sum, position))

    def anchor_ages(self, problem, batch_size: int) -> tuple[str, float] | None:
        """A table entry read by a step was written when its datum was last drawn: with
        probability p = 1 − (1 − 1/N)^n per step, so its age is geometric (a permutation
        walk makes it about one epoch, the same mean)."""
        n_rows = problem.data_rows
        return "geometric", float(-np.expm1(batch_size * np.log1p(-1.0 / n_rows))
                                  if n_rows > 1 else 1.0)

    def init_evals(self, problem) -> int:
        return problem.data_rows

    def estimate(self, problem, state, point, batch, rng, ctx):
        if batch is None:
            raise ValueError("variance-reduced estimators need a minibatch (batch_size)")

        chunk = problem.take(batch)
        new = self._entries(problem, point, chunk)
        old = jax.tree.map(lambda a: a[batch], state.table)
        diff = jax.tree.map(jnp.subtract, new, old)
        scale, w = problem.batch_scale(batch.shape[0]), problem.data_weight
        diff_sum = self._gradient_sum(problem, point, chunk, diff)
        grad = jax.tree.map(lambda g0, d, g: g0 + scale * d + w * g,
                            problem.exact_grad(point), diff_sum, state.table_sum)
        unique = _weighted(diff, _first_occurrence(batch))
        table_sum = jax.tree.map(jnp.add, state.table_sum,
                                 self._gradient_sum(problem, point, chunk, unique))
        # `new + 0·old` (exactly `new` for finite entries) makes the scatter depend on the
        # gather, so XLA orders the gather first and updates the table in place; otherwise
        # it may copy the whole O(N) table at every step (measured: 40× slower at N = 1e6).
        table = jax.tree.map(lambda t, v, o: t.at[batch].set(v + 0.0 * o), state.table, new,
                             old)
        return grad, SAGAState(table, table_sum), jnp.asarray(batch.shape[0], jnp.int32)


def saga(lightweight: bool | None = None, sampling: str = "replacement",
         max_table_bytes: int = MAX_TABLE_BYTES) -> SAGA:
    """SAGA gradient estimator.

    Args:
        lightweight: store one ∂L_i/∂z per datum instead of a gradient (generalised linear
            models only); ``None`` chooses it whenever the model allows.
        sampling: minibatch scheme, ``"replacement"`` or ``"permutation"``.
        max_table_bytes: refuse (before compiling) a table larger than this over all chains.
    """
    if lightweight is not None and not isinstance(lightweight, bool):
        raise TypeError(f"lightweight must be True, False or None, got {lightweight!r}")
    return SAGA(lightweight, check.choice("sampling", sampling, SAMPLING_SCHEMES),
                check.integer("max_table_bytes", max_table_bytes, lo=1))
