"""Problems and their oracle: what samplers and optimisers may ask of a target.

Every problem has the energy

    U(θ) = U₀(θ) + w · Σ_{i=1}^{N} L_i(θ)

with an exact term U₀ (the negative log prior of a posterior; the whole function of a
data-free objective), per-datum energies L_i and a data weight w (1 for a posterior, 1/N for
an objective that averages over data). Temperature divides the energy: samplers target
exp(−U/τ). The oracle gives

* the unbiased minibatch estimate Û_B(θ) = U₀(θ) + (w N / n) Σ_{i∈B} L_i(θ) and its gradient
  (the notation of docs/samplers.md; N/n scaling for posteriors, a batch mean for objectives);
* sums over a minibatch of L_i and ∇L_i, and per-example values and gradients, which is what
  variance reduction and non-uniform subsampling act on — the exact term is never subsampled;
* full-data energy and gradient computed in fixed-size chunks, so memory is O(chunk · d)
  whatever N is.

Problems are pytrees: the data are leaves passed to compiled code as arguments (never baked
into the program as constants), the user functions are static and key the compile cache.

This module is the oracle alone. The problems users build are in :mod:`sgmc.model.posterior`
(and :mod:`sgmc.model.numpyro`); where the data's rows come from — arrays, a stream, rows
split over devices — is :mod:`sgmc.model.data`; the checks of a point and their messages
are :mod:`sgmc.model.checks`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from sgmc.model import data as source
from sgmc.model.checks import check_term

PyTree = Any

__all__ = ["Problem", "require_problem"]


class Problem:
    """The oracle shared by :class:`~sgmc.Posterior`, :class:`~sgmc.Objective` and
    :class:`~sgmc.NumPyroPosterior` (see module docstring).

    Subclasses define ``data``, ``data_rows``, ``chunk_size``, ``data_weight``,
    ``exact_energy(θ)`` and ``datum_energy(θ, datum)``.
    """

    data: PyTree
    data_rows: int
    chunk_size: int
    #: The user's names of the exact and the data term, as messages name them.
    term_names = ("exact_energy", "datum_energy")

    # -- defined by subclasses -------------------------------------------------------
    @property
    def data_weight(self) -> float:  # pragma: no cover - abstract
        raise NotImplementedError

    def exact_energy(self, params: PyTree) -> jax.Array:  # pragma: no cover - abstract
        raise NotImplementedError

    def datum_energy(self, params: PyTree, datum: PyTree) -> jax.Array:  # pragma: no cover
        raise NotImplementedError

    # -- the sampled scale (see sgmc.model.constraints) ----------------------------------------
    @property
    def constrained(self) -> bool:
        """Whether draws (θ) and sampled points (z) differ: constrained parameters."""
        return False

    def constrain(self, params: PyTree) -> PyTree:
        """The model's parameters θ = T(z) of a sampled point z: what a draw reports.
        The identity unless the problem has constrained parameters."""
        return params

    def unconstrain(self, params: PyTree) -> PyTree:
        """z = T⁻¹(θ): the sampled point of the model's parameters ``params`` (which may
        carry leading batch axes). The identity unless the problem has constraints."""
        return params

    def check_support(self, params: PyTree, name: str = "init") -> None:
        """Raise a ValueError naming the leaf if ``params`` (the model's scale, one point
        per chain on a leading axis) is outside its support. Nothing to check unless the
        problem has constraints."""

    # -- streamed data (see sgmc.model.stream), data split over devices (sgmc.run.mesh) --------
    stream: Any = None
    data_shards: int = 1

    @property
    def num_data(self) -> int:
        """N, all the data's rows. ``data_rows`` is the rows of ``data``, the arrays on the
        device that minibatch indices refer to: B < N when the data stream in buffers."""
        return self.stream.num_data if self.stream is not None else self.data_rows

    def with_buffer(self, block: int, put: Callable = jax.device_put) -> Problem:
        """This problem on block ``block``'s buffer of a streamed dataset (same shapes)."""
        return source.with_buffer(self, block, put)

    def split_rows(self, parts: int) -> Problem:
        """This problem with its full-data passes summed over ``parts`` equal parts of the
        rows (a device mesh's ``"data"`` axis splits them: :mod:`sgmc.run.mesh`)."""
        return source.split_rows(self, parts)

    # -- minibatches -------------------------------------------------------------------
    @property
    def has_data(self) -> bool:
        return self.data_rows > 0

    def take(self, idx: jax.Array) -> PyTree:
        """The data at indices ``idx`` (a minibatch, or any chunk)."""
        return jax.tree.map(lambda a: a[idx], self.data)

    def batch_scale(self, batch_size: int) -> float:
        """The factor w·N/n that makes a sum over n data an unbiased estimate of w·Σ_i."""
        return self.data_weight * self.data_rows / batch_size

    def chunk_energies(self, params: PyTree, chunk: PyTree) -> jax.Array:
        """Per-example energies L_i(θ) of a data chunk, shape (n,)."""
        return jax.vmap(self.datum_energy, in_axes=(None, 0))(params, chunk)

    def chunk_energy_sum(self, params: PyTree, chunk: PyTree) -> jax.Array:
        """Σ_{i in chunk} L_i(θ)."""
        return jnp.sum(self.chunk_energies(params, chunk))

    def chunk_grad_sum(self, params: PyTree, chunk: PyTree) -> PyTree:
        """Σ_{i in chunk} ∇L_i(θ), by one reverse pass through the vectorised sum."""
        return jax.grad(self.chunk_energy_sum)(params, chunk)

    def chunk_grads(self, params: PyTree, chunk: PyTree) -> PyTree:
        """Per-example gradients ∇L_i(θ): every leaf gains a leading axis of size n."""
        return jax.vmap(jax.grad(self.datum_energy), in_axes=(None, 0))(params, chunk)

    def batch_energy_sum(self, params: PyTree, idx: jax.Array) -> jax.Array:
        return self.chunk_energy_sum(params, self.take(idx))

    def batch_grad_sum(self, params: PyTree, idx: jax.Array) -> PyTree:
        return self.chunk_grad_sum(params, self.take(idx))

    def batch_energies(self, params: PyTree, idx: jax.Array) -> jax.Array:
        return self.chunk_energies(params, self.take(idx))

    def batch_grads(self, params: PyTree, idx: jax.Array) -> PyTree:
        return self.chunk_grads(params, self.take(idx))

    def exact_grad(self, params: PyTree) -> PyTree:
        return jax.grad(self.exact_energy)(params)

    def estimate_energy(self, params: PyTree, idx: jax.Array) -> jax.Array:
        """Û_B(θ) = U₀(θ) + (w N/n) Σ_{i∈B} L_i(θ), unbiased for U(θ) under uniform sampling."""
        if not self.has_data:
            return self.exact_energy(params)
        return self.exact_energy(params) + self.batch_scale(idx.shape[0]) * self.batch_energy_sum(
            params, idx)

    def estimate_grad(self, params: PyTree, idx: jax.Array) -> PyTree:
        """∇Û_B(θ); the exact term's gradient is never subsampled."""
        return jax.grad(self.estimate_energy)(params, idx)

    # -- full passes -------------------------------------------------------------------
    def full_data_sum(self, fn: Callable[[PyTree, PyTree], PyTree], params: PyTree) -> PyTree:
        """Σ over all data of ``fn(θ, chunk)`` (a per-chunk sum), in chunks of ``chunk_size``.

        A ``lax.scan`` over the full chunks plus one static remainder chunk: memory is
        O(chunk_size · d) and the data are sliced, not gathered. With the data split into
        ``data_shards`` equal parts (over a device mesh's ``"data"`` axis, see
        :mod:`sgmc.run.mesh`), each part is summed on its own device (a ``vmap`` over the
        parts, which the partitioner keeps local) and the parts' sums are added.

        Streamed data (:class:`sgmc.Stream`): the pass is exact, over all N rows of the
        file, read ``pass_rows`` at a time into the compiled program by a host callback
        (the next piece is read meanwhile) and summed in chunks; the sum is
        returned on the buffer's scale, (B/N) Σ_{i=1}^{N}, the value that a sum over the
        device's B rows estimates, so ``data_weight`` (N/B) times it is the full data term
        (and every caller stays the same). It costs N evaluations (``num_data``).
        """
        if not self.has_data:
            raise ValueError("this problem has no data to pass over")
        return source.full_sum(fn, params, self.data, self.data_rows, self.chunk_size,
                               self.stream, self.data_shards)

    def full_data_map(self, fn: Callable[[PyTree, PyTree], PyTree], params: PyTree) -> PyTree:
        """``fn(θ, chunk)`` (per-example outputs with a leading chunk axis) over all data,
        concatenated to a leading axis of N — the caller asked for O(N) output (SAGA's table)."""
        if not self.has_data:
            raise ValueError("this problem has no data to pass over")
        return source.full_map(fn, params, self.data, self.data_rows, self.chunk_size)

    def full_energy(self, params: PyTree) -> jax.Array:
        """U(θ) = U₀(θ) + w Σ_i L_i(θ), computed in chunks."""
        u = self.exact_energy(params)
        if self.has_data:
            u = u + self.data_weight * self.full_data_sum(self.chunk_energy_sum, params)
        return u

    def full_grad(self, params: PyTree) -> PyTree:
        """∇U(θ), computed in chunks."""
        g = self.exact_grad(params)
        if self.has_data:
            s = self.full_data_sum(self.chunk_grad_sum, params)
            g = jax.tree.map(lambda a, b: a + self.data_weight * b, g, s)
        return g

    energy = full_energy

    # -- checks ------------------------------------------------------------------------
    def describe_term(self, exact: bool) -> tuple[str, str]:
        """How messages name the exact (``exact``) or the data term: the user's function
        (``loglik``, ``logprior``, ``f``) and what it must return."""
        if exact:
            return "exact_energy", "exact_energy(params) must return a scalar"
        return "datum_energy", ("datum_energy(params, datum) must return a scalar: the energy "
                                "of ONE datum (one row of the data along its leading axis)")

    def check_params(self, params: PyTree, name: str = "init",
                     constrained: bool = False) -> None:
        """Raise if ``params`` is not a point the energy accepts: each term (the exact one,
        and the data term on the first row of data) must be a floating scalar there;
        ``constrained``: ``params`` is on the model's scale (θ), not the sampled one (z).

        Raises:
            TypeError: a term is not traceable by JAX (NumPy or Python control flow on the
                parameters: :func:`sgmc.model.checks.traced`), or returns an integer (it is
                differentiated).
            sgmc.model.checks.ModelShapeError: (a ValueError) a term returns a non-scalar
                at ``params``.
            ValueError: evaluating a term at ``params`` fails otherwise.
        """
        def at(p):
            return self.unconstrain(p) if constrained else p

        terms = [(True, lambda p: self.exact_energy(at(p)))]
        if self.has_data:
            datum = jax.tree.map(lambda a: a[0], self.data)
            terms.append((False, lambda p: self.datum_energy(at(p), datum)))
        for exact, fn in terms:
            check_term(fn, params, *self.describe_term(exact), name)


def require_problem(problem: Any) -> None:
    """Raise TypeError unless ``problem`` is a :class:`Problem` (what every entry point that
    takes one checks first, before anything is traced)."""
    if not isinstance(problem, Problem):
        raise TypeError("problem must be an sgmc.Posterior or sgmc.Objective, got "
                        f"{type(problem).__name__}")
