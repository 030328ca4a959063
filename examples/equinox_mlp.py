"""An Equinox network as an sgmc posterior: sampled with SGHMC and SAGA-LD, scored by model
averaging.

What it shows (the recipe of docs/neural-networks.md): ``eqx.partition(model,
eqx.is_inexact_array)`` splits the model into its parameters (the floating-point arrays: a
pytree, what sgmc samples) and the rest (static); ``loglik(params, datum)`` is the
log-likelihood of ONE datum through ``eqx.combine(params, static)``; the prior is N(0, 1) on
every leaf (``jax.tree.leaves``); ``res.samples`` is an ``eqx.nn.MLP`` whose arrays have
leading (chain, draw) axes, and the Bayesian model average is the combined model vmapped
over the data and over the pooled draws.

The task is the "two moons" of scikit-learn, generated here with NumPy (no download):
1,000 training and 1,000 test points.

Run it:

    python examples/equinox_mlp.py            # 4 chains × 3,000 steps per sampler
    python examples/equinox_mlp.py --quick    # a short run (used by the tests)

Needs Equinox (``pip install -e ".[nn]"``).
"""

from __future__ import annotations

import argparse
import sys

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=3_000, help="steps per chain")
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="a short run (for the tests)")
    args = parser.parse_args(argv)

    X, y = two_moons(1_000, seed=args.seed)
    X_test, y_test = two_moons(1_000, seed=args.seed + 1)
    model = eqx.nn.MLP(2, 2, width_size=32, depth=2, activation=jax.nn.relu,
                       key=jax.random.key(args.seed))          # Equinox's own initialiser
    init, static = eqx.partition(model, eqx.is_inexact_array)  # parameters, the rest

    def apply(params, x):                                      # one input x (2,)
        return eqx.combine(params, static)(x)

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
        # SAGA-LD: a table of the last gradient of every datum (N × 1,218 floats here).
        "SAGA-LD": sgmc.sgld(1e-4, batch_size=50, estimator=sgmc.saga()),
    }
    print(f"Equinox MLP, {sum(p.size for p in jax.tree.leaves(init))} parameters; "
          f"{args.chains} chains × {steps} steps, batch 50 of {len(X)}")
    for name, sampler in samplers.items():
        res = sgmc.sample(post, sampler, init, num_steps=steps, num_chains=args.chains,
                          burn_in=burn_in, thin=thin, seed=args.seed)
        assert jax.tree.structure(res.samples) == jax.tree.structure(init)
        draws = jax.tree.map(lambda a: a.reshape(-1, *a.shape[2:]), res.samples)
        probs = jax.vmap(lambda p: jax.nn.softmax(jax.vmap(lambda x: apply(p, x))(X_test)))(
            draws)
        bma = probs.mean(axis=0)                               # Bayesian model average
        acc = float((bma.argmax(-1) == y_test).mean())
        ll = float(jnp.log(bma[jnp.arange(len(y_test)), y_test]).mean())
        print(f"{name:<18} model average ({len(probs)} draws): test accuracy {acc:.3f}, "
              f"log-likelihood {ll:.3f} per point ({res.meta['sampling_time']:.1f} s "
              f"sampling, {res.meta['compile_time']:.1f} s compiling)")


if __name__ == "__main__":
    main(sys.argv[1:])
