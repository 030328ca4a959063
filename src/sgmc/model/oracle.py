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
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from sgmc import _validate as check
from sgmc._pytree import pytree_dataclass, static

PyTree = Any

__all__ = ["ModelShapeError", "Objective", "Posterior", "Problem"]


def _as_data(data: PyTree, name: str = "data") -> tuple[PyTree, int]:
    """Validate a data pytree (shared leading axis; numeric, finite values that the cast to
    the device's dtype keeps: :func:`sgmc._validate.data_array`) and move it to the device."""
    leaves, treedef = jax.tree_util.tree_flatten(data)
    if not leaves:
        raise ValueError(f"{name} must contain at least one array")
    arrays = []
    sizes = {}
    for path, leaf in jax.tree_util.tree_flatten_with_path(data)[0]:
        where = f"{name}{jax.tree_util.keystr(path)}"
        if np.ndim(leaf) == 0:
            raise ValueError(f"{where} must have a leading data axis, got a scalar")
        arr = check.data_array(where, leaf)
        sizes[where] = arr.shape[0]
        arrays.append(jnp.asarray(arr))
    if len(set(sizes.values())) != 1:
        detail = ", ".join(f"{k}: {v}" for k, v in sizes.items())
        raise ValueError(f"all leaves of {name} must share the leading (data) axis; got {detail}")
    n = next(iter(sizes.values()))
    if n < 1:
        raise ValueError(f"{name} must hold at least one datum, got leading size 0")
    return jax.tree_util.tree_unflatten(treedef, arrays), int(n)


def _stream_or_data(problem: Problem, data: PyTree) -> tuple[PyTree, int]:
    """Device data for a new problem: the arrays, or a stream's first buffer (then the
    stream is recorded on ``problem``)."""
    from sgmc.model.stream import Stream

    stream = data if isinstance(data, Stream) else None
    object.__setattr__(problem, "stream", stream)
    return _as_data(stream.fetch(0) if stream is not None else data)


def _chunked_sum(fn: Callable, params: PyTree, rows: Callable[[Any, int], PyTree], n: int,
                 c: int, remainder_first: bool = False) -> PyTree:
    """Σ of ``fn(θ, chunk)`` over n rows in chunks of c (see full_data_sum): ``rows(start,
    size)`` gives the chunk of ``size`` rows from ``start`` (a traced start, a static size).

    ``remainder_first``: the n mod c last rows are summed first and start the scan's sum,
    so the chunks are read in a fixed order — remainder, then 0, c, 2c, … — whose every
    next chunk a stream can read ahead (without the dependency XLA may read the remainder
    at any time).
    """
    n_full, rem = divmod(n, c)
    last = fn(params, rows(n_full * c, rem)) if rem else None
    if not n_full:
        return last

    def body(acc, i):
        return _tree_add(acc, fn(params, rows(i * c, c))), None

    if remainder_first and last is not None:
        return jax.lax.scan(body, last, jnp.arange(n_full))[0]
    zero = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype),
                        jax.eval_shape(lambda: fn(params, rows(0, c))))
    total = jax.lax.scan(body, zero, jnp.arange(n_full))[0]
    return total if last is None else _tree_add(total, last)


def _slicer(data: PyTree) -> Callable[[Any, int], PyTree]:
    """``rows(start, size)`` of arrays on the device: slices, never gathers."""
    return lambda start, size: jax.tree.map(
        lambda a: jax.lax.dynamic_slice_in_dim(a, start, size), data)


def _reader(stream: Any, like: PyTree) -> Callable[[Any, int], PyTree]:
    """``rows(start, size)`` of a stream's file: a host callback inside the compiled program
    reads them (the stream reads the next chunk on a thread meanwhile), shaped and typed as
    the device buffer ``like``. A *pure* callback: the rows are a function of ``start``
    alone, and JAX refuses effectful callbacks in a ``vmap`` of ``cond`` (an SVRG snapshot
    of vmapped chains)."""
    def rows(start, size):
        shapes = jax.tree.map(lambda a: jax.ShapeDtypeStruct((size, *a.shape[1:]), a.dtype),
                              like)

        def read(lo):
            out = stream.read(int(lo), int(lo) + size)
            return jax.tree.map(lambda x, s: np.asarray(x, s.dtype), out, shapes)

        return jax.pure_callback(read, shapes, jnp.asarray(start, jnp.int32),
                                 vmap_method="sequential")

    return rows


def _tree_add(a: PyTree, b: PyTree) -> PyTree:
    return jax.tree.map(jnp.add, a, b)


