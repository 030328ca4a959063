"""The ``blackjax`` and ``torch`` suites of ``sgmc bench``: sgmc against BlackJAX (a Python
loop over its jitted step, and a hand-written ``lax.scan`` over it) and against a PyTorch
eager loop, on Bayesian logistic regression. What is compared and why: the docstring of
:mod:`sgmc.lab.bench`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import sgmc
from sgmc.lab.bench_common import (
    BenchConfig,
    CompileCounter,
    Timing,
    best,
    device_variant,
    interleaved,
    load_average,
    logistic_problem,
    loop_variant,
    median,
    sgmc_keys,
    sgmc_variant,
    table,
    verdict,
)

__all__ = ["bench_blackjax", "bench_torch"]


# --------------------------------------------------------------------------------------
# BlackJAX.
# --------------------------------------------------------------------------------------


def _blackjax_step(move: Callable[..., Any], batch_size: int) -> Callable[..., Any]:
    """``(state, data, key_t) -> state``: one BlackJAX move ``move(key, state, minibatch)``
    on a minibatch drawn on the device with sgmc's key derivation (batch key, step key split
    once more for the noise), so the work per step is sgmc's and SGLD's draws equal sgmc's."""
    def one(state: Any, data: Any, key: jax.Array) -> Any:
        k_batch, k_step = jax.random.split(key)
        k_noise = jax.random.split(k_step)[1]
        n = jax.tree.leaves(data)[0].shape[0]
        idx = jax.random.randint(k_batch, (batch_size,), 0, n, dtype=jnp.int32)
        return move(k_noise, state, jax.tree.map(lambda a: a[idx], data))

    return one


def _loop_step(one: Callable[..., Any]) -> Callable[..., Any]:
    """The documented style: ``jax.jit`` of a single step, called from Python with t."""
    @jax.jit
    def step(state: Any, data: Any, run_key: jax.Array, t: int) -> Any:
        return one(state, data, jax.random.fold_in(run_key, t))

    return step


def _scan(one: Callable[..., Any], draw: Callable[[Any], jax.Array]) -> Callable[..., Any]:
    """A hand-written ``lax.scan`` over a step, the step index carried, every draw kept."""
    @partial(jax.jit, static_argnames="num_steps")
    def run(state: Any, data: Any, run_key: jax.Array, num_steps: int) -> jax.Array:
        def body(carry: tuple[Any, jax.Array], _: None) -> tuple[tuple[Any, jax.Array], Any]:
            st, t = carry
            st = one(st, data, jax.random.fold_in(run_key, t))
            return (st, t + 1), draw(st)

        return jax.lax.scan(body, (state, jnp.zeros((), jnp.int32)), None,
                            length=num_steps)[1]

    return run


def _first(state: tuple[jax.Array, jax.Array]) -> jax.Array:
    return state[0]


def _same(state: jax.Array) -> jax.Array:
    return state


