"""sgmc's step against SGD's on three Flax MLPs, one process, JSON lines (issue 35).

For each MLP (784-100-10, 79.5k parameters, batch 100, 2,000 steps; 784-1000-1000-10, 1.8M,
batch 1,000, 1,000 steps; 784-4096×3-10, 36.8M, batch 1,024, 400 steps): an optax
SGD-with-momentum ``lax.scan`` (SGD) and the same plus one N(0, I) draw per step (the
floor), then ``sgmc.sample`` of SGHMC keeping no, one and ten draws and SGLD keeping none
(``diagnose=False``; µs per step from ``meta["sampling_time"]``, best of 3; ``whole_us`` is
the whole call). On the smallest MLP it also checks that blocks of 1, 3 and 10 draws give
the same draws bitwise. Written for a GPU (about two minutes on an H100); runs anywhere.

    python benchmarks/gpu_steps.py [--sizes mlp80k,mlp1.8M,mlp37M]

To compare with another version of sgmc, run it again with that version's ``src`` first on
``PYTHONPATH`` (each process times its own SGD: compare ratios).
"""

from __future__ import annotations

import argparse
import json
import time

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax

import sgmc

SIZES = {"mlp80k": (100, 1, 100, 10_000, 2_000), "mlp1.8M": (1000, 2, 1000, 50_000, 1_000),
         "mlp37M": (4096, 3, 1024, 50_000, 400)}
T0 = time.perf_counter()


def emit(**row) -> None:
    print(json.dumps({**row, "t": round(time.perf_counter() - T0, 1)}), flush=True)


def setup(hidden: int, layers: int, batch: int, n: int, steps: int):
    rng = np.random.default_rng(0)
    X = rng.random((n, 784), dtype=np.float32)
    y = rng.integers(0, 10, n).astype(np.int32)
    Xj, yj = jnp.asarray(X), jnp.asarray(y)

    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x):
            for _ in range(layers):
                x = nn.relu(nn.Dense(hidden)(x))
            return nn.Dense(10)(x)

    model = MLP()
    params = model.init(jax.random.key(0), jnp.zeros((784,)))
    d = sum(leaf.size for leaf in jax.tree.leaves(params))

    def loglik(p, datum):
        return jax.nn.log_softmax(model.apply(p, datum[0]))[datum[1]]

    def logprior(p):
        return -0.5 * sum(jnp.sum(leaf ** 2) for leaf in jax.tree.leaves(p))

    post = sgmc.Posterior(loglik=loglik, logprior=logprior, data=(X, y))
    h = 1e-2 / n
    opt = optax.sgd(h, momentum=0.9)

    def loss(p, xb, tb):
        ll = jax.vmap(lambda x, t: loglik(p, (x, t)))(xb, tb)
        return -(n / batch) * jnp.sum(ll) - logprior(p)

    def scan(noise: bool):
        @jax.jit
        def run(key, p):
            def body(carry, k):
                p, o = carry
                k1, k2 = jax.random.split(k)
                idx = jax.random.randint(k1, (batch,), 0, n)
                u, o = opt.update(jax.grad(loss)(p, Xj[idx], yj[idx]), o, p)
                if noise:
                    leaves, tree = jax.tree.flatten(u)
                    z, off, noisy = jax.random.normal(k2, (d,)), 0, []
                    for leaf in leaves:
                        noisy.append(leaf + 1e-3 * z[off:off + leaf.size].reshape(leaf.shape))
                        off += leaf.size
                    u = jax.tree.unflatten(tree, noisy)
                return (optax.apply_updates(p, u), o), None

            return jax.lax.scan(body, (p, opt.init(p)), jax.random.split(key, steps))[0][0]

        return lambda: jax.block_until_ready(run(jax.random.key(0), params))

    return post, params, h, d, scan


def best_us(fn, steps: int, repeats: int = 3) -> float:
    fn()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times) / steps * 1e6


def sampler_run(post, params, h, batch, steps, thin, name="sghmc", store=True, **kw):
    smp = (sgmc.sghmc(step_size=h, friction=10.0, batch_size=batch) if name == "sghmc"
           else sgmc.sgld(step_size=h, batch_size=batch))
    out = {"inner": []}

    def run():
        res = sgmc.sample(post, smp, init=params, num_steps=steps, thin=thin, seed=0,
                          progress=False, store_draws=store, diagnose=False, **kw)
        jax.block_until_ready(res.samples)
        out["res"] = res
        out["inner"].append(res.meta["sampling_time"])

    return run, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default=",".join(SIZES))
    sizes = ap.parse_args().sizes.split(",")
    emit(device=str(jax.devices()[0]), jax=jax.__version__, sgmc=sgmc.__file__)
    for size in sizes:
        hidden, layers, batch, n, steps = SIZES[size]
        post, params, h, d, scan = setup(hidden, layers, batch, n, steps)
        sgd, floor = best_us(scan(False), steps), best_us(scan(True), steps)
        emit(size=size, d=d, steps=steps, sgd_us=round(sgd, 2), floor_us=round(floor, 2))
        rows = [("sghmc", "none", steps, False), ("sghmc", "one", steps, True),
                ("sghmc", "ten", steps // 10, True), ("sgld", "none", steps, False)]
        for name, draws, thin, store in rows:
            run, out = sampler_run(post, params, h, batch, steps, thin, name, store)
            whole = best_us(run, steps)
            us = min(out["inner"]) / steps * 1e6
            emit(size=size, sampler=name, draws=draws, us=round(us, 2),
                 whole_us=round(whole, 2), ratio_sgd=round(us / sgd, 3),
                 ratio_floor=round(us / floor, 3))
        if size == sizes[0]:  # the same draws for blocks of 10, 1 and 3 draws
            got = []
            for per_block in (10, 1, 3):
                run, out = sampler_run(post, params, h, batch, 200, 20,
                                       draws_per_block=per_block)
                run()
                got.append([np.asarray(x) for x in jax.tree.leaves(out["res"].samples)])
            emit(size=size, bitwise=[all(np.array_equal(a, b) for a, b in zip(got[0], g,
                                                                              strict=True))
                                     for g in got[1:]])
    emit(done=True)


if __name__ == "__main__":
    main()
