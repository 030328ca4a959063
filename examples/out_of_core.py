"""Bayesian linear regression on data files larger than memory (``sgmc.Stream``).

What it shows: features kept on disk as a ``.npy`` file opened as a memory map, a posterior
whose data are read ``buffer_rows`` at a time (``sgmc.models.linear_regression(X, y,
buffer_rows=B)``), SVRG Langevin dynamics whose snapshots are exact passes over the whole
file, and a check of the draws against the exact posterior — computed here in one pass over
the file too. Plain SGLD at the same step size shows what the exact snapshots buy.

Run it:

    python examples/out_of_core.py                   # synthetic: 2,000,000 rows × 10 (80 MB)
    python examples/out_of_core.py --data DIR        # your DIR/X.npy (N, d), DIR/y.npy (N,)
    python examples/out_of_core.py --buffer-rows 50000 --rows 5000000

Without ``--data`` the script writes a synthetic data set chunk by chunk (never whole in
memory) to a temporary folder and says where. ``--quick`` is a shorter run (used by the
tests). The model is y = Xθ + ε with ε ~ N(0, 1) and θ ~ N(0, I) (no intercept: add a
column of ones to X for one); scale your targets so that unit noise is sensible.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import jax.numpy as jnp
import numpy as np

import sgmc

CHUNK = 100_000  # rows per read when this script itself goes over the file


def write_synthetic(folder: str, rows: int, dim: int, seed: int = 0) -> None:
    """X (rows × dim, float32, correlated features) and y = Xθ* + ε, written chunk by chunk."""
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=dim)
    mix = np.linalg.cholesky(0.8 * np.eye(dim) + 0.2)
    X = np.lib.format.open_memmap(os.path.join(folder, "X.npy"), "w+", np.float32, (rows, dim))
    y = np.lib.format.open_memmap(os.path.join(folder, "y.npy"), "w+", np.float32, (rows,))
    for lo in range(0, rows, CHUNK):
        x = rng.normal(size=(min(CHUNK, rows - lo), dim)) @ mix.T
        X[lo:lo + len(x)] = x
        y[lo:lo + len(x)] = x @ theta + rng.normal(size=len(x))
    X.flush()
    y.flush()


def exact_posterior(X, y) -> tuple[np.ndarray, np.ndarray]:
    """μ and Σ of the conjugate posterior from XᵀX and Xᵀy, accumulated chunk by chunk."""
    d = X.shape[1]
    xtx, xty = np.eye(d), np.zeros(d)  # the prior's precision I
    for lo in range(0, X.shape[0], CHUNK):
        x = np.asarray(X[lo:lo + CHUNK], np.float64)
        xtx += x.T @ x
        xty += x.T @ np.asarray(y[lo:lo + CHUNK], np.float64)
    cov = np.linalg.inv(xtx)
    return cov @ xty, cov


def score(samples, mu, cov) -> tuple[float, float, float]:
    """Worst |mean − μ| in posterior sds, and the extreme eigenvalues of the draws'
    covariance in the posterior's own units (all 1 for exact draws)."""
    x = np.asarray(samples, np.float64).reshape(-1, len(mu))
    whiten = np.linalg.inv(np.linalg.cholesky(cov))
    eig = np.linalg.eigvalsh(whiten @ np.cov(x.T) @ whiten.T)
    return float(np.max(np.abs(x.mean(0) - mu) / np.sqrt(np.diag(cov)))), eig[0], eig[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", metavar="DIR", help="folder with X.npy (N, d) and y.npy (N,)")
    parser.add_argument("--rows", type=int, default=2_000_000, help="synthetic rows")
    parser.add_argument("--dim", type=int, default=10, help="synthetic features")
    parser.add_argument("--buffer-rows", type=int, default=100_000,
                        help="rows on the device at a time (default 100,000)")
    parser.add_argument("--batch", type=int, default=100, help="minibatch size")
    parser.add_argument("--steps", type=int, default=20_000, help="steps per chain")
    parser.add_argument("--quick", action="store_true", help="a short run (for the tests)")
    args = parser.parse_args()
    if args.quick:
        args.rows, args.buffer_rows, args.steps = 200_000, 20_000, 4_000

    tmp = None
    folder = args.data
    if folder is None:
        tmp = tempfile.TemporaryDirectory(prefix="sgmc-ooc-")
        folder = tmp.name
        write_synthetic(folder, args.rows, args.dim)
        print(f"no --data given: wrote a synthetic data set to {folder}")
    X = np.load(os.path.join(folder, "X.npy"), mmap_mode="r")   # stays on disk
    y = np.load(os.path.join(folder, "y.npy"))                  # N numbers: read
    n, d = X.shape
    buffer_rows = min(args.buffer_rows, n)
    post = sgmc.models.linear_regression(X, y, buffer_rows=buffer_rows)
    print(f"{n:,} rows × {d} features ({X.nbytes / 2**20:,.0f} MiB on disk); the device "
          f"holds {buffer_rows:,} rows ({buffer_rows * (d + 1) * 4 / 2**20:,.1f} MiB) at a time")

    t0 = time.perf_counter()
    mu, cov = exact_posterior(X, y)
    print(f"exact posterior from one pass over the file: {time.perf_counter() - t0:.1f} s")

    # Step size from the largest curvature; SVRG snapshots every `period` steps, each an
    # exact pass over all N rows; minibatches without replacement (what streamed data want).
    h = 0.1 / np.linalg.eigvalsh(np.linalg.inv(cov)).max()
    period = max(1, args.steps // 10)
    samplers = {
        f"SVRG-LD (snapshot every {period:,} steps)": sgmc.sgld(
            h, batch_size=args.batch, estimator=sgmc.svrg(period, sampling="permutation")),
        "SGLD": sgmc.sgld(h, batch_size=args.batch, estimator=sgmc.uniform("permutation")),
    }
    print(f"\n4 chains × {args.steps:,} steps, batch {args.batch}, h = {h:.3g}; draws scored "
          "in the posterior's own units (exact draws: |mean error| ≈ 0, eigenvalues ≈ 1)")
    print(f"{'sampler':<36}{'data passes':>12}{'max |mean − μ|/sd':>19}{'cov. eigenvalues':>22}"
          f"{'seconds':>9}")
    for name, sampler in samplers.items():
        t0 = time.perf_counter()
        res = sgmc.sample(post, sampler, jnp.zeros(d), args.steps, num_chains=4,
                          burn_in=args.steps // 4, thin=10, seed=0)
        err, lo, hi = score(res.samples, mu, cov)
        print(f"{name:<36}{res.data_passes[0, -1]:>12.1f}{err:>19.2f}"
              f"{f'{lo:.2f} … {hi:.2f}':>22}{time.perf_counter() - t0:>9.1f}")
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()