def bench_blackjax(cfg: BenchConfig) -> dict[str, Any]:
    """sgmc.sample against BlackJAX (a) Python loop and (b) ``lax.scan``; see the module doc."""
    try:
        import blackjax
        from blackjax.sgmcmc.gradients import grad_estimator
    except ImportError as err:
        reason = f"blackjax is not importable ({err}); install it with pip install 'sgmc[bench]'"
        print(f"\n[blackjax] skipped: {reason}")
        return {"skipped": reason}

    post = logistic_problem(cfg.num_data, cfg.dim, cfg)
    data, n, b = post.data, cfg.num_data, cfg.batch_size
    theta0 = jnp.zeros(cfg.dim, jnp.float32)
    grad_fn = grad_estimator(post.logprior, post.loglik, n)
    run_key = sgmc_keys(cfg.seed, 1)[1][0]
    h_ld, h_hmc, fr = cfg.sgld_step, cfg.sghmc_step, cfg.friction
    sgld_bj = blackjax.sgld(grad_fn)
    # SGHMC: BlackJAX's top-level `blackjax.sghmc` keeps only the position, redraws the
    # momentum at every call and runs `num_integration_steps` inner steps on ONE minibatch;
    # the last inner step's gradient only feeds the discarded momentum, so with one inner
    # step the gradient is dead code (XLA removes it: a random walk, not SGHMC). For the same
    # work as sgmc's SGHMC we carry (θ, p) across steps through BlackJAX's own integrator,
    # `blackjax.sgmcmc.diffusions.sghmc(alpha=D)`: unit mass, the same h and D as sgmc's
    # Euler SGHMC, except that BlackJAX moves θ with the old momentum (same cost).
    integrator = blackjax.sgmcmc.diffusions.sghmc(alpha=fr)

    def sghmc_move(key: jax.Array, state: tuple[jax.Array, jax.Array],
                   minibatch: Any) -> tuple[jax.Array, jax.Array]:
        pos, mom = state
        return integrator(key, pos, mom, grad_fn(pos, minibatch), h_hmc)

    algos = {
        "SGLD": (sgmc.sgld(h_ld, batch_size=b), lambda k, pos, mb: sgld_bj.step(k, pos, mb, h_ld),
                 theta0, _same),
        "SGHMC": (sgmc.sghmc(h_hmc, friction=fr, batch_size=b), sghmc_move,
                  (theta0, jnp.zeros_like(theta0)), _first)}
    steps = cfg.num_steps
    compiles, recompiles = CompileCounter(), {}
    variants: dict[str, Callable[[], Timing]] = {}
    reps: dict[str, int] = {}
    checks: dict[str, float] = {}
    print(f"\n[blackjax] BlackJAX {blackjax.__version__}: warm-up and checks ...")
    for name, (sampler, move, state0, draw) in algos.items():
        one = _blackjax_step(move, b)
        loop, scan = _loop_step(one), _scan(one, draw)
        res = sgmc.sample(post, sampler, theta0, steps, seed=cfg.seed, progress=False)
        scan_draws = jax.block_until_ready(scan(state0, data, run_key, steps))
        jax.block_until_ready(loop(state0, data, run_key, 0))
        if name == "SGLD":  # same keys, same update: the draws must agree to rounding
            checks["sgld_max_abs_diff_vs_sgmc"] = float(np.max(np.abs(
                np.asarray(scan_draws) - res.samples[0])))
        for tag, draws in (("sgmc", res.samples[0]), ("blackjax scan", scan_draws)):
            checks[f"{name} {tag} finite"] = float(np.all(np.isfinite(np.asarray(draws))))
        variants[f"{name} sgmc"] = sgmc_variant(post, sampler, theta0, steps, seed=cfg.seed,
                                                compiles=compiles, recompiles=recompiles,
                                                label=name)
        variants[f"{name} sgmc"]()  # a second warm-up, through the timed path
        variants[f"{name} scan"] = device_variant(partial(scan, state0, data, run_key, steps))
        variants[f"{name} loop"] = loop_variant(loop, state0, (data, run_key), steps, draw)
        reps.update({f"{name} sgmc": cfg.repeats, f"{name} scan": cfg.repeats,
                     f"{name} loop": cfg.loop_repeats})
    # For reference, BlackJAX's documented SGHMC call: `blackjax.sghmc` with its default
    # 10 inner steps per call on one minibatch (9 gradients that matter, see above).
    k = 10
    sghmc10 = blackjax.sghmc(grad_fn, num_integration_steps=k, alpha=fr)
    loop10 = _loop_step(_blackjax_step(lambda key, pos, mb: sghmc10.step(key, pos, mb, h_hmc),
                                       b))
    jax.block_until_ready(loop10(theta0, data, run_key, 0))
    variants["SGHMC loop K=10"] = loop_variant(loop10, theta0, (data, run_key), steps // k)
    reps["SGHMC loop K=10"] = cfg.loop_repeats
    print(f"  SGLD: BlackJAX scan vs sgmc draws, max |Δ| = "
          f"{checks['sgld_max_abs_diff_vs_sgmc']:.2e} over {steps:,} steps (same keys)")
    load0 = load_average()
    t = interleaved(variants, reps)
    load1 = load_average()
    print(f"  load average before / after timing: {load0} / {load1}; XLA compilations in "
          f"timed sgmc calls: {recompiles}")

    rows, out = [], {"checks": checks, "load": [load0, load1], "recompiles": recompiles,
                     "blackjax_version": blackjax.__version__}
    for name in algos:
        s_wall, s_samp = best(t, f"{name} sgmc"), best(t, f"{name} sgmc", "sampling")
        loop_s, scan_s = best(t, f"{name} loop"), best(t, f"{name} scan")
        for label, var, metric in (("sgmc.sample (wall, whole call)", "sgmc", "wall"),
                                   ("sgmc.sample (sampling_time)", "sgmc", "sampling"),
                                   ("BlackJAX (a) Python loop over jit(step)", "loop", "wall"),
                                   ("BlackJAX (b) lax.scan over step", "scan", "wall")):
            sec = best(t, f"{name} {var}", metric)
            rows.append((f"{name} {label}", sec, median(t, f"{name} {var}", metric),
                         steps / sec, 1e6 * sec / steps))
        if name == "SGHMC":
            sec = best(t, "SGHMC loop K=10")
            rows.append((f"SGHMC blackjax.sghmc loop, K={k} per call (per step)", sec,
                         median(t, "SGHMC loop K=10"), steps / sec, 1e6 * sec / steps))
        out[name] = {"sgmc_wall": s_wall, "sgmc_sampling": s_samp, "loop": loop_s,
                     "scan": scan_s, "loop_over_sgmc": loop_s / s_wall,
                     "sgmc_over_scan": s_wall / scan_s,
                     "sgmc_sampling_over_scan": s_samp / scan_s}
    out["SGHMC"]["loop_k10"] = best(t, "SGHMC loop K=10")
    table(f"[blackjax] Bayesian logistic regression, N={n:,}, d={cfg.dim}, batch {b}, "
          f"{steps:,} steps, 1 chain, every draw kept (best of {cfg.repeats}; loops "
          f"{cfg.loop_repeats})", ("variant", "best [s]", "median [s]", "steps/s", "µs/step"),
          rows)
    ratio_rows = []
    for name in algos:
        r = out[name]
        ratio_rows.append((name, r["loop_over_sgmc"], verdict(r["loop_over_sgmc"], 4, False),
                           r["sgmc_over_scan"], verdict(r["sgmc_over_scan"], 1, True),
                           r["sgmc_sampling_over_scan"]))
    table("[blackjax] ratios (best ÷ best; sgmc = wall time of the whole sample call)",
          ("sampler", "loop ÷ sgmc", "(a)", "sgmc ÷ scan", "(b)", "sampling_time ÷ scan"),
          ratio_rows)
    out["SGHMC"]["loop_k10_over_sgmc"] = out["SGHMC"]["loop_k10"] / out["SGHMC"]["sgmc_wall"]
    print(f"  SGHMC via blackjax.sghmc, its default K={k} inner steps per call (one minibatch "
          f"per {k} steps, momentum redrawn per call; less work): loop ÷ sgmc = "
          f"{out['SGHMC']['loop_k10_over_sgmc']:.2f}")
    return out


# --------------------------------------------------------------------------------------
# PyTorch.
# --------------------------------------------------------------------------------------


def bench_torch(cfg: BenchConfig) -> dict[str, Any]:
    """SGLD on the same problem as a PyTorch eager loop (closed-form gradient) vs sgmc."""
    try:
        import torch
    except ImportError as err:
        reason = f"torch is not importable ({err})"
        print(f"\n[torch] skipped: {reason}")
        return {"skipped": reason}
    post = logistic_problem(cfg.num_data, cfg.dim, cfg)
    x = torch.from_numpy(np.array(post.data["x"]))  # writable copies, as torch wants
    y = torch.from_numpy(np.array(post.data["y"]))
    n, b, h, s2 = cfg.num_data, cfg.batch_size, cfg.sgld_step, cfg.prior_std ** 2
    gen = torch.Generator().manual_seed(cfg.seed)
    steps = cfg.num_steps

    def torch_loop() -> Timing:
        theta = torch.zeros(cfg.dim, dtype=torch.float32)
        draws = []
        t0 = time.perf_counter()
        with torch.no_grad():
            for _ in range(steps):
                idx = torch.randint(0, n, (b,), generator=gen)
                xb, yb = x[idx], y[idx]
                # ∇U = θ/s² − (N/b) Σ_B x_i (y_i − σ(x_iᵀθ))
                grad = theta / s2 - (n / b) * (xb.T @ (yb - torch.sigmoid(xb @ theta)))
                noise = torch.randn(cfg.dim, generator=gen)
                theta = theta - h * grad + (2.0 * h) ** 0.5 * noise
                draws.append(theta)
        return {"wall": time.perf_counter() - t0}

    sampler = sgmc.sgld(h, batch_size=b)
    theta0 = jnp.zeros(cfg.dim, jnp.float32)
    variants = {"sgmc": sgmc_variant(post, sampler, theta0, steps, seed=cfg.seed),
                "torch": torch_loop}
    for fn in variants.values():
        fn()  # warm-up
    t = interleaved(variants, {"sgmc": cfg.repeats, "torch": cfg.loop_repeats})
    sg, tl = best(t, "sgmc"), best(t, "torch")
    table(f"[torch] SGLD, N={n:,}, d={cfg.dim}, batch {b}, {steps:,} steps, torch "
          f"{torch.__version__} eager, {torch.get_num_threads()} threads",
          ("variant", "best [s]", "steps/s", "µs/step"),
          [("sgmc.sample (wall)", sg, steps / sg, 1e6 * sg / steps),
           ("PyTorch eager loop", tl, steps / tl, 1e6 * tl / steps)])
    print(f"  torch loop ÷ sgmc = {tl / sg:.2f}")
    return {"sgmc_wall": sg, "torch": tl, "torch_over_sgmc": tl / sg,
            "torch_version": torch.__version__}
