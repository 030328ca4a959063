"""The ``nn`` suite's sizes: what keeping draws costs as the network grows.

For each size of :attr:`BenchConfig.nn_sizes <sgmc.lab.bench_common.BenchConfig>` — in the
full run Flax MLPs 784-100-10 (79,510 parameters; batch 100, N = 10,000, 2,000 steps),
784-1000-1000-10 (1,796,010; batch 1,000, N = 50,000, 1,000 steps) and 784-4096×3-10
(36,818,954; batch 1,024, N = 50,000, 400 steps), and the suite's CNN (20,490; batch 100,
N = 1,000, 400 steps), all from :func:`sgmc.lab.bench_nn.build` — this times, in one process
and on the default device:

* **SGD** and the **floor** (SGD + one Gaussian draw per step): the optax loops of
  :func:`sgmc.lab.bench_nn.loops` (and, where sgmc unrolls its blocks — a CNN on a CPU —
  the same loops unrolled; the faster of each is the bar);
* sgmc's **SGLD** and **SGHMC** (the suite's settings, one chain) keeping **no draw**
  (``store_draws=False``), **one** (``thin`` = steps), **ten** (``thin`` = steps / 10) and
  **every** draw (``thin=1``), all with ``diagnose=False``: the rows differ only in what is
  stored (the drift statistics' cost per kept draw is the MLP section's table);

as µs per step (best of the interleaved repeats; sgmc's ``meta["sampling_time"]``, host
copies of the draws included), ÷ SGD and ÷ the floor. The target, for a CPU: every draw of
the ~2M-parameter model stored costs ≤ 1.05 × keeping one (its thin 1 ÷ thin = steps).

On a CPU backend a size runs its CPU steps (the sizes' last field: the full run takes 1,000
steps of the 79.5k MLP, 20 of the 1.8M one (~0.2 s a step on 2 cores), 4 of the 36.8M one
(seconds a step) and 20 of the CNN, whose convolution gradients are slow inside XLA:CPU
loops, see :mod:`sgmc.lab.bench_nn`); a row of ten draws needs ≥ 20 steps and is left out
below that. The table prints the backend and the steps each row ran. A row keeps at most
:data:`MAX_DRAW_BYTES` of draws: an every-draw row that would keep more runs fewer steps
(the table says how many). A size whose slowest sgmc run took over a second (over 10 s)
the first time is timed ``min(repeats, 2)`` times (once) after that first run.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

import sgmc
from sgmc.lab.bench_common import BenchConfig, best, device_variant, interleaved, table
from sgmc.lab.bench_nn import _samplers, build, loops

__all__ = ["MAX_DRAW_BYTES", "bench_sizes", "size_plan"]

#: The most bytes of draws one timed run keeps (8 GiB): the 36.8M-parameter MLP's 400 draws
#: would take 59 GB.
MAX_DRAW_BYTES = 8 * 2**30
_UNROLL_MAX = 32  # sgmc unrolls a CNN's blocks on a CPU up to this thin (sgmc.sample)


def size_plan(steps: int, dim: int, itemsize: int = 4) -> dict[str, tuple[int, int, bool]]:
    """The sgmc rows of one size: label → (steps, thin, store_draws). Ten draws only with
    ≥ 20 steps; the every-draw row's steps cut to keep at most :data:`MAX_DRAW_BYTES`."""
    every = max(1, min(steps, MAX_DRAW_BYTES // (dim * itemsize)))
    plan = {"no draws": (steps, steps, False), "one draw": (steps, steps, True)}
    if steps >= 20:
        plan["ten draws"] = (steps, steps // 10, True)
    plan["every draw"] = (every, 1, True)
    return plan


def _timed(post, sampler, init, steps: int, thin: int, store: bool,
           seed: int) -> Callable[[], dict[str, float]]:
    """A timed ``sgmc.sample`` call (``diagnose=False``): {"wall": its sampling_time}."""
    def once() -> dict[str, float]:
        with warnings.catch_warnings():  # synthetic data, short runs: not the point here
            warnings.simplefilter("ignore", sgmc.SamplingWarning)
            res = sgmc.sample(post, sampler, init, steps, thin=thin, seed=seed,
                              progress=False, diagnose=False, store_draws=store)
        return {"wall": float(res.meta["sampling_time"])}

    return once


def _one_size(cfg: BenchConfig, name: str, hidden: tuple[int, ...], b: int, n: int,
              steps: int, backend: str) -> dict[str, Any]:
    model = "mlp" if hidden else "cnn"
    post, init, _ = build(model, n, hidden or cfg.nn_hidden, cfg.nn_channels, cfg.seed)
    d = int(sum(np.size(p) for p in jax.tree.leaves(init)))
    print(f"\n[nn] {name}: {d:,} parameters, N = {n:,}, batch {b}, {steps:,} steps on {backend}; "
          "compiling ...", flush=True)
    lr = 0.01 / n
    variants = {k: device_variant(fn) for k, fn in loops(post, init, b, steps, lr,
                                                         cfg.seed).items()}
    if model == "cnn" and jax.default_backend() == "cpu" and steps <= _UNROLL_MAX:
        variants.update({f"{k}, unrolled": device_variant(fn) for k, fn in
                         loops(post, init, b, steps, lr, cfg.seed, unroll=True).items()})
    plan = size_plan(steps, d)
    samplers = _samplers(n, b)
    runs: dict[str, tuple[int, int, bool]] = {}
    for smp_name in cfg.nn_size_samplers:
        for row, (k_steps, thin, store) in plan.items():
            if row not in cfg.nn_size_rows:
                continue
            runs[f"{smp_name}, {row}"] = (k_steps, thin, store)
            variants[f"{smp_name}, {row}"] = _timed(post, samplers[smp_name][0], init, k_steps,
                                                    thin, store, cfg.seed)
    first = {k: fn()["wall"] for k, fn in variants.items()}  # compile and run once
    slowest = max(first[k] for k in runs)  # sgmc's sampling_time: no compilation
    reps = cfg.repeats if slowest <= 1.0 else min(cfg.repeats, 2 if slowest <= 10.0 else 1)
    t = interleaved(variants, reps)
    us = {k: 1e6 * best(t, k) / runs.get(k, (steps,))[0] for k in variants}
    sgd = min(v for k, v in us.items() if k.startswith("SGD") and "noise" not in k)
    floor = min(v for k, v in us.items() if k.startswith("SGD + noise"))
    rows, res_rows = [], {}
    for k in variants:
        k_steps, thin, store = runs.get(k, (steps, 0, False))
        draws = k_steps // thin if store else 0
        rows.append((k, k_steps, draws if thin else "", us[k], us[k] / sgd, us[k] / floor))
        res_rows[k] = {"steps": k_steps, "thin": thin, "draws": draws, "us_per_step": us[k],
                       "over_sgd": us[k] / sgd, "over_floor": us[k] / floor}
    table(f"[nn] {name} ({d:,} parameters, batch {b}, N = {n:,}) on {backend}: µs per step, "
          f"best of {reps} (sgmc: diagnose=False, sampling_time; ÷ SGD and ÷ floor: the "
          "faster loop of each)",
          ("loop", "steps", "draws kept", "µs/step", "÷ SGD", "÷ floor"), rows)
    return {"params": d, "num_data": n, "batch_size": b, "num_steps": steps, "repeats": reps,
            "us_sgd": sgd, "us_floor": floor, "rows": res_rows}


def bench_sizes(cfg: BenchConfig) -> dict[str, Any]:
    """The sizes of ``cfg.nn_sizes`` (module docstring), then the storage target's table."""
    cpu = jax.default_backend() == "cpu"
    dev = jax.devices()[0]
    backend = f"{jax.default_backend()} ({dev.device_kind})"
    out: dict[str, Any] = {"backend": jax.default_backend(), "device": dev.device_kind,
                           "sizes": {}}
    for name, hidden, b, n, steps, cpu_steps in cfg.nn_sizes:
        out["sizes"][name] = _one_size(cfg, name, tuple(hidden), b, n,
                                       cpu_steps if cpu else steps, backend)
    target = cfg.nn_store_target
    if target in out["sizes"] and {"one draw", "every draw"} <= set(cfg.nn_size_rows):
        rows_t = out["sizes"][target]["rows"]
        rows, out["store_target"] = [], {}
        for smp_name in cfg.nn_size_samplers:
            every, one = rows_t[f"{smp_name}, every draw"], rows_t[f"{smp_name}, one draw"]
            ratio = every["us_per_step"] / one["us_per_step"]
            out["store_target"][smp_name] = {"every_over_one": ratio, "target": 1.05,
                                            "met": ratio <= 1.05}
            rows.append((f"{smp_name}: {every['draws']:,} draws ÷ 1", every["us_per_step"],
                         one["us_per_step"], ratio,
                         f"≤ 1.05{'' if cpu else ' (on a CPU)'}: "
                         f"{'MET' if ratio <= 1.05 else 'MISSED'}"))
        table(f"[nn] every draw of a 2M-parameter model stored ÷ one draw: {target} "
              f"({out['sizes'][target]['params']:,} parameters) on {backend}",
              ("sgmc", "every draw µs/step", "one draw µs/step", "÷", "target"), rows)
    return out
