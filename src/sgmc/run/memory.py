"""What a run will hold in host memory, compared before compiling with what is available.

A run keeps its draws in host memory (unless they stream to disk, ``stream_to=``, or none
is stored, ``store_draws=False``): at 10⁵ draws of 10⁵ parameters and four chains, 160 GB.
Such a run used to fail late — a NumPy ``MemoryError`` after compiling — or not at all: the
process grew until the operating system killed it, losing every draw. :func:`check_run_memory`
counts the kept draws and their statistics, the block buffers and the chains' states
before anything is compiled, and refuses what cannot fit in :func:`available_memory` or
warns (:class:`sgmc.MemoryWarning`) above :data:`MEMORY_WARN` of it.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from sgmc.errors import MemoryWarning
from sgmc.model.oracle import Problem
from sgmc.run import cache
from sgmc.run.loop import drawn

__all__ = ["MEMORY_WARN", "available_memory", "check_memory", "check_run_memory"]

PyTree = Any


#: Kept draws and buffers above this fraction of the available memory give a
#: :class:`sgmc.MemoryWarning` (more than all of it: a ValueError).
MEMORY_WARN = 0.5


def _meminfo_available() -> int | None:
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _cgroup_available() -> int | None:
    """What a container's memory limit leaves (cgroup v2, else v1), or None."""
    for limit, usage in (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                         ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
                          "/sys/fs/cgroup/memory/memory.usage_in_bytes")):
        try:
            with open(limit) as fh:
                text = fh.read().strip()
            if text == "max":
                return None
            with open(usage) as fh:
                return max(int(text) - int(fh.read().strip()), 0)
        except (OSError, ValueError):
            continue
    return None


def available_memory() -> int | None:
    """Bytes of host memory a run may still take: the least of the system's available
    memory (``MemAvailable``) and what a container's cgroup limit leaves; None where
    neither can be read (the memory check is then skipped)."""
    known = [x for x in (_meminfo_available(), _cgroup_available()) if x is not None]
    return min(known) if known else None


def _gib(n: float) -> str:
    return f"{n / 2**30:.3g} GiB" if n >= 2**27 else f"{n / 2**20:.3g} MiB"


def _nbytes(tree: PyTree) -> int:
    return sum(int(np.prod(x.shape, dtype=np.int64)) * np.dtype(x.dtype).itemsize
               for x in jax.tree.leaves(tree) if not jnp.issubdtype(x.dtype, jax.dtypes.prng_key))


def check_run_memory(problem: Problem, kernel: Any, states: Any, settings: Any,
                     total: int) -> None:
    """:func:`check_memory` for a run of ``settings`` keeping ``total`` draws per chain, its
    chains' ``states`` (shapes suffice): each kept draw costs the draw (on the model's
    scale) and its statistics (gradient evaluations, the kernel's info, the drift
    statistics: 8 + 4 per entry, per chain); blocks hold ``draws_per_block`` of them on
    the device and twice on the host (the transfer, then the draw axis moved)."""
    chains = settings.num_chains
    draw = draw_bytes(problem, kernel, states)
    stats = 4 * 3 * chains if settings.diagnose else 0
    one = (draw + chains * (8 + 4 * len(kernel.info_spec)) + 8 + stats
           if settings.store_draws else stats)
    kept = 0 if settings.stream_to else total * one
    check_memory(kept, 3 * settings.draws_per_block * one, _nbytes(states))


def draw_bytes(problem: Problem, kernel: Any, states: Any) -> int:
    """Bytes of one draw of every chain (on the model's scale) for the chains' ``states``:
    traced (``eval_shape``, ~2 ms), so remembered per problem, kernel structure and shapes
    (:mod:`sgmc.run.cache`)."""
    return cache.remember("draw_bytes", problem, cache.signature((kernel, states)),
                          lambda: _nbytes(jax.eval_shape(jax.vmap(drawn(problem, kernel)),
                                                         states)))


def check_memory(draws: int, buffers: int, state: int, where: str = "memory") -> None:
    """Compare what the run will hold in host memory — ``draws`` bytes of kept draws and
    their statistics (0 when they stream to disk), ``buffers`` bytes of block buffers,
    ``state`` bytes of chain states — with :func:`available_memory`: a ValueError when it
    cannot fit, a :class:`sgmc.MemoryWarning` above :data:`MEMORY_WARN` of it, each naming
    the sizes and the ways to keep less (``thin``, ``store_draws=False`` with
    ``predict=``, ``stream_to=``)."""
    free = available_memory()
    need = draws + buffers + state
    if free is None or need <= MEMORY_WARN * free:
        return
    sizes = (f"the run's kept draws take {_gib(draws)}, its block buffers {_gib(buffers)} "
             f"and its chains' states {_gib(state)}: {_gib(need)} of the {_gib(free)} of "
             f"{where} available")
    ways = ("keep fewer draws in memory: a larger thin, store_draws=False with predict=fn "
            "(the posterior average of fn, no draw stored), or stream_to=FOLDER (the draws "
            "go to disk block by block)")
    if need > free:
        raise ValueError(f"the run cannot fit in memory: {sizes}; {ways}")
    warnings.warn(f"{sizes} ({need / free:.0%}): the operating system may kill the run "
                  f"before it ends, losing what it has not written; {ways}", MemoryWarning,
                  stacklevel=3)
