"""How much randomness a CPU should draw ahead: SGHMC's step for several chunk sizes, one process.

On a CPU, sgmc's loop draws the randomness of several steps in one batched call and replays
it (:mod:`sgmc.run.loop`), as many steps as fit in ``CHUNK_BYTES``. This script times
``sgmc.sample`` (SGHMC, ten draws kept, ``diagnose=False``, ``sampling_time``) on MLPs of the
nn suite (:func:`sgmc.lab.bench_nn.build`) with ``CHUNK_BYTES`` set to each of ``--chunks``
MiB (0 = live: every step draws its own), interleaved with the suite's SGD and SGD + noise
scans in the same process, and prints µs per step, ÷ the SGD + noise floor and ÷ the
default's row. Each chunk size compiles its own programs (a problem object of its own, so
that neither JAX's caches nor sgmc's mix them up). The draws are the same for every chunk
size (``tests/run/test_rng.py``): only the time differs.

    python benchmarks/bench_chunks.py [--sizes 80k,318k] [--chunks 8,4,2,1,0] [--repeats 5]
"""

from __future__ import annotations

import argparse
import os

import jax

import sgmc
from sgmc.lab.bench_common import best, device_variant, interleaved, median
from sgmc.lab.bench_nn import build, loops
from sgmc.run import loop

#: name: (hidden width, batch, N, steps)
SIZES = {"80k": (100, 100, 10_000, 1_000), "318k": (400, 100, 10_000, 400),
         "1.8M": ((1000, 1000), 1000, 50_000, 100)}


def variant(size: str, chunk_mib: float):
    """A timed run of SGHMC with ``CHUNK_BYTES`` = chunk_mib MiB, compiled:
    ({"wall": its ``sampling_time``}, the model's (posterior, parameters, batch, steps, N))."""
    hidden, batch, n, steps = SIZES[size]
    post, params, _ = build("mlp", n, hidden)
    sampler = sgmc.sghmc(step_size=1e-2 / n, friction=10.0, batch_size=batch)

    def run() -> dict[str, float]:
        res = sgmc.sample(post, sampler, init=params, num_steps=steps, thin=steps // 10,
                          seed=0, progress=False, diagnose=False)
        jax.block_until_ready(res.samples)
        return {"wall": res.meta["sampling_time"]}

    default = loop.CHUNK_BYTES
    loop.CHUNK_BYTES = int(chunk_mib * 2**20)
    jax.clear_caches()  # (the block programs' traces do not key on the chunk size)
    try:
        run()
    finally:
        loop.CHUNK_BYTES = default
    return run, (post, params, batch, steps, n)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="80k,318k")
    ap.add_argument("--chunks", default="8,4,2,1,0", help="MiB; 0: live")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    default_mib = loop.CHUNK_BYTES / 2**20
    print(f"jax {jax.__version__} on {jax.default_backend()}, {os.cpu_count()} CPUs; "
          f"default CHUNK_BYTES = {default_mib:g} MiB; µs per step, best (median) of "
          f"{args.repeats} interleaved")
    for size in args.sizes.split(","):
        chunks = [float(c) for c in args.chunks.split(",")]
        if default_mib not in chunks:
            chunks.append(default_mib)
        runs = {f"{c:g} MiB" if c else "live": variant(size, c) for c in chunks}
        post, params, batch, steps, n = next(iter(runs.values()))[1]
        d = sum(x.size for x in jax.tree.leaves(params))
        variants = {k: r for k, (r, _) in runs.items()}
        for name, fn in loops(post, params, batch, steps, 1e-2 / n).items():
            variants[name] = device_variant(fn)
            variants[name]()  # compile
        times = interleaved(variants, args.repeats)
        us = {k: 1e6 * best(times, k) / steps for k in variants}
        floor, ref = us["SGD + noise"], us[f"{default_mib:g} MiB"]
        print(f"\nMLP {size} ({d:,} parameters, {4 * d / 2**10:,.0f} KiB of noise a step), "
              f"batch {batch}, {steps} steps")
        print(f"  {'loop':<12} {'µs/step':>10} {'median':>10} {'÷ floor':>8} {'÷ default':>9}")
        for k, v in us.items():
            print(f"  {k:<12} {v:>10,.1f} {1e6 * median(times, k) / steps:>10,.1f} "
                  f"{v / floor:>8.3f} {v / ref:>9.3f}")


if __name__ == "__main__":
    main()
