"""A Bayesian neural network: an MLP classifier sampled with SGHMC, scored by model averaging.

What it shows: ``sgmc.models.mlp`` (a Bayesian MLP with a Gaussian prior on every weight,
whose ``post.loglik`` is the network: ``init(key)`` gives a starting point and
``predict(params, X)`` class probabilities), SGHMC on its posterior with pytree parameters,
and ``sgmc.metrics``: the predictions of every draw (``predictions``), the Bayesian model
average after each draw (``running_average``) and held-out accuracy, log-likelihood, Brier
score and calibration error (``classification_metrics``) — for one draw and for the average.

The task is the "two moons" of scikit-learn, generated here with NumPy (no download):
two interleaving half circles with Gaussian noise, 1,000 training and 2,000 test points.

Run it:

    python examples/bnn.py                  # 4 chains × 6,000 steps (about a minute)
    python examples/bnn.py --hidden 64 64   # two hidden layers
    python examples/bnn.py --quick          # a short run (used by the tests)
"""

from __future__ import annotations

import argparse
import sys

import jax
import numpy as np

import sgmc


def two_moons(num: int, noise: float = 0.25, seed: int = 0):
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
    parser.add_argument("--hidden", type=int, nargs="+", default=[32],
                        help="hidden layer widths (default: one layer of 32 ReLU units)")
    parser.add_argument("--steps", type=int, default=6_000, help="steps per chain")
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--step-size", type=float, default=2e-3)
    parser.add_argument("--friction", type=float, default=20.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="a short run (for the tests)")
    args = parser.parse_args(argv)

    X, y = two_moons(1_000, seed=args.seed)
    X_test, y_test = two_moons(2_000, seed=args.seed + 1)
    post = sgmc.models.mlp(X, y, hidden=tuple(args.hidden), prior_std=1.0)
    net = post.loglik                                   # the network (an sgmc.models.MLP)
    init = net.init(jax.random.key(args.seed))         # He-initialised weights, biases 0

    steps = 1_500 if args.quick else args.steps
    burn_in = steps // 3
    thin = max(1, (steps - burn_in) // 50)              # 50 draws per chain
    # SGHMC (Chen et al. 2014), Euler integrator, minibatches of 50 (N/n = 20).
    sampler = sgmc.sghmc(args.step_size, friction=args.friction, batch_size=50)
    # One starting network for every chain; the chains separate through their own noise.
    res = sgmc.sample(post, sampler, init=init, num_steps=steps, num_chains=args.chains,
                      burn_in=burn_in, thin=thin, seed=args.seed)
    print(f"MLP {net.sizes}, {args.chains} chains × {steps} steps (SGHMC h = "
          f"{args.step_size:g}, D = {args.friction:g}), {res.num_draws} draws per chain, "
          f"{res.data_passes[0, -1]:.0f} data passes, {res.meta['sampling_time']:.1f} s "
          "sampling")

    # Predictions of every draw of every chain, in one compiled call: the draws of all
    # chains are pooled on one leading axis, then split again -> (chains, draws, n_test, 2).
    pooled_draws = jax.tree.map(lambda a: a.reshape(-1, *a.shape[2:]), res.samples)
    pooled = sgmc.metrics.predictions(net.predict, pooled_draws, X_test)
    probs = pooled.reshape(res.num_chains, res.num_draws, *pooled.shape[1:])

    one = sgmc.metrics.classification_metrics(probs[0, -1], y_test)
    bma = sgmc.metrics.classification_metrics(pooled.mean(axis=0), y_test)
    print(f"\n{'held-out (2000 points)':<30}{'accuracy':>9}{'log-lik':>9}{'Brier':>8}"
          f"{'ECE':>8}")
    for name, m in (("one draw (chain 0, last)", one),
                    (f"model average ({len(pooled)} draws)", bma)):
        print(f"{name:<30}{m['accuracy']:>9.3f}{m['log_likelihood']:>9.3f}{m['brier']:>8.3f}"
              f"{m['ece']:>8.3f}")

    # How the average improves with the number of draws of chain 0.
    running = sgmc.metrics.running_average(probs[0])   # BMA after 1, 2, ... draws
    marks = sorted({1, 5, 10, len(running)})
    ll = [sgmc.metrics.classification_metrics(running[k - 1], y_test)["log_likelihood"]
          for k in marks]
    print("chain 0, test log-likelihood of the average of its first k draws: "
          + ", ".join(f"k = {k}: {v:.3f}" for k, v in zip(marks, ll, strict=True)))


if __name__ == "__main__":
    main(sys.argv[1:])
