"""Drawing a step's randomness for many steps at once, outside the loop over steps.

A step's random draws — minibatch indices, Gaussian noise, an index chain's proposals, a
swap's uniform — depend on its key and its index t, never on the chain's state. On XLA:CPU a
small model's step is mostly these draws: each threefry hash is its own kernel, so a
logistic-regression SGLD step (d = 54, b = 50) took 24 µs with its draws and 6 µs without.
Drawn for K steps in one batched call they cost a fraction (10–12 µs per step in all).

:func:`split_step` does this for any step function, without the step having to say which
of its values are random. It traces ``step(*args, key, t)`` to a jaxpr and sorts its
equations, in order, into

* **known**: every input is the key, t, a constant, or another known value (and the equation
  has no side effect): computable ahead for any t, so ``pre(key, t)`` evaluates them;
* **unknown**: the rest (they read the state, the data or the sampler's parameters):
  ``post(residuals, *args)`` evaluates them, taking the known values they read (the
  residuals) as inputs.

Equations of constants only are kept on both sides, so a large constant is never stored once
per step. ``pre`` is then ``vmap``-ed over K steps' keys (threefry keys only: see
:func:`split_step`). The values are the same as those of the whole step: the same
operations on the same inputs (the batched draws are bitwise those of one step at a time;
the driver puts an optimisation barrier between ``pre`` and ``post`` so that no program
fuses the two differently).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.extend.core import ClosedJaxpr, DebugInfo, Jaxpr, Literal, jaxpr_as_fun

__all__ = ["CHUNK_BYTES", "MAX_CHUNK", "Split", "chunk_limit", "draw_ahead", "largest_divisor",
           "split_step"]

#: Most steps whose randomness is drawn at once, and the most memory those draws may take for
#: all chains (beyond ~100 steps the gain per step is small: 12 µs at 100, 10 µs at 1000).
MAX_CHUNK = 256
CHUNK_BYTES = 8 * 2**20

PyTree = Any


class Split(NamedTuple):
    """A step cut in two: ``pre(key, t) -> residuals`` and
    ``post(residuals, *args) -> step(*args, key, t)``. ``keyed[i]`` says whether residual i
    depends on the key (else on t alone: the same for every chain, so a batched caller keeps
    it unbatched and a branch on it stays a branch); ``nbytes``: the residuals' size."""

    pre: Callable[[jax.Array, jax.Array], list]
    post: Callable[..., Any]
    keyed: tuple[bool, ...]
    nbytes: int


def _nbytes(aval: Any) -> int:
    size = int(np.prod(aval.shape, dtype=np.int64))
    if jnp.issubdtype(aval.dtype, jax.dtypes.prng_key):
        return size * 16  # a typed key's payload: 8 bytes (threefry) or 16 (rbg), at most
    return size * np.dtype(aval.dtype).itemsize


def _abstract(tree: PyTree) -> PyTree:
    return jax.tree.map(lambda x: jax.ShapeDtypeStruct(jnp.shape(x), jnp.result_type(x)), tree)


def split_step(step: Callable[..., Any], args: tuple, key: jax.Array,
               t: jax.Array) -> Split | None:
    """Cut ``step(*args, key, t)`` into known and unknown parts (module docstring).

    ``args`` (pytrees), ``key`` (one typed key) and ``t`` (an int32 scalar) are examples of
    the arguments (only shapes and dtypes are used). Returns None when nothing would be
    hoisted (no equation depends on the key or t alone), and for keys whose draws change
    when batched: JAX batches XLA's RngBitGenerator (``rbg`` keys) by drawing every batch
    member's bits from the batch's first key, so drawing K steps at once would make the
    draws depend on K (on the block size).
    """
    if str(jax.random.key_impl(key)) != "threefry2x32":
        return None
    closed, out_shape = jax.make_jaxpr(step, return_shape=True)(
        *_abstract(args), _abstract(key), _abstract(t))
    jaxpr = closed.jaxpr
    out_tree = jax.tree.structure(out_shape)
    *arg_vars, key_var, t_var = jaxpr.invars
    const = set(jaxpr.constvars)
    known = {key_var, t_var}
    keyed = {key_var}  # known values that depend on the key (not on t alone)
    const_eqns, known_eqns, unknown_eqns = [], [], []
    for eqn in jaxpr.eqns:
        ins = [v for v in eqn.invars if not isinstance(v, Literal)]
        if not eqn.effects and all(v in const for v in ins):
            const_eqns.append(eqn)
            const.update(eqn.outvars)
        elif not eqn.effects and all(v in const or v in known for v in ins):
            known_eqns.append(eqn)
            known.update(eqn.outvars)
            if any(v in keyed for v in ins):
                keyed.update(eqn.outvars)
        else:
            unknown_eqns.append(eqn)
    if not known_eqns:
        return None

    # Residuals: the known values that the unknown side (or the output) reads, in order.
    residuals: list = []
    seen: set = set()
    reads = [v for e in unknown_eqns for v in e.invars] + list(jaxpr.outvars)
    for v in reads:
        if not isinstance(v, Literal) and v in known and v not in seen:
            seen.add(v)
            residuals.append(v)

    def closed_fn(name, invars, outvars, eqns):
        effects = frozenset().union(*(e.effects for e in eqns))
        info = DebugInfo("sgmc._hoist", name, tuple(str(v) for v in invars),
                         tuple(str(v) for v in outvars))
        sub = Jaxpr(jaxpr.constvars, invars, outvars, const_eqns + eqns, effects, info)
        return jaxpr_as_fun(ClosedJaxpr(sub, closed.consts))

    pre_fn = closed_fn("randomness", [key_var, t_var], residuals, known_eqns)
    post_fn = closed_fn("step", residuals + arg_vars, list(jaxpr.outvars), unknown_eqns)

    def pre(k: jax.Array, tt: jax.Array) -> list:
        return list(pre_fn(k, tt))

    def post(res: list, *call_args: Any) -> Any:
        return jax.tree.unflatten(out_tree, post_fn(*res, *jax.tree.leaves(call_args)))

    return Split(pre, post, tuple(v in keyed for v in residuals),
                 sum(_nbytes(v.aval) for v in residuals))


def chunk_limit(split: Split | None, copies: int = 1) -> int:
    """Steps whose randomness to draw at once for ``copies`` vmapped chains: at most
    :data:`MAX_CHUNK` and :data:`CHUNK_BYTES` of draws (1 when nothing is hoisted)."""
    if split is None:
        return 1
    return max(1, min(MAX_CHUNK, CHUNK_BYTES // max(1, split.nbytes * copies)))


def largest_divisor(n: int, at_most: int) -> int:
    """The largest divisor of n that is ≤ at_most (≥ 1)."""
    return max(d for d in range(1, min(n, at_most) + 1) if n % d == 0)


def draw_ahead(pre: Callable[[jax.Array, jax.Array], list], key_at: Callable[[jax.Array], Any],
               t: jax.Array, k: int) -> list:
    """``pre`` of steps t, …, t + k − 1 (key ``key_at(t)``), stacked on a leading axis."""
    ts = t + jnp.arange(k, dtype=jnp.int32)
    return jax.vmap(lambda tt: pre(key_at(tt), tt))(ts)