class Problem:
    """The oracle shared by :class:`Posterior` and :class:`Objective` (see module docstring).

    Subclasses define ``data``, ``data_rows``, ``chunk_size``, ``data_weight``,
    ``exact_energy(θ)`` and ``datum_energy(θ, datum)``.
    """

    data: PyTree
    data_rows: int
    chunk_size: int

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
        new = copy.copy(self)
        object.__setattr__(new, "data", put(self.stream.fetch(block)))
        return new

    def split_rows(self, parts: int) -> Problem:
        """This problem with its full-data passes summed over ``parts`` equal parts of the
        rows (a device mesh's ``"data"`` axis splits them: :mod:`sgmc.run.mesh`)."""
        if self.data_rows % parts:
            raise ValueError(f"the number of data ({self.data_rows}) must be a multiple of "
                             f"{parts} parts")
        new = copy.copy(self)
        object.__setattr__(new, "data_shards", int(parts))
        return new

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
        if self.stream is not None:
            def piece_sum(p, piece):  # a piece read from the file, summed chunk by chunk
                m = jax.tree.leaves(piece)[0].shape[0]
                return _chunked_sum(fn, p, _slicer(piece), m, min(self.chunk_size, m))

            n = self.stream.num_data
            total = _chunked_sum(piece_sum, params, _reader(self.stream, self.data), n,
                                 self.stream.pass_rows, remainder_first=True)
            return jax.tree.map(lambda x: x * (self.data_rows / n), total)
        if self.data_shards == 1:
            return _chunked_sum(fn, params, _slicer(self.data), self.data_rows, self.chunk_size)
        m = self.data_rows // self.data_shards
        parts = jax.tree.map(lambda a: a.reshape(self.data_shards, m, *a.shape[1:]), self.data)
        sums = jax.vmap(lambda d: _chunked_sum(fn, params, _slicer(d), m,
                                               min(self.chunk_size, m)))(parts)
        return jax.tree.map(lambda x: jnp.sum(x, axis=0), sums)

    def full_data_map(self, fn: Callable[[PyTree, PyTree], PyTree], params: PyTree) -> PyTree:
        """``fn(θ, chunk)`` (per-example outputs with a leading chunk axis) over all data,
        concatenated to a leading axis of N — the caller asked for O(N) output (SAGA's table)."""
        if not self.has_data:
            raise ValueError("this problem has no data to pass over")
        n, c = self.data_rows, self.chunk_size
        n_full, rem = divmod(n, c)
        parts = []
        if n_full:
            chunks = jax.tree.map(lambda a: a[:n_full * c].reshape(n_full, c, *a.shape[1:]),
                                  self.data)
            out = jax.lax.map(lambda chunk: fn(params, chunk), chunks)
            parts.append(jax.tree.map(lambda a: a.reshape(n_full * c, *a.shape[2:]), out))
        if rem:
            parts.append(fn(params, jax.tree.map(lambda a: a[n_full * c:], self.data)))
        return parts[0] if len(parts) == 1 else jax.tree.map(
            lambda *p: jnp.concatenate(p, axis=0), *parts)

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
        names = getattr(self, "term_names", None)  # a NumPyro model's, in words
        if names is not None:  # each term traces the whole model
            return "the model", f"{names[0 if exact else 1]} must be a scalar"
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
                parameters: :func:`_traced`), or returns an integer (it is differentiated).
            ModelShapeError: (a ValueError) a term returns a non-scalar at ``params``.
            ValueError: evaluating a term at ``params`` fails otherwise.
        """
        def at(p):
            return self.unconstrain(p) if constrained else p

        terms = [(True, lambda p: self.exact_energy(at(p)))]
        if self.has_data:
            datum = jax.tree.map(lambda a: a[0], self.data)
            terms.append((False, lambda p: self.datum_energy(at(p), datum)))
        for exact, fn in terms:
            short, contract = self.describe_term(exact)
            out = _traced(fn, params, short, name)
            if out.shape != ():
                raise ModelShapeError(f"{short} returned shape {tuple(out.shape)} at {name} "
                                      f"({shapes_text(params)}): {contract}"
                                      + _extra_axis_hint(fn, params, name),
                                      term=short, requirement=contract,
                                      returned=tuple(out.shape))
            if not jnp.issubdtype(out.dtype, jnp.floating):  # it is differentiated
                raise TypeError(f"{short} returned dtype {out.dtype} at {name}: it must return "
                                "a floating-point scalar (e.g. 0.0, not 0)")


class ModelShapeError(ValueError):
    """A term of the model (``loglik``, ``logprior``, ``f``) returns a value of the wrong
    shape: the model's fault, or the point's (:meth:`Problem.check_params`). ``term`` names
    the user's function, ``requirement`` says what it must return, ``returned`` is the
    shape it returned (None where not known)."""

    def __init__(self, message: str, term: str | None = None,
                 requirement: str | None = None, returned: tuple | None = None) -> None:
        super().__init__(message)
        self.term, self.requirement, self.returned = term, requirement, returned


#: JAX's errors for a traced value used where a concrete one is needed: NumPy on a tracer,
#: ``float()`` / ``int()`` / ``bool()`` of one, a Python ``if`` on one.
TRACER_ERRORS = (jax.errors.TracerArrayConversionError, jax.errors.ConcretizationTypeError,
                 jax.errors.TracerBoolConversionError,
                 jax.errors.TracerIntegerConversionError)


def _traced(fn: Callable, params: PyTree, short: str, name: str) -> jax.ShapeDtypeStruct:
    """``fn(params)``'s shape and dtype (``jax.eval_shape``); a TypeError saying to use
    ``jax.numpy`` if the user's function ``short`` is not traceable, a ValueError naming the
    point ``name`` if it fails otherwise."""
    try:
        return jax.eval_shape(fn, params)
    except ModelShapeError:
        raise
    except TRACER_ERRORS as err:
        raise TypeError(
            f"{short} cannot be traced by JAX ({type(err).__name__}): the model must use "
            "jax.numpy (import jax.numpy as jnp; jnp.exp, jnp.dot, ...) instead of NumPy "
            "(np.exp, np.dot, ...) on the parameters, and no float(), int(), bool(), .item() "
            "or Python if/while on values computed from them (jnp.where or jax.lax.cond "
            "instead); JAX's error, chained above, shows the line") from err
    except Exception as err:  # the user's function rejected the point
        raise ValueError(f"{name} is not a point the model accepts: evaluating the energy "
                         f"({short}) at it failed with {type(err).__name__}: {err}") from err


def shapes_text(params: PyTree) -> str:
    """``params``' shape, or its leaves' shapes (for messages)."""
    shapes = [tuple(np.shape(x)) for x in jax.tree.leaves(params)]
    return (f"shape {shapes[0]}" if len(shapes) == 1 else
            f"leaves shaped {', '.join(map(str, shapes))}")


def leading_size(params: PyTree) -> int | None:
    """The leading axis's size if every leaf has one and they agree (``params`` might be a
    stack of points), else None."""
    sizes = {np.shape(x)[0] if np.ndim(x) else None for x in jax.tree.leaves(params)}
    return sizes.pop() if len(sizes) == 1 and None not in sizes else None


def _extra_axis_hint(fn: Callable, params: PyTree, name: str) -> str:
    """When ``fn`` (non-scalar at ``params``) is a scalar at ``params[0]``: a hint that
    ``params`` may hold several points on a leading axis; else ''."""
    k = leading_size(params)
    if k is None:
        return ""
    first = jax.tree.map(lambda x: x[0], params)
    try:
        out = jax.eval_shape(fn, first)
    except Exception:  # any failure: no hint
        return ""
    if out.shape != ():
        return ""
    return (f" (a scalar at {name}[0], {shapes_text(first)}: if {name} holds {k} "
            f"points on its leading axis, pass one point, or one per chain stacked on a "
            f"leading axis of size num_chains)")


@pytree_dataclass
class Posterior(Problem):
    """A Bayesian posterior p(θ | x₁..x_N) ∝ p(θ) Π_i p(x_i | θ).

    Energy U(θ) = −log p(θ) − Σ_i log p(x_i | θ) (the notation of docs/samplers.md). With
    ``constraints``, the chains move on the unconstrained scale z, θ = T(z), with energy
    U(z) = −log p(T(z)) − log |det ∂T/∂z| − Σ_i log p(x_i | T(z)) (:mod:`sgmc.model.constraints`);
    ``loglik`` and ``logprior`` still take θ, ``init`` is given as θ and draws are reported
    as θ.

    Args:
        loglik: ``loglik(params, datum) -> scalar``, the log-likelihood of ONE datum, where
            ``datum`` is one slice of ``data`` along its leading axis. With
            ``batched=True``: ``loglik(params, batch) -> (n,)``, the log-likelihoods of the
            n rows of a batch of data (a network applied to a minibatch at once).
        logprior: ``logprior(params) -> scalar``.
        data: an array or pytree of arrays sharing a leading axis of length N, or an
            :class:`sgmc.Stream` of data too large for the device (read in buffers).
        chunk_size: rows per chunk in full-data passes (memory O(chunk_size · d)).
        constraints: which parameters are constrained, e.g. ``{"sigma": "positive",
            "p": "unit_interval", "cuts": "ordered", "weights": "simplex"}`` (names or
            NumPyro constraint objects, following the params' structure; unlisted leaves
            are unconstrained): see :class:`sgmc.model.constraints.Constraints`. Needs NumPyro
            (``pip install "sgmc[numpyro]"``), whose transforms and Jacobians are used.
        batched: ``loglik`` takes a batch of rows and returns one value per row. A
            per-example gradient (SVRG, SAGA, EWSG) is then the gradient of a batch of one.
    """

    data: PyTree
    loglik: Callable = static()
    logprior: Callable = static()
    chunk_size: int = static(1024)
    data_rows: int = static(0)
    stream: Any = static(None)
    data_shards: int = static(1)
    constraints: Any = static(None)
    batched: bool = static(False)

    def __init__(self, loglik: Callable, logprior: Callable, data: PyTree,
                 chunk_size: int = 1024, constraints: Any = None,
                 batched: bool = False) -> None:
        check.callable_("loglik", loglik)
        check.callable_("logprior", logprior)
        if not isinstance(batched, (bool, np.bool_)):
            raise TypeError(f"batched must be True or False, got {batched!r}")
        if constraints is not None:
            from sgmc.model.constraints import Constraints

            if not isinstance(constraints, Constraints):
                constraints = Constraints(constraints)
        arrays, n = _stream_or_data(self, data)
        chunk = check.integer("chunk_size", chunk_size, lo=1)
        object.__setattr__(self, "data", arrays)
        object.__setattr__(self, "loglik", loglik)
        object.__setattr__(self, "logprior", logprior)
        object.__setattr__(self, "chunk_size", min(chunk, n))
        object.__setattr__(self, "data_rows", n)
        object.__setattr__(self, "constraints", constraints)
        object.__setattr__(self, "batched", bool(batched))

    @staticmethod
    def from_numpyro(model: Callable, *args: Any, chunk_size: int = 1024,
                     plate: str = "data", **kwargs: Any) -> Problem:
        """The posterior of a NumPyro model, called as ``model(*args, **kwargs)`` (its data
        included), as an sgmc problem.

        The data rows must enter through ``with numpyro.plate("data", N,
        subsample_size=...):`` with ``numpyro.subsample(x, event_dim=...)`` for each
        per-row array: sgmc's minibatches replace the plate's subsample (the
        ``subsample_size`` given in the model is ignored; the sampler's ``batch_size``
        decides). The observed sites in the plate are the per-datum likelihood (what
        SVRG, SAGA and EWSG reduce the variance of); the latent sites' priors, observed
        sites outside the plate and ``numpyro.factor`` terms are the exact term. Latent
        sites are sampled on the unconstrained scale through NumPyro's transforms with the
        log-Jacobian added; ``init`` is a dict keyed by latent site name on the
        constrained scale, and ``res.samples`` is a dict keyed by site name on the
        constrained scale (with the deterministic sites outside the plate). Needs NumPyro
        (``pip install "sgmc[numpyro]"``). See :mod:`sgmc.model.numpyro` and
        docs/numpyro.md.

        Args:
            model: the NumPyro model (a function).
            *args: the model's positional arguments. Arrays among the arguments are passed
                to the compiled code as data (validated and cast as data are); other values
                are fixed.
            **kwargs: the model's keyword arguments (as ``*args``).
            chunk_size: rows per chunk in full-data passes.
            plate: the name of the plate that holds the data rows.

        Example:
            >>> def model(x, y=None):                                     # doctest: +SKIP
            ...     w = numpyro.sample("w", dist.Normal(0, 1).expand([x.shape[1]]))
            ...     sigma = numpyro.sample("sigma", dist.HalfNormal(1.0))
            ...     with numpyro.plate("data", x.shape[0], subsample_size=100):
            ...         xb = numpyro.subsample(x, event_dim=1)
            ...         yb = numpyro.subsample(y, event_dim=0)
            ...         numpyro.sample("y", dist.Normal(xb @ w, sigma), obs=yb)
            >>> post = sgmc.Posterior.from_numpyro(model, X, y)          # doctest: +SKIP
            >>> res = sgmc.sample(post, sgmc.sgld(1e-4, batch_size=100),
            ...                   {"w": np.zeros(d), "sigma": 1.0}, num_steps=10_000)
            >>> res.samples["sigma"].shape                                # doctest: +SKIP
            (1, 10000)
        """
        from sgmc.model.numpyro import NumPyroPosterior

        return NumPyroPosterior(model, *args, chunk_size=chunk_size, plate=plate, **kwargs)

    @property
    def data_weight(self) -> float:
        # A streamed buffer of B rows stands for all N: each of its terms counts N/B times.
        return self.stream.weight if self.stream is not None else 1.0

    def exact_energy(self, params: PyTree) -> jax.Array:
        if self.constraints is None:
            return -self.logprior(params)
        theta, log_det = self.constraints.constrain_with_log_det(params)
        return -self.logprior(theta) - log_det

    def datum_energy(self, params: PyTree, datum: PyTree) -> jax.Array:
        if self.batched:
            return self.chunk_energies(params, jax.tree.map(lambda a: a[None], datum))[0]
        return -self.loglik(self.constrain(params), datum)

    def chunk_energies(self, params: PyTree, chunk: PyTree) -> jax.Array:
        if not self.batched:
            return super().chunk_energies(params, chunk)
        n = jax.tree.leaves(chunk)[0].shape[0]
        out = -self.loglik(self.constrain(params), chunk)
        if jnp.shape(out) != (n,):
            raise ModelShapeError(f"with batched=True, loglik(params, batch) must return one "
                                  f"value per row, shape ({n},) for {n} rows; got shape "
                                  f"{jnp.shape(out)}")
        return out

    def describe_term(self, exact: bool) -> tuple[str, str]:
        if exact:
            return "logprior", ("logprior(params) must return a scalar: the log prior density "
                                "of the whole point (sum over its entries, e.g. with jnp.sum)")
        return "loglik", ("loglik(params, datum) must return a scalar log-likelihood of ONE "
                          "datum (one row of the data along its leading axis): sum over the "
                          "datum's entries (e.g. with jnp.sum), or, for a loglik(params, batch) "
                          "that returns one value per row of a batch, shape (n,), pass "
                          "batched=True")

    @property
    def constrained(self) -> bool:
        return self.constraints is not None

    def constrain(self, params: PyTree) -> PyTree:
        return params if self.constraints is None else self.constraints.constrain(params)

    def unconstrain(self, params: PyTree) -> PyTree:
        return params if self.constraints is None else self.constraints.unconstrain(params)

    def check_support(self, params: PyTree, name: str = "init") -> None:
        if self.constraints is not None:
            self.constraints.check(params, name)


@pytree_dataclass
class Objective(Problem):
    """A function to minimise: F(x) = (1/N) Σ_i f(x, x_i), or F(x) = f(x) without data.

    As an energy for samplers, U = F (so exp(−F/τ) is the Gibbs measure at temperature τ);
    minibatch estimates are batch means (Dong & Tong, Alg. 2).

    Args:
        f: ``f(x, datum) -> scalar`` when ``data`` is given, else ``f(x) -> scalar``.
        data: optional array or pytree of arrays sharing a leading axis, or an
            :class:`sgmc.Stream` (a batch mean over a buffer is already unbiased for the mean
            over all rows, so no weight changes).
        chunk_size: rows per chunk in full-data passes.
    """

    data: PyTree
    f: Callable = static()
    chunk_size: int = static(1024)
    data_rows: int = static(0)
    stream: Any = static(None)
    data_shards: int = static(1)

    def __init__(self, f: Callable, data: PyTree = None, chunk_size: int = 1024) -> None:
        check.callable_("f", f)
        chunk = check.integer("chunk_size", chunk_size, lo=1)
        if data is None:
            arrays, n = None, 0
        else:
            arrays, n = _stream_or_data(self, data)
        object.__setattr__(self, "data", arrays)
        object.__setattr__(self, "f", f)
        object.__setattr__(self, "chunk_size", max(1, min(chunk, n)))
        object.__setattr__(self, "data_rows", n)

    @property
    def data_weight(self) -> float:
        return 1.0 / self.data_rows if self.data_rows else 0.0

    def exact_energy(self, params: PyTree) -> jax.Array:
        if self.has_data:
            return jnp.zeros((), jnp.result_type(*jax.tree.leaves(params), jnp.float32))
        return self.f(params)

    def datum_energy(self, params: PyTree, datum: PyTree) -> jax.Array:
        return self.f(params, datum)

    def describe_term(self, exact: bool) -> tuple[str, str]:
        if exact:
            return "f", ("f(x) must return a scalar: the objective's value at the point (sum "
                         "or average over its entries)")
        return "f", ("f(x, datum) must return a scalar: the loss of ONE datum (one row of the "
                     "data along its leading axis), averaged over the data by sgmc")
