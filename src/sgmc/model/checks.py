"""Checks of a model at a point, and the words of their errors.

Before a run compiles anything, the driver evaluates each term of the energy at the starting
point by abstract tracing (``jax.eval_shape``: no FLOPs, no device memory), so that a model
written with NumPy, a log-likelihood returning a vector, or an integer energy fails at once
with a message naming the user's function and what it must return — not deep inside a
compiled scan (the same checks tell the driver whether ``init`` is one point or a stack of
them). :meth:`sgmc.model.oracle.Problem.check_params` builds the terms (it knows the
problem's scales and names); this module checks one term (:func:`check_term`) and holds the
error type and the helpers that the driver's own messages share (:mod:`sgmc.run.starts`,
:mod:`sgmc.run.optimize`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

PyTree = Any

__all__ = ["TRACER_ERRORS", "ModelShapeError", "check_term", "leading_size", "shapes_text",
           "traced"]


class ModelShapeError(ValueError):
    """A term of the model (``loglik``, ``logprior``, ``f``) returns a value of the wrong
    shape: the model's fault, or the point's (:meth:`Problem.check_params
    <sgmc.model.oracle.Problem.check_params>`). ``term`` names the user's function,
    ``requirement`` says what it must return, ``returned`` is the shape it returned (None
    where not known)."""

    def __init__(self, message: str, term: str | None = None,
                 requirement: str | None = None, returned: tuple | None = None) -> None:
        super().__init__(message)
        self.term, self.requirement, self.returned = term, requirement, returned


#: JAX's errors for a traced value used where a concrete one is needed: NumPy on a tracer,
#: ``float()`` / ``int()`` / ``bool()`` of one, a Python ``if`` on one.
TRACER_ERRORS = (jax.errors.TracerArrayConversionError, jax.errors.ConcretizationTypeError,
                 jax.errors.TracerBoolConversionError,
                 jax.errors.TracerIntegerConversionError)


def check_term(fn: Callable, params: PyTree, short: str, contract: str,
               name: str = "init") -> None:
    """Raise if the term ``fn`` (the user's function ``short``, which must do ``contract``)
    is not a floating scalar at the point ``params`` (named ``name`` in messages).

    Raises:
        TypeError: ``fn`` is not traceable by JAX (:func:`traced`), or returns an integer
            (it is differentiated).
        ModelShapeError: (a ValueError) ``fn`` returns a non-scalar at ``params``.
        ValueError: evaluating ``fn`` at ``params`` fails otherwise.
    """
    out = traced(fn, params, short, name)
    if out.shape != ():
        raise ModelShapeError(f"{short} returned shape {tuple(out.shape)} at {name} "
                              f"({shapes_text(params)}): {contract}"
                              + _extra_axis_hint(fn, params, name),
                              term=short, requirement=contract,
                              returned=tuple(out.shape))
    if not jnp.issubdtype(out.dtype, jnp.floating):  # it is differentiated
        raise TypeError(f"{short} returned dtype {out.dtype} at {name}: it must return "
                        "a floating-point scalar (e.g. 0.0, not 0)")


def traced(fn: Callable, params: PyTree, short: str, name: str) -> jax.ShapeDtypeStruct:
    """``fn(params)``'s shape and dtype (``jax.eval_shape``); a TypeError saying to use
    ``jax.numpy`` if the user's function ``short`` is not traceable, a ValueError naming the
    point ``name`` if it fails otherwise."""
    try:
        return jax.eval_shape(fn, params)
    except ModelShapeError:
        raise
    except TRACER_ERRORS as err:
        raise TypeError(
            f"{short} cannot be traced by JAX ({type(err).__name__}): the model must use "
            "jax.numpy (import jax.numpy as jnp; jnp.exp, jnp.dot, ...) instead of NumPy "
            "(np.exp, np.dot, ...) on the parameters, and no float(), int(), bool(), .item() "
            "or Python if/while on values computed from them (jnp.where or jax.lax.cond "
            "instead); JAX's error, chained above, shows the line") from err
    except Exception as err:  # the user's function rejected the point
        raise ValueError(f"{name} is not a point the model accepts: evaluating the energy "
                         f"({short}) at it failed with {type(err).__name__}: {err}") from err


def shapes_text(params: PyTree) -> str:
    """``params``' shape, or its leaves' shapes (for messages)."""
    shapes = [tuple(np.shape(x)) for x in jax.tree.leaves(params)]
    return (f"shape {shapes[0]}" if len(shapes) == 1 else
            f"leaves shaped {', '.join(map(str, shapes))}")


def leading_size(params: PyTree) -> int | None:
    """The leading axis's size if every leaf has one and they agree (``params`` might be a
    stack of points), else None."""
    sizes = {np.shape(x)[0] if np.ndim(x) else None for x in jax.tree.leaves(params)}
    return sizes.pop() if len(sizes) == 1 and None not in sizes else None


def _extra_axis_hint(fn: Callable, params: PyTree, name: str) -> str:
    """When ``fn`` (non-scalar at ``params``) is a scalar at ``params[0]``: a hint that
    ``params`` may hold several points on a leading axis; else ''."""
    k = leading_size(params)
    if k is None:
        return ""
    first = jax.tree.map(lambda x: x[0], params)
    try:
        out = jax.eval_shape(fn, first)
    except Exception:  # any failure: no hint
        return ""
    if out.shape != ():
        return ""
    return (f" (a scalar at {name}[0], {shapes_text(first)}: if {name} holds {k} "
            f"points on its leading axis, pass one point, or one per chain stacked on a "
            f"leading axis of size num_chains)")
