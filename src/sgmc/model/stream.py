"""Data larger than memory: a problem whose data are read in buffers of rows, block by block.

``sgmc.Posterior(loglik, logprior, data=sgmc.Stream(source, buffer_rows=B))`` builds a
posterior over all N rows of ``source`` — memory-mapped arrays (``np.load(path,
mmap_mode="r")``, ``np.memmap``) or a function ``fetch(indices)`` returning those rows —
while the device holds only B of them. Before each compiled block of steps the driver reads
a fresh buffer: B distinct rows drawn uniformly at random (sorted, so a memory map reads them
in file order), put on the device while the previous block is still running. Inside the
block the sampler draws its minibatches from the buffer, and the data term is weighted by
N/B, so that

    Û(θ) = U₀(θ) + (N/B)(B/n) Σ_{i∈batch} L_i(θ) = U₀(θ) + (N/n) Σ_{i∈batch} L_i(θ)

is the usual unbiased minibatch estimate (the buffer is a uniform subsample, so a uniform
draw from it is a uniform draw from the data).

The trade-off. Within a block, minibatches come from the same B rows, and a block's gradient
errors add up over its steps. Two rules keep the draws those of in-memory sampling:

* a block takes about B / batch_size steps (the driver's default block size with streamed
  data), so a buffer is used about once;
* minibatches are drawn *without* replacement (``sampling="permutation"`` in the estimator,
  e.g. ``sgmc.sgld(h, batch_size=n, estimator=sgmc.uniform("permutation"))``): the block's
  minibatches then partition the buffer, which is itself a uniform subsample of the data, so
  the block's summed gradient noise is that of in-memory sampling. With replacement, rows of
  the buffer are reused while others are skipped, and the buffer's own deviation from the
  data adds to the noise: measured here (tests/model/test_streaming.py) SGLD's variances come out
  ~1.45× the in-memory ones at one buffer per B/n steps, and a block that reuses one buffer
  for many passes drifts toward that subsample's posterior (off by about √(N/B − 1)
  posterior standard deviations). The driver warns when streamed data meet replacement
  sampling.

The cost is one buffer read per B / batch_size steps, overlapped with the previous block's
computation.

Full passes — SVRG snapshots, control-variate anchors, full-batch gradients — are exact:
they go over all N rows of the file in order, ``pass_rows`` rows at a time, each piece read
into the compiled program by a host callback while the previous one is summed (see
:meth:`sgmc.model.oracle.Problem.full_data_sum`), and they count N evaluations. So variance
reduction removes the minibatch noise relative to the whole data, as in memory (on a
conjugate regression streamed SVRG-LD samples the exact posterior, where plain SGLD's
covariance is 4–12× too large; tests/model/test_streaming.py). A pass reads the whole file: with
SVRG's usual period N/n it adds one read of the data per epoch (measured here, N = 10⁶,
d = 54, from the page cache: 61 ms per pass against 40 ms in memory). SAGA is refused (its
table is indexed by buffer rows, which change every block).

The buffers depend only on the stream's seed and the block's index, so runs are reproducible
and checkpoints resume bitwise.

Every piece is checked as it is read (a buffer on the driver's reading thread, a full pass's
piece inside the compiled program): NaN or inf values, integers that the device's dtype
(int32 without JAX's 64-bit mode) would wrap and floats beyond float32's range raise a
ValueError naming the rows by their index in the source, which ``sgmc.sample`` raises
as an :class:`sgmc.DataError` (a ValueError carrying the draws kept before; not as a
divergence) — :func:`sgmc._validate.data_array`, the check of in-memory data too.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import jax
import numpy as np

from sgmc import _validate as check

__all__ = ["Stream"]

PyTree = Any


class Stream:
    """Rows of a dataset too large for the device, read ``buffer_rows`` at a time.

    Args:
        source: a pytree (array, dict, tuple, ...) of arrays sharing a leading axis of N rows
            — typically memory maps, which are then read row by row and never whole — or a
            function ``fetch(indices) -> pytree of arrays`` returning the rows at the
            (sorted, int64) ``indices``.
        buffer_rows: B, rows on the device at a time, 1 ≤ B ≤ N.
        num_rows: N; required when ``source`` is a function, else read from the arrays.
        seed: seed of the buffers' row choice (the same seed gives the same buffers).
        pass_rows: rows read at a time by a full pass (SVRG snapshot, control-variate
            anchor), which goes over all N rows in file order; the device then holds this
            many rows besides the buffer. Default min(B, 65,536): larger pieces cost fewer
            reads (on this CPU a pass in pieces of 1,024 rows took 9× the in-memory pass,
            in pieces of 65,536 1.5×).
    """

    def __init__(self, source: PyTree | Callable, buffer_rows: int,
                 num_rows: int | None = None, seed: int = 0,
                 pass_rows: int | None = None) -> None:
        if callable(source) and not hasattr(source, "shape"):
            if num_rows is None:
                raise ValueError("num_rows is required when source is a function")
            self.num_data = check.integer("num_rows", num_rows, lo=1)
            self._fetch = source
            self._slice = lambda lo, hi: source(np.arange(lo, hi, dtype=np.int64))
            self._shapes = None
        else:
            leaves = jax.tree.leaves(source)
            if not leaves or any(np.ndim(x) == 0 for x in leaves):
                raise ValueError("source must hold arrays with a leading row axis")
            sizes = {int(np.shape(x)[0]) for x in leaves}
            if len(sizes) != 1:
                raise ValueError(f"all arrays of source must share the leading (row) axis; "
                                 f"got sizes {sorted(sizes)}")
            n = sizes.pop()
            if num_rows is not None and num_rows != n:
                raise ValueError(f"num_rows ({num_rows}) differs from the arrays' rows ({n})")
            self.num_data = n
            self._fetch = lambda idx: jax.tree.map(lambda a: np.asarray(a[idx]), source)
            # Contiguous rows are a slice, which a memory map reads sequentially.
            self._slice = lambda lo, hi: jax.tree.map(lambda a: np.asarray(a[lo:hi]), source)
            self._shapes = [(tuple(np.shape(x)[1:]), str(np.asarray(x[:0]).dtype))
                            for x in leaves]
        self.buffer_rows = check.integer("buffer_rows", buffer_rows, lo=1, hi=self.num_data)
        self.seed = check.integer("seed", seed, lo=0, hi=2**63 - 1)
        self.pass_rows = (min(self.buffer_rows, 65_536) if pass_rows is None else
                          check.integer("pass_rows", pass_rows, lo=1, hi=self.num_data))
        self._reset()

    def _reset(self) -> None:
        """The read-ahead of full passes (see :meth:`read`): the piece being read and the
        reading thread (started on first use)."""
        self._ahead: tuple[int, int, Future] | None = None
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self._failure: Exception | None = None

    @property
    def weight(self) -> float:
        """N/B: the weight that makes sums over the buffer unbiased for sums over all rows."""
        return self.num_data / self.buffer_rows

    def rows(self, block: int) -> np.ndarray:
        """The sorted row indices of block ``block``'s buffer (B distinct rows, uniform)."""
        rng = np.random.default_rng([self.seed, block])
        return np.sort(rng.choice(self.num_data, self.buffer_rows, replace=False))

    def fetch(self, block: int) -> PyTree:
        """Block ``block``'s buffer on the host (floating data as float32; every piece
        checked as it is read, see :meth:`_checked`)."""
        idx = self.rows(block)
        return self._checked(self._fetch(idx), idx, f"block {block}'s buffer")

    def read(self, start: int, stop: int) -> PyTree:
        """Rows ``start:stop`` in file order, on the host (floating data as float32). A full
        pass (:meth:`Problem.full_data_sum <sgmc.model.oracle.Problem.full_data_sum>`) asks for
        the last N mod ``pass_rows`` rows, then consecutive pieces of ``pass_rows`` from row
        0, so the piece after this one is read meanwhile; every read runs on one thread of
        the stream's, so a source is never read concurrently."""
        start, stop = int(start), int(stop)
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(1, thread_name_prefix="sgmc-stream")
            ahead = self._ahead
            now = (ahead[2] if ahead is not None and ahead[:2] == (start, stop)
                   else self._pool.submit(self._rows, start, stop))
            lo = stop if stop < self.num_data else 0  # after the last rows comes row 0
            nxt = (lo, min(lo + self.pass_rows, self.num_data))
            self._ahead = (*nxt, self._pool.submit(self._rows, *nxt))
        try:
            return now.result()
        except Exception as err:  # inside a compiled program JAX reports it as its own
            self._failure = err
            raise

    def take_failure(self) -> Exception | None:
        """The error of the last failed :meth:`read` (a full pass's piece with NaN rows,
        say), once; None if none failed since the last call. A read fails inside a compiled
        program, whose caller sees only JAX's runtime error: the driver raises this one."""
        failure, self._failure = self._failure, None
        return failure

    def _rows(self, start: int, stop: int) -> PyTree:
        return self._checked(self._slice(start, stop), np.arange(start, stop),
                             f"rows {start}:{stop}, read for a full pass")

    def _checked(self, out: PyTree, idx: np.ndarray, what: str) -> PyTree:
        """The rows ``idx`` read from the source (``what`` they are, for messages), as the
        device will hold them (floating data as float32), checked as they are read:
        ValueError for non-finite values (the message names the rows by their index in the
        source), integers that the device's dtype would wrap and floats beyond float32's
        range; TypeError for non-numeric data (:func:`sgmc._validate.data_array`)."""
        checked = []
        for path, x in jax.tree_util.tree_flatten_with_path(out)[0]:
            if np.shape(x)[:1] != (idx.size,):
                raise ValueError(f"the stream's source returned {np.shape(x)[:1]} rows for "
                                 f"{idx.size} indices")
            where = f"the stream's source{jax.tree_util.keystr(path)} ({what})"
            checked.append(check.data_array(where, x, rows=idx, float_dtype=np.float32))
        return jax.tree.unflatten(jax.tree.structure(out), checked)

    def __getstate__(self) -> dict:  # threads and locks stay with the process
        return {k: v for k, v in self.__dict__.items()
                if k not in ("_ahead", "_lock", "_pool", "_failure")}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._reset()

    def __repr__(self) -> str:  # deterministic: part of a problem's checkpoint fingerprint
        return (f"Stream(num_rows={self.num_data}, buffer_rows={self.buffer_rows}, "
                f"seed={self.seed}, pass_rows={self.pass_rows}, leaves={self._shapes})")
