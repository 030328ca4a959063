"""Where the chains start, and how a block is compiled for this model: the pieces of
:func:`sgmc.sample` that read the problem before anything runs — the ``init`` argument
read as one point or one per chain (model names and shapes checked, ``init_spread``
dispersal) and whether the model convolves (``unroll=None``'s choice on a CPU)."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from sgmc._tree import all_finite, as_float_tree, broadcast_point, first_point
from sgmc.model.checks import ModelShapeError, leading_size, shapes_text
from sgmc.model.oracle import Problem
from sgmc.run import cache

__all__ = ["chain_positions", "has_convolution"]

PyTree = Any


#: Floating dtypes accepted for ``init`` (the samplers' arithmetic is float32, or float64
#: in JAX's 64-bit mode; half precision would lose the small steps).
INIT_DTYPES = ("float32", "float64")


@jax.jit
def _finite_leaves(leaves: list) -> jax.Array:
    """Whether each array of ``leaves`` is finite: one device call for all of them (eager,
    four a leaf), checked where they live (no copy of a large model's parameters)."""
    return jnp.stack([all_finite(x) for x in leaves])


def _as_init(init: PyTree) -> PyTree:
    """``init`` as a pytree of floating JAX arrays, checked leaf by leaf (named by path):
    numbers and integers become float32; complex, non-numeric and half-precision leaves are
    refused, and so are values that are non-finite before or after the cast."""
    if isinstance(init, (list, tuple)) and init and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in init):
        init = np.asarray(init, dtype=np.float32)  # a plain list of numbers is one vector
    if init is None or not jax.tree.leaves(init):
        raise ValueError("init must be an array or a pytree of arrays, got an empty value")

    on_device = {}  # path → a floating JAX array, checked below

    def leaf(path, x):
        where = f"init{jax.tree_util.keystr(path)}"
        dtype = np.asarray(x).dtype if not hasattr(x, "dtype") else np.dtype(x.dtype)
        if jnp.issubdtype(dtype, jnp.floating) and dtype.name not in INIT_DTYPES:
            raise TypeError(f"{where} has dtype {dtype}; init must be one of "
                            f"{', '.join(INIT_DTYPES)} (convert it with .astype(np.float32))")
        if dtype.kind not in "biuf" and not jnp.issubdtype(dtype, jnp.floating):
            raise TypeError(f"{where} must be a real numeric array, got dtype {dtype}")
        if isinstance(x, jax.Array) and jnp.issubdtype(dtype, jnp.floating):
            on_device[where] = x
            return x
        finite = bool(np.all(np.isfinite(np.asarray(x, np.float64))))
        out = as_float_tree(x)
        if not finite:
            raise ValueError(f"{where} contains non-finite values (NaN or inf)")
        if not bool(all_finite(out)):
            raise ValueError(f"{where} has values beyond {out.dtype}'s range (largest finite "
                             f"{jnp.finfo(out.dtype).max!s}), which are inf once cast")
        return out

    init = jax.tree_util.tree_map_with_path(leaf, init)
    if on_device:
        try:
            ok = np.asarray(_finite_leaves(list(on_device.values())))
        except ValueError:  # leaves committed to different devices: one call each
            ok = np.array([bool(_finite_leaves([x])[0]) for x in on_device.values()])
        if not ok.all():
            where = list(on_device)[int(np.argmin(ok))]
            raise ValueError(f"{where} contains non-finite values (NaN or inf)")
    return init


def chain_positions(problem: Problem, init: PyTree, num_chains: int,
                     per_chain: bool | None = None, spread: float = 0.0,
                     seed: int = 0) -> PyTree:
    """Every chain's initial position on the sampled scale: :func:`_model_positions`
    checked against the model's supports and unconstrained (``Problem.unconstrain``), then,
    with ``spread`` > 0 (``init_spread``, which needs one point for every chain), dispersed
    there by :func:`_dispersal`."""
    if spread and per_chain:
        raise ValueError(f"init_spread={spread:g} disperses one starting point over the "
                         "chains, and init_per_chain=True gives each chain its own start: "
                         "pass init_spread=0, or one point with init_per_chain=False")
    positions, one_point = _model_positions(problem, init, num_chains, per_chain)
    if spread and not one_point:
        raise ValueError(f"init_spread={spread:g} disperses one starting point over the "
                         f"chains, and init holds one start per chain (stacked on its leading "
                         f"axis of num_chains={num_chains}): pass init_spread=0, or one point")
    problem.check_support(positions)
    if problem.constrained:  # (else the identity, by the Problem contract; eager: ~0.2 ms)
        positions = jax.vmap(problem.unconstrain)(positions)
    return _dispersal(positions, spread, seed) if spread else positions


#: Folded into the run's seed for the draws of ``init_spread`` (apart from the chains' keys,
#: ``split(key(seed), num_chains)``).
SPREAD_STREAM = 0x1D15


def _dispersal(positions: PyTree, spread: float, seed: int) -> PyTree:
    """``positions`` (stacked per chain) + ``spread`` · ξ_c, ξ_c ~ N(0, I) per leaf: chain c's
    from ``fold_in(fold_in(key(seed), SPREAD_STREAM), c)`` (threefry), leaf i's from that
    folded with i, so that chain c's start depends on the seed and c alone."""
    base = jax.random.fold_in(jax.random.key(seed, impl="threefry2x32"), SPREAD_STREAM)
    leaves, treedef = jax.tree.flatten(positions)
    num_chains = leaves[0].shape[0]
    keys = jax.vmap(lambda c: jax.random.fold_in(base, c))(jnp.arange(num_chains))

    def moved(i, x):
        xi = jax.vmap(lambda k: jax.random.normal(jax.random.fold_in(k, i), x.shape[1:],
                                                  x.dtype))(keys)
        return x + jnp.asarray(spread, x.dtype) * xi

    return jax.tree.unflatten(treedef, [moved(i, x) for i, x in enumerate(leaves)])


