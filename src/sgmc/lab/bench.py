"""Speed benchmarks: the code behind ``sgmc bench`` (and ``benchmarks/bench_core.py``).

Every number is measured in one process and reported next to a baseline timed in the same
process: each variant is compiled and run once first (warm-up), the repeats of the variants
being compared are interleaved (A B C … A B C …) so machine drift hits all of them alike,
every timing stops at ``block_until_ready`` (``sgmc.sample`` returns host arrays), and the
**best** repeat is reported, with ratios taken best ÷ best. Nothing here asserts a time.

Suites (``--only NAME``):

``blackjax``
    SGLD and SGHMC on Bayesian logistic regression (``sgmc.models.logistic_regression`` on
    ``synthetic_logistic_data``), one chain, every draw kept, against BlackJAX 1.x run
    (a) as its documentation shows — a Python loop over ``jax.jit(algorithm.step)`` — and
    (b) inside a hand-written ``lax.scan`` over the same step. Both BlackJAX variants draw
    the minibatch on the device inside the jitted function with sgmc's own key derivation,
    use the same model functions (``post.loglik``, ``post.logprior``) through
    ``blackjax.sgmcmc.gradients.grad_estimator``, and keep every draw. SGLD uses
    ``blackjax.sgld(...).step`` (its draws equal sgmc's: checked). SGHMC carries (θ, p)
    through BlackJAX's integrator ``blackjax.sgmcmc.diffusions.sghmc``: the top-level
    ``blackjax.sghmc`` redraws the momentum at every call, and with one inner step per call
    its gradient is dead code, so it would not be the same work (its documented default of
    10 inner steps per minibatch is timed for reference). Issue targets: sgmc ≥ 4× faster
    than (a), no slower than (b).
``torch``
    The same SGLD problem as a PyTorch eager loop (closed-form gradient), if torch imports.
``scaling``
    Time per step of ``sgmc.sample`` (SGLD) against N, d, batch size and number of chains,
    with the memory of each run: data, sampler state and draws (bytes), and the process's
    peak resident set size after the run.
``fullpass``
    The cost of the full data passes behind SVRG snapshots (in memory, and streamed from
    memory-mapped files by :class:`sgmc.Stream`), the SAGA table and control-variate swap
    energies (VR-reSGLD), in units of one SGLD step, and the amortised per-step cost of the
    samplers that use them.
``nn``
    A neural network sampled at the speed of SGD (:mod:`sgmc.lab.bench_nn`): SGLD, SGHMC,
    SVRG-HMC and EWSG on a Flax MLP and a small CNN against an optax SGD loop and SGD plus
    one Gaussian draw per step, the shares of SGHMC's step, XLA's cost analysis, and the
    peak RSS of runs of 1e4 and 1e5 steps. Needs Flax (``pip install 'sgmc[nn]'``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import sgmc
from sgmc.lab.bench_nn import bench_nn

__all__ = ["FULL", "QUICK", "SUITES", "BenchConfig", "CompileCounter", "best", "device_variant",
           "interleaved", "load_average", "loop_variant", "main", "median", "peak_rss_mib",
           "run", "sgmc_keys", "sgmc_variant", "source_version", "tree_nbytes", "verdict"]

Timing = dict[str, float]
Times = dict[str, dict[str, list[float]]]

SUITES = ("blackjax", "torch", "scaling", "fullpass", "nn")

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


# N = 1e5, d = 54, b = 50: covtype-sized (the cover-type data of the SVRG-HMC and EWSG papers).
FULL = BenchConfig(num_data=100_000, dim=54, batch_size=50, sgld_step=1e-5, sghmc_step=1e-4,
                   friction=100.0, num_steps=20_000, repeats=5, loop_repeats=3,
                   scaling_steps=5_000, scaling_n=(1_000, 10_000, 100_000, 1_000_000),
                   scaling_d=(10, 54, 200, 1_000), scaling_batch=(10, 50, 500, 2_000),
                   scaling_chains=(1, 4, 16, 64))
# Tiny: what tests/test_bench.py runs; the cost is almost all compilation.
QUICK = BenchConfig(num_data=2_000, dim=8, batch_size=20, sgld_step=1e-4, sghmc_step=1e-3,
                    friction=10.0, num_steps=200, repeats=2, loop_repeats=1,
                    scaling_steps=100, scaling_n=(500, 2_000), scaling_d=(8, 16),
                    scaling_batch=(20, 100), scaling_chains=(1, 4), cv_period=20,
                    nn_num_data=200, nn_batch_size=20, nn_steps=40, nn_cnn_num_data=200,
                    nn_cnn_steps=40, nn_hidden=8,
                    nn_channels=(2, 4), nn_rss_steps=(20, 200))


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


def _table(title: str, header: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """Print one aligned table: the first column left-aligned, the others right-aligned."""
    cells = [[str(h) for h in header]] + [[_cell(v) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    print(f"\n{title}")
    for k, row in enumerate(cells):
        line = "  " + "  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                                for i, (c, w) in enumerate(zip(row, widths, strict=True)))
        print(line.rstrip())
        if k == 0:
            print("  " + "  ".join("-" * w for w in widths))


def _cell(v: Any) -> str:
    if isinstance(v, float):
        if v != v:  # NaN: not measured
            return "—"
        return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.3g}" if abs(v) < 10 else f"{v:.1f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def _mib(nbytes: float) -> float:
    return nbytes / 2**20


def _problem(num_data: int, dim: int, cfg: BenchConfig) -> sgmc.Posterior:
    x, y, _ = sgmc.models.synthetic_logistic_data(num_data, dim, seed=cfg.seed)
    return sgmc.models.logistic_regression(x, y, prior_std=cfg.prior_std)


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

    post = _problem(cfg.num_data, cfg.dim, cfg)
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
    _table(f"[blackjax] Bayesian logistic regression, N={n:,}, d={cfg.dim}, batch {b}, "
           f"{steps:,} steps, 1 chain, every draw kept (best of {cfg.repeats}; loops "
           f"{cfg.loop_repeats})", ("variant", "best [s]", "median [s]", "steps/s", "µs/step"),
           rows)
    ratio_rows = []
    for name in algos:
        r = out[name]
        ratio_rows.append((name, r["loop_over_sgmc"], verdict(r["loop_over_sgmc"], 4, False),
                           r["sgmc_over_scan"], verdict(r["sgmc_over_scan"], 1, True),
                           r["sgmc_sampling_over_scan"]))
    _table("[blackjax] ratios (best ÷ best; sgmc = wall time of the whole sample call)",
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
    post = _problem(cfg.num_data, cfg.dim, cfg)
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
    _table(f"[torch] SGLD, N={n:,}, d={cfg.dim}, batch {b}, {steps:,} steps, torch "
           f"{torch.__version__} eager, {torch.get_num_threads()} threads",
           ("variant", "best [s]", "steps/s", "µs/step"),
           [("sgmc.sample (wall)", sg, steps / sg, 1e6 * sg / steps),
            ("PyTorch eager loop", tl, steps / tl, 1e6 * tl / steps)])
    print(f"  torch loop ÷ sgmc = {tl / sg:.2f}")
    return {"sgmc_wall": sg, "torch": tl, "torch_over_sgmc": tl / sg,
            "torch_version": torch.__version__}


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
                posts[(s["n"], s["d"])] = _problem(s["n"], s["d"], cfg)
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
            rows.append((v, per_step, per_step / first, c * steps / sec, _mib(m["data"]),
                         _mib(m["state"]), _mib(m["draws"]), m["rss"]))
        fixed = ", ".join(f"{a}={base[k]:,}" for a, (k, _) in axes.items() if k != key)
        _table(f"[scaling] time per step against {axis} ({fixed}; best of {cfg.repeats}, "
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
    post = _problem(cfg.num_data, cfg.dim, cfg)
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
    _table(f"[fullpass] one full data pass, in SGLD steps (one SGLD step = "
           f"{1e6 * step_s:.1f} µs; best of {cfg.repeats})",
           ("pass", "ms", "÷ SGLD step", "ns/datum"), rows)
    rows = []
    for name, sampler in samplers.items():
        per = best(t, name, "sampling") / steps
        state = jax.eval_shape(sampler.init, post, theta0, key)
        out["samplers"][name] = {"us_per_step": 1e6 * per, "over_sgld": per / step_s,
                                 "state_bytes": tree_nbytes(state)}
        rows.append((name, 1e6 * per, per / step_s, _mib(tree_nbytes(state))))
    dense_state = jax.eval_shape(dense.init, post, theta0, key)
    rows.append(("(SAGA-LD with a dense table: state only)", float("nan"), float("nan"),
                 _mib(tree_nbytes(dense_state))))
    _table(f"[fullpass] amortised cost per step over {steps:,} steps (sampling_time; full "
           "passes and initial passes included)",
           ("sampler", "µs/step", "÷ SGLD", "state MiB"), rows)
    folder.cleanup()
    return out


# --------------------------------------------------------------------------------------
# Entry points.
# --------------------------------------------------------------------------------------

_RUNNERS: dict[str, Callable[[BenchConfig], dict[str, Any]]] = {
    "blackjax": bench_blackjax, "torch": bench_torch, "scaling": bench_scaling,
    "fullpass": bench_fullpass, "nn": bench_nn}


def run(quick: bool = False, only: Sequence[str] | None = None,
        json_path: str | os.PathLike | None = None,
        config: BenchConfig | None = None) -> dict[str, Any]:
    """Run the benchmark suites, print their tables and return the numbers.

    Args:
        quick: the tiny configuration (``QUICK``) instead of ``FULL``.
        only: names of the suites to run, from :data:`SUITES`; default all.
        json_path: also write the numbers there as JSON.
        config: explicit sizes (overrides ``quick``).
    """
    names = list(SUITES) if not only else list(dict.fromkeys(only))
    bad = [s for s in names if s not in SUITES]
    if bad:
        raise ValueError(f"only must name suites from {', '.join(SUITES)}; got {bad}")
    cfg = config if config is not None else (QUICK if quick else FULL)
    if not isinstance(cfg, BenchConfig):
        raise TypeError(f"config must be a BenchConfig, got {type(cfg).__name__}")
    t0 = time.perf_counter()
    meta = {"jax": jax.__version__, "backend": jax.default_backend(),
            "devices": len(jax.devices()), "cpus": os.cpu_count(), "sgmc": source_version(),
            "mode": "quick" if cfg == QUICK else "full" if cfg == FULL else "custom",
            "load_start": load_average(), "config": asdict(cfg)}
    print(f"sgmc bench ({meta['mode']}): jax {meta['jax']} on {meta['backend']} "
          f"({meta['devices']} device(s), {meta['cpus']} CPUs), sgmc source {meta['sgmc']}, "
          f"load average {meta['load_start']}")
    results: dict[str, Any] = {"meta": meta}
    for name in names:
        results[name] = _RUNNERS[name](cfg)
    meta["load_end"] = load_average()
    meta["seconds"] = time.perf_counter() - t0
    print(f"\ndone in {meta['seconds']:.0f} s; load average at the end {meta['load_end']}")
    if json_path is not None:
        with open(json_path, "w") as fh:
            json.dump(results, fh, indent=1, default=float)
        print(f"numbers: {json_path}")
    return results


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``sgmc bench`` (shared by the CLI and ``python -m sgmc.lab.bench``)."""
    parser.add_argument("--quick", action="store_true",
                        help="tiny sizes (a smoke test, mostly compiling)")
    parser.add_argument("--only", nargs="+", choices=SUITES, metavar="NAME",
                        help=f"run only these suites: {', '.join(SUITES)}")
    parser.add_argument("--json", metavar="PATH", help="also write the numbers as JSON")


def main(argv: list[str] | None = None) -> int:
    """``python -m sgmc.lab.bench [--quick] [--only NAME ...] [--json PATH]``."""
    parser = argparse.ArgumentParser(prog="sgmc bench", description=__doc__.splitlines()[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    run(quick=args.quick, only=args.only, json_path=args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
