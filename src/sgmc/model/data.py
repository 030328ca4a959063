"""A problem's data source: arrays on the device, a :class:`~sgmc.Stream` read from the host,
or rows split over a device mesh's ``"data"`` axis — behind one interface.

The oracle (:mod:`sgmc.model.oracle`) asks two things of its data: a sum of a per-chunk
function over all rows (:func:`full_sum`: gradients and energies of full passes) and a map of
a per-example function over all rows (:func:`full_map`: SAGA's table). Both go chunk by chunk,
so memory is O(chunk · d) whatever N is; how a chunk is obtained is the data source's
business — a slice of the device's arrays (:func:`slicer`), or rows read from a stream's file
by a host callback inside the compiled program (:func:`reader`). Building a problem validates
its data here (:func:`as_data`, :func:`stream_or_data`), and the driver's two changes of a
problem's data — the next buffer of a stream (:func:`with_buffer`), the rows split over
devices (:func:`split_rows`) — are shallow copies made here.

This module knows nothing of :class:`~sgmc.model.oracle.Problem`: functions take the arrays
and sizes they act on, or a problem as an opaque object to copy.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any, TypeVar

import jax
import jax.numpy as jnp
import numpy as np

from sgmc import _validate as check
from sgmc.model.stream import Stream

PyTree = Any
P = TypeVar("P")

__all__ = ["as_data", "chunked_sum", "full_map", "full_sum", "reader", "slicer",
           "split_rows", "stream_or_data", "with_buffer"]


def as_data(data: PyTree, name: str = "data") -> tuple[PyTree, int]:
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


def stream_or_data(problem: Any, data: PyTree) -> tuple[PyTree, int]:
    """Device data for a new problem: the arrays, or a stream's first buffer (then the
    stream is recorded on ``problem``)."""
    stream = data if isinstance(data, Stream) else None
    object.__setattr__(problem, "stream", stream)
    return as_data(stream.fetch(0) if stream is not None else data)


def with_buffer(problem: P, block: int, put: Callable = jax.device_put) -> P:
    """A copy of ``problem`` on block ``block``'s buffer of its stream (same shapes)."""
    new = copy.copy(problem)
    object.__setattr__(new, "data", put(problem.stream.fetch(block)))
    return new


def split_rows(problem: P, parts: int) -> P:
    """A copy of ``problem`` whose full-data passes sum over ``parts`` equal parts of its
    ``data_rows`` rows (``data_shards``; see :func:`full_sum`)."""
    if problem.data_rows % parts:
        raise ValueError(f"the number of data ({problem.data_rows}) must be a multiple of "
                         f"{parts} parts")
    new = copy.copy(problem)
    object.__setattr__(new, "data_shards", int(parts))
    return new


def chunked_sum(fn: Callable, params: PyTree, rows: Callable[[Any, int], PyTree], n: int,
                c: int, remainder_first: bool = False) -> PyTree:
    """Σ of ``fn(θ, chunk)`` over n rows in chunks of c (see :func:`full_sum`): ``rows(start,
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


def slicer(data: PyTree) -> Callable[[Any, int], PyTree]:
    """``rows(start, size)`` of arrays on the device: slices, never gathers."""
    return lambda start, size: jax.tree.map(
        lambda a: jax.lax.dynamic_slice_in_dim(a, start, size), data)


def reader(stream: Any, like: PyTree) -> Callable[[Any, int], PyTree]:
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


def full_sum(fn: Callable[[PyTree, PyTree], PyTree], params: PyTree, data: PyTree,
             data_rows: int, chunk_size: int, stream: Any = None,
             data_shards: int = 1) -> PyTree:
    """Σ over all rows of ``fn(θ, chunk)`` (a per-chunk sum), in chunks of ``chunk_size``,
    whatever the source: what :meth:`sgmc.model.oracle.Problem.full_data_sum` computes (its
    docstring gives the contract).

    * arrays (``data``, ``data_rows`` rows): a ``lax.scan`` over the full chunks plus one
      static remainder chunk, sliced, never gathered;
    * rows split in ``data_shards`` equal parts (a device mesh's ``"data"`` axis): a ``vmap``
      of that over the parts, which the partitioner keeps local, and the parts' sums added;
    * a ``stream``: all its N rows read ``pass_rows`` at a time by a host callback (the next
      piece read meanwhile), each piece summed in chunks, the total on the buffer's scale
      (times ``data_rows / N``).
    """
    if stream is not None:
        def piece_sum(p, piece):  # a piece read from the file, summed chunk by chunk
            m = jax.tree.leaves(piece)[0].shape[0]
            return chunked_sum(fn, p, slicer(piece), m, min(chunk_size, m))

        n = stream.num_data
        total = chunked_sum(piece_sum, params, reader(stream, data), n,
                            stream.pass_rows, remainder_first=True)
        return jax.tree.map(lambda x: x * (data_rows / n), total)
    if data_shards == 1:
        return chunked_sum(fn, params, slicer(data), data_rows, chunk_size)
    m = data_rows // data_shards
    parts = jax.tree.map(lambda a: a.reshape(data_shards, m, *a.shape[1:]), data)
    sums = jax.vmap(lambda d: chunked_sum(fn, params, slicer(d), m,
                                          min(chunk_size, m)))(parts)
    return jax.tree.map(lambda x: jnp.sum(x, axis=0), sums)


def full_map(fn: Callable[[PyTree, PyTree], PyTree], params: PyTree, data: PyTree,
             data_rows: int, chunk_size: int) -> PyTree:
    """``fn(θ, chunk)`` (per-example outputs with a leading chunk axis) over all rows of the
    device's arrays, in chunks of ``chunk_size``, concatenated to a leading axis of
    ``data_rows`` (what :meth:`sgmc.model.oracle.Problem.full_data_map` computes)."""
    n, c = data_rows, chunk_size
    n_full, rem = divmod(n, c)
    parts = []
    if n_full:
        chunks = jax.tree.map(lambda a: a[:n_full * c].reshape(n_full, c, *a.shape[1:]), data)
        out = jax.lax.map(lambda chunk: fn(params, chunk), chunks)
        parts.append(jax.tree.map(lambda a: a.reshape(n_full * c, *a.shape[2:]), out))
    if rem:
        parts.append(fn(params, jax.tree.map(lambda a: a[n_full * c:], data)))
    return parts[0] if len(parts) == 1 else jax.tree.map(
        lambda *p: jnp.concatenate(p, axis=0), *parts)


def _tree_add(a: PyTree, b: PyTree) -> PyTree:
    return jax.tree.map(jnp.add, a, b)
