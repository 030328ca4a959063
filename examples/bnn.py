"""A Bayesian neural network: an MLP classifier sampled with SGHMC, scored by model averaging.

What it shows: ``sgmc.models.mlp`` (a Bayesian MLP with a Gaussian prior on every weight,
whose ``post.loglik`` is the network: ``init(key)`` gives a starting point and
``predict(params, X)`` class probabilities), SGHMC on its posterior with pytree parameters,
and ``sgmc.metrics``: the predictions of every draw (``predictions``) and held-out accuracy,
log-likelihood, Brier score and calibration error (``classification_metrics``) — for the
Bayesian model average (BMA) of the kept draws, for one draw, and for a point estimate (the
same SGHMC at temperature 0: momentum SGD to the MAP, the same steps and minibatches).

The task is the "two moons" of scikit-learn, generated here with NumPy (no download):
two interleaving half circles with Gaussian noise, 1,000 training and 2,000 test points.
Everything is repeated over several seeds (new data, new start, new noise; the compiled
programs are reused) and the table gives the mean over seeds and the paired differences
BMA − one draw and BMA − MAP with their standard errors over seeds. The verdict line applies a
2-SE rule: "BMA better" only when the mean paired difference exceeds 2 SE in that direction.

Burn-in matters: at the default step size the chains need ~1,500–2,000 steps to reach the
posterior (the training log-likelihood stops rising). Draws taken before that are worse
networks than the last one, and their average is worse than the last draw alone — which is
what an earlier --quick (1,500 steps, burn-in 500) showed.

Run it:

    python examples/bnn.py                  # 4 chains × 6,000 steps, 5 seeds (about a minute)
    python examples/bnn.py --seeds 10       # more seeds: smaller standard errors
    python examples/bnn.py --hidden 64 64   # two hidden layers
    python examples/bnn.py --quick          # a short run (used by the tests)
"""

from __future__ import annotations

import argparse
import sys

import jax
import numpy as np

import sgmc

METRICS = ("accuracy", "log_likelihood", "brier", "ece")
LABELS = {"accuracy": "accuracy", "log_likelihood": "log-lik", "brier": "Brier", "ece": "ECE"}
HIGHER_IS_BETTER = {"accuracy": True, "log_likelihood": True, "brier": False, "ece": False}


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


def one_seed(seed: int, args, steps: int, burn_in: int, thin: int) -> dict:
    """Held-out metrics of the BMA, of one draw and of the MAP (SGD) for one seed."""
    X, y = two_moons(args.train, seed=seed)
    X_test, y_test = two_moons(2_000, seed=seed + 1)
    post = sgmc.models.mlp(X, y, hidden=tuple(args.hidden), prior_std=1.0)
    net = post.loglik                                   # the network (an sgmc.models.MLP)
    init = net.init(jax.random.key(seed))              # He-initialised weights, biases 0

    # SGHMC (Chen et al. 2014), Euler integrator, minibatches of 50.
    sampler = sgmc.sghmc(args.step_size, friction=args.friction, batch_size=50)
    # One starting network for every chain; the chains separate through their own noise.
    res = sgmc.sample(post, sampler, init=init, num_steps=steps, num_chains=args.chains,
                      burn_in=burn_in, thin=thin, seed=seed)
    # The point estimate: the same dynamics at temperature 0 (heavy-ball SGD on the negative
    # log posterior, i.e. towards the MAP), same steps; chain 0's last position. The same
    # chains, burn-in and thinning: the temperature is an argument of the compiled program,
    # not part of it, so this reuses the sampler's program instead of compiling another.
    sgd = sgmc.sghmc(args.step_size, friction=args.friction, batch_size=50, temperature=0.0)
    opt = sgmc.sample(post, sgd, init=init, num_steps=steps, num_chains=args.chains,
                      burn_in=burn_in, thin=thin, seed=seed)

    # Predictions of every draw of every chain, in one compiled call: the draws of all
    # chains are pooled on one leading axis -> (chains · draws, n_test, 2).
    pooled = jax.tree.map(lambda a: a.reshape(-1, *a.shape[2:]), res.samples)
    probs = sgmc.metrics.predictions(net.predict, pooled, X_test)
    one = probs[res.num_draws - 1]                      # chain 0, its last draw
    map_ = np.asarray(net.predict(jax.tree.map(lambda a: a[0, -1], opt.samples), X_test))
    return {"BMA": sgmc.metrics.classification_metrics(probs.mean(axis=0), y_test),
            "one": sgmc.metrics.classification_metrics(one, y_test),
            "MAP": sgmc.metrics.classification_metrics(map_, y_test),
            "draws": len(probs), "passes": float(res.data_passes[0, -1]),
            "time": res.meta["sampling_time"] + opt.meta["sampling_time"]}


