"""Argument checks run before anything is compiled; each names the argument and its range."""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np


def _is_real(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def real(name: str, value: Any, *, lo: float = -math.inf, hi: float = math.inf,
         lo_open: bool = False, hi_open: bool = False) -> float:
    """Check that ``value`` is a finite real number in the given interval; return it as float."""
    if hasattr(value, "shape") and getattr(value, "shape", None) == ():
        value = value.item()
    if not _is_real(value) or not math.isfinite(float(value)):
        raise TypeError(f"{name} must be a finite real number, got {value!r}")
    v = float(value)
    if (v < lo or (lo_open and v == lo)) or (v > hi or (hi_open and v == hi)):
        left = "(" if lo_open else "["
        right = ")" if hi_open else "]"
        raise ValueError(f"{name} must lie in {left}{lo}, {hi}{right}, got {v!r}")
    return v


def positive(name: str, value: Any) -> float:
    return real(name, value, lo=0.0, lo_open=True)


def nonnegative(name: str, value: Any) -> float:
    return real(name, value, lo=0.0)


def integer(name: str, value: Any, *, lo: int | None = None, hi: int | None = None) -> int:
    """Check that ``value`` is an integer in ``[lo, hi]``; return it as int."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    v = int(value)
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        lo_s = "-inf" if lo is None else str(lo)
        hi_s = "inf" if hi is None else str(hi)
        raise ValueError(f"{name} must be an integer in [{lo_s}, {hi_s}], got {v}")
    return v


def choice(name: str, value: Any, options: Iterable[Any]) -> Any:
    options = tuple(options)
    if value not in options:
        raise ValueError(f"{name} must be one of {options!r}, got {value!r}")
    return value


def callable_(name: str, value: Any) -> Any:
    if not callable(value):
        raise TypeError(f"{name} must be callable, got {type(value).__name__}")
    return value


def interval(name: str, value: Any) -> tuple[float, float]:
    """A pair (lo, hi) of real numbers with lo < hi."""
    try:
        lo, hi = value
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a pair (lo, hi), got {value!r}") from None
    lo, hi = real(f"{name} lo", lo), real(f"{name} hi", hi)
    if not lo < hi:
        raise ValueError(f"{name} must satisfy lo < hi, got {value!r}")
    return lo, hi


def _rows(rows: np.ndarray, bad: np.ndarray) -> str:
    """``rows`` (global row numbers) where ``bad`` is true, the first few."""
    hit = rows[np.flatnonzero(bad)]
    shown = ", ".join(str(int(r)) for r in hit[:5])
    return f"row {shown}" if hit.size == 1 else (
        f"rows {shown}" + (f" (first 5 of {hit.size})" if hit.size > 5 else ""))


def data_array(where: str, value: Any, rows: np.ndarray | None = None,
               float_dtype: Any = None) -> np.ndarray:
    """``value`` (a leaf of a dataset, rows on its leading axis) on the host as the dtype it
    will have on the device, checked *after* the cast: JAX's canonical dtype (without 64-bit
    mode int64 becomes int32 and float64 float32; ``float_dtype`` overrides the floats').

    Raises TypeError for complex, string or object data, and ValueError for NaN or inf
    values, for integers the cast would wrap (outside the device type's range) and for
    floats it would turn into inf (beyond float32's largest value). ``where`` names the leaf;
    ``rows`` are the global row numbers of ``value``'s rows (default 0, 1, ...), named in
    the message.
    """
    arr = np.asarray(value)
    dtype = arr.dtype
    if dtype.kind == "c":
        raise TypeError(f"{where} has complex dtype {dtype}; data must be real (store the real "
                        "and imaginary parts as two arrays)")
    if dtype.kind not in "biuf" and not jnp.issubdtype(dtype, jnp.floating):
        raise TypeError(f"{where} must be a numeric array (bool, integer or floating point), "
                        f"got dtype {dtype}")
    floating = jnp.issubdtype(dtype, jnp.floating)
    target = np.dtype(float_dtype if floating and float_dtype is not None
                      else jax.dtypes.canonicalize_dtype(dtype))
    if rows is None:
        rows = np.arange(arr.shape[0] if arr.ndim else 1)

    def per_row(mask):
        return mask.reshape(mask.shape[0], -1).any(axis=1) if arr.ndim else mask.reshape(1)

    if floating:
        finite = np.isfinite(arr)
        if not finite.all():
            raise ValueError(f"{where} contains {int(finite.size - finite.sum())} non-finite "
                             f"values (NaN or inf), in {_rows(rows, per_row(~finite))}; data "
                             "must be finite")
        with np.errstate(over="ignore"):
            out = arr.astype(target)
        lost = ~np.isfinite(out)
        if lost.any():
            big = float(np.max(np.abs(arr[lost])))
            x64 = ("" if float_dtype is not None else
                   " (or enable 64-bit mode: jax.config.update('jax_enable_x64', True))")
            raise ValueError(f"{where} has values beyond {target}'s range (largest finite "
                             f"{np.finfo(target).max!s}; found {big:g}, in "
                             f"{_rows(rows, per_row(lost))}), which would be inf on the "
                             f"device; rescale the data{x64}")
        return out
    if dtype.kind in "iu" and target != dtype:
        info = np.iinfo(target)
        outside = (arr < info.min) | (arr > info.max)
        if outside.any():
            raise ValueError(f"{where} has integers outside the range of {target} on the "
                             f"device, [{info.min}, {info.max}] (found {arr.min()} .. "
                             f"{arr.max()}, in {_rows(rows, per_row(outside))}), which the "
                             "cast would wrap; store them as floats, or enable 64-bit mode "
                             "(jax.config.update('jax_enable_x64', True))")
    return arr.astype(target)
