"""A per-datum likelihood (vmapped over the batch) against a network applied to the whole
batch at once: what sgmc's ``loglik(params, datum)`` costs for a small CNN.

The model is a small Flax linen CNN on MNIST-sized inputs (28×28×1, synthetic values, 10
classes): Conv 16 3×3 → ReLU → 2×2 average pool → Conv 32 3×3 → ReLU → 2×2 average pool →
Dense 10 (20,490 parameters). Timed, each jitted and run once first, every repeat ending
at ``block_until_ready``, medians over interleaved repeats:

1. the gradient of the minibatch log-likelihood (batch 100), as sgmc's samplers need it:
   ``grad(sum(vmap(per_datum_loglik)))`` against ``grad(sum(batched_loglik))``;
2. per-example gradients of the minibatch (what SAGA and EWSG need):
   ``vmap(grad(per_datum_loglik))``;
3. a full-data gradient pass (SVRG snapshots, control variates), chunks of 1,000 rows summed
   in a ``lax.map``, both ways;
4. ``sgmc.sample`` with SGLD (batch 100): time per step with ``sgmc.Posterior(loglik, ...)``
   against ``sgmc.Posterior(batched_loglik, ..., batched=True)`` (when this sgmc has it).

    python benchmarks/nn_batched_likelihood.py [--num-data 2000] [--repeats 20] [--steps 50]

Needs Flax (``pip install -e ".[nn]"``).
"""

from __future__ import annotations

import argparse
import inspect
import statistics
import sys
import time
from collections.abc import Callable

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

import sgmc


class CNN(nn.Module):
    """Two 3×3 convolutions (16, 32 channels) with 2×2 average pooling, then 10 logits."""

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        x = nn.avg_pool(nn.relu(nn.Conv(16, (3, 3))(x)), (2, 2), strides=(2, 2))
        x = nn.avg_pool(nn.relu(nn.Conv(32, (3, 3))(x)), (2, 2), strides=(2, 2))
        return nn.Dense(10)(x.reshape(*x.shape[:-3], -1))


MODEL = CNN()


def per_datum_loglik(params, datum) -> jax.Array:
    """log p(y | x, θ) of ONE datum: x (28, 28, 1), y () — sgmc's default contract."""
    logits = MODEL.apply(params, datum["x"][None])[0]
    return jax.nn.log_softmax(logits)[datum["y"]]


def batched_loglik(params, batch) -> jax.Array:
    """log p(y_i | x_i, θ) of every row of a batch: x (n, 28, 28, 1), y (n,) → (n,)."""
    logp = jax.nn.log_softmax(MODEL.apply(params, batch["x"]))
    return jnp.take_along_axis(logp, batch["y"][:, None], axis=1)[:, 0]


def logprior(params) -> jax.Array:
    return sum(-0.5 * jnp.sum(p**2) for p in jax.tree.leaves(params))


def minibatch_grads():
    """The two jitted minibatch gradients and the jitted per-example gradients."""
    vmapped = jax.jit(jax.grad(
        lambda p, b: jnp.sum(jax.vmap(per_datum_loglik, in_axes=(None, 0))(p, b))))
    batched = jax.jit(jax.grad(lambda p, b: jnp.sum(batched_loglik(p, b))))
    per_example = jax.jit(jax.vmap(jax.grad(per_datum_loglik), in_axes=(None, 0)))
    return vmapped, batched, per_example


def full_pass(chunk_grad: Callable, chunk: int) -> Callable:
    """A jitted Σ over chunks of ``chunk`` rows of ``chunk_grad(params, rows)``."""
    def run(params, data):
        chunks = jax.tree.map(lambda a: a.reshape(-1, chunk, *a.shape[1:]), data)
        grads = jax.lax.map(lambda rows: chunk_grad(params, rows), chunks)
        return jax.tree.map(lambda g: g.sum(axis=0), grads)
    return jax.jit(run)


