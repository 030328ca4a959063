"""sgmc's step against SGD's on three Flax MLPs and a CNN, one process, JSON lines (issue 35).

For each MLP of the nn suite (:func:`sgmc.lab.bench_nn.build`; 784-100-10, 79.5k
parameters, batch 100, 2,000 steps; 784-1000-1000-10, 1.8M, batch 1,000, 1,000 steps;
784-4096×3-10, 36.8M, batch 1,024, 400 steps) and its CNN (20.5k, batch 100, 400 steps):
its optax SGD-with-momentum ``lax.scan`` (SGD) and the same plus one N(0, I) draw per step
(the floor; :func:`sgmc.lab.bench_nn.loops`),
then ``sgmc.sample`` of SGHMC keeping no, one and ten draws (and every draw, where they
take at most 1 GiB: the 79.5k MLP and the CNN) and SGLD keeping none
(``diagnose=False``; µs per step from ``meta["sampling_time"]``, best of 3 interleaved;
``whole_us`` is the whole call). On the first MLP it also checks that blocks of 1, 3 and
10 draws give the same draws bitwise. ``sgmc bench --only nn`` times the same sizes (and
every draw kept, the CNN) in its tables; this script is the short form a GPU session can
afford (about three minutes on an H100) and says what the whole call costs.

    python benchmarks/gpu_steps.py [--sizes mlp80k,mlp1.8M,mlp37M,cnn]

To compare with another version of sgmc, run it again with that version's ``src`` first on
``PYTHONPATH`` (each process times its own SGD: compare ratios).
"""

from __future__ import annotations

import argparse
import json
import time

import jax
import numpy as np

import sgmc
from sgmc.lab.bench_common import best, device_variant, interleaved
from sgmc.lab.bench_nn import build, loops

#: name: (model, hidden widths, batch, N, steps)
SIZES = {"mlp80k": ("mlp", (100,), 100, 10_000, 2_000),
         "mlp1.8M": ("mlp", (1000, 1000), 1000, 50_000, 1_000),
         "mlp37M": ("mlp", (4096,) * 3, 1024, 50_000, 400),
         "cnn": ("cnn", 100, 100, 1_000, 400)}
#: Sizes whose every draw is kept in a row of its own: at most this many bytes of draws.
EVERY_BYTES = 2**30
T0 = time.perf_counter()


def emit(**row) -> None:
    print(json.dumps({**row, "t": round(time.perf_counter() - T0, 1)}), flush=True)


def sampler_run(post, params, h, batch, steps, thin, name="sghmc", store=True, **kw):
    """A timed ``sgmc.sample`` call (bench_common's Timing: ``sampling``, ``wall``); the last
    Result in ``out["res"]``."""
    smp = (sgmc.sghmc(step_size=h, friction=10.0, batch_size=batch) if name == "sghmc"
           else sgmc.sgld(step_size=h, batch_size=batch))
    out = {}

    def run():
        t0 = time.perf_counter()
        res = sgmc.sample(post, smp, init=params, num_steps=steps, thin=thin, seed=0,
                          progress=False, store_draws=store, diagnose=False, **kw)
        jax.block_until_ready(res.samples)
        out["res"] = res
        return {"sampling": res.meta["sampling_time"], "wall": time.perf_counter() - t0}

    return run, out


def time_size(size: str, first: bool) -> None:
    """The rows of one size (and, for the first, the bitwise check)."""
    model, hidden, batch, n, steps = SIZES[size]
    post, params, _ = build(model, n, hidden)
    d = sum(leaf.size for leaf in jax.tree.leaves(params))
    rows = [("sghmc", "none", 1, False), ("sghmc", "one", 1, True),
            ("sghmc", "ten", 10, True), ("sgld", "none", 1, False)]
    if 4 * d * steps <= EVERY_BYTES:
        rows.append(("sghmc", "every", steps, True))
    h = 1e-2 / n
    variants = {k: device_variant(f) for k, f in loops(post, params, batch, steps, h).items()}
    for name, draws, kept, store in rows:
        variants[name, draws] = sampler_run(post, params, h, batch, steps, steps // kept,
                                            name, store)[0]
    for fn in variants.values():  # compile and warm up
        fn()
    times = interleaved(variants, 3)
    sgd, floor = (best(times, k) / steps * 1e6 for k in ("SGD", "SGD + noise"))
    emit(size=size, d=d, steps=steps, sgd_us=round(sgd, 2), floor_us=round(floor, 2))
    for name, draws, _, _ in rows:
        us = best(times, (name, draws), "sampling") / steps * 1e6
        emit(size=size, sampler=name, draws=draws, us=round(us, 2),
             whole_us=round(best(times, (name, draws)) / steps * 1e6, 2),
             ratio_sgd=round(us / sgd, 3), ratio_floor=round(us / floor, 3))
    if first:  # the same draws for blocks of 10, 1 and 3 draws
        got = []
        for per_block in (10, 1, 3):
            run, out = sampler_run(post, params, h, batch, 200, 20,
                                   draws_per_block=per_block)
            run()
            got.append([np.asarray(x) for x in jax.tree.leaves(out["res"].samples)])
        emit(size=size, bitwise=[all(np.array_equal(a, b) for a, b in zip(got[0], g,
                                                                          strict=True))
                                 for g in got[1:]])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default=",".join(SIZES))
    sizes = ap.parse_args().sizes.split(",")
    emit(device=str(jax.devices()[0]), jax=jax.__version__, sgmc=sgmc.__file__)
    for size in sizes:
        try:
            time_size(size, size == sizes[0])
        except Exception as err:  # (one size failing does not lose the others)
            emit(size=size, error=repr(err)[:400])
    emit(done=True)


if __name__ == "__main__":
    main()
