"""Core speed benchmark: ``sgmc.sample`` against hand-written JAX baselines, in one process.

Problem: SGLD on Bayesian logistic regression (synthetic data from
``sgmc.models.synthetic_logistic_data``, Gaussian prior with std 1), minibatches of 50 indices
drawn uniformly with replacement, constant step size, every draw kept (thin=1, burn_in=0).

Variants timed (all in this process, every one warmed up first, repeats interleaved so that
machine drift hits all variants equally, best of the repeats reported):

* ``sgmc.sample`` — ``meta["sampling_time"]`` (excludes compilation) and the wall time of the
  whole call, measured on calls after a warm-up call with identical settings; the benchmark
  counts XLA compilations during the timed calls and reports them (must be 0).
* ``lax.scan`` replica — a hand-written ``jax.lax.scan`` of the same update with exactly
  sgmc's key derivation (``fold_in(run_key, t)``, split into batch/step keys, the step key
  split again for the noise), so its draws must equal sgmc's up to float rounding; the
  benchmark checks that.
* ``lax.scan`` minimal — the same update with one split per step (``fold_in``, ``split``,
  ``randint``, ``normal``): the baseline the ≤ 1.2 target refers to.
* Python loop — a Python ``for`` loop calling a jitted single step (the minimal update),
  appending every draw (a device array) to a list and blocking on the last one.

Both PRNG implementations (``threefry`` and ``rbg``) are timed for sgmc and the scans; the
Python loop uses threefry. A second table gives chain-steps per second of ``sgmc.sample`` for
several chain counts (threefry) next to a ``vmap``-ed replica scan.

Run ``python benchmarks/bench_core.py`` (full: N = 100,000, 20,000 steps; a few minutes on
2 cores) or ``python benchmarks/bench_core.py --quick`` (N = 10,000, 2,000 steps; smoke test).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

import sgmc
from sgmc.kernels.sampler import Sampler, SamplerState
from sgmc.lab.bench_common import (
    CompileCounter,
    Timing,
    best,
    device_variant,
    interleaved,
    median,
    sgmc_keys,
    sgmc_variant,
)
from sgmc.lab.bench_common import load_average as _load
from sgmc.lab.bench_common import loop_variant as _loop_variant
from sgmc.lab.bench_common import source_version as _source_version
from sgmc.lab.bench_common import verdict as _verdict

_IMPLS = {"threefry": "threefry2x32", "rbg": "rbg"}


@dataclass(frozen=True)
class Config:
    """Sizes of one benchmark run."""

    num_data: int
    dim: int
    batch_size: int
    step_size: float
    num_steps: int
    repeats: int
    loop_repeats: int
    chain_counts: tuple[int, ...]
    chain_steps: int
    chain_repeats: int
    prior_std: float = 1.0
    seed: int = 0


FULL = Config(num_data=100_000, dim=54, batch_size=50, step_size=1e-5, num_steps=20_000,
              repeats=7, loop_repeats=3, chain_counts=(1, 16, 64), chain_steps=5_000,
              chain_repeats=3)
QUICK = Config(num_data=10_000, dim=54, batch_size=50, step_size=1e-5, num_steps=2_000,
               repeats=3, loop_repeats=2, chain_counts=(1, 16), chain_steps=500,
               chain_repeats=2)


# --------------------------------------------------------------------------------------
# The hand-written baselines: one SGLD step on logistic regression.
# --------------------------------------------------------------------------------------


def _loglik(theta: jax.Array, x: jax.Array, y: jax.Array) -> jax.Array:
    """log Bernoulli(y; σ(xᵀθ)) of one datum (the same formula as sgmc's model)."""
    z = jnp.dot(x, theta)
    return y * z - jnp.logaddexp(0.0, z)


def _energy_grad(theta: jax.Array, xb: jax.Array, yb: jax.Array, num_data: int,
                 prior_var: float) -> jax.Array:
    """∇Û(θ) = θ/s² − (N/b) Σ_{i∈B} ∇ log p(y_i | x_i, θ)."""
    def batch_loglik(th: jax.Array) -> jax.Array:
        return jnp.sum(jax.vmap(_loglik, in_axes=(None, 0, 0))(th, xb, yb))

    return theta / prior_var - (num_data / xb.shape[0]) * jax.grad(batch_loglik)(theta)


def _sgld_step(theta: jax.Array, x: jax.Array, y: jax.Array, run_key: jax.Array, t: jax.Array,
               *, batch_size: int, step_size: float, prior_var: float,
               replica: bool) -> jax.Array:
    """One SGLD step. ``replica=True`` reproduces sgmc's key derivation exactly (two splits)."""
    num_data = x.shape[0]
    k_batch, k_step = jax.random.split(jax.random.fold_in(run_key, t))
    k_noise = jax.random.split(k_step)[1] if replica else k_step
    idx = jax.random.randint(k_batch, (batch_size,), 0, num_data, dtype=jnp.int32)
    grad = _energy_grad(theta, x[idx], y[idx], num_data, prior_var)
    noise = jax.random.normal(k_noise, theta.shape, theta.dtype)
    return theta - step_size * grad + jnp.sqrt(2.0 * step_size) * noise


def make_scan(cfg: Config, replica: bool) -> Callable[..., jax.Array]:
    """A jitted ``(x, y, theta0, run_key) -> draws (num_steps, d)`` running one chain."""
    step = partial(_sgld_step, batch_size=cfg.batch_size, step_size=cfg.step_size,
                   prior_var=cfg.prior_std ** 2, replica=replica)

    @partial(jax.jit, static_argnames="num_steps")
    def run(x: jax.Array, y: jax.Array, theta0: jax.Array, run_key: jax.Array,
            num_steps: int) -> jax.Array:
        # The step index rides in the carry: scanning over ``arange(num_steps)`` instead
        # measured ~10 % slower per step here.
        def body(carry: tuple[jax.Array, jax.Array],
                 _: None) -> tuple[tuple[jax.Array, jax.Array], jax.Array]:
            theta, t = carry
            theta = step(theta, x, y, run_key, t)
            return (theta, t + 1), theta

        init = (theta0, jnp.zeros((), jnp.int32))
        return jax.lax.scan(body, init, None, length=num_steps)[1]

    return run


def make_sampler_scan() -> Callable[..., jax.Array]:
    """A jitted ``lax.scan`` over sgmc's own ``Sampler.step`` (no driver): isolates the cost
    of the driver (blocks, vmap, counters, finiteness checks) from that of the step itself.
    """
    @partial(jax.jit, static_argnames="num_steps")
    def run(problem: sgmc.Posterior, sampler: Sampler, theta0: jax.Array, init_key: jax.Array,
            run_key: jax.Array, num_steps: int) -> jax.Array:
        def body(carry: tuple[SamplerState, jax.Array],
                 _: None) -> tuple[tuple[SamplerState, jax.Array], jax.Array]:
            state, t = carry
            state, _info = sampler.step(problem, state, jax.random.fold_in(run_key, t), t)
            return (state, t + 1), state.position

        init = (sampler.init(problem, theta0, init_key), jnp.zeros((), jnp.int32))
        return jax.lax.scan(body, init, None, length=num_steps)[1]

    return run


def make_vmapped_scan(cfg: Config) -> Callable[..., jax.Array]:
    """The replica scan ``vmap``-ed over chains: ``run_keys (C,)`` → draws (C, steps, d)."""
    single = make_scan(cfg, replica=True)

    @partial(jax.jit, static_argnames="num_steps")
    def run(x: jax.Array, y: jax.Array, theta0: jax.Array, run_keys: jax.Array,
            num_steps: int) -> jax.Array:
        return jax.vmap(lambda k: single(x, y, theta0, k, num_steps))(run_keys)

    return run


# --------------------------------------------------------------------------------------
# Checks (the timing harness lives in sgmc.lab.bench_common).
# --------------------------------------------------------------------------------------


def run_loop_once(step: Callable[..., jax.Array], x: jax.Array, y: jax.Array,
                  theta0: jax.Array, run_key: jax.Array, num_steps: int) -> np.ndarray:
    theta, draws = theta0, []
    for t in range(num_steps):
        theta = step(theta, x, y, run_key, t)
        draws.append(theta)
    return np.stack([np.asarray(d) for d in draws])


def max_abs_diff(a: np.ndarray | jax.Array, b: np.ndarray | jax.Array) -> float:
    return float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64))))


