"""The Gaussian-noise floor of an SG-MCMC step: nanoseconds per parameter for one N(0, I_d)
draw per step, by JAX PRNG implementation and parameter count (issue 22, item 3).

Every SG-MCMC step draws at least one standard normal per parameter; for a network with many
parameters that draw, not the gradient, can be most of an SGD step's time on a CPU. Timed, in
one process, each as one compiled ``lax.scan`` over S steps (best of the repeats, repeats
interleaved over variants so that machine drift hits all alike):

* ``per-step``: step t draws ``normal(fold_in(key, t), (d,))`` — what a step that derives its
  key from the step index does (sgmc's driver folds t into the run key);
* ``bulk K``: ``normal(fold_in(key, t), (K, d))`` once every K steps, row i used at step
  t + i — drawing many steps' noise at once (sgmc's record/replay draws up to 256 steps'
  randomness in one batched call).

for the implementations ``threefry2x32`` (JAX's default), ``rbg`` and ``unsafe_rbg``, and d
from 10 to 10⁶. Each step adds the draw to a running sum so nothing is dead code. The result
is the cost per parameter per step, in ns.

Run ``python benchmarks/bench_noise.py`` (a few minutes on 2 cores) or ``--quick``.
"""

from __future__ import annotations

import argparse
import time
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

IMPLS = ("threefry2x32", "rbg", "unsafe_rbg")


@partial(jax.jit, static_argnames=("d", "steps", "bulk"))
def _run(key, *, d: int, steps: int, bulk: int) -> jax.Array:
    def per_step(acc, t):
        return acc + jax.random.normal(jax.random.fold_in(key, t), (d,)), None

    def per_block(acc, t):
        z = jax.random.normal(jax.random.fold_in(key, t), (bulk, d))
        return jax.lax.fori_loop(0, bulk, lambda i, a: a + z[i], acc), None

    if bulk == 1:
        return jax.lax.scan(per_step, jnp.zeros(d), jnp.arange(steps))[0]
    return jax.lax.scan(per_block, jnp.zeros(d), jnp.arange(steps // bulk))[0]


def measure(ds, bulks, repeats: int, budget: float) -> list[dict]:
    """Rows of {impl, d, bulk, steps, ns_per_param}: best of ``repeats`` timed calls, each
    of about ``budget`` parameter-draws (steps = budget / d, a multiple of every bulk)."""
    variants = []
    for d in ds:
        steps = max(max(bulks), int(budget // d) // max(bulks) * max(bulks))
        for impl in IMPLS:
            key = jax.random.key(0, impl=impl)
            for bulk in bulks:
                fn = partial(_run, key, d=d, steps=steps, bulk=bulk)
                jax.block_until_ready(fn())            # compile and warm up
                variants.append(({"impl": impl, "d": d, "bulk": bulk, "steps": steps}, fn))
    best = [np.inf] * len(variants)
    for _ in range(repeats):
        for i, (_, fn) in enumerate(variants):
            t0 = time.perf_counter()
            jax.block_until_ready(fn())
            best[i] = min(best[i], time.perf_counter() - t0)
    return [dict(meta, ns_per_param=1e9 * b / (meta["steps"] * meta["d"]))
            for (meta, _), b in zip(variants, best, strict=True)]


def table(rows: list[dict], bulks) -> str:
    head = "| d | generator | " + " | ".join(
        "per-step" if b == 1 else f"bulk {b}" for b in bulks) + " |"
    lines = [head, "|---|---|" + "---|" * len(bulks)]
    by = {(r["d"], r["impl"], r["bulk"]): r["ns_per_param"] for r in rows}
    for d in sorted({r["d"] for r in rows}):
        for impl in IMPLS:
            cells = " | ".join(f"{by[(d, impl, b)]:.2f}" for b in bulks)
            lines.append(f"| {d:,} | {impl} | {cells} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    ds = (10, 1_000, 100_000) if args.quick else (10, 1_000, 100_000, 1_000_000)
    bulks = (1, 16, 256)
    rows = measure(ds, bulks, repeats=2 if args.quick else 5,
                   budget=2e6 if args.quick else 5e7)
    print(f"jax {jax.__version__}, {jax.devices()[0].platform}; ns per parameter per step "
          "(best of the repeats)")
    print(table(rows, bulks))


if __name__ == "__main__":
    main()
