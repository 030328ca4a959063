"""Copies of large host arrays split over threads, so a block's draws enter the sink at memory
bandwidth rather than one core's.

One core copies into fresh memory (pages faulted on first touch) at 3–5 GB/s on an H100's
host: a 147 MB draw of a 36.8M-parameter network took 30–44 ms there, about a block's whole
compute time, so the host fell behind the device. NumPy releases the GIL while it copies,
so pieces copied by threads add up (8 threads: 16–25 GB/s on the same host).
"""

from __future__ import annotations

import itertools
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

__all__ = ["MIN_PIECE_BYTES", "copy_into", "threads"]

#: No piece smaller than this goes to a thread of its own (a thread hand-off costs ~10 µs;
#: a 7.2 MB draw, copied after the last block with nothing left to overlap, is 7 pieces).
MIN_PIECE_BYTES = 2**20
_pool: tuple[int, ThreadPoolExecutor] | None = None  # (the process it belongs to, the pool)


def threads() -> int:
    """Threads a copy may use: half the host's cores (the rest feed the device, or are the
    device: on a CPU backend XLA computes the next block meanwhile), at most 8."""
    return min(8, max(1, (os.cpu_count() or 1) // 2))


def copy_into(dst: np.ndarray, src: np.ndarray) -> None:
    """``dst[...] = src`` (same shape), in pieces on :func:`threads` threads when it is large.

    Pieces are contiguous runs of ``dst``'s leading index, or of its flattened rows when
    ``dst`` and ``src`` are contiguous below the first axis (a block of one draw per chain)."""
    n = min(threads(), dst.nbytes // MIN_PIECE_BYTES)
    if n < 2:
        dst[...] = src
        return
    src = np.broadcast_to(src, dst.shape)
    pairs = [(dst, src)]
    if dst.ndim >= 2 and dst.shape[0] < n:  # few leading indices: split each one's rows
        rows = [(d.reshape(-1), s.reshape(-1)) for d, s in zip(dst, src, strict=True)
                if d.flags.c_contiguous and s.flags.c_contiguous]
        if len(rows) == len(dst):
            pairs = rows
    per = -(-n // len(pairs))
    pieces = []
    for d, s in pairs:
        cuts = np.linspace(0, len(d), min(per, len(d)) + 1).astype(int)
        pieces += [(d[a:b], s[a:b]) for a, b in itertools.pairwise(cuts) if b > a]
    pool = _threads()
    for f in [pool.submit(np.copyto, d, s) for d, s in pieces]:
        f.result()


def _threads() -> ThreadPoolExecutor:
    """The copy threads of this process (a forked child gets its own: its parent's threads
    do not exist in it)."""
    global _pool
    if _pool is None or _pool[0] != os.getpid():
        _pool = (os.getpid(), ThreadPoolExecutor(threads(), thread_name_prefix="sgmc-copy"))
    return _pool[1]
