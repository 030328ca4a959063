"""Argument checks run before anything is compiled; each names the argument and its range."""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable
from typing import Any


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
