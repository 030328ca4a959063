"""The ``scaling`` and ``fullpass`` suites of ``sgmc bench``: SGLD's time per step and
memory against N, d, batch size and chains; and the full data passes behind SVRG snapshots,
the SAGA table and control-variate swap energies, in units of one SGLD step. Details: the
docstring of :mod:`sgmc.lab.bench`.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import sgmc
from sgmc.lab.bench_common import (
    BenchConfig,
    Timing,
    best,
    device_variant,
    interleaved,
    logistic_problem,
    mib,
    peak_rss_mib,
    sgmc_variant,
    table,
    tree_nbytes,
)

__all__ = ["bench_fullpass", "bench_scaling"]


# --------------------------------------------------------------------------------------
# Scaling and memory.
# --------------------------------------------------------------------------------------


def bench_scaling(cfg: BenchConfig) -> dict[str, Any]:
    """Time per step of SGLD against N, d, batch size and chains; memory of each run."""
    base = {"n": cfg.num_data, "d": cfg.dim, "b": cfg.batch_size, "c": 1}
    axes = {"N": ("n", cfg.scaling_n), "d": ("d", cfg.scaling_d),
            "batch": ("b", cfg.scaling_batch), "chains": ("c", cfg.scaling_chains)}
    steps = cfg.scaling_steps
    posts: dict[tuple[int, int], sgmc.Posterior] = {}
    out: dict[str, Any] = {}
    print(f"\n[scaling] SGLD, {steps:,} steps per run; compiling one program per setting ...")
    for axis, (key, values) in axes.items():
        runs, mem = {}, {}
        for v in sorted(values):
            s = {**base, key: v}
            if (s["n"], s["d"]) not in posts:
                posts[(s["n"], s["d"])] = logistic_problem(s["n"], s["d"], cfg)
            post = posts[(s["n"], s["d"])]
            b = min(s["b"], s["n"])
            # h·N·λ is what SGLD's stability depends on: keep it at the baseline's value.
            sampler = sgmc.sgld(cfg.sgld_step * cfg.num_data / s["n"], batch_size=b)
            theta0 = jnp.zeros(s["d"], jnp.float32)
            fn = sgmc_variant(post, sampler, theta0, steps, num_chains=s["c"], seed=cfg.seed)
            res = sgmc.sample(post, sampler, theta0, steps, num_chains=s["c"], seed=cfg.seed,
                              progress=False)
            state = jax.eval_shape(sampler.init, post, theta0, jax.random.key(0))
            mem[v] = {"data": tree_nbytes(post.data), "state": s["c"] * tree_nbytes(state),
                      "draws": tree_nbytes(res.samples), "rss": peak_rss_mib()}
            runs[v] = fn
        t = interleaved(runs, cfg.repeats)
        rows, res_axis = [], {}
        first = None
        for v in sorted(values):
            sec = best(t, v, "sampling")
            c = base["c"] if key != "c" else v
            per_step = 1e6 * sec / steps
            first = per_step if first is None else first
            m = mem[v]
            res_axis[str(v)] = {"us_per_step": per_step, "chain_steps_per_s": c * steps / sec,
                                "data_bytes": m["data"], "state_bytes": m["state"],
                                "draws_bytes": m["draws"], "peak_rss_mib": m["rss"]}
            rows.append((v, per_step, per_step / first, c * steps / sec, mib(m["data"]),
                         mib(m["state"]), mib(m["draws"]), m["rss"]))
        fixed = ", ".join(f"{a}={base[k]:,}" for a, (k, _) in axes.items() if k != key)
        table(f"[scaling] time per step against {axis} ({fixed}; best of {cfg.repeats}, "
              "sampling_time)",
              (axis, "µs/step", "× first", "chain-steps/s", "data MiB", "state MiB",
               "draws MiB", "peak RSS MiB"), rows)
        out[axis] = res_axis
    print("  state = sampler state of all chains; peak RSS = the process's peak so far "
          "(ru_maxrss, never decreases), read after each setting's first run.")
    return out


# --------------------------------------------------------------------------------------
# Full passes: SVRG, SAGA, control-variate energies.
# --------------------------------------------------------------------------------------


def bench_fullpass(cfg: BenchConfig) -> dict[str, Any]:
    """Full-pass costs in units of one SGLD step, and the amortised per-step cost."""
    post = logistic_problem(cfg.num_data, cfg.dim, cfg)
    n, b, steps, h = cfg.num_data, cfg.batch_size, cfg.scaling_steps, cfg.sgld_step
    theta0 = jnp.zeros(cfg.dim, jnp.float32)
    key = jax.random.key(cfg.seed)
    sgld = sgmc.sgld(h, batch_size=b)
    saga = sgmc.sgld(h, batch_size=b, estimator=sgmc.saga())
    dense = sgmc.sgld(h, batch_size=b, estimator=sgmc.saga(lightweight=False))
    period = max(1, n // b)
    samplers = {
        "SGLD": sgld,
        f"SVRG-LD (snapshot every N/b = {period:,})": sgmc.sgld(
            h, batch_size=b, estimator=sgmc.svrg(period)),
        "SAGA-LD (lightweight table)": saga,
        "reSGLD, 2 replicas, minibatch energy": sgmc.replica_exchange(sgld, [1.0, 2.0]),
        f"VR-reSGLD, 2 replicas, cv_energy (period {cfg.cv_period})": sgmc.replica_exchange(
            sgld, [1.0, 2.0], energy=sgmc.cv_energy(cfg.cv_period)),
    }
    grad_pass = jax.jit(lambda p, th: p.full_data_sum(p.chunk_grad_sum, th))
    # The same data as .npy files read through memory maps (sgmc.Stream): the pass reads
    # every row from the file (here from the page cache), pass_rows at a time.
    folder = tempfile.TemporaryDirectory(prefix="sgmc-bench-")
    for k, v in post.data.items():
        np.save(os.path.join(folder.name, f"{k}.npy"), np.asarray(v))
    stream = sgmc.Stream({k: np.load(os.path.join(folder.name, f"{k}.npy"), mmap_mode="r")
                          for k in post.data}, buffer_rows=max(1, n // 10))
    streamed = sgmc.Posterior(post.loglik, post.logprior, stream)
    passes = {
        "full gradient pass (SVRG snapshot)": (grad_pass, post),
        f"  the same, streamed from .npy memory maps ({stream.pass_rows:,} rows a read)": (
            grad_pass, streamed),
        "full energy pass (cv_energy anchor)": (jax.jit(
            lambda p, th: p.full_data_sum(p.chunk_energy_sum, th)), post),
        "SAGA init, lightweight table": (jax.jit(lambda p, th: saga.init(p, th, key)), post),
        "SAGA init, dense table": (jax.jit(lambda p, th: dense.init(p, th, key)), post),
    }
    print(f"\n[fullpass] N={n:,}, d={cfg.dim}, batch {b}: warm-up ...")
    variants: dict[str, Callable[[], Timing]] = {}
    for name, (fn, problem) in passes.items():
        jax.block_until_ready(fn(problem, theta0))
        variants[name] = device_variant(partial(fn, problem, theta0))
    for name, sampler in samplers.items():
        variants[name] = sgmc_variant(post, sampler, theta0, steps, seed=cfg.seed)
        variants[name]()
    t = interleaved(variants, cfg.repeats)
    step_s = best(t, "SGLD", "sampling") / steps
    rows, out = [], {"sgld_us_per_step": 1e6 * step_s, "passes": {}, "samplers": {}}
    for name in passes:
        sec = best(t, name)
        out["passes"][name] = {"ms": 1e3 * sec, "sgld_steps": sec / step_s}
        rows.append((name, 1e3 * sec, sec / step_s, 1e9 * sec / n))
    table(f"[fullpass] one full data pass, in SGLD steps (one SGLD step = "
          f"{1e6 * step_s:.1f} µs; best of {cfg.repeats})",
          ("pass", "ms", "÷ SGLD step", "ns/datum"), rows)
    rows = []
    for name, sampler in samplers.items():
        per = best(t, name, "sampling") / steps
        state = jax.eval_shape(sampler.init, post, theta0, key)
        out["samplers"][name] = {"us_per_step": 1e6 * per, "over_sgld": per / step_s,
                                 "state_bytes": tree_nbytes(state)}
        rows.append((name, 1e6 * per, per / step_s, mib(tree_nbytes(state))))
    dense_state = jax.eval_shape(dense.init, post, theta0, key)
    rows.append(("(SAGA-LD with a dense table: state only)", float("nan"), float("nan"),
                 mib(tree_nbytes(dense_state))))
    table(f"[fullpass] amortised cost per step over {steps:,} steps (sampling_time; full "
          "passes and initial passes included)",
          ("sampler", "µs/step", "÷ SGLD", "state MiB"), rows)
    folder.cleanup()
    return out
