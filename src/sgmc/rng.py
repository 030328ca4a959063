"""Where a kernel's step draws its randomness: :class:`Rng`, a key that can replay its draws.

A step's random draws (minibatch indices, Gaussian noise, an index chain's proposals, a
swap's uniform) depend only on its key, never on the chain's state. On XLA:CPU each threefry
hash is its own small kernel, so for a small model they were about half of the step
(logistic regression, d = 54, b = 50: 24 µs per step with them, 6 µs without); drawn for
many steps in one batched call they cost a fraction. So a step takes an :class:`Rng` instead
of a key and draws through it (``rng.normal_like(position)``, ``rng.randint(...)``,
``rng.split()``), and the driver runs it in one of three modes:

* **live** — ``Rng(key)``: every draw is computed where it is asked for, like
  ``jax.random`` on ``key``. Any code can call a step this way (the plain fallback; tests).
* **record** — the driver calls the step once per step index t, under ``vmap`` over a chunk
  of steps, keeping only the draws as outputs. Everything else the step computes is unused
  and removed by the compiler's dead-code elimination, so this costs the draws alone, batched.
* **replay** — the step runs in the loop with an Rng that hands out the recorded draws in the
  order they are asked for (the same Python code asks in the same order), computing none.

A draw made in replay mode is bitwise the draw made in live mode: the same ``jax.random``
calls on the same keys, only batched over steps (threefry draws do not depend on batching).
Two rules for code that draws (tested by the conformance tests):

1. Ask for draws in the step's own trace, not inside ``lax.cond``/``fori_loop``/``scan``
   bodies: a loop or a branch that needs randomness takes a raw key, ``rng.key()`` (itself a
   recorded draw), and uses ``jax.random`` inside.
2. Draws under ``vmap`` (one per replica, say) go through :meth:`Rng.map_split`, which
   records and replays them as one stacked group.

Draw sizes and arguments are read only in live and record modes; in replay mode each popped
draw is checked against the requested shape, so a step that asks in a different order fails
loudly instead of mixing up its draws.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp

__all__ = ["Rng", "Tape", "as_rng", "record", "replay"]

PyTree = Any


class Tape:
    """The draws of one step, in the order they were asked for (record) or are handed out
    (replay). Entries are arrays, pytrees (``normal_like``) or tuples of entries (a
    :meth:`Rng.map_split` group)."""

    def __init__(self, values: Sequence[Any] | None = None):
        self.replaying = values is not None
        self.values: list = list(values) if values is not None else []
        #: What each recorded draw is ("normal", "normal_like", "randint", "key", ...), in
        #: record mode: a coupling of two steps' draws (:mod:`sgmc.tune.selfcheck`) reads it.
        self.kinds: list[str] = []
        self.pos = 0

    def take(self, what: str, shape: tuple | None) -> Any:
        if self.pos >= len(self.values):
            raise RuntimeError(f"the step asked for more draws in replay than it recorded "
                               f"(at {what}); draws must not depend on the state")
        value = self.values[self.pos]
        self.pos += 1
        if shape is not None and tuple(jnp.shape(value)) != tuple(shape):
            raise RuntimeError(f"replayed draw {self.pos - 1} ({what}) has shape "
                               f"{jnp.shape(value)}, asked for {tuple(shape)}: the step asks "
                               "for its draws in a different order than it recorded them")
        return value


class Rng:
    """A source of randomness for one step: a typed PRNG key (live or record mode) or a
    tape of recorded draws (replay mode). See the module docstring."""

    __slots__ = ("_key", "_tape")

    def __init__(self, key: jax.Array | None = None, tape: Tape | None = None):
        if key is None and (tape is None or not tape.replaying):
            raise ValueError("an Rng needs a key unless it replays a tape")
        self._key, self._tape = key, tape

    @property
    def replaying(self) -> bool:
        return self._tape is not None and self._tape.replaying

    def _draw(self, what: str, shape: tuple | None, make: Callable[[jax.Array], Any]) -> Any:
        if self.replaying:
            return self._tape.take(what, shape)
        value = make(self._key)
        if self._tape is not None:
            self._tape.values.append(value)
            self._tape.kinds.append(what)
        return value

    # -- new sources -------------------------------------------------------------------
    def split(self, num: int = 2) -> tuple[Rng, ...]:
        """``num`` independent sources (``jax.random.split``)."""
        if self.replaying:
            return tuple(Rng(None, self._tape) for _ in range(num))
        return tuple(Rng(k, self._tape) for k in jax.random.split(self._key, num))

    def fold_in(self, data: int) -> Rng:
        """A source for ``data`` (``jax.random.fold_in``; ``data`` a Python int)."""
        if self.replaying:
            return Rng(None, self._tape)
        return Rng(jax.random.fold_in(self._key, data), self._tape)

    def key(self) -> jax.Array:
        """A raw key, for randomness inside loops and branches (rule 1); a recorded draw."""
        return self._draw("key", None, lambda k: k)

    # -- draws -------------------------------------------------------------------------
    def normal(self, shape: tuple = (), dtype: Any = jnp.float32) -> jax.Array:
        return self._draw("normal", shape, lambda k: jax.random.normal(k, shape, dtype))

    def uniform(self, shape: tuple = (), dtype: Any = jnp.float32, minval: Any = 0.0,
                maxval: Any = 1.0) -> jax.Array:
        return self._draw("uniform", shape,
                          lambda k: jax.random.uniform(k, shape, dtype, minval, maxval))

    def randint(self, shape: tuple, minval: Any, maxval: Any,
                dtype: Any = jnp.int32) -> jax.Array:
        return self._draw("randint", shape,
                          lambda k: jax.random.randint(k, shape, minval, maxval, dtype))

    def bernoulli(self, p: Any = 0.5, shape: tuple = ()) -> jax.Array:
        return self._draw("bernoulli", shape, lambda k: jax.random.bernoulli(k, p, shape))

    def bits(self, shape: tuple, dtype: Any = jnp.uint32) -> jax.Array:
        return self._draw("bits", shape, lambda k: jax.random.bits(k, shape, dtype))

    def normal_like(self, tree: PyTree) -> PyTree:
        """Independent standard normals shaped like ``tree``. All leaves come from ONE flat
        draw cut into pieces: XLA:CPU compiles each ``random.normal`` separately (about a
        second apiece), so one draw per leaf made a four-leaf network's step take 5 s to
        compile. A single leaf is drawn directly."""
        leaves, treedef = jax.tree.flatten(tree)
        if self.replaying:
            flat = self._tape.take("normal_like", None)
            if len(flat) != len(leaves) or any(jnp.shape(a) != jnp.shape(b)
                                               for a, b in zip(flat, leaves, strict=True)):
                raise RuntimeError("replayed normal_like draw does not match the tree asked "
                                   "for: the step asks for its draws in a different order")
            return jax.tree.unflatten(treedef, flat)

        def make(key):
            if len(leaves) == 1:
                return [jax.random.normal(key, leaves[0].shape, leaves[0].dtype)]
            dtype = jnp.result_type(*leaves)
            flat = jax.random.normal(key, (sum(x.size for x in leaves),), dtype)
            out, start = [], 0
            for x in leaves:
                out.append(flat[start:start + x.size].reshape(x.shape).astype(x.dtype))
                start += x.size
            return out

        return jax.tree.unflatten(treedef, self._draw("normal_like", None, make))

    # -- vectorised draws --------------------------------------------------------------
    def map_split(self, num: int, fn: Callable[..., Any], *args: Any,
                  in_axes: Any = 0) -> Any:
        """``vmap`` of ``fn(rng_i, *args)`` over ``num`` sources split from this one
        (``jax.random.split(key, num)``), e.g. one dynamics step per replica. ``in_axes``
        are those of ``args``. The group's draws are recorded and replayed stacked."""
        axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
        if self.replaying:
            group = self._tape.take("map_split", None)
            return jax.vmap(lambda vals, *a: fn(Rng(None, Tape(vals)), *a),
                            in_axes=(0, *axes))(list(group), *args)
        keys = jax.random.split(self._key, num)
        if self._tape is None:
            return jax.vmap(lambda k, *a: fn(Rng(k), *a), in_axes=(0, *axes))(keys, *args)

        def recorded(k, *a):
            tape = Tape()
            out = fn(Rng(k, tape), *a)
            return out, tape.values

        out, group = jax.vmap(recorded, in_axes=(0, *axes))(keys, *args)
        self._tape.values.append(tuple(group))
        self._tape.kinds.append("map_split")
        return out


def as_rng(rng: Rng | jax.Array) -> Rng:
    """An :class:`Rng` as given, or a live one on a raw key (so steps accept keys too)."""
    return rng if isinstance(rng, Rng) else Rng(rng)


def record(step: Callable[[Rng], Any], key: jax.Array) -> list:
    """The draws ``step(rng)`` asks for on ``key``, in order (its other outputs dropped)."""
    tape = Tape()
    step(Rng(key, tape))
    return tape.values


def replay(step: Callable[[Rng], Any], draws: Sequence[Any]) -> Any:
    """``step(rng)`` with its draws handed out from ``draws`` (from :func:`record`)."""
    tape = Tape(draws)
    out = step(Rng(None, tape))
    if tape.pos != len(tape.values):
        raise RuntimeError(f"the step used {tape.pos} of its {len(tape.values)} recorded "
                           "draws in replay: draws must not depend on the state")
    return out
