"""The ``nn`` suite of ``sgmc bench``: sampling a neural network at the speed of SGD.

SG-MCMC exists so that a Bayesian neural network costs what training it costs. This suite
times, in one process and on the same data, model and minibatches:

* **SGD** — an optax SGD-with-momentum loop written as one ``lax.scan`` (the minibatch drawn
  on the device every step): what training costs;
* **SGD + noise** — the same loop plus one N(0, I_d) draw of the parameters' size per step,
  added to the update: the least any SG-MCMC step can cost (the *floor*);
* sgmc's **SGLD**, **SGHMC**, **SVRG-HMC** (snapshot every epoch) and **EWSG** (SGHMC with
  the index chain, M = 1), one chain, ``thin`` = steps / 10 (ten draws kept), and SGHMC
  with every draw stored (``thin=1``, what storing d floats per step adds);
* for the MLP, the cost of the drift statistics every kept draw records
  (``sample(..., diagnose=True)``, the default: one minibatch energy per kept draw,
  :mod:`sgmc.run.stats`): SGHMC with ``diagnose=False`` at both thinnings; reported as a
  share of a step at the suite's ``thin`` and per kept draw (at ``thin=1``), and the
  end-of-run drift test (:func:`sgmc.stationarity.diagnose`) on the ``thin=1`` run's draws
  as a share of its sampling time.

on two Flax linen models of MNIST-shaped inputs (28×28×1, 10 classes, synthetic values):
an MLP 784-H-10 (H = 100: 79,510 parameters) and a small CNN (two 3×3 convolutions with
2×2 average pooling, then 10 logits; channels (16, 32): 20,490 parameters), batch 100; the
MLP on N = 10,000 rows for 2,000 steps, the CNN on N = 1,000 rows for 20 steps (on XLA:CPU a
convolution's gradient inside a compiled loop costs 10–25× the same gradient jitted alone,
jax-ml/jax#12868 — in the SGD loop as in sgmc — so a CNN step takes ~0.4 s here). Every model is
the user's own: ``loglik(params, datum)`` of one datum through ``model.apply``, and the SGD
loops minimise exactly sgmc's minibatch energy (N/b) Σ_B −loglik − logprior.

Reported per model: µs per step (best of the interleaved repeats; sgmc's
``meta["sampling_time"]``, host copies of the draws included, compilation not), the ratio to
SGD and to the floor, and for the variance-reduced estimators the ratio to their *budget*:
the floor plus one SGD step per extra minibatch gradient they count
(``meta["grad_evals_total"]``: SVRG 2b per step plus N per snapshot, EWSG (M + 1)·b). The
targets: ≤ 1.1 × the floor for SGLD and SGHMC, ≤ 1.1 × the budget for SVRG and EWSG.

Where the time goes: *shares* of SGHMC's step by subtraction (gradient ≈ the SGD step,
noise ≈ floor − SGD, sgmc's bookkeeping = SGHMC − floor, negative when sgmc's noise, drawn
for many steps at once, costs less than the floor's per-step draw), and XLA's own cost
analysis of one compiled step of each (flops, bytes accessed).

Sizes (:mod:`sgmc.lab.bench_nn_sizes`): SGD, the floor, and SGLD and SGHMC keeping no draw,
one, ten and every draw, on MLPs of 79.5k, 1.8M and 36.8M parameters and the CNN (at 400
steps; fewer steps on a CPU backend), with the target: every draw of the 1.8M-parameter
model stored ≤ 1.05 × one draw kept.

Memory: the peak resident set size of a fresh process that runs SGHMC on the MLP for each
number of steps in ``nn_rss_steps`` (1e4 and 1e5 in the full run), (a) keeping 100 draws
(thin = steps / 100) and (b) keeping none (``store_draws=False``) with ``predict=`` averaging
the test predictions: per-step memory is O(parameters + batch), so the peaks should not grow
with the number of steps.

Runs unchanged on an accelerator (every loop is on the default device); there the noise is
cheap and the target is ≤ 1.1 × SGD itself.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

import sgmc
from sgmc.lab.bench_common import (
    BenchConfig,
    best,
    device_variant,
    interleaved,
    peak_rss_mib,
    table,
)

__all__ = ["bench_nn", "build", "loops", "peak_rss"]

PyTree = Any

# The benchmark's model settings. Step sizes scale with 1/N so that the runs stay finite
# (the energy is a sum over N data) whatever the size; they do not change the cost.
_CLASSES = 10
_SHAPE = (28, 28, 1)


def _flax():
    try:
        import flax.linen as nn
        import optax
    except ImportError:
        return None
    return nn, optax


def build(model: str, num_data: int, hidden: int | tuple[int, ...] = 100,
          channels: tuple[int, int] = (16, 32),
          seed: int = 0) -> tuple[sgmc.Posterior, PyTree, Callable]:
    """The posterior of ``model`` (``"mlp"`` or ``"cnn"``) on ``num_data`` MNIST-shaped
    synthetic rows: (posterior, initial parameters (Flax's initialiser), the network's
    apply on a batch). ``hidden``: the MLP's hidden width, or widths (one per layer)."""
    nn = _flax()[0]
    widths = (hidden,) if isinstance(hidden, int) else tuple(hidden)

    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = x.reshape(*x.shape[:-3], -1)
            for width in widths:
                x = nn.relu(nn.Dense(width)(x))
            return nn.Dense(_CLASSES)(x)

    class CNN(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.avg_pool(nn.relu(nn.Conv(channels[0], (3, 3))(x)), (2, 2), strides=(2, 2))
            x = nn.avg_pool(nn.relu(nn.Conv(channels[1], (3, 3))(x)), (2, 2), strides=(2, 2))
            return nn.Dense(_CLASSES)(x.reshape(*x.shape[:-3], -1))

    net = {"mlp": MLP, "cnn": CNN}[model]()
    rng = np.random.default_rng(seed)
    data = {"x": rng.normal(size=(num_data, *_SHAPE)).astype(np.float32),
            "y": rng.integers(0, _CLASSES, size=num_data).astype(np.int32)}
    init = net.init(jax.random.key(seed), data["x"][:1])

    def loglik(params, datum):  # ONE datum, through the model's own apply
        return jax.nn.log_softmax(net.apply(params, datum["x"][None])[0])[datum["y"]]

    def logprior(params):  # N(0, 1) on every weight
        return sum(-0.5 * jnp.sum(p**2) for p in jax.tree.leaves(params))

    return sgmc.Posterior(loglik, logprior, data), init, net.apply


def _sgd_step(post: sgmc.Posterior, init: PyTree, batch_size: int, learning_rate: float,
              noise: bool) -> tuple[Any, Callable]:
    """(the optax optimiser, one step ``(params, opt_state, key) -> (params, opt_state)``):
    optax SGD with momentum 0.9 on sgmc's minibatch energy, the minibatch drawn on the
    device; with ``noise``, one N(0, I_d) draw (scaled by √(2·lr)) added to the update."""
    optax = _flax()[1]
    opt = optax.sgd(learning_rate, momentum=0.9)
    flat, unravel = ravel_pytree(init)
    n, scale = post.data_rows, float(np.sqrt(2.0 * learning_rate))

    def step(p, s, key):
        k_batch, k_noise = jax.random.split(key)
        idx = jax.random.randint(k_batch, (batch_size,), 0, n, dtype=jnp.int32)
        u, s = opt.update(jax.grad(post.estimate_energy)(p, idx), s, p)
        if noise:
            z = unravel(jax.random.normal(k_noise, flat.shape, flat.dtype))
            u = jax.tree.map(lambda a, b: a + scale * b, u, z)
        return optax.apply_updates(p, u), s

    return opt, step


def loops(post: sgmc.Posterior, init: PyTree, batch_size: int, num_steps: int,
          learning_rate: float, seed: int = 0,
          unroll: bool = False) -> dict[str, Callable[[], Any]]:
    """The two baselines, jitted, as zero-argument calls: ``"SGD"`` (:func:`_sgd_step` in
    one ``lax.scan``, step t's key ``fold_in(key, t)``) and ``"SGD + noise"`` (the same with
    the Gaussian draw). ``unroll``: the scan fully unrolled (no loop: XLA:CPU's convolution
    gradients are slow inside loops)."""
    def make(noise: bool):
        opt, step = _sgd_step(post, init, batch_size, learning_rate, noise)

        @jax.jit
        def run(params, key):
            def body(carry, t):
                return step(*carry, jax.random.fold_in(key, t)), None

            (p, _), _ = jax.lax.scan(body, (params, opt.init(params)),
                                     jnp.arange(num_steps, dtype=jnp.int32),
                                     unroll=num_steps if unroll else 1)
            return p

        key = jax.random.key(seed)
        return lambda: run(init, key)

    return {"SGD": make(False), "SGD + noise": make(True)}


def _samplers(num_data: int, batch_size: int) -> dict[str, tuple[Any, bool]]:
    """sgmc's samplers of the suite: name → (sampler, thinned)."""
    h_ld, h_hmc, fr = 0.01 / num_data, 1.0 / num_data, 10.0
    period = max(1, num_data // batch_size)
    sghmc = sgmc.sghmc(h_hmc, friction=fr, batch_size=batch_size)
    return {
        "SGLD": (sgmc.sgld(h_ld, batch_size=batch_size), True),
        "SGHMC": (sghmc, True),
        f"SVRG-HMC (snapshot every {period})": (sgmc.sghmc(
            h_hmc, friction=fr, batch_size=batch_size, estimator=sgmc.svrg(period)), True),
        "EWSG (SGHMC, M = 1)": (sgmc.sghmc(h_hmc, friction=fr, batch_size=batch_size,
                                           estimator=sgmc.ewsg()), True),
        "SGHMC, every draw stored": (sghmc, False),
    }


def _cost(compiled) -> dict[str, float]:
    """XLA's cost analysis of a compiled program: flops and bytes accessed."""
    c = compiled.cost_analysis()
    c = c[0] if isinstance(c, (list, tuple)) else c
    return {"flops": float(c.get("flops", float("nan"))),
            "bytes": float(c.get("bytes accessed", float("nan")))}


def step_costs(post: sgmc.Posterior, init: PyTree, batch_size: int, learning_rate: float,
               sampler: Any) -> dict[str, dict[str, float]]:
    """XLA's cost analysis of ONE step of SGD, SGD + noise (:func:`_sgd_step`) and
    ``sampler`` (``kernel.step`` on one chain): flops and bytes accessed per step."""
    key = jax.random.key(0)
    costs = {}
    for name, noise in (("SGD", False), ("SGD + noise", True)):
        opt, step = _sgd_step(post, init, batch_size, learning_rate, noise)
        costs[name] = _cost(jax.jit(step).lower(init, opt.init(init), key).compile())
    state = sampler.init(post, init, key)
    t = jnp.zeros((), jnp.int32)
    costs["SGHMC"] = _cost(jax.jit(lambda s, k, t: sampler.step(post, s, k, t))
                           .lower(state, key, t).compile())
    return costs


def peak_rss(model: str, num_data: int, num_steps: int, store: bool, *, hidden: int = 100,
             channels: tuple[int, int] = (16, 32), batch_size: int = 100) -> dict[str, float]:
    """Peak RSS (MiB) of a fresh process during ``sgmc.sample`` of SGHMC for ``num_steps``
    steps (compilation included): 100 draws kept (``store``), or none with ``predict=`` on
    100 test inputs. Also its RSS before the run (model, data, imports) and the run's time."""
    args = json.dumps({"model": model, "num_data": num_data, "num_steps": num_steps,
                       "store": store, "hidden": hidden, "channels": list(channels),
                       "batch_size": batch_size})
    out = subprocess.run([sys.executable, "-m", "sgmc.lab.bench_nn", args], capture_output=True,
                         text=True, check=False, timeout=3600)
    if out.returncode != 0:
        raise RuntimeError(f"the RSS run failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _vm_mib(field: str) -> float:
    """A ``/proc/self/status`` memory field (``VmHWM``: peak RSS, ``VmRSS``: current), MiB;
    NaN where there is no such file. Unlike ``ru_maxrss``, which a child inherits from its
    parent across fork and exec, these describe this process alone."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def _reset_peak() -> bool:
    """Reset this process's peak RSS (``VmHWM``) to its current RSS (Linux: ``clear_refs``)."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def _rss_child(spec: dict) -> dict[str, float]:
    """The body of :func:`peak_rss`'s process: the peak RSS of ``sgmc.sample`` alone (the
    peak is reset after the model and data are built, where Linux allows it)."""
    post, init, apply = build(spec["model"], spec["num_data"], spec["hidden"],
                              tuple(spec["channels"]))
    steps, b = spec["num_steps"], spec["batch_size"]
    smp = _samplers(spec["num_data"], b)["SGHMC"][0]
    x_test = jnp.asarray(post.data["x"][:100])
    before = _vm_mib("VmRSS")
    if not _reset_peak() or before != before:  # no /proc: the process's ru_maxrss
        before = peak_rss_mib()
    t0 = time.perf_counter()
    if spec["store"]:
        res = sgmc.sample(post, smp, init, steps, thin=max(1, steps // 100), progress=False)
        kept = res.num_draws
    else:
        res = sgmc.sample(post, smp, init, steps, thin=max(1, steps // 100), progress=False,
                          store_draws=False,
                          predict=lambda p: jax.nn.softmax(apply(p, x_test)))
        kept = int(res.predictive["count"])
    peak = _vm_mib("VmHWM")
    return {"peak_rss_mib": peak if peak == peak else peak_rss_mib(),
            "rss_before_run_mib": before, "draws": kept, "seconds": time.perf_counter() - t0}


def _timed_run(post, sampler, init, steps, thin, seed, evals, name,
               diagnose=True) -> Callable[[], dict]:
    """A timed ``sgmc.sample`` call: {"wall": its ``meta["sampling_time"]``}; records the
    per-example gradient evaluations per step in ``evals[name]`` (and in
    ``evals["unrolled"]`` whether sgmc unrolled its blocks)."""
    def once() -> dict[str, float]:
        with warnings.catch_warnings():  # synthetic data, short runs: not the point here
            warnings.simplefilter("ignore", sgmc.SamplingWarning)
            res = sgmc.sample(post, sampler, init, steps, thin=thin, seed=seed,
                              progress=False, diagnose=diagnose)
        evals[name] = float(np.mean(res.meta["grad_evals_total"])) / steps
        evals["unrolled"] = float(res.meta.get("unroll", False))
        return {"wall": float(res.meta["sampling_time"])}

    return once


def _statistics_cost(us: dict, times: dict, post, sampler, init, steps: int, seed: int,
                     thin: int) -> dict[str, float]:
    """The drift statistics' cost from the timed runs ``us`` (µs per step, best) and their
    interleaved ``times``: their share of a step at the suite's ``thin`` (mean ± SE of the
    repeats' paired ratios, each pair run back to back: a difference of two bests read 7 %
    where 6 pairs gave 0.2 ± 2.5 %), judged against the target by the two-SE rule; per kept
    draw at ``thin=1``; and the end-of-run drift test on a ``thin=1`` run's draws (best of
    3) against that run's sampling time."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sgmc.SamplingWarning)
        res = sgmc.sample(post, sampler, init, steps, seed=seed, progress=False)
    seconds = []
    for _ in range(3):
        t0 = time.perf_counter()
        sgmc.stationarity.diagnose(res)
        seconds.append(time.perf_counter() - t0)
    bare, stored = us["SGHMC, diagnose=False"], us["SGHMC, every draw stored, diagnose=False"]
    paired = (np.asarray(times["SGHMC"]["wall"])
              / np.asarray(times["SGHMC, diagnose=False"]["wall"]) - 1.0)
    share, se = paired.mean(), paired.std(ddof=1) / np.sqrt(paired.size)  # (1 repeat: NaN)
    verdict = ("MET" if share + 2 * se <= 0.03 else
               "MISSED" if share - 2 * se > 0.03 else "not resolved")
    out = {"share_of_step_at_thin": float(share), "share_of_step_at_thin_se": float(se),
           "per_draw_share_of_step": (us["SGHMC, every draw stored"] - stored) / bare,
           "diagnose_seconds": min(seconds),
           "diagnose_share_of_run": min(seconds) / float(res.meta["sampling_time"])}
    table(f"[nn] MLP: the drift statistics (one minibatch energy per kept draw, "
          f"sample(diagnose=True)) and the end-of-run drift test of {res.num_draws:,} draws",
          ("cost", "value", "target"),
          [(f"recording, share of a step at thin {thin} (± SE)",
            f"{100 * share:.1f} ± {100 * se:.1f} %", f"≤ 3 %: {verdict}"),
           ("recording, per kept draw (thin 1), share of a step",
            f"{100 * out['per_draw_share_of_step']:.0f} %", ""),
           ("drift test at the end, ms", f"{1e3 * out['diagnose_seconds']:.1f}", ""),
           ("drift test, share of the run's sampling time",
            f"{100 * out['diagnose_share_of_run']:.2f} %", "")])
    return out


def bench_nn(cfg: BenchConfig) -> dict[str, Any]:
    """The suite (module docstring) at the sizes of ``cfg``."""
    if _flax() is None:
        print("\n[nn] skipped: flax or optax is not importable (pip install 'sgmc[nn]')")
        return {"skipped": "flax or optax is not importable"}
    b = cfg.nn_batch_size
    out: dict[str, Any] = {"batch_size": b, "models": {}}
    sizes = {"mlp": (cfg.nn_num_data, cfg.nn_steps), "cnn": (cfg.nn_cnn_num_data,
                                                              cfg.nn_cnn_steps)}
    for model, (n, steps) in sizes.items():
        thin = max(1, steps // 10)
        post, init, _ = build(model, n, cfg.nn_hidden, cfg.nn_channels, cfg.seed)
        d = int(sum(np.size(p) for p in jax.tree.leaves(init)))
        print(f"\n[nn] {model.upper()}: {d:,} parameters, N = {n:,}, batch {b}, {steps:,} "
              f"steps; compiling ...")
        lr = 0.01 / n
        variants = {name: device_variant(fn) for name, fn in
                    loops(post, init, b, steps, lr, cfg.seed).items()}
        if model == "cnn":  # the loops without loops: sgmc unrolls its blocks here (unroll=None)
            variants.update({f"{name}, unrolled": device_variant(fn) for name, fn in
                             loops(post, init, b, steps, lr, cfg.seed, unroll=True).items()})
        evals: dict[str, float] = {}
        for name, (smp, thinned) in _samplers(n, b).items():
            variants[name] = _timed_run(post, smp, init, steps, thin if thinned else 1,
                                        cfg.seed, evals, name)
        if model == "mlp":  # the drift statistics' cost: the same runs without them
            for name in ("SGHMC", "SGHMC, every draw stored"):
                smp, thinned = _samplers(n, b)[name]
                variants[f"{name}, diagnose=False"] = _timed_run(
                    post, smp, init, steps, thin if thinned else 1, cfg.seed, evals,
                    f"{name}, diagnose=False", diagnose=False)
        for fn in variants.values():  # compile and run once
            fn()
        t = interleaved(variants, cfg.repeats)
        unrolled = bool(evals.pop("unrolled", 0.0))
        us = {k: 1e6 * best(t, k) / steps for k in variants}
        # The bar is the faster of the looped and the unrolled baselines.
        sgd = min(v for k, v in us.items() if k.startswith("SGD") and "noise" not in k)
        floor = min(v for k, v in us.items() if k.startswith("SGD + noise"))
        rows, res_model = [], {"params": d, "num_data": n, "num_steps": steps, "thin": thin,
                               "unrolled": unrolled, "us_per_step": us,
                               "grad_evals_per_step": evals}
        for name in variants:
            extra = evals.get(name, b) / b - 1.0  # minibatch gradients beyond one
            budget = floor + max(0.0, extra) * sgd
            target = ("≤ 1.1" if name in ("SGLD", "SGHMC") else
                      "≤ 1.1 (budget)" if extra > 0 else "")
            ratio = us[name] / (budget if extra > 0 else floor)
            rows.append((name, us[name], us[name] / sgd, us[name] / floor,
                         evals.get(name, float(b)) / b, budget, ratio,
                         (f"{target}: {'MET' if ratio <= 1.1 else 'MISSED'}"
                          if target else "")))
            res_model.setdefault("ratios", {})[name] = {
                "over_sgd": us[name] / sgd, "over_floor": us[name] / floor,
                "budget_us": budget, "over_budget": ratio}
        table(f"[nn] {model.upper()} ({d:,} parameters): µs per step, best of {cfg.repeats} "
              f"(sgmc: thin {thin}, sampling_time{', unrolled blocks' if unrolled else ''}; "
              "÷ SGD and ÷ floor: the faster loop of each)",
              ("loop", "µs/step", "÷ SGD", "÷ floor", "gradients/step", "budget µs",
               "÷ budget", "target"), rows)
        hmc = us["SGHMC"]
        shares = {"gradient (SGD step)": sgd / hmc, "noise (floor − SGD)": (floor - sgd) / hmc,
                  "sgmc bookkeeping (SGHMC − floor)": (hmc - floor) / hmc}
        res_model["shares"] = shares
        costs = step_costs(post, init, b, lr, _samplers(n, b)["SGHMC"][0])
        res_model["xla_cost_per_step"] = costs
        table(f"[nn] {model.upper()}: where SGHMC's step goes (shares by subtraction) and "
              "XLA's cost analysis of one step", ("part", "share of SGHMC step"),
              [(k, f"{100 * v:.0f} %") for k, v in shares.items()])
        ref = costs["SGD + noise"]["bytes"]
        table("", ("one step", "Mflop", "MB accessed", "÷ SGD + noise (bytes)"),
              [(k, v["flops"] / 1e6, v["bytes"] / 1e6, v["bytes"] / ref)
               for k, v in costs.items()])
        if model == "mlp":
            res_model["drift_statistics"] = _statistics_cost(
                us, t, post, _samplers(n, b)["SGHMC"][0], init, steps, cfg.seed, thin)
        out["models"][model] = res_model

    rows, out["rss"] = [], []
    for steps_rss in cfg.nn_rss_steps:
        for store in (True, False):
            r = peak_rss("mlp", cfg.nn_num_data, steps_rss, store, hidden=cfg.nn_hidden,
                         channels=cfg.nn_channels, batch_size=b)
            r.update(num_steps=steps_rss, store=store)
            out["rss"].append(r)
            rows.append((f"{steps_rss:,} steps, "
                         f"{'100 draws kept' if store else 'no draws, predict='}",
                         r["draws"], r["rss_before_run_mib"], r["peak_rss_mib"], r["seconds"]))
    table("[nn] peak resident memory of SGHMC on the MLP, one fresh process per run (MiB)",
          ("run", "draws", "RSS before sample", "peak RSS in sample", "seconds"), rows)
    return out


if __name__ == "__main__":
    print(json.dumps(_rss_child(json.loads(sys.argv[1]))))
