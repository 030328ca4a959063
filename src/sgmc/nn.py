r"""Priors for neural-network parameters: one scale per array, set by its fan-in.

>>> import sgmc
>>> prior = sgmc.nn.prior()                      # N(0, 16/fan_in) weights, N(0, 1) biases
>>> post = sgmc.Posterior(loglik, prior, data)                     # doctest: +SKIP
>>> print(prior.describe(params))                                  # doctest: +SKIP

The parameters may be any pytree: Flax linen ``params``, a Flax NNX state
(``nnx.split(model)``), an Equinox model's arrays (``eqx.partition(model,
eqx.is_inexact_array)``), the dict of :func:`sgmc.models.mlp`, or a plain dict. Each array
(leaf) w gets a scale s and the log density is Σ_leaves Σ_i log p(w_i; s):

- a weight (a leaf with ndim ≥ 2): s² = c / fan_in, c = ``scale``. This is the variance
  of He et al. (2015), "Delving deep into rectifiers", for c = 2 (ReLU), and of LeCun /
  Glorot & Bengio (2010), "Understanding the difficulty of training deep feedforward neural
  networks", for c = 1 (fan-in form), so a draw from the prior keeps the pre-activations
  of order one through the layers;
- a bias (a leaf with ndim ≤ 1, or named ``bias``: Equinox's convolution bias is
  (out, 1, 1)): a fixed s = ``bias_scale``;
- a leaf whose name matches a pattern of ``overrides``: that fixed s.

The fan-in comes from the leaf's name (the last key of its path; :func:`fan_in_of`):
``kernel`` (Flax linen and NNX ``Dense``/``Conv``, (…, in, out)) and ``w``
(:func:`sgmc.models.mlp`, (in, out)) have fan_in = ∏ shape[:-1]; ``weight`` (Equinox
``Linear``/``Conv``, PyTorch's layout (out, in, …)) has fan_in = ∏ shape[1:]. Any other
weight needs ``fan_in=lambda name, shape: ...`` or an override.

Families, each parameterised by s so that all three have variance s² (Fortuin et al.
(2022), "Bayesian neural network priors revisited", find heavy-tailed priors help fully
connected nets; Wenzel et al. (2020), "How good is the Bayes posterior in deep neural
networks really?", question the isotropic Gaussian prior):

- ``"gaussian"``: p(w) = exp(−w²/(2s²)) / √(2π s²);
- ``"laplace"``: p(w) = exp(−|w|/b) / (2b), b = s/√2;
- ``"student_t"``: p(w) = Γ((ν+1)/2) / (Γ(ν/2) √(νπ) σ) · (1 + w²/(ν σ²))^(−(ν+1)/2),
  ν = ``df``, σ = s √((ν−2)/ν) when ν > 2 (variance s²); when ν ≤ 2 the variance is
  infinite and σ = s.

The default c = 16 (:data:`DEFAULT_SCALE`) was measured, not taken from He's c = 2 (which
is an initialisation's variance): see the table at the end of the module.
"""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy import stats

from sgmc import _validate as check
from sgmc.io.serial import leaf_names

__all__ = ["DEFAULT_SCALE", "FAMILIES", "NNPrior", "fan_in_of", "prior", "student_t_scale"]

PyTree = Any
FanIn = Callable[[str, tuple[int, ...]], "int | None"]

FAMILIES: tuple[str, ...] = ("gaussian", "laplace", "student_t")

# c in s² = c/fan_in. Measured 2026-11-27 (table at the end of this module): the MAP of a
# one-hidden-layer ReLU MLP (100 units, biases N(0, 1)) for c ∈ {0.5, 1, 2, …, 64} on digits,
# EEG eye state and diabetic retinopathy, 3 seeds: c = 16 is the only value within 2 SE of
# the best validation log-likelihood on all three (best: 64, 32 and 8); He's c = 2 is not
# (digits −0.249 vs −0.067 ± 0.010, EEG −0.299 vs −0.177 ± 0.007 nats per point): with ~10³
# data points it shrinks the weights so much that the MAP is underconfident. A measurement
# of MAPs only: a Bayesian model average may prefer another c.
DEFAULT_SCALE: float = 16.0
"""c in s² = c / fan_in of :func:`prior` (measured: see the table at the end of the module)."""

