"""What the ``sgmc bench`` suites share: their sizes (:class:`BenchConfig`, :data:`FULL`,
:data:`QUICK`), the timing harness (also used by ``benchmarks/bench_core.py``), the table
printer and the logistic-regression problem most suites time.

How timings are taken (interleaved repeats after a warm-up, best of them, every timing
stopped at ``block_until_ready``): the docstring of :mod:`sgmc.lab.bench`.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

import sgmc

__all__ = ["FULL", "QUICK", "BenchConfig", "CompileCounter", "Times", "Timing", "best", "cell",
           "device_variant", "interleaved", "load_average", "logistic_problem", "loop_variant",
           "median", "mib", "peak_rss_mib", "sgmc_keys", "sgmc_variant", "source_version",
           "table", "tree_nbytes", "verdict"]

Timing = dict[str, float]
Times = dict[str, dict[str, list[float]]]

_BACKEND_COMPILE = "/jax/core/compile/backend_compile_duration"
_IMPLS = {"threefry": "threefry2x32", "rbg": "rbg"}


@dataclass(frozen=True)
class BenchConfig:
    """Sizes of one ``sgmc bench`` run (``FULL`` or ``QUICK``)."""

    num_data: int          # N of the comparison problem (and the scaling baseline)
    dim: int               # d
    batch_size: int        # minibatch size b
    sgld_step: float       # h for SGLD
    sghmc_step: float      # h for SGHMC
    friction: float        # D for SGHMC (D·h < 1)
    num_steps: int         # steps of the BlackJAX / torch comparison runs
    repeats: int           # interleaved repeats of compiled variants
    loop_repeats: int      # repeats of Python loops (slow)
    scaling_steps: int     # steps of each scaling / full-pass run
    scaling_n: tuple[int, ...]
    scaling_d: tuple[int, ...]
    scaling_batch: tuple[int, ...]
    scaling_chains: tuple[int, ...]
    cv_period: int = 100   # control-variate energy refresh period (VR-reSGLD)
    prior_std: float = 1.0
    seed: int = 0
    # The nn suite (sgmc.lab.bench_nn): MNIST-shaped data, an MLP 784-nn_hidden-10 and a CNN
    # with nn_channels; peak RSS of SGHMC for each number of steps in nn_rss_steps. The CNN
    # runs fewer steps on fewer rows: on XLA:CPU a convolution's gradient inside a compiled
    # loop costs 10–25× the same gradient jitted alone (jax-ml/jax#12868), in SGD as in sgmc.
    nn_num_data: int = 10_000
    nn_batch_size: int = 100
    nn_steps: int = 2_000
    nn_cnn_num_data: int = 1_000
    nn_cnn_steps: int = 20
    nn_hidden: int = 100
    nn_channels: tuple[int, int] = (16, 32)
    nn_rss_steps: tuple[int, ...] = (10_000, 100_000)
    # The nn suite's sizes (sgmc.lab.bench_nn_sizes): (name, MLP hidden widths — () for the
    # CNN of nn_channels —, batch, N, steps, steps on a CPU backend), the samplers and rows
    # (draws kept) timed on each, and the size of the storage target (every draw stored ÷
    # one draw ≤ 1.05).
    nn_sizes: tuple[tuple[str, tuple[int, ...], int, int, int, int], ...] = (
        ("MLP 784-100-10", (100,), 100, 10_000, 2_000, 1_000),
        ("MLP 784-1000-1000-10", (1_000, 1_000), 1_000, 50_000, 1_000, 20),
        ("MLP 784-4096x3-10", (4_096,) * 3, 1_024, 50_000, 400, 4),
        ("CNN", (), 100, 1_000, 400, 20))
    nn_size_samplers: tuple[str, ...] = ("SGLD", "SGHMC")
    nn_size_rows: tuple[str, ...] = ("no draws", "one draw", "ten draws", "every draw")
    nn_store_target: str = "MLP 784-1000-1000-10"


# N = 1e5, d = 54, b = 50: covtype-sized (the cover-type data of the SVRG-HMC and EWSG papers).
FULL = BenchConfig(num_data=100_000, dim=54, batch_size=50, sgld_step=1e-5, sghmc_step=1e-4,
                   friction=100.0, num_steps=20_000, repeats=5, loop_repeats=3,
                   scaling_steps=5_000, scaling_n=(1_000, 10_000, 100_000, 1_000_000),
                   scaling_d=(10, 54, 200, 1_000), scaling_batch=(10, 50, 500, 2_000),
                   scaling_chains=(1, 4, 16, 64))
# Tiny: what tests/lab/test_bench.py runs; the cost is almost all compilation.
QUICK = BenchConfig(num_data=2_000, dim=8, batch_size=20, sgld_step=1e-4, sghmc_step=1e-3,
                    friction=10.0, num_steps=200, repeats=2, loop_repeats=1,
                    scaling_steps=100, scaling_n=(500, 2_000), scaling_d=(8, 16),
                    scaling_batch=(20, 100), scaling_chains=(1, 4), cv_period=20,
                    nn_num_data=200, nn_batch_size=20, nn_steps=40, nn_cnn_num_data=200,
                    nn_cnn_steps=40, nn_hidden=8,
                    nn_channels=(2, 4), nn_rss_steps=(20, 200),
                    nn_sizes=(("MLP 784-8-8-10", (8, 8), 20, 200, 10, 10),),
                    nn_size_samplers=("SGHMC",), nn_size_rows=("one draw", "every draw"),
                    nn_store_target="MLP 784-8-8-10")


# --------------------------------------------------------------------------------------
# Timing harness (shared with benchmarks/bench_core.py).
# --------------------------------------------------------------------------------------


class CompileCounter:
    """Counts XLA backend compilations (via ``jax.monitoring``) since the last ``reset``."""

    def __init__(self) -> None:
        self.count = 0
        jax.monitoring.register_event_duration_secs_listener(self._on_event)

    def _on_event(self, event: str, duration: float, **kwargs: str | int) -> None:
        if event == _BACKEND_COMPILE:
            self.count += 1

    def reset(self) -> None:
        self.count = 0


def interleaved(variants: dict[str, Callable[[], Timing]],
                repeats: dict[str, int] | int) -> Times:
    """Run every variant ``repeats`` times, round-robin; return all timings per metric."""
    reps = repeats if isinstance(repeats, dict) else dict.fromkeys(variants, repeats)
    out: Times = {name: {} for name in variants}
    for r in range(max(reps.values(), default=0)):
        for name, fn in variants.items():
            if r < reps[name]:
                for metric, value in fn().items():
                    out[name].setdefault(metric, []).append(value)
    return out


def best(times: Times, name: str, metric: str = "wall") -> float:
    """The fastest repeat of one variant (seconds)."""
    return min(times[name][metric])


def median(times: Times, name: str, metric: str = "wall") -> float:
    """The median repeat of one variant (seconds)."""
    return statistics.median(times[name][metric])


def sgmc_variant(post: sgmc.Posterior, sampler: Any, init: jax.Array, num_steps: int,
                 num_chains: int = 1, prng: str = "threefry", seed: int = 0,
                 compiles: CompileCounter | None = None,
                 recompiles: dict[str, int] | None = None,
                 label: str = "") -> Callable[[], Timing]:
    """A timed ``sgmc.sample`` call: ``sampling`` (``meta["sampling_time"]``: no compilation,
    host copies of the draws included) and ``wall`` (the whole call). Call it once untimed
    first (the warm-up); compilations during later calls are added to ``recompiles[label]``.
    """
    def run_once() -> Timing:
        if compiles is not None:
            compiles.reset()
        t0 = time.perf_counter()
        res = sgmc.sample(post, sampler, init, num_steps, num_chains=num_chains, seed=seed,
                          progress=False, prng=prng)
        wall = time.perf_counter() - t0
        if compiles is not None and recompiles is not None:
            recompiles[label] = recompiles.get(label, 0) + compiles.count
        return {"sampling": float(res.meta["sampling_time"]), "wall": wall}

    return run_once


def device_variant(fn: Callable[[], Any]) -> Callable[[], Timing]:
    """A timed call of a jitted function, blocking until its output is ready."""
    def run_once() -> Timing:
        t0 = time.perf_counter()
        jax.block_until_ready(fn())
        return {"wall": time.perf_counter() - t0}

    return run_once


def loop_variant(step: Callable[..., Any], state0: Any, args: tuple, num_steps: int,
                 draw: Callable[[Any], Any] = lambda s: s) -> Callable[[], Timing]:
    """A Python loop ``state = step(state, *args, t)`` over a jitted step, appending every
    draw (a device array) to a list and blocking on the last one (each step depends on the
    previous, so that waits for all)."""
    def run_once() -> Timing:
        state, draws = state0, []
        t0 = time.perf_counter()
        for t in range(num_steps):
            state = step(state, *args, t)
            draws.append(draw(state))
        jax.block_until_ready(draws[-1])
        return {"wall": time.perf_counter() - t0}

    return run_once


def sgmc_keys(seed: int, num_chains: int, prng: str = "threefry") -> tuple[jax.Array, jax.Array]:
    """The per-chain (init, run) keys sgmc derives from ``seed`` (see :mod:`sgmc.run`);
    step t of a chain uses ``fold_in(run_key, t)``."""
    chain_keys = jax.random.split(jax.random.key(seed, impl=_IMPLS[prng]), num_chains)
    pairs = jax.vmap(jax.random.split)(chain_keys)
    return pairs[:, 0], pairs[:, 1]


def source_version() -> str:
    """The git commit of the sgmc source being timed (``+dirty`` with local changes)."""
    root = os.path.dirname(os.path.abspath(sgmc.__file__))
    try:
        out = subprocess.run(["git", "describe", "--always", "--dirty=+dirty"], cwd=root,
                             capture_output=True, text=True, timeout=10, check=True)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() or "unknown"


def load_average() -> str:
    """The 1-, 5- and 15-minute load averages (other processes skew timings)."""
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def verdict(ratio: float, target: float, at_most: bool) -> str:
    """``"target ≥ 4: MET"`` and the like."""
    ok = ratio <= target if at_most else ratio >= target
    return f"target {'≤' if at_most else '≥'} {target:g}: {'MET' if ok else 'MISSED'}"


def peak_rss_mib() -> float:
    """Peak resident set size of this process so far, MiB (``ru_maxrss``; never decreases)."""
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / 2**20 if sys.platform == "darwin" else rss / 2**10  # bytes on macOS, KiB


def tree_nbytes(tree: Any) -> int:
    """Bytes of every array leaf of a pytree (arrays or ``ShapeDtypeStruct``s)."""
    return int(sum(np.prod(x.shape, dtype=np.int64) * np.dtype(x.dtype).itemsize
                   for x in jax.tree.leaves(tree)))


# --------------------------------------------------------------------------------------
# Output.
# --------------------------------------------------------------------------------------


def table(title: str, header: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """Print one aligned table: the first column left-aligned, the others right-aligned."""
    cells = [[str(h) for h in header]] + [[cell(v) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    print(f"\n{title}")
    for k, row in enumerate(cells):
        line = "  " + "  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                                for i, (c, w) in enumerate(zip(row, widths, strict=True)))
        print(line.rstrip())
        if k == 0:
            print("  " + "  ".join("-" * w for w in widths))


def cell(v: Any) -> str:
    if isinstance(v, float):
        if v != v:  # NaN: not measured
            return "—"
        return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.3g}" if abs(v) < 10 else f"{v:.1f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def mib(nbytes: float) -> float:
    return nbytes / 2**20


def logistic_problem(num_data: int, dim: int, cfg: BenchConfig) -> sgmc.Posterior:
    x, y, _ = sgmc.models.synthetic_logistic_data(num_data, dim, seed=cfg.seed)
    return sgmc.models.logistic_regression(x, y, prior_std=cfg.prior_std)
