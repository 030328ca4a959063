"""Plain-data forms of pytrees and NumPy values, for files that never run code when read.

A pytree of arrays made of dicts, lists, tuples, namedtuples and None is described as JSON
(:func:`encode_tree`) with its leaves kept aside in a list, and rebuilt by
:func:`decode_tree`; :func:`tree_spec` / :func:`tree_from_spec` do the same for JAX's leaf
order. Results (``Result.save``), streamed draws and checkpoints all store trees this way.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Callable, Iterator, Mapping
from typing import IO, Any

import jax
import numpy as np

__all__ = ["decode_tree", "encode_tree", "json_default", "naming", "tree_from_spec",
           "tree_spec", "write_atomic", "write_json_atomic"]

PyTree = Any
_UMASK = os.umask(0o022)  # the process's umask (read by setting it, so set it back)
os.umask(_UMASK)


def encode_tree(tree: PyTree, leaves: list) -> Any:
    """A JSON description of a pytree of arrays (dict / list / tuple / namedtuple / None)."""
    if tree is None:
        return {"none": None}
    if isinstance(tree, tuple) and hasattr(tree, "_fields"):
        return {"dict": {k: encode_tree(v, leaves) for k, v in tree._asdict().items()}}
    if isinstance(tree, Mapping):
        for k in tree:
            if not isinstance(k, str):
                raise TypeError(f"only string dictionary keys can be saved, got {k!r}")
        return {"dict": {k: encode_tree(v, leaves) for k, v in tree.items()}}
    if isinstance(tree, (list, tuple)):
        kind = "list" if isinstance(tree, list) else "tuple"
        return {kind: [encode_tree(v, leaves) for v in tree]}
    leaves.append(np.asarray(tree))
    return {"leaf": len(leaves) - 1}


def decode_tree(spec: Any, leaves: list) -> PyTree:
    (kind, body), = spec.items()
    if kind == "none":
        return None
    if kind == "leaf":
        return leaves[body]
    if kind == "dict":
        return {k: decode_tree(v, leaves) for k, v in body.items()}
    items = [decode_tree(v, leaves) for v in body]
    return items if kind == "list" else tuple(items)


def json_default(obj: Any) -> Any:
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, np.generic):
        return obj.item()
    raise TypeError(f"cannot store {type(obj).__name__} in result metadata")


@contextlib.contextmanager
def naming(path: str) -> Iterator[None]:
    """Re-raise an OSError that names no file (those of ``os.write``, ``os.pwrite``,
    ``fsync``… do not) as one naming ``path``, the original as its cause."""
    try:
        yield
    except OSError as err:
        if err.filename is None:
            raise OSError(err.errno, err.strerror or str(err), path) from err
        raise


def write_atomic(path: str, write: Callable[[IO], None], mode: str = "wb",
                 replace: Callable[[str, str], None] = os.replace) -> None:
    """Write a file by ``write(fh)`` into a uniquely named temporary file next to ``path``
    (``BASENAME.XXXXXXXX.tmp``, so two processes never share one), fsync it, then
    ``replace(tmp, path)`` (a rename over ``path``: never half a file there). The temporary
    file is removed if anything fails, and the error raised (an OSError names a file:
    ``path`` unless it named one)."""
    folder, base = os.path.split(os.path.abspath(path))
    with naming(path):
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=base + ".", suffix=".tmp")
        try:
            if hasattr(os, "fchmod"):  # mkstemp creates 0600; give what open() would
                os.fchmod(fd, 0o666 & ~_UMASK)
            with os.fdopen(fd, mode) as fh:
                write(fh)
                fh.flush()
                os.fsync(fh.fileno())
            replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.remove(tmp)
            raise


def write_json_atomic(path: str, obj: Any) -> None:
    """Write JSON atomically (:func:`write_atomic`: never half a file at ``path``)."""
    write_atomic(path, lambda fh: json.dump(obj, fh, default=json_default), mode="w")


def tree_spec(tree: PyTree) -> tuple[Any, list[int]]:
    """A JSON description of ``tree``'s structure (dicts, lists, tuples, None) and, for each
    of its leaves in the description's order, the leaf's index in JAX's leaf order."""
    leaves, treedef = jax.tree.flatten(tree)
    order: list = []
    spec = encode_tree(jax.tree.unflatten(treedef, list(range(len(leaves)))), order)
    return spec, [int(i) for i in order]


def tree_from_spec(spec: Any, order: list[int], leaves: list) -> PyTree:
    """Inverse of :func:`tree_spec`: the tree with ``leaves`` (in JAX's leaf order)."""
    return decode_tree(spec, [leaves[i] for i in order])