# name of the leaf (last key of its path) -> which axes make its fan-in
_IN_AXES: dict[str, Callable[[tuple[int, ...]], tuple[int, ...]]] = {
    "kernel": lambda shape: shape[:-1],   # Flax linen / NNX: (..., in, out)
    "w": lambda shape: shape[:-1],        # sgmc.models.mlp: (in, out)
    "weight": lambda shape: shape[1:],    # Equinox / PyTorch: (out, in, ...)
}


def _key_name(path: tuple) -> str | None:
    """The last name of a pytree path: a dict key or an attribute (skipping an NNX
    ``.value``); None when the path ends in a position (a list's item) or is empty."""
    for entry in reversed(path):
        if isinstance(entry, jax.tree_util.GetAttrKey):
            if entry.name == "value":
                continue
            return entry.name
        if isinstance(entry, jax.tree_util.DictKey):
            return str(entry.key)
        return None
    return None


def fan_in_of(key: str | None, shape: tuple[int, ...]) -> int | None:
    """The fan-in of a weight by the last name of its path: ∏ shape[:-1] for ``kernel`` and
    ``w``, ∏ shape[1:] for ``weight``; None for any other name."""
    axes = _IN_AXES.get(key) if key is not None else None
    return None if axes is None else math.prod(axes(tuple(shape)))


@dataclass(frozen=True)
class NNPrior:
    """A prior on a network's parameters, a value-hashable callable (equal priors share
    compiled programs); build one with :func:`prior`, which checks the arguments.

    Attributes:
        family: ``"gaussian"``, ``"laplace"`` or ``"student_t"``.
        scale: c > 0, the weights' s² = c / fan_in.
        bias_scale: s > 0 of biases and other leaves with ndim ≤ 1.
        df: ν > 0 of ``"student_t"``.
        fan_in: ``"auto"`` or a callable (name, shape) -> int (None: the automatic rule).
        overrides: ((glob pattern, s), ...), first match wins.
    """

    family: str = "gaussian"
    scale: float = DEFAULT_SCALE
    bias_scale: float = 1.0
    df: float = 5.0
    fan_in: str | FanIn = "auto"
    overrides: tuple[tuple[str, float], ...] = ()

    def __post_init__(self) -> None:
        check.choice("family", self.family, FAMILIES)
        for name in ("scale", "bias_scale", "df"):
            object.__setattr__(self, name, check.positive(name, getattr(self, name)))
        if not (self.fan_in == "auto" if isinstance(self.fan_in, str)
                else callable(self.fan_in)):
            raise ValueError("fan_in must be 'auto' or a callable (name, shape) -> int, "
                             f"got {self.fan_in!r}")
        object.__setattr__(self, "overrides", _check_overrides(self.overrides))

    # -- per-leaf scales ---------------------------------------------------------------------

    def _rows(self, params: PyTree) -> list[dict]:
        """One row per leaf, in JAX's leaf order: name, shape, fan_in, scale, family."""
        flat = jax.tree_util.tree_flatten_with_path(params)[0]
        names = leaf_names(params)
        used = [False] * len(self.overrides)
        rows = []
        for (path, leaf), name in zip(flat, names, strict=True):
            shape = tuple(int(n) for n in np.shape(leaf))
            key = _key_name(path)
            fan, s = None, None
            for i, (pattern, value) in enumerate(self.overrides):
                if fnmatch.fnmatchcase(name, pattern):
                    used[i] = True
                    s = value if s is None else s   # the first match wins
            if s is None and (len(shape) <= 1 or key == "bias"):
                s = self.bias_scale
            if s is None:
                fan = self._fan_in(name, key, shape)
                s = math.sqrt(self.scale / fan)
            rows.append({"name": name, "shape": shape, "fan_in": fan, "scale": s,
                         "family": self.family})
        unused = [p for (p, _), u in zip(self.overrides, used, strict=True) if not u]
        if unused:
            raise ValueError(f"overrides: the pattern(s) {unused} match no parameter; the "
                             f"parameters are {names}")
        return rows

    def _fan_in(self, name: str, key: str | None, shape: tuple[int, ...]) -> int:
        fan = None
        if callable(self.fan_in):
            fan = self.fan_in(name, shape)
            if fan is not None and (isinstance(fan, bool) or not isinstance(fan, int | np.integer)
                                    or fan < 1):
                raise ValueError(f"fan_in({name!r}, {shape}) must return a positive int "
                                 f"(or None for the automatic rule), got {fan!r}")
        if fan is None:
            fan = fan_in_of(key, shape)
        if fan is None:
            raise ValueError(
                f"cannot tell the fan-in of the weight {name!r} of shape {shape}: its name "
                f"{key!r} is none of {sorted(_IN_AXES)}; pass fan_in=lambda name, shape: ... "
                f"(returning the fan-in as an int) or overrides={{{name!r}: scale}}")
        if fan < 1:
            raise ValueError(f"the weight {name!r} of shape {shape} has fan-in {fan}")
        return int(fan)

    def scales(self, params: PyTree) -> PyTree:
        """A pytree like ``params`` with each leaf replaced by its scale s (a float)."""
        treedef = jax.tree.structure(params)
        return jax.tree.unflatten(treedef, [r["scale"] for r in self._rows(params)])

    def table(self, params: PyTree) -> list[dict]:
        """One dict per leaf: ``name`` (as in ``Result.summary``), ``shape``, ``fan_in``
        (None where not used: biases and overridden leaves), ``scale`` (s), ``family``."""
        return self._rows(params)

    def describe(self, params: PyTree) -> str:
        """:meth:`table` as aligned text, one line per leaf."""
        head = ("name", "shape", "fan_in", "scale", "family")
        body = [(r["name"], str(r["shape"]), "-" if r["fan_in"] is None else str(r["fan_in"]),
                 f"{r['scale']:.4g}", self._family_text()) for r in self._rows(params)]
        widths = [max(len(x) for x in col) for col in zip(head, *body, strict=True)]
        lines = ["  ".join(x.ljust(w) for x, w in zip(row, widths, strict=True)).rstrip()
                 for row in (head, *body)]
        return "\n".join(lines)

    def _family_text(self) -> str:
        return f"student_t(df={self.df:g})" if self.family == "student_t" else self.family

    # -- density -----------------------------------------------------------------------------

    def logpdf(self, x: jax.Array, s: float) -> jax.Array:
        """Σ_i log p(x_i; s) of one array under the family with scale s."""
        x = jnp.asarray(x)
        if not jnp.issubdtype(x.dtype, jnp.floating):
            x = x.astype(jnp.float32)
        if self.family == "gaussian":
            lp = stats.norm.logpdf(x, 0.0, s)
        elif self.family == "laplace":
            lp = stats.laplace.logpdf(x, 0.0, s / math.sqrt(2.0))
        else:
            lp = stats.t.logpdf(x, self.df, 0.0, student_t_scale(s, self.df))
        return jnp.sum(lp)

    def __call__(self, params: PyTree) -> jax.Array:
        """log p(params), normalised: a scalar (float32 for float32 parameters)."""
        total = jnp.zeros((), jnp.float32)
        for row, leaf in zip(self._rows(params), jax.tree.leaves(params), strict=True):
            total = total + self.logpdf(leaf, row["scale"])
        return total