# --------------------------------------------------------------------------------------
# The benchmarks.
# --------------------------------------------------------------------------------------


def _fmt_row(name: str, best_s: float, med_s: float, steps: int, width: int = 46) -> str:
    return (f"  {name:<{width}} {best_s:9.3f} {med_s:9.3f} {steps / best_s:12,.0f} "
            f"{1e6 * best_s / steps:9.2f}")


def bench_single_chain(cfg: Config, post: sgmc.Posterior, x: jax.Array, y: jax.Array,
                       compiles: CompileCounter) -> None:
    sampler = sgmc.sgld(cfg.step_size, batch_size=cfg.batch_size)
    theta0 = jnp.zeros(cfg.dim, jnp.float32)
    scans = {"minimal": make_scan(cfg, replica=False), "replica": make_scan(cfg, replica=True)}
    sampler_scan = make_sampler_scan()
    n = cfg.num_steps
    variants: dict[str, Callable[[], Timing]] = {}
    recompiles: dict[str, int] = {}
    print("Warm-up and correctness checks")
    for prng in _IMPLS:
        init_keys, run_keys = sgmc_keys(cfg.seed, 1, prng)
        t0 = time.perf_counter()
        res = sgmc.sample(post, sampler, theta0, n, seed=cfg.seed, progress=False, prng=prng)
        print(f"  sgmc.sample {prng:<8} first call {time.perf_counter() - t0:6.2f} s "
              f"(compile_time {res.meta['compile_time']:.2f} s)")
        replica = jax.block_until_ready(scans["replica"](x, y, theta0, run_keys[0], n))
        own = jax.block_until_ready(
            sampler_scan(post, sampler, theta0, init_keys[0], run_keys[0], n))
        scale = float(np.max(np.abs(replica)))
        for what, draws in (("replica scan", replica), ("Sampler.step scan", own)):
            diff = max_abs_diff(res.samples[0], draws)
            print(f"  {what:<17} {prng:<8} vs sgmc draws: max |Δ| = {diff:.2e} "
                  f"(max |θ| = {scale:.2f}) -> "
                  f"{'same update' if diff < 1e-3 * scale else 'DIFFERENT'}")
        label = f"sgmc.sample {prng}"
        variants[label] = sgmc_variant(post, sampler, theta0, n, 1, prng, cfg.seed, compiles,
                                       recompiles, label)
        variants[label]()  # a second warm-up, through the timed path
        for kind, scan in scans.items():
            variants[f"lax.scan {prng} {kind}"] = device_variant(
                partial(scan, x, y, theta0, run_keys[0], n))
            jax.block_until_ready(scan(x, y, theta0, run_keys[0], n))
        variants[f"lax.scan {prng} Sampler.step"] = device_variant(
            partial(sampler_scan, post, sampler, theta0, init_keys[0], run_keys[0], n))

    step = jax.jit(partial(_sgld_step, batch_size=cfg.batch_size, step_size=cfg.step_size,
                           prior_var=cfg.prior_std ** 2, replica=False))
    run_key = sgmc_keys(cfg.seed, 1, "threefry")[1][0]
    check_steps = min(n, 200)
    loop_draws = run_loop_once(step, x, y, theta0, run_key, check_steps)
    scan_draws = scans["minimal"](x, y, theta0, run_key, check_steps)
    print(f"  python loop vs minimal scan, first {check_steps} draws: "
          f"max |Δ| = {max_abs_diff(loop_draws, scan_draws):.2e}")
    variants["python loop threefry"] = _loop_variant(step, theta0, (x, y, run_key), n)

    reps = {name: (cfg.loop_repeats if name.startswith("python") else cfg.repeats)
            for name in variants}
    print(f"Timing ({cfg.repeats} interleaved repeats; python loop {cfg.loop_repeats}), "
          f"load average before: {_load()} ...")
    t = interleaved(variants, reps)
    print(f"  load average after: {_load()}")
    for name, count in recompiles.items():
        print(f"  XLA compilations during the timed (post-warm-up) calls of {name}: {count}")

    print()
    print(f"[1] SGLD, logistic regression, N={cfg.num_data:,}, d={cfg.dim}, "
          f"batch {cfg.batch_size}, h={cfg.step_size:g}, {n:,} steps, 1 chain, thin=1")
    print(f"  {'variant':<46} {'best [s]':>9} {'median':>9} {'steps/s':>12} {'µs/step':>9}")
    for prng in _IMPLS:
        name = f"sgmc.sample {prng}"
        print(_fmt_row(f"{name} (sampling_time)", best(t, name, "sampling"),
                       median(t, name, "sampling"), n))
        print(_fmt_row(f"{name} (wall, whole call)", best(t, name), median(t, name), n))
        for kind in (*scans, "Sampler.step"):
            name = f"lax.scan {prng} {kind}"
            print(_fmt_row(name, best(t, name), median(t, name), n))
    name = "python loop threefry"
    print(_fmt_row(name, best(t, name), median(t, name), n))

    print("  Ratios (best / best); the targets refer to sgmc / minimal scan and loop / sgmc:")
    for prng in _IMPLS:
        s_samp = best(t, f"sgmc.sample {prng}", "sampling")
        s_wall = best(t, f"sgmc.sample {prng}")
        for kind in (*scans, "Sampler.step"):
            base = best(t, f"lax.scan {prng} {kind}")
            verdict = (f"   {_verdict(s_samp / base, 1.2, True)} / "
                       f"{_verdict(s_wall / base, 1.2, True)}") if kind == "minimal" else ""
            print(f"    sgmc / scan {kind:<13} {prng:<8}  sampling_time {s_samp / base:5.2f}  "
                  f"wall {s_wall / base:5.2f}{verdict}")
    loop = best(t, "python loop threefry")
    s_samp = best(t, "sgmc.sample threefry", "sampling")
    s_wall = best(t, "sgmc.sample threefry")
    print(f"    python loop / sgmc        threefry  sampling_time {loop / s_samp:5.2f}  "
          f"wall {loop / s_wall:5.2f}   {_verdict(loop / s_samp, 4, False)} / "
          f"{_verdict(loop / s_wall, 4, False)}")
    scan_tf, scan_rbg = best(t, "lax.scan threefry minimal"), best(t, "lax.scan rbg minimal")
    print(f"    python loop / scan minimal threefry {loop / scan_tf:5.2f}")
    s_rbg = best(t, "sgmc.sample rbg", "sampling")
    print(f"    threefry / rbg: sgmc sampling_time {s_samp / s_rbg:5.2f}   "
          f"scan minimal {scan_tf / scan_rbg:5.2f}")


