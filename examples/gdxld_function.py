"""GD×LD on your own function: global optimisation by replica exchange, against plain GD.

What it shows: how to write a function for ``sgmc.minimize`` (below: ``my_function``), and
GD×LD (Dong & Tong 2021, Alg. 1: a gradient-descent replica X and a Langevin replica Y at
temperature γ that hand X any better point they find; ``sgmc.gd_x_ld``) against gradient
descent (``sgmc.gd``) from the same random starts: the success rate (the fraction of
replications whose final X is within ``--tol`` of the global minimum value) and the median
number of steps to first reach it.

Writing your own function: ``f(x) -> scalar`` of a 1-D array x, written with ``jax.numpy``
(it is differentiated by ``jax.grad`` and compiled, so no NumPy calls on x and no Python
``if`` on its values — use ``jnp.where``). Known minimum or not, the script runs; with
``F_STAR`` set it reports success against it.

Run it:

    python examples/gdxld_function.py                     # 100 replications × 2000 steps
    python examples/gdxld_function.py --temperature 3     # a hotter Langevin replica
    python examples/gdxld_function.py --quick             # a short run (used by the tests)
"""

from __future__ import annotations

import argparse
import sys

import jax.numpy as jnp
import numpy as np

import sgmc

#: Where my_function attains its global minimum, and the value there.
X_STAR = np.array([1.0, -0.5])
F_STAR = 0.0


def my_function(x):
    """A bumpy bowl: a wide quadratic plus a cosine ripple, global minimum 0 at X_STAR.

    Each coordinate has local minima about every π/2 around X_STAR (the ripple 1 − cos 4u
    with u = x − X_STAR), so gradient descent stops in the first dip it meets.
    """
    u = x - X_STAR
    return jnp.sum(0.05 * u**2 + 1.0 - jnp.cos(4.0 * u))


def first_hit(trace: np.ndarray, steps: np.ndarray, level: float) -> np.ndarray:
    """Per replication, the first recorded step with F ≤ level (NaN if never)."""
    hit = trace <= level
    return np.where(hit.any(axis=1), steps[np.argmax(hit, axis=1)], np.nan)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=2_000)
    parser.add_argument("--replications", type=int, default=100)
    parser.add_argument("--step-size", type=float, default=0.05)
    parser.add_argument("--temperature", type=float, default=1.0,
                        help="γ, the Langevin replica's temperature")
    parser.add_argument("--tol", type=float, default=1e-3,
                        help="success: F(X) − F* ≤ tol")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="a short run (for the tests)")
    args = parser.parse_args(argv)

    steps = 500 if args.quick else args.steps
    reps = 20 if args.quick else args.replications
    # Random starts in [−5, 5]², one per replication; both GD×LD replicas start there.
    starts = np.random.default_rng(args.seed).uniform(-5.0, 5.0, size=(reps, 2))
    methods = {
        "GD": sgmc.gd(args.step_size),
        f"GD×LD (γ = {args.temperature:g})": sgmc.gd_x_ld(args.step_size, args.temperature),
    }
    print(f"minimising my_function from {reps} random starts in [−5, 5]², {steps} steps, "
          f"h = {args.step_size:g}; success: F(X) − F* ≤ {args.tol:g}\n")
    print(f"{'method':<20}{'success':>10}{'median steps to success':>26}{'mean F(X)':>12}"
          f"{'exchanges':>11}")
    for name, method in methods.items():
        # init_axes="replication": `starts` is one point per replication. Say so explicitly,
        # because my_function also accepts a (reps, 2) array (it sums over everything).
        res = sgmc.minimize(my_function, method, init=starts, num_steps=steps,
                            num_replications=reps, seed=args.seed, record_every=10,
                            init_axes="replication")
        ok = res.value - F_STAR <= args.tol
        hits = first_hit(res.trace, res.trace_steps, F_STAR + args.tol)
        median = f"{np.nanmedian(hits):.0f}" if np.isfinite(hits).any() else "never"
        print(f"{name:<20}{f'{ok.sum()}/{reps}':>10}{median:>26}{res.value.mean():>12.4f}"
              f"{res.exchanges.mean():>11.1f}")
    print(f"\nglobal minimum F* = {F_STAR} at {X_STAR.tolist()}; GD stops in the local minimum "
          "nearest its start, GD×LD's Langevin replica keeps exploring and hands X better "
          "points.")


if __name__ == "__main__":
    main(sys.argv[1:])
