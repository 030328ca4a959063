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
  data adds to the noise: measured here (tests/test_streaming.py) SGLD's variances come out
  ~1.45× the in-memory ones at one buffer per B/n steps, and a block that reuses one buffer
  for many passes drifts toward that subsample's posterior (off by about √(N/B − 1)
  posterior standard deviations). The driver warns when streamed data meet replacement
  sampling.

The cost is one buffer read per B / batch_size steps, overlapped with the previous block's
computation. Full passes — SVRG snapshots,
control-variate anchors, full-batch gradients — go over the current buffer, weighted N/B:
an unbiased estimate of the full pass, not the exact one, and it persists until the next
snapshot, so with streamed data variance reduction removes only the noise of the minibatch
relative to the buffer (take B as large as the device allows). SAGA is refused (its table
is indexed by buffer rows, which change every block).

The buffers depend only on the stream's seed and the block's index, so runs are reproducible
and checkpoints resume bitwise.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from . import _validate as check

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
    """

    def __init__(self, source: PyTree | Callable, buffer_rows: int,
                 num_rows: int | None = None, seed: int = 0) -> None:
        if callable(source) and not hasattr(source, "shape"):
            if num_rows is None:
                raise ValueError("num_rows is required when source is a function")
            self.num_data = check.integer("num_rows", num_rows, lo=1)
            self._fetch = source
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
            self._shapes = [(tuple(np.shape(x)[1:]), str(np.asarray(x[:0]).dtype))
                            for x in leaves]
        self.buffer_rows = check.integer("buffer_rows", buffer_rows, lo=1, hi=self.num_data)
        self.seed = check.integer("seed", seed, lo=0, hi=2**63 - 1)

    @property
    def weight(self) -> float:
        """N/B: the weight that makes sums over the buffer unbiased for sums over all rows."""
        return self.num_data / self.buffer_rows

    def rows(self, block: int) -> np.ndarray:
        """The sorted row indices of block ``block``'s buffer (B distinct rows, uniform)."""
        rng = np.random.default_rng([self.seed, block])
        return np.sort(rng.choice(self.num_data, self.buffer_rows, replace=False))

    def fetch(self, block: int) -> PyTree:
        """Block ``block``'s buffer on the host (floating data as float32)."""
        idx = self.rows(block)
        out = self._fetch(idx)
        for x in jax.tree.leaves(out):
            if np.shape(x)[:1] != (len(idx),):
                raise ValueError(f"the stream's source returned {np.shape(x)[:1]} rows for "
                                 f"{len(idx)} indices")
        return jax.tree.map(lambda a: np.asarray(a, np.float32)
                            if np.issubdtype(np.asarray(a).dtype, np.floating) else a, out)

    def __repr__(self) -> str:  # deterministic: part of a problem's checkpoint fingerprint
        return (f"Stream(num_rows={self.num_data}, buffer_rows={self.buffer_rows}, "
                f"seed={self.seed}, leaves={self._shapes})")
