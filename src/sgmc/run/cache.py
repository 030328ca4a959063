"""Answers ``sgmc.sample`` works out from shapes alone, remembered between calls.

Before a run, ``sample`` traces the model and the sampler several times (``eval_shape`` of
the chains' initial states and of a draw, the model's terms at ``init``, whether the model
convolves): ~1–5 ms each, eager, so that a short run of a tiny model spent far longer
there than in its compiled program. None of these answers depends on a value: only on the
problem *object* (its functions and data, frozen), on the pytree structure of the sampler
(its class and static fields: ``jax.tree.structure``) and on the shapes and dtypes
(:func:`signature`) of the sampler's hyper-parameters and of the positions — the key under
which ``jax.jit`` itself reuses a trace. So they are remembered under exactly that key,
plus the problem's identity (checked through a weak reference, so that a new problem at a
recycled ``id`` misses) and JAX's 64-bit flag. Checks that read values (finite energies at
``init``, step sizes > 0, ...) are not cached here and run on every call.

The block programs a run compiles are remembered here too (:mod:`sgmc.run.programs`), so
that a repeated call dispatches the program JAX already knows. ``jax.clear_caches()`` does
not reach them: :func:`clear` does.

The cache is small and bounded (least recently used first out, :data:`SIZE` entries; an
entry whose problem has been garbage-collected is dropped at the next miss);
what cannot be keyed (a leaf that is neither an array nor a number, an unhashable static
field, a problem that cannot be weakly referenced) is simply computed every time.
"""

from __future__ import annotations

import threading
import weakref
from collections import Counter, OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

import jax

__all__ = ["SIZE", "clear", "remember", "signature"]

#: Entries kept (all kinds together); the least recently used goes first.
SIZE = 128

_entries: OrderedDict = OrderedDict()
_lock = threading.Lock()
#: Private counters of hits and misses per kind, for tests: ``_stats[("hit", kind)]``.
_stats: Counter = Counter()


def signature(tree: Any) -> Hashable | None:
    """What a trace of ``tree`` depends on: its structure and each leaf's shape, dtype and
    weak type (JAX's abstract value, as ``jax.jit`` keys its cache); None when that cannot
    be formed (a leaf that is not an array or a number, an unhashable static field)."""
    try:
        leaves, treedef = jax.tree.flatten(tree)
        key = (treedef, tuple(jax.typeof(x) for x in leaves))
        hash(key)
    except Exception:  # not keyable: the caller computes without the cache
        return None
    return key


def remember(kind: str, problem: Any, key: Hashable | None, compute: Callable[[], Any]) -> Any:
    """``compute()``, or the value it returned before for the same ``kind``, ``problem``
    object (by identity) and ``key`` (None: not cacheable, always computed). Only returned
    values are remembered: a call that raises raises again next time."""
    if key is None:
        _stats[("miss", kind)] += 1
        return compute()
    try:
        ref = weakref.ref(problem) if problem is not None else None
    except TypeError:  # not weakly referenceable: no caching
        _stats[("miss", kind)] += 1
        return compute()
    full = (kind, id(problem), bool(jax.config.jax_enable_x64), key)
    with _lock:
        found = _entries.get(full)
        if found is not None and (ref is None or found[0]() is problem):
            _entries.move_to_end(full)
            _stats[("hit", kind)] += 1
            return found[1]
    _stats[("miss", kind)] += 1
    value = compute()
    with _lock:
        # Entries of problems that are gone go first: their values (compiled programs among
        # them, with any arrays the model's functions close over) are no use to anyone.
        for gone in [k for k, (r, _) in _entries.items() if r is not _none and r() is None]:
            del _entries[gone]
        _entries[full] = (ref if ref is not None else _none, value)
        _entries.move_to_end(full)
        while len(_entries) > SIZE:
            _entries.popitem(last=False)
    return value


def _none() -> None:
    """The 'weak reference' of entries that belong to no problem."""
    return None


def clear() -> None:
    """Forget every entry and counter (tests; after monkeypatching a model's code)."""
    with _lock:
        _entries.clear()
        _stats.clear()