def student_t_scale(s: float, df: float) -> float:
    """σ of a Student-t with ν = df and standard deviation s: s √((ν−2)/ν) for ν > 2, else s
    (the variance is infinite)."""
    return s * math.sqrt((df - 2.0) / df) if df > 2.0 else s


def _check_overrides(overrides: Any) -> tuple[tuple[str, float], ...]:
    items = overrides.items() if isinstance(overrides, Mapping) else overrides
    try:
        items = tuple(items)
        pairs = tuple((p, v) for p, v in items)
    except (TypeError, ValueError):
        raise ValueError("overrides must be a dict {glob pattern: scale > 0}, got "
                         f"{overrides!r}") from None
    out = []
    for pattern, value in pairs:
        if not isinstance(pattern, str):
            raise ValueError(f"overrides: each key must be a glob pattern (str), got {pattern!r}")
        out.append((pattern, check.positive(f"overrides[{pattern!r}]", value)))
    return tuple(out)


def prior(family: str = "gaussian", scale: float = DEFAULT_SCALE, bias_scale: float = 1.0,
          df: float = 5.0, fan_in: str | FanIn = "auto",
          overrides: Mapping[str, float] | None = None) -> NNPrior:
    """A prior on a network's parameters: weights with s² = ``scale`` / fan_in, biases with
    s = ``bias_scale`` (densities in :mod:`sgmc.nn`).

    Args:
        family: ``"gaussian"``, ``"laplace"`` or ``"student_t"``; each with variance s²
            (``"student_t"`` only for ``df`` > 2).
        scale: c > 0 in s² = c / fan_in (default 16, measured: :data:`DEFAULT_SCALE`;
            2: He et al. 2015; 1: LeCun, Glorot & Bengio 2010 in fan-in form).
        bias_scale: s > 0 of the biases and every other leaf with ndim ≤ 1.
        df: degrees of freedom ν > 0 of ``"student_t"``.
        fan_in: ``"auto"`` (by the leaf's name: ``kernel``, ``w``, ``weight``) or a callable
            ``(name, shape) -> int``, given each weight's name (``params.Dense_0.kernel``,
            ``layers[0].weight``) and shape; returning None uses the automatic rule.
        overrides: ``{glob pattern: s}``, matched (:mod:`fnmatch`) against the leaf names,
            e.g. ``{"*.bias": 0.1, "params.Dense_2.*": 0.5}``; the first pattern that
            matches wins. A pattern that matches no leaf is an error at the first call.

    Returns:
        An :class:`NNPrior`: ``prior(params)`` is log p(params); ``.scales(params)``,
        ``.table(params)`` and ``.describe(params)`` show each leaf's scale.

    Raises:
        ValueError: for an argument out of range (naming it), and, at a call, for a weight
            whose fan-in cannot be told (naming the leaf and its shape).
    """
    if overrides is not None and not isinstance(overrides, Mapping):
        raise ValueError(f"overrides must be a dict {{glob pattern: scale > 0}} or None, got "
                         f"{overrides!r}")
    return NNPrior(family=family, scale=scale, bias_scale=bias_scale, df=df, fan_in=fan_in,
                   overrides=tuple((overrides or {}).items()))


