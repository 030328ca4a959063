"""What sgmc's compiled step adds to SGD's, counted in the optimised HLO (issue 35, item 1).

Compiles, on whatever backend JAX runs, an optax SGD-with-momentum `lax.scan` plus one
N(0, I) draw per step (the floor: SGD + noise) and an sgmc SGHMC block on the same Flax MLP
and minibatch energy, dumps both optimised HLO modules (``--xla_dump_to``), and counts the
instructions of each loop body: fusions, copies, custom calls, and the *parameter-sized*
ones (output ≥ a quarter of the largest weight), listed with their JAX source. Timings
depend on the machine; these counts do not, so a CPU run is a proxy for a GPU's.

    python benchmarks/hlo_counts.py                  # 784-1000-1000-10 MLP, batch 1000
    python benchmarks/hlo_counts.py --hidden 100 --layers 1 --batch 100
    python benchmarks/hlo_counts.py --keep hlo/     # also keep the two modules' text
"""

from __future__ import annotations

import argparse
import collections
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

BYTES = {"f32": 4, "s32": 4, "u32": 4, "f64": 8, "s64": 8, "u64": 8, "pred": 1, "u8": 1,
         "bf16": 2, "f16": 2}
HEADER = re.compile(r"^(ENTRY )?%?([\w.\-]+) .*\{\s*$")
INSTR = re.compile(r"^(?:ROOT )?%?[\w.\-]+ = (\([^=]*?\)|\S+) ([\w\-]+)\(")


def _compile(which: str, hidden: int, layers: int, batch: int, steps: int) -> None:
    """Child process: build and run one program so that XLA dumps it."""
    import flax.linen as nn
    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax

    import sgmc

    n = 2 * batch
    rng = np.random.default_rng(0)
    X = rng.random((n, 784), dtype=np.float32)
    y = rng.integers(0, 10, n).astype(np.int32)

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

    h = 1e-2 / n
    if which == "sgmc":
        post = sgmc.Posterior(loglik=loglik, logprior=logprior, data=(X, y))
        res = sgmc.sample(post, sgmc.sghmc(h, friction=10.0, batch_size=batch), params,
                          num_steps=steps, thin=steps // 2, seed=0, progress=False,
                          diagnose=False)
        jax.block_until_ready(res.samples)
        return
    opt = optax.sgd(h, momentum=0.9)
    Xj, yj = jnp.asarray(X), jnp.asarray(y)

    def loss(p, idx):
        ll = jax.vmap(lambda x, t: loglik(p, (x, t)))(Xj[idx], yj[idx])
        return -(n / batch) * jnp.sum(ll) - logprior(p)

    @jax.jit
    def sgd_floor(key, p):
        def body(carry, k):
            p, o = carry
            k1, k2 = jax.random.split(k)
            u, o = opt.update(jax.grad(loss)(p, jax.random.randint(k1, (batch,), 0, n)), o, p)
            z = jax.random.normal(k2, (d,))
            leaves, tree = jax.tree.flatten(u)
            offsets = np.cumsum([0] + [leaf.size for leaf in leaves])
            u = jax.tree.unflatten(tree, [leaf + 1e-3 * z[a:b].reshape(leaf.shape) for leaf, a, b
                                          in zip(leaves, offsets[:-1], offsets[1:], strict=True)])
            return (optax.apply_updates(p, u), o), None

        return jax.lax.scan(body, (p, opt.init(p)), jax.random.split(key, steps))[0][0]

    jax.block_until_ready(sgd_floor(jax.random.key(0), params))


def _computations(text: str) -> tuple[dict[str, list[str]], str]:
    comps, cur, entry = {}, None, ""
    for line in text.splitlines():
        m = HEADER.match(line)
        if m and not line.startswith(" "):
            cur = m.group(2)
            comps[cur] = []
            entry = cur if m.group(1) else entry
        elif cur and line.startswith("  "):
            comps[cur].append(line.strip())
    return comps, entry


def _bytes(shape: str) -> int:
    m = re.match(r"(\w+)\[([\d,]*)\]", shape)
    if not m:
        return 0
    size = 1
    for dim in filter(None, m.group(2).split(",")):
        size *= int(dim)
    return size * BYTES.get(m.group(1), 4)


def loop_bodies(text: str, big: int) -> list[dict]:
    """Each while-loop body of the module, nested order: op counts and parameter-sized ops."""
    comps, entry = _computations(text)
    out = []

    def visit(name: str, depth: int) -> None:
        ops, sized = collections.Counter(), []
        for ins in comps[name]:
            m = INSTR.match(ins)
            if not m:
                continue
            shape, op = m.groups()
            ops[op] += 1
            if op in ("copy", "fusion", "custom-call", "dot", "convolution") and \
                    _bytes(shape) >= big:
                src = re.search(r'op_name="([^"]+)"', ins)
                sized.append(f"{op} {shape.split('{')[0]} "
                             f"{src.group(1).split('/')[-1] if src else ''}")
        if depth:
            out.append({"depth": depth, "ops": ops, "sized": sized})
        for ins in comps[name]:
            m = re.search(r" while\(.*body=%?([\w.\-]+)", ins)
            if m:
                visit(m.group(1), depth + 1)

    visit(entry, 0)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hidden", type=int, default=1000)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--keep", metavar="DIR", help="copy both optimised modules into DIR")
    ap.add_argument("--child", choices=("sgd", "sgmc"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        _compile(a.child, a.hidden, a.layers, a.batch, a.steps)
        return
    largest = 4 * max(784 * a.hidden, a.hidden * a.hidden if a.layers > 1 else 0)
    for which, module in (("sgd", "sgd_floor"), ("sgmc", "run_block")):
        with tempfile.TemporaryDirectory() as tmp:
            env = dict(os.environ, XLA_FLAGS=(os.environ.get("XLA_FLAGS", "") +
                                              f" --xla_dump_to={tmp} --xla_dump_hlo_as_text"))
            subprocess.run([sys.executable, __file__, "--child", which,
                            *(f"--{k}={v}" for k, v in vars(a).items()
                              if k not in ("child", "keep"))],
                           env=env, check=True)
            (path,) = [p for p in glob.glob(f"{tmp}/*jit_{module}*after_optimizations.txt")]
            bodies = loop_bodies(open(path).read(), largest // 4)
            if a.keep:
                os.makedirs(a.keep, exist_ok=True)
                shutil.copy(path, os.path.join(a.keep, f"{which}.txt"))
        print(f"\n{which} ({module}): loop bodies, outermost first")
        for b in bodies:
            keep = ("fusion", "copy", "custom-call", "dot", "while", "call")
            counts = ", ".join(f"{k} {b['ops'][k]}" for k in keep if b["ops"][k])
            print(f"{'  ' * b['depth']}depth {b['depth']}: {counts}; "
                  f"parameter-sized: {len(b['sized'])}")
            for s in b["sized"]:
                print(f"{'  ' * b['depth']}    {s}")


if __name__ == "__main__":
    main()