def _model_positions(problem: Problem, init: PyTree, num_chains: int,
                     per_chain: bool | None = None) -> tuple[PyTree, bool]:
    """One point of the model's parameters per chain: ``init`` broadcast (one point,
    ``per_chain=False``), or ``init`` already stacked per chain on a leading axis
    (``per_chain=True``), and whether it was one point. None infers it from which reading
    the model accepts, and refuses ``init`` that both readings fit (with one chain, ``init``
    that fits as one point is one point), and ``init`` that neither fits but whose
    ``init[0]`` is a point (its leading axis is not ``num_chains``)."""
    init = _as_init(init)
    if per_chain is not None and not isinstance(per_chain, (bool, np.bool_)):
        raise TypeError(f"init_per_chain must be True, False or None, got {per_chain!r}")
    leaves = jax.tree.leaves(init)
    stacked = all(x.ndim >= 1 and x.shape[0] == num_chains for x in leaves)

    def broadcast():
        return broadcast_point(init, num_chains), True

    if per_chain is False:
        _check_params(problem, init, constrained=True)
        return broadcast()
    if per_chain:
        if not stacked:
            shapes = ", ".join(str(tuple(x.shape)) for x in leaves)
            raise ValueError(f"init_per_chain=True needs every leaf of init to have a leading "
                             f"axis of num_chains = {num_chains}; got shapes {shapes}")
        _check_params(problem, first_point(init),
                      "init[c] (one chain's point)", constrained=True)
        return init, False
    try:
        _check_params(problem, init, constrained=True)
    except ValueError as single_err:
        if not stacked:
            _leading_axis_mismatch(problem, init, num_chains, single_err)
            raise
        try:
            _check_params(problem, first_point(init), constrained=True)
        except ValueError:
            raise single_err from None
        return init, False
    # One chain: an init that is also a stack of one point is read as the point (stacking
    # a single chain is rare; refusing would stop every 1-d model started at zeros(1)).
    if stacked and num_chains > 1:
        try:
            _check_params(problem, first_point(init), constrained=True)
        except (ValueError, TypeError):
            return broadcast()
        shapes = [tuple(x.shape) for x in leaves]
        what = (f"of shape {shapes[0]}" if len(shapes) == 1 else
                f"with leaves shaped {', '.join(map(str, shapes))}")
        raise ValueError(
            f"init {what} is ambiguous with num_chains={num_chains}: the model accepts it as "
            "one point (every chain starts there, each draw shaped like init) and as one "
            f"point per chain stacked on its leading axis of {num_chains} (each draw shaped "
            "like init[0]); pass init_per_chain=False for the first reading or "
            "init_per_chain=True for the second")
    return broadcast()


def _leading_axis_mismatch(problem: Problem, init: PyTree, num_chains: int,
                           single_err: ValueError) -> None:
    """Raise a ValueError naming the leading axis if ``init`` (which the model refuses as
    one point, and whose leading axis is not ``num_chains``) is a stack of points: every
    leaf shares a leading axis of size k ≠ num_chains and the model accepts ``init[0]``."""
    k = leading_size(init)
    if k is None:
        return
    first = first_point(init)
    try:
        _check_params(problem, first, constrained=True)
    except (ValueError, TypeError):
        return
    point = shapes_text(first)
    if isinstance(single_err, ModelShapeError) and single_err.term is not None:
        # init as one point gives a non-scalar, init[0] a scalar: the function may be at
        # fault (an elementwise loglik that forgot to sum) as much as init; say both.
        raise ValueError(
            f"init does not match the model: {single_err.term} returned shape "
            f"{single_err.returned} at init ({shapes_text(init)}) and a scalar at init[0] "
            f"({point}). Either {single_err.requirement} — or init has leading axis {k} but "
            f"num_chains={num_chains}: pass one point ({point}) for all chains, or one per "
            f"chain stacked on a leading axis of size num_chains={num_chains}") from None
    raise ValueError(
        f"init does not match the model and num_chains: init has leading axis {k} but "
        f"num_chains={num_chains}; pass one point ({point}) for all chains, or one per chain "
        f"stacked on a leading axis of size num_chains={num_chains} (the model accepts "
        f"init[0], {point}, as one point)") from None


def has_convolution(problem: Problem, position: PyTree) -> bool:
    """Whether the energy of one datum (or of the exact term) at ``position`` convolves:
    the jaxpr of its gradient holds a ``conv_general_dilated``. Remembered per problem
    object and position shapes (:mod:`sgmc.run.cache`: tracing costs ~5 ms, a short run's
    whole time)."""
    return cache.remember("convolves", problem, cache.signature(position),
                          lambda: _convolves(problem, position))


def _check_params(problem: Problem, params: PyTree, name: str = "init",
                  constrained: bool = False) -> None:
    """``problem.check_params``, whose answer depends on shapes alone (it traces the model's
    terms: ~3 ms each call), remembered once passed (:mod:`sgmc.run.cache`); a refusal is
    worked out, and raised, every time."""
    key = cache.signature(params)
    cache.remember("check_params", problem, None if key is None else (key, name, constrained),
                   lambda: problem.check_params(params, name, constrained=constrained))


def _convolves(problem: Problem, position: PyTree) -> bool:
    def energy(p):
        u = problem.exact_energy(p)
        if problem.has_data:
            u = u + problem.datum_energy(p, jax.tree.map(lambda a: a[0], problem.data))
        return u

    try:
        return "conv_general_dilated" in str(jax.make_jaxpr(jax.grad(energy))(position))
    except Exception:  # a heuristic only: preflight has checked the model already
        return False
