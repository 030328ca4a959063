"""Constrained parameters: sampled on an unconstrained scale, reported on their own.

A parameter θ with a support (σ > 0, a probability, an ordered vector, a point of the
simplex) is sampled as z ∈ ℝᵏ with θ = T(z), T a smooth bijection onto the support. The
density of z is the density of θ times the Jacobian of T (the change of variables), so the
energy the samplers see is

    U(z) = −log p(T(z)) − log |det ∂T/∂z| − Σ_{i=1}^{N} log p(x_i | T(z)),

and a draw z is reported as T(z). The transforms T are NumPyro's (``biject_to`` of a
NumPyro constraint: exp for ``positive``, the logistic function for ``unit_interval``,
cumulative exp-increments for ``ordered``, stick-breaking for ``simplex``), so their
Jacobians are a maintained library's, not ours. NumPyro is the optional extra
``pip install "sgmc[numpyro]"``.

Used by :class:`sgmc.Posterior` (``constraints=``) and its NumPyro form
(:func:`sgmc.from_numpyro`, whose constraints come from the model's supports).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp

PyTree = Any

__all__ = ["NAMES", "Constraints"]

#: The constraints known by name (any NumPyro constraint object is accepted as well, e.g.
#: ``numpyro.distributions.constraints.interval(0.0, 5.0)``).
NAMES = ("real", "positive", "unit_interval", "ordered", "positive_ordered", "simplex",
         "corr_cholesky")


def numpyro_distributions():
    """NumPyro's ``distributions`` package, or an ImportError saying how to install it."""
    try:
        import numpyro.distributions as dist
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError("constrained parameters and NumPyro models need NumPyro: "
                          'pip install "sgmc[numpyro]"') from err
    return dist


def _named(name: str):
    c = numpyro_distributions().constraints
    return {"real": c.real, "positive": c.positive, "unit_interval": c.unit_interval,
            "ordered": c.ordered_vector, "positive_ordered": c.positive_ordered_vector,
            "simplex": c.simplex, "corr_cholesky": c.corr_cholesky}[name]


def _is_constraint(x: Any) -> bool:
    return isinstance(x, numpyro_distributions().constraints.Constraint)


def _key(k: Any) -> Any:
    """The dict key, sequence index or attribute name of one step of a pytree path."""
    for attr in ("key", "idx", "name"):
        if hasattr(k, attr):
            return getattr(k, attr)
    return k