def timed(fns: dict[str, Callable[[], object]], repeats: int) -> dict[str, float]:
    """Median seconds of each call (each run once first), repeats interleaved."""
    for fn in fns.values():
        jax.block_until_ready(fn())
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            jax.block_until_ready(fn())
            times[name].append(time.perf_counter() - t0)
    return {k: statistics.median(v) for k, v in times.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--num-data", type=int, default=2_000, help="N (a multiple of 1000)")
    ap.add_argument("--batch-size", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--steps", type=int, default=50, help="SGLD steps per timed sample call")
    ap.add_argument("--no-full-pass", action="store_true", help="skip the full-data pass")
    args = ap.parse_args(argv)

    rng = np.random.default_rng(0)
    n, b = args.num_data, args.batch_size
    data = {"x": rng.normal(size=(n, 28, 28, 1)).astype(np.float32),
            "y": rng.integers(0, 10, size=n).astype(np.int32)}
    params = MODEL.init(jax.random.key(0), data["x"][:1])
    size = sum(p.size for p in jax.tree.leaves(params))
    batch = jax.tree.map(lambda a: jnp.asarray(a[:b]), data)
    dev = jax.tree.map(jnp.asarray, data)
    print(f"CNN {size:,} parameters, inputs 28×28×1, batch {b}, N = {n:,}; "
          f"{jax.devices()[0].platform}, medians of {args.repeats} repeats")

    vmapped, batched, per_example = minibatch_grads()
    g1, g2 = vmapped(params, batch), batched(params, batch)
    err = max(float(jnp.max(jnp.abs(a - c))) for a, c in
              zip(jax.tree.leaves(g1), jax.tree.leaves(g2), strict=True))
    print(f"max |difference| of the two minibatch gradients: {err:.1e}")

    t = timed({"vmap": lambda: vmapped(params, batch), "batched": lambda: batched(params, batch),
               "per_example": lambda: per_example(params, batch)}, args.repeats)
    direct = t["batched"]
    print(f"minibatch gradient, grad(sum(vmap(per-datum))): {t['vmap'] * 1e3:8.2f} ms")
    print(f"minibatch gradient, grad(sum(batched apply)):   {t['batched'] * 1e3:8.2f} ms")
    print(f"  ratio per-datum / batched: {t['vmap'] / t['batched']:.2f}")
    print(f"per-example gradients, vmap(grad(per-datum)):   {t['per_example'] * 1e3:8.2f} ms "
          f"({t['per_example'] / t['batched']:.2f} × the batched minibatch gradient)")

    if not args.no_full_pass:
        chunk = 1000
        fp_vmap = full_pass(lambda p, rows: vmapped(p, rows), chunk)
        fp_batched = full_pass(lambda p, rows: batched(p, rows), chunk)
        t = timed({"vmap": lambda: fp_vmap(params, dev),
                   "batched": lambda: fp_batched(params, dev)}, max(3, args.repeats // 5))
        print(f"full-data gradient pass (chunks of {chunk}), per-datum: {t['vmap']:.3f} s, "
              f"batched: {t['batched']:.3f} s; ratio {t['vmap'] / t['batched']:.2f}")
        print(f"  a pass inside a compiled loop costs {t['batched'] / (n / b * direct):.1f} × "
              f"{n // b} separately jitted batch-{b} gradients")

    if "batched" not in inspect.signature(sgmc.Posterior).parameters:
        print("this sgmc has no Posterior(batched=True): sgmc.sample not timed")
        return 0
    posts = {"per-datum": sgmc.Posterior(per_datum_loglik, logprior, data),
             "batched=True": sgmc.Posterior(batched_loglik, logprior, data, batched=True)}
    sampler = sgmc.sgld(1e-5, batch_size=b)
    step_times = {}
    for name, post in posts.items():
        runs = [sgmc.sample(post, sampler, params, num_steps=args.steps, thin=args.steps,
                            seed=k) for k in range(3)]      # the first one compiles
        step_times[name] = statistics.median(r.meta["sampling_time"] for r in runs[1:])
        step_times[name] /= args.steps
        print(f"sgmc.sample, SGLD batch {b}, {name:<12}: {step_times[name] * 1e3:.2f} ms per "
              f"step (median of 2 runs of {args.steps} steps; "
              f"{step_times[name] / direct:.1f} × one jitted batched minibatch gradient)")
    print(f"  ratio per-datum / batched=True: "
          f"{step_times['per-datum'] / step_times['batched=True']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
