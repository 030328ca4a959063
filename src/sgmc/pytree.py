"""Frozen dataclasses that are JAX pytrees: how every sgmc piece (and yours) is declared.

Samplers, estimators, dynamics, schedules and problems are all such dataclasses: their
numeric hyper-parameters (step size, friction, temperature, data arrays) are pytree
*leaves*, so changing them never recompiles, while their structure (batch size,
integrator, which estimator, user functions) is *static* metadata that keys the JIT cache.

Rebuilding a node inside JAX transformations bypasses ``__init__``/``__post_init__``, so
constructors may validate their (concrete) arguments without ever seeing a tracer.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax

__all__ = ["pytree_dataclass", "replace", "static"]


def static(default: Any = dataclasses.MISSING) -> Any:
    """A dataclass field that is static (part of the compiled program's identity)."""
    if default is dataclasses.MISSING:
        return dataclasses.field(metadata={"static": True})
    return dataclasses.field(default=default, metadata={"static": True})


def pytree_dataclass(cls: type) -> type:
    """Make ``cls`` a frozen dataclass registered as a pytree.

    Fields declared with :func:`static` are metadata; all others are children.
    """
    cls = dataclasses.dataclass(frozen=True)(cls)
    fields = dataclasses.fields(cls)
    data = tuple(f.name for f in fields if not f.metadata.get("static", False))
    meta = tuple(f.name for f in fields if f.metadata.get("static", False))

    def flatten_with_keys(obj):
        children = [(jax.tree_util.GetAttrKey(n), getattr(obj, n)) for n in data]
        return children, tuple(getattr(obj, n) for n in meta)

    def flatten(obj):
        return [getattr(obj, n) for n in data], tuple(getattr(obj, n) for n in meta)

    def unflatten(aux, children):
        obj = object.__new__(cls)
        for n, v in zip(data, children, strict=True):
            object.__setattr__(obj, n, v)
        for n, v in zip(meta, aux, strict=True):
            object.__setattr__(obj, n, v)
        return obj

    jax.tree_util.register_pytree_with_keys(cls, flatten_with_keys, unflatten, flatten)
    return cls


def replace(obj: Any, **changes: Any) -> Any:
    """``dataclasses.replace`` for the frozen pytree dataclasses above (re-validates)."""
    return dataclasses.replace(obj, **changes)