def bench_chains(cfg: Config, post: sgmc.Posterior, x: jax.Array, y: jax.Array,
                 compiles: CompileCounter) -> None:
    sampler = sgmc.sgld(cfg.step_size, batch_size=cfg.batch_size)
    theta0 = jnp.zeros(cfg.dim, jnp.float32)
    n = cfg.chain_steps
    scan = make_vmapped_scan(cfg)
    variants: dict[str, Callable[[], Timing]] = {}
    recompiles: dict[str, int] = {}
    print()
    print("Warm-up (chains)")
    for c in cfg.chain_counts:
        res = sgmc.sample(post, sampler, theta0, n, num_chains=c, seed=cfg.seed,
                          progress=False)
        keys = sgmc_keys(cfg.seed, c, "threefry")[1]
        draws = jax.block_until_ready(scan(x, y, theta0, keys, n))
        print(f"  {c:3d} chains: compile_time {res.meta['compile_time']:.2f} s; vmapped "
              f"replica scan vs sgmc draws max |Δ| = {max_abs_diff(res.samples, draws):.2e}")
        label = f"sgmc {c}"
        variants[label] = sgmc_variant(post, sampler, theta0, n, c, "threefry", cfg.seed,
                                       compiles, recompiles, label)
        variants[label]()
        variants[f"scan {c}"] = device_variant(partial(scan, x, y, theta0, keys, n))
    print(f"Timing ({cfg.chain_repeats} interleaved repeats), load average before: {_load()} ...")
    t = interleaved(variants, cfg.chain_repeats)
    print(f"  load average after: {_load()}")
    for name, count in recompiles.items():
        print(f"  XLA compilations during the timed (post-warm-up) calls of {name}: {count}")

    print()
    print(f"[2] Chain scaling, sgmc.sample threefry, {n:,} steps per chain "
          "(chain-steps/s = chains × steps / best time)")
    print(f"  {'chains':>6} {'sgmc sampling':>14} {'sgmc wall':>12} {'vmap scan':>12} "
          f"{'sgmc/scan':>10} {'speed-up vs 1 chain':>20}")
    one = None
    for c in cfg.chain_counts:
        rate_s = c * n / best(t, f"sgmc {c}", "sampling")
        rate_w = c * n / best(t, f"sgmc {c}")
        rate_b = c * n / best(t, f"scan {c}")
        one = rate_s if one is None else one
        print(f"  {c:6d} {rate_s:14,.0f} {rate_w:12,.0f} {rate_b:12,.0f} "
              f"{rate_b / rate_s:10.2f} {rate_s / one:19.1f}×")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="reduced sizes (N=10,000, 2,000 steps) for a smoke test")
    parser.add_argument("--skip-chains", action="store_true", help="skip the chain table")
    args = parser.parse_args(argv)
    cfg = QUICK if args.quick else FULL
    compiles = CompileCounter()
    t_start = time.perf_counter()
    print(f"jax {jax.__version__}, backend {jax.default_backend()}, "
          f"devices {jax.devices()}, mode {'quick' if args.quick else 'full'}, "
          f"sgmc source {_source_version()}")
    x_np, y_np, _ = sgmc.models.synthetic_logistic_data(cfg.num_data, cfg.dim, seed=cfg.seed)
    post = sgmc.models.logistic_regression(x_np, y_np, prior_std=cfg.prior_std)
    x, y = post.data["x"], post.data["y"]  # the same device arrays sgmc uses
    bench_single_chain(cfg, post, x, y, compiles)
    if not args.skip_chains:
        bench_chains(cfg, post, x, y, compiles)
    print(f"\nTotal benchmark time {time.perf_counter() - t_start:.0f} s")


if __name__ == "__main__":
    main()