class Constraints:
    """Which leaves of a parameter pytree are constrained, and to what.

    Args:
        spec: a constraint (a name from :data:`NAMES` or a NumPyro constraint) for a params
            that is a single array, or a nested dict/list/tuple following the params'
            structure, whose entries are constraints; an entry covers every leaf below it,
            and leaves with no entry are unconstrained (``real``). E.g.
            ``{"sigma": "positive", "weights": "simplex"}`` for params
            ``{"mu": ..., "sigma": ..., "weights": ...}``. ``ordered``, ``simplex`` and
            ``corr_cholesky`` act on a leaf's last axis (or last two), the others elementwise;
            ``simplex`` takes K − 1 unconstrained values to a point of K.

    A :class:`Constraints` is immutable and hashable (it is a static part of a problem: it
    keys the compile cache and a checkpoint's fingerprint).
    """

    def __init__(self, spec: Any) -> None:
        self._entries = tuple(self._flatten(spec, ()))
        if not self._entries:
            raise ValueError("constraints is empty: give at least one constrained leaf, or "
                             "leave constraints=None")
        self.spec = spec

    def _flatten(self, node: Any, path: tuple) -> list:
        if isinstance(node, str):
            if node not in NAMES:
                raise ValueError(f"constraints{_where(path)} = {node!r} is not a known "
                                 f"constraint; use one of {', '.join(NAMES)} or a NumPyro "
                                 "constraint object")
            return [(path, node, _named(node))]
        if _is_constraint(node):
            return [(path, repr(node), node)]
        if isinstance(node, Mapping):
            return [e for k, v in node.items() for e in self._flatten(v, (*path, k))]
        if isinstance(node, (list, tuple)):
            return [e for i, v in enumerate(node) for e in self._flatten(v, (*path, i))]
        raise TypeError(f"constraints{_where(path)} must be a constraint name ("
                        f"{', '.join(NAMES)}), a NumPyro constraint, or a dict/list of them; "
                        f"got {type(node).__name__}")

    # Hashable and comparable by content, with a repr free of memory addresses.
    def __repr__(self) -> str:
        return "Constraints(" + ", ".join(f"{_where(p) or '<params>'}={n}"
                                          for p, n, _ in self._entries) + ")"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Constraints) and repr(self) == repr(other)

    def __hash__(self) -> int:
        return hash(repr(self))

    # -- which leaf has which transform --------------------------------------------------
    def _leaf_constraints(self, params: PyTree) -> list:
        """Per leaf of ``params`` (in flattening order), its constraint or None."""
        out = []
        for path, _ in jax.tree_util.tree_flatten_with_path(params)[0]:
            keys = tuple(_key(k) for k in path)
            found = None
            for p, _, c in self._entries:
                if keys[:len(p)] == p:
                    found = c
            out.append(found)
        return out

    def _map(self, fn, params: PyTree) -> tuple[PyTree, list]:
        leaves, treedef = jax.tree.flatten(params)
        results = [fn(c, x) for c, x in zip(self._leaf_constraints(params), leaves,
                                             strict=True)]
        return treedef, results

    def constrain(self, z: PyTree) -> PyTree:
        """θ = T(z), leaf by leaf."""
        biject_to = numpyro_distributions().transforms.biject_to
        treedef, out = self._map(lambda c, x: x if c is None else biject_to(c)(x), z)
        return jax.tree.unflatten(treedef, out)

    def constrain_with_log_det(self, z: PyTree) -> tuple[PyTree, jax.Array]:
        """θ = T(z) and log |det ∂T/∂z|, summed over every constrained leaf."""
        biject_to = numpyro_distributions().transforms.biject_to

        def one(c, x):
            if c is None:
                return x, jnp.zeros((), x.dtype)
            t = biject_to(c)
            y = t(x)
            return y, jnp.sum(t.log_abs_det_jacobian(x, y))

        treedef, out = self._map(one, z)
        theta = jax.tree.unflatten(treedef, [y for y, _ in out])
        return theta, sum(ld for _, ld in out)

    def unconstrain(self, theta: PyTree) -> PyTree:
        """z = T⁻¹(θ), leaf by leaf (θ may carry leading batch axes, e.g. one per chain)."""
        biject_to = numpyro_distributions().transforms.biject_to
        treedef, out = self._map(lambda c, x: x if c is None else biject_to(c).inv(x), theta)
        return jax.tree.unflatten(treedef, out)

    def check(self, theta: PyTree, name: str = "init") -> None:
        """A ValueError naming the leaf if ``θ`` is outside its support, or an entry of the
        constraints that matches no leaf of ``θ`` (a misspelt key)."""
        used = set()
        flat = jax.tree_util.tree_flatten_with_path(theta)[0]
        for (path, x) in flat:
            keys = tuple(_key(k) for k in path)
            for p, label, c in self._entries:
                if keys[:len(p)] == p:
                    used.add(p)
                    ok = jnp.all(c(jnp.asarray(x)))
                    if not bool(ok):
                        raise ValueError(
                            f"{name}{jax.tree_util.keystr(path)} is outside its support "
                            f"({label}) given in constraints; give a point inside it (on the "
                            "constrained scale)")
        unused = [p for p, _, _ in self._entries if p not in used]
        if unused:
            leaves = ", ".join(jax.tree_util.keystr(p) or "<params>" for p, _ in flat)
            raise ValueError(f"constraints{_where(unused[0])} matches no leaf of {name} "
                             f"(whose leaves are {leaves})")


def _where(path: tuple) -> str:
    return "".join(f"[{k!r}]" for k in path)
