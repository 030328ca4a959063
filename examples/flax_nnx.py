"""A Flax NNX network as an sgmc posterior: sampled with SGHMC and SVRG-LD, scored by model
averaging.

What it shows (the recipe of docs/neural-networks.md): ``nnx.split(model)`` gives a
graphdef (the structure, static) and a ``State`` (the parameters, a pytree) — the state is
what sgmc samples; ``loglik(params, datum)`` is the log-likelihood of ONE datum through
``nnx.merge(graphdef, params)``; the prior is N(0, 1) on every leaf (``jax.tree.leaves``);
``res.samples`` is an ``nnx.State`` of the same structure with leading (chain, draw) axes, and
the Bayesian model average is the merged model vmapped over the pooled draws.

The task is the "two moons" of scikit-learn, generated here with NumPy (no download):
1,000 training and 1,000 test points.

Run it:

    python examples/flax_nnx.py            # 4 chains × 3,000 steps per sampler
    python examples/flax_nnx.py --quick    # a short run (used by the tests)

Needs Flax (``pip install -e ".[nn]"``).
"""

from __future__ import annotations

import argparse
import sys

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

import sgmc


def two_moons(num: int, noise: float = 0.25, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``num`` points of two interleaving half circles (labels 0 and 1), standardised."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, size=num)
    t = rng.uniform(0.0, np.pi, size=num)
    x = np.where(y[:, None] == 0,
                 np.column_stack([np.cos(t), np.sin(t)]),
                 np.column_stack([1.0 - np.cos(t), 0.5 - np.sin(t)]))
    x = x + noise * rng.standard_normal((num, 2))
    return ((x - [0.5, 0.25]) / [0.9, 0.6]).astype(np.float32), y.astype(np.int32)


class MLP(nnx.Module):
    """Two hidden ReLU layers, ``classes`` logits."""

    def __init__(self, din: int, hidden: int, classes: int, rngs: nnx.Rngs) -> None:
        self.l1 = nnx.Linear(din, hidden, rngs=rngs)
        self.l2 = nnx.Linear(hidden, hidden, rngs=rngs)
        self.l3 = nnx.Linear(hidden, classes, rngs=rngs)

    def __call__(self, x: jax.Array) -> jax.Array:
        x = nnx.relu(self.l1(x))
        x = nnx.relu(self.l2(x))
        return self.l3(x)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=3_000, help="steps per chain")
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="a short run (for the tests)")
    args = parser.parse_args(argv)

    X, y = two_moons(1_000, seed=args.seed)
    X_test, y_test = two_moons(1_000, seed=args.seed + 1)
    model = MLP(2, 32, 2, nnx.Rngs(args.seed))                 # NNX's own initialiser
    graphdef, init = nnx.split(model)                          # structure, parameters

    def apply(params, x):
        return nnx.merge(graphdef, params)(x)

    def loglik(params, datum):                                 # one datum: x (2,), y ()
        return jax.nn.log_softmax(apply(params, datum["x"]))[datum["y"]]

    def logprior(params, std=1.0):                             # N(0, std²) on every leaf
        return sum(-0.5 * jnp.sum(p**2) / std**2 for p in jax.tree.leaves(params))

    post = sgmc.Posterior(loglik, logprior, {"x": X, "y": y})

    steps = 800 if args.quick else args.steps
    burn_in = steps // 2
    thin = max(1, (steps - burn_in) // 25)                     # 25 draws per chain
    samplers = {
        "SGHMC (splitting)": sgmc.sghmc(2e-3, friction=20.0, batch_size=50,
                                        integrator="splitting"),
        # SVRG-LD: a full-gradient snapshot every 20 steps (one pass over the data).
        "SVRG-LD": sgmc.sgld(1e-4, batch_size=50, estimator=sgmc.svrg(period=20)),
    }
    print(f"Flax NNX MLP, {sum(p.size for p in jax.tree.leaves(init))} parameters; "
          f"{args.chains} chains × {steps} steps, batch 50 of {len(X)}")
    for name, sampler in samplers.items():
        res = sgmc.sample(post, sampler, init, num_steps=steps, num_chains=args.chains,
                          burn_in=burn_in, thin=thin, seed=args.seed)
        assert jax.tree.structure(res.samples) == jax.tree.structure(init)
        draws = jax.tree.map(lambda a: a.reshape(-1, *a.shape[2:]), res.samples)
        probs = jax.vmap(lambda p: jax.nn.softmax(apply(p, X_test)))(draws)
        bma = probs.mean(axis=0)                               # Bayesian model average
        acc = float((bma.argmax(-1) == y_test).mean())
        ll = float(jnp.log(bma[jnp.arange(len(y_test)), y_test]).mean())
        print(f"{name:<18} model average ({len(probs)} draws): test accuracy {acc:.3f}, "
              f"log-likelihood {ll:.3f} per point ({res.meta['sampling_time']:.1f} s "
              f"sampling, {res.meta['compile_time']:.1f} s compiling)")


if __name__ == "__main__":
    main(sys.argv[1:])
