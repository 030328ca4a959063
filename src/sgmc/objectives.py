"""Test functions of the replica-exchange optimisation paper (Dong & Tong (2021), *Replica
exchange for non-convex optimization*, JMLR 22, Sec. 3): the 25-well Gaussian mixture
(Sec. 3.1.1, eq. (7)–(8)), its online-KDE version (Sec. 3.1.3), Rastrigin and Griewank
(Sec. 3.2).

Each plain test function is a callable ``f(x) -> scalar`` (JAX-traceable) that
:func:`sgmc.minimize` accepts directly; :meth:`GaussianWells.objective` and
:func:`kde_wells` give :class:`sgmc.Objective` instances (the KDE one data-dependent, so
SGD×SGLD can subsample it).

>>> wells = sgmc.objectives.gaussian_wells(seed=0)            # doctest: +SKIP
>>> x_star, f_star = wells.global_minimum()                   # doctest: +SKIP
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from sgmc import _validate as check
from sgmc.model.posterior import Objective

__all__ = ["KDE_VARIANCE", "WELL_VARIANCE", "GaussianWells", "gaussian_wells", "griewank",
           "kde_wells", "rastrigin", "wells_regulariser"]

#: The variance s of every well, Σ_i = s·I (Dong & Tong, Sec. 3.1.1: Σ_i = diag(0.1)).
WELL_VARIANCE = 0.1
#: The paper's kernel parameter σ = 0.12 (Dong & Tong, Sec. 3.1.3), a *variance*.
KDE_VARIANCE = 0.12


def wells_regulariser(x):
    """Σ_coords (x+1)² 1{x<−1} + (x−5)² 1{x>5}: keeps the iterates near [−1, 5]^d."""
    x = jnp.asarray(x)
    return jnp.sum(jnp.where(x < -1.0, (x + 1.0) ** 2, 0.0)
                   + jnp.where(x > 5.0, (x - 5.0) ** 2, 0.0))


def _vector(x, dim: int | None = None):
    """x as a JAX vector; a wrong shape raises (so stacks of points are never mistaken for
    one point)."""
    x = jnp.asarray(x)
    if x.ndim != 1 or (dim is not None and x.shape[0] != dim):
        want = f"({dim},)" if dim is not None else "(d,)"
        raise ValueError(f"x must be one point of shape {want}, got shape {x.shape}")
    return x


def _np_regulariser(x):
    return (np.sum(np.where(x < -1.0, (x + 1.0) ** 2, 0.0), axis=-1)
            + np.sum(np.where(x > 5.0, (x - 5.0) ** 2, 0.0), axis=-1))


class GaussianWells:
    """F(x) = −Σ_i w_i N(x; m_i, s·I) + regulariser, in 2 dimensions.

    Centres m_i on the grid {0, …, 4}², s = 0.1, weights w_i uniform on (0, 1) from a seeded
    generator and normalised to sum to 1 (a proper mixture density, as the paper's
    F(x*) = −0.168 implies). Calling the object evaluates F (JAX-traceable).
    """

    def __init__(self, weights, centers, variance: float = WELL_VARIANCE):
        self.weights = np.asarray(weights, np.float64)
        self.centers = np.asarray(centers, np.float64)
        self.variance = float(variance)
        self._minimum = None
        self._objective = None

    def __repr__(self) -> str:
        return f"GaussianWells({len(self.weights)} wells, variance={self.variance})"

    def density(self, x):
        """The mixture density Σ_i w_i N(x; m_i, s·I) (JAX)."""
        x = _vector(x, 2)
        d2 = jnp.sum((x[None, :] - jnp.asarray(self.centers, x.dtype)) ** 2, axis=-1)
        norm = 1.0 / (2.0 * jnp.pi * self.variance)
        return jnp.sum(jnp.asarray(self.weights, x.dtype) * norm
                       * jnp.exp(-d2 / (2.0 * self.variance)))

    def __call__(self, x):
        return -self.density(x) + wells_regulariser(x)

    def objective(self) -> Objective:
        """This function as a data-free :class:`sgmc.Objective`."""
        if self._objective is None:
            self._objective = Objective(self)
        return self._objective

    def numpy_value(self, x: np.ndarray) -> np.ndarray:
        """F at points ``x`` (..., 2) in float64 NumPy."""
        x = np.asarray(x, np.float64)
        d2 = np.sum((x[..., None, :] - self.centers) ** 2, axis=-1)
        dens = np.sum(self.weights * np.exp(-d2 / (2 * self.variance)), axis=-1)
        return -dens / (2 * np.pi * self.variance) + _np_regulariser(x)

    def numpy_grad(self, x: np.ndarray) -> np.ndarray:
        """∇F at one point ``x`` (2,) in float64 NumPy (for reference computations outside
        JAX, e.g. plain gradient descent to a well's bottom)."""
        diff = x[None, :] - self.centers
        w = self.weights * np.exp(-np.sum(diff ** 2, -1) / (2 * self.variance))
        w = w / (2 * np.pi * self.variance)
        g = np.sum(w[:, None] * diff, axis=0) / self.variance
        g += np.where(x < -1, 2 * (x + 1), 0.0) + np.where(x > 5, 2 * (x - 5), 0.0)
        return g

    _numpy_grad = numpy_grad   # the former private name, kept as an alias

    def global_minimum(self, grid_step: float = 0.005) -> tuple[np.ndarray, float]:
        """(x*, F(x*)): the best point of a grid on [−1, 5]² with spacing ``grid_step``,
        refined by gradient descent in float64 (cached for the default spacing)."""
        if self._minimum is not None and grid_step == 0.005:
            return self._minimum
        axis = np.arange(-1.0, 5.0 + grid_step / 2, grid_step)
        best, best_x = np.inf, None
        for row in axis:                     # one row at a time: O(len(axis)·25) memory
            pts = np.stack([np.full_like(axis, row), axis], axis=-1)
            vals = self.numpy_value(pts)
            i = int(np.argmin(vals))
            if vals[i] < best:
                best, best_x = float(vals[i]), pts[i].copy()
        x = best_x
        for _ in range(20_000):              # curvature at a well ≈ w/(2π s²) ≲ 2
            g = self.numpy_grad(x)
            x = x - 0.2 * g
            if np.max(np.abs(g)) < 1e-13:
                break
        out = (x, float(self.numpy_value(x)))
        if grid_step == 0.005:
            self._minimum = out
        return out

    def sample(self, num: int, seed: int = 0) -> np.ndarray:
        """``num`` draws from the mixture density (seeded)."""
        rng = np.random.default_rng(seed)
        comp = rng.choice(len(self.weights), size=num, p=self.weights)
        return self.centers[comp] + np.sqrt(self.variance) * rng.standard_normal((num, 2))


def gaussian_wells(seed: int = 0) -> GaussianWells:
    """The paper's 25-well objective with weights drawn from ``np.random.default_rng(seed)``
    (uniform on (0, 1), normalised to sum to 1)."""
    seed = check.integer("seed", seed, lo=0)
    weights = np.random.default_rng(seed).uniform(size=25)
    weights = weights / weights.sum()
    grid = np.arange(5.0)
    centers = np.stack(np.meshgrid(grid, grid, indexing="ij"), axis=-1).reshape(-1, 2)
    return GaussianWells(weights, centers)


def kde_wells(wells: GaussianWells, num_samples: int = 10_000,
              kernel_variance: float = KDE_VARIANCE, seed: int = 0) -> Objective:
    """The online-KDE objective of Dong & Tong, Sec. 3.1.3, as a data-dependent
    :class:`sgmc.Objective`:

        F(x) = −(1/N) Σ_j κ_σ(x, s_j) + L(x),
        κ_σ(x, s) = (2πσ)^{−d/2} exp(−‖x − s‖²/(2σ))       (d = 2),

    with s_j drawn from the wells' mixture (the paper's eq. (9)) and L the regulariser of
    eq. (8). The kernel parameter σ = ``kernel_variance`` is the kernel's **variance** (per
    coordinate), not its standard deviation: the paper writes the normaliser (2πσ)^{−d/2}
    and the exponent −‖x − s‖²/(2σ), and its gradient (2πσ)^{−d/2} σ^{−1} exp(·)(x − s);
    its σ = 0.12 is a kernel standard deviation of √0.12 ≈ 0.35. The expected objective is
    then −p(x) + L(x) with p the mixture with component covariance (0.1 + σ)·I.

    The regulariser is inside every datum's term, so minibatch means stay unbiased.

    Args:
        wells: the mixture the data are drawn from.
        num_samples: N, the number of draws s_j.
        kernel_variance: σ > 0, the kernel's variance (default 0.12, the paper's).
        seed: seed of the draws.
    """
    if not isinstance(wells, GaussianWells):
        raise TypeError(f"wells must be a GaussianWells, got {type(wells).__name__}")
    n = check.integer("num_samples", num_samples, lo=1)
    var = check.positive("kernel_variance", kernel_variance)
    samples = wells.sample(n, seed).astype(np.float32)

    def f(x, s):
        x = _vector(x, 2)
        d2 = jnp.sum((x - s) ** 2)
        return -jnp.exp(-d2 / (2.0 * var)) / (2.0 * jnp.pi * var) + wells_regulariser(x)

    return Objective(f, data=samples)


def rastrigin(x):
    """10 d + Σ_i (x_i² − 10 cos 2π x_i); global minimum 0 at x = 0."""
    x = _vector(x)
    return 10.0 * x.shape[-1] + jnp.sum(x ** 2 - 10.0 * jnp.cos(2.0 * jnp.pi * x))


def griewank(x):
    """1 + Σ_i x_i²/4000 − Π_i cos(x_i/√i); global minimum 0 at x = 0."""
    x = _vector(x)
    i = jnp.arange(1, x.shape[-1] + 1, dtype=x.dtype)
    return 1.0 + jnp.sum(x ** 2) / 4000.0 - jnp.prod(jnp.cos(x / jnp.sqrt(i)))
