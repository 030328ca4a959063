"""The compiled programs of a run, and how a block's output reaches the host.

:func:`compile_programs` compiles the two block programs of :mod:`sgmc.run.loop` a run's
plan needs (ahead of time: ``compile_time`` holds all compilation, ``sampling_time`` none).
The compiled programs are remembered between calls (:mod:`sgmc.run.cache`, under the
arguments' structure, abstract values and placements and the static settings), so a call
that repeats one reuses the program JAX already dispatches from its C++ fast path — on an
H100 the first call of a new program object took ~2 ms of Python before it ran.
A block returns its draws as (chains, draws, ...) leaves, the layout of the run's arrays, so
the host takes them as they are (:func:`host_block`: no transpose, one copy into the sink).
"""

from __future__ import annotations

import time
from typing import Any

import jax
import numpy as np

from sgmc.run.cache import remember, signature
from sgmc.run.loop import run_block, run_steps
from sgmc.run.mesh import to_host
from sgmc.run.signals import ByIdentity

__all__ = ["compile_programs", "host_block", "select", "to_host_async"]

PyTree = Any


def compile_programs(run: Any, args: tuple, programs: dict) -> dict:
    """The compiled programs the rest of ``run.plan`` needs, reusing those in ``programs``:
    ``full`` (static length, ``run.draws_per_block`` draws) and ``partial`` (traced
    length, into a buffer of at least the plan's largest partial block)."""
    t_start = time.perf_counter()
    n, thin = run.draws_per_block, run.settings.thin
    static = {"predict": None if run.predict is None else ByIdentity(run.predict),
              "store": run.settings.store_draws, "stats": run.settings.diagnose}
    programs = dict(programs)
    key = _args_key(args)
    if any(b.full for b in run.plan) and programs.get("full_draws") != n:
        kw = dict(n_draws=n, thin=thin, unroll=run.settings.unroll, **static)
        programs["full"] = remember(
            "program", run.given[0], key and ("full", key, tuple(kw.items())),
            lambda: run_block.lower(*args, **kw).compile())
        programs["full_draws"] = n
    if not all(b.full for b in run.plan) and programs.get("partial_draws", 0) < n:
        kw = dict(max_draws=n, **static)
        programs["partial"] = remember(
            "program", run.given[0], key and ("partial", key, tuple(kw.items())),
            lambda: run_steps.lower(*args[:6], np.int32(1), np.int32(1), *args[6:],
                                    **kw).compile())
        programs["partial_draws"] = n
    run.compile_time += time.perf_counter() - t_start
    return programs


def _args_key(args: tuple) -> Any:
    """What a compiled block program is specific to: the arguments' structure, abstract
    values (:func:`sgmc.run.cache.signature`) and placements; None when not keyable."""
    sig = signature(args)
    return sig and (sig, tuple(getattr(x, "sharding", None) for x in jax.tree.leaves(args)))


def host_block(buf: dict, drop: int, n_draws: int) -> tuple[PyTree, dict]:
    """A block's kept draws on the host, draw axis second: (draws, statistics); with
    ``store_draws=False``, (no draw, the drift statistics alone)."""
    host = jax.tree.map(lambda b: to_host(b)[:, drop:n_draws], buf)
    info = {}
    if "position" in host:
        info["grad_evals"] = ((host["evals_hi"].astype(np.int64) << 32)
                              + host["evals_lo"].astype(np.int64))
        info.update(host["stats"])
    info.update(host.get("draw_stats", {}))
    return host.get("position", ()), info


def select(host: tuple[PyTree, dict], index: np.ndarray) -> tuple[PyTree, dict]:
    """A host block's draws (draw axis second) at ``index`` only."""
    samples, info = host
    return (jax.tree.map(lambda x: x[:, index], samples),
            {k: v[:, index] for k, v in info.items()})


#: Stage a block's draws in pinned host memory on an accelerator (see :func:`to_host_async`).
PINNED = True


def to_host_async(tree: PyTree) -> PyTree:
    """Start copying ``tree``'s leaves to the host, to overlap what the device runs next;
    returns what :func:`host_block` then reads (without waiting for more than the copy).

    On an accelerator the leaves are put in pinned (page-locked) host memory: one DMA at
    the link's speed, where the copy into pageable memory that ``np.asarray`` makes ran at
    about 1 GB/s on an H100. On a CPU the arrays are already in host memory."""
    out = []
    for x in jax.tree.leaves(tree):
        sharding = x.sharding
        if (PINNED and sharding.memory_kind == "device" and x.is_fully_addressable
                and next(iter(x.devices())).platform != "cpu"):  # (multi-host: gathered)
            out.append(jax.device_put(x, sharding.with_memory_kind("pinned_host")))
        else:
            x.copy_to_host_async()
            out.append(x)
    return jax.tree.unflatten(jax.tree.structure(tree), out)