# The measurement of DEFAULT_SCALE (2026-11-27; script outside the repository). MAP by Adam
# (optax) of a 1×100 ReLU MLP, weights N(0, c/fan_in), biases N(0, 1); validation
# log-likelihood per point, accuracy, ECE (sgmc.metrics.classification_metrics), mean ± SE
# over 3 seeds (seed = data split and initialisation). Features standardised on the train
# part. digits: sklearn, 70/30 stratified, train split 80/20 into fit (1005) / val (252).
# diabetic retinopathy (645 / 161) and EEG (8389 / 2097): sgmc.datasets.split 56/14/30.
# Convergence: full-batch Adam lr 1e-2 until the full-data loss improved < 1e-4 nats/point
# in 1000 steps, then lr 1e-3 until < 1e-5 (digits 4000 + 2000 steps, retinopathy
# 24000 + 26000). EEG: minibatch-100 Adam lr 1e-3 for 1300 epochs (until < 1e-4 in 10
# epochs), then 2000 full-batch steps at lr 1e-4 (still improving 5e-4 per 1000 steps: EEG's
# large-c MAPs were not fully converged).
#
#  c   | digits: loglik  acc    ECE  | retinopathy: loglik  acc   ECE | EEG: loglik  acc   ECE
#  0.5 | −0.708±.007  .931±.009 .396 | −0.640±.005  .621±.022  .064 | −0.447±.031 .815±.017 .099
#  1   | −0.403±.003  .952±.007 .241 | −0.608±.010  .663±.015  .077 | −0.370±.023 .860±.011 .092
#  2   | −0.249±.002  .963±.001 .144 | −0.568±.015  .706±.007  .085 | −0.299±.013 .896±.008 .072
#  4   | −0.165±.004  .971±.001 .087 | −0.538±.022  .731±.012  .085 | −0.241±.010 .913±.001 .050
#  8   | −0.115±.005  .972±.002 .059 | −0.519±.028  .745±.019  .058 | −0.202±.009 .925±.004 .032
#  16  | −0.087±.006  .979±.001 .038 | −0.532±.018  .737±.018  .090 | −0.179±.005 .930±.003 .019
#  32  | −0.074±.008  .980±.000 .029 | −0.602±.015  .723±.002  .120 | −0.177±.007 .931±.002 .013
#  64  | −0.067±.010  .980±.002 .025 | −0.759±.018  .712±.011  .171 | −0.178±.006 .933±.002 .016
#
# "Within 2 SE": best mean − mean ≤ 2 √(SE_best² + SE_c²). c = 16 qualifies on all three;
# with the SE of the seed-paired difference only c = 64 qualifies on digits and 8, 16 on
# retinopathy, so no c is within 2 SE everywhere: 16 is the compromise, not a sharp optimum.