def verdict(diff: np.ndarray, metric: str) -> str:
    """The 2-SE rule on paired differences BMA − other over seeds."""
    if len(diff) < 2:
        return "no verdict (1 seed)"
    mean, se = diff.mean(), diff.std(ddof=1) / np.sqrt(len(diff))
    good = mean if HIGHER_IS_BETTER[metric] else -mean
    if good > 2 * se:
        return "better"
    if good < -2 * se:
        return "worse"
    return "not resolved"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hidden", type=int, nargs="+", default=[32],
                        help="hidden layer widths (default: one layer of 32 ReLU units)")
    parser.add_argument("--steps", type=int, default=6_000, help="steps per chain")
    parser.add_argument("--burn-in", type=int, default=2_000,
                        help="steps discarded per chain (default 2000: the chains reach the "
                             "posterior after ~1500-2000 steps at the default step size)")
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--step-size", type=float, default=2e-3)
    parser.add_argument("--friction", type=float, default=20.0)
    parser.add_argument("--train", type=int, default=1_000, help="training points")
    parser.add_argument("--seeds", type=int, default=5,
                        help="repetitions (seeds seed, seed+1, ...; default 5)")
    parser.add_argument("--seed", type=int, default=0, help="the first seed")
    parser.add_argument("--quick", action="store_true",
                        help="a short run for the tests: 4000 steps")
    args = parser.parse_args(argv)

    steps, seeds = (4_000 if args.quick else args.steps), args.seeds
    burn_in = args.burn_in
    if burn_in >= steps:
        parser.error(f"--burn-in ({burn_in}) must be smaller than the steps ({steps})")
    thin = max(1, (steps - burn_in) // 50)              # 50 draws per chain
    runs = [one_seed(s, args, steps, burn_in, thin)
            for s in range(args.seed, args.seed + seeds)]
    print(f"MLP {(2, *args.hidden, 2)}, {args.chains} chains × {steps} steps (SGHMC h = "
          f"{args.step_size:g}, D = {args.friction:g}), burn-in {burn_in}, "
          f"{runs[0]['draws'] // args.chains} draws per chain, {runs[0]['passes']:.0f} data "
          f"passes; {args.train} training / 2000 held-out points; seeds {args.seed}–"
          f"{args.seed + seeds - 1}; {sum(r['time'] for r in runs):.1f} s sampling")

    table = {k: np.array([[r[k][m] for m in METRICS] for r in runs]) for k in ("BMA", "one",
                                                                              "MAP")}
    print(f"\n{f'held-out, mean of {seeds} seeds':<36}"
          + "".join(f"{LABELS[m]:>18}" for m in METRICS))
    rows = (("BMA", f"model average ({runs[0]['draws']} draws)"),
            ("one", "one draw (chain 0, last)"),
            ("MAP", "MAP (SGD, τ = 0, same steps)"))
    for key, name in rows:
        print(f"{name:<36}" + "".join(f"{v:>18.4f}" for v in table[key].mean(0)))
    verdicts = []
    for key, name in (("one", "one draw"), ("MAP", "MAP")):
        diff = table["BMA"] - table[key]
        se = (diff.std(0, ddof=1) / np.sqrt(seeds) if seeds > 1
              else np.full(len(METRICS), np.nan))
        print(f"{f'BMA − {name} (± SE over seeds)':<36}" + "".join(
            f"{f'{m:+.4f} ± {s:.4f}':>18}" for m, s in zip(diff.mean(0), se, strict=True)))
        verdicts.append(f"vs {name}: " + ", ".join(
            f"{LABELS[m]} {verdict(diff[:, i], m)}" for i, m in enumerate(METRICS)))
    print("\nverdict (BMA better/worse only beyond 2 SE): " + "; ".join(verdicts))


if __name__ == "__main__":
    main(sys.argv[1:])
