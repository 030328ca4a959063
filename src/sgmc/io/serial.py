"""Plain-data forms of pytrees and NumPy values, for files that never run code when read.

A pytree of arrays is described as JSON (:func:`encode_tree`) with its leaves kept aside
in a list, every leaf under its path: dicts, lists, tuples, namedtuples and None as such,
any other pytree node (an Equinox module, a Flax NNX ``State``, a registered dataclass) by
its type's name and its children's keys. :func:`decode_tree` rebuilds dicts, lists, tuples
and None (another node comes back as a dict of its children: no code is run or imported to
read a file); :func:`tree_like` rebuilds any structure from a template, matching leaves by
their names (:func:`leaf_names`). :func:`tree_spec` / :func:`tree_from_spec` do the same
for JAX's leaf order. Results (``Result.save``), draws folders and checkpoints all store
trees this way.
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

__all__ = ["decode_tree", "encode_tree", "json_default", "leaf_names", "naming",
           "tree_from_spec", "tree_like", "tree_spec", "write_atomic", "write_json_atomic"]

PyTree = Any
_UMASK = os.umask(0o022)  # the process's umask (read by setting it, so set it back)
os.umask(_UMASK)


def _is_leaf(x: Any) -> bool:
    """True for a leaf of JAX's pytrees (an array, a scalar, an unregistered object)."""
    return x is not None and jax.tree_util.treedef_is_leaf(jax.tree.structure(x))


def _children(node: Any) -> list[tuple[Any, Any]]:
    """(key entry, child) of a registered pytree node, one level down, in JAX's order."""
    kids, _ = jax.tree_util.tree_flatten_with_path(node, is_leaf=lambda x: x is not node)
    return [(path[0], child) for path, child in kids]


def _key_json(key: Any) -> list:
    """A key entry of a pytree path as JSON: [kind, value]."""
    if isinstance(key, jax.tree_util.GetAttrKey):
        return ["attr", key.name]
    if isinstance(key, jax.tree_util.SequenceKey):
        return ["index", int(key.idx)]
    if isinstance(key, jax.tree_util.DictKey):
        k = key.key
        return ["key", k if isinstance(k, (str, int)) and not isinstance(k, bool) else str(k)]
    if isinstance(key, jax.tree_util.FlattenedIndexKey):
        return ["index", int(key.key)]
    return ["other", str(key)]


def _is_wrapper(keys: list) -> bool:
    """A node holding one array as ``.value`` (Flax NNX's ``Param``): named, and loaded
    without a template, as that array."""
    return len(keys) == 1 and keys[0] == ["attr", "value"]


def _name(prefix: str, key: list) -> str:
    """A leaf's readable name, one key further: ``a.b`` for keys and attributes, ``a[0]``
    for positions (``x0`` at the top level)."""
    kind, value = key
    if kind == "index":
        return f"{prefix}[{value}]" if prefix else f"x{value}"
    return f"{prefix}.{value}" if prefix else str(value)


def encode_tree(tree: PyTree, leaves: list, paths: list | None = None,
                names: list | None = None, convert: bool = True, _path: tuple = (),
                _name_: str = "") -> Any:
    """A JSON description of a pytree of arrays, its leaves appended to ``leaves``.

    Dicts with string keys, lists, tuples, namedtuples (described as dicts) and None are
    described as such; any other registered pytree node (an Equinox module, a Flax NNX
    ``State``, a dataclass) as ``{"node": {"type", "keys", "children"}}``: its type's name
    (never imported) and its children by their path keys, so that the file holds every
    leaf under its path but the node is rebuilt only from a template (:func:`tree_like`).
    ``convert=False`` keeps the leaves as they are (no copy to the host). ``paths`` /
    ``names``, if given, receive each leaf's JAX key path and readable name
    (``a.b``, ``a[0]``, ``x0`` for a top-level position, ``theta`` for a bare array)."""
    def down(child, key_entry, key):
        return encode_tree(child, leaves, paths, names, convert, (*_path, key_entry),
                           _name(_name_, key))

    if tree is None:
        return {"none": None}
    if isinstance(tree, tuple) and hasattr(tree, "_fields"):
        return {"dict": {k: down(v, jax.tree_util.GetAttrKey(k), ["key", k])
                         for k, v in tree._asdict().items()}}
    if isinstance(tree, Mapping) and _is_leaf(tree):
        raise TypeError(f"cannot store a {type(tree).__name__}: a mapping that is not a "
                        "JAX pytree")
    if isinstance(tree, dict) and all(isinstance(k, str) for k in tree):
        return {"dict": {k: down(v, jax.tree_util.DictKey(k), ["key", k])
                         for k, v in tree.items()}}
    if type(tree) in (list, tuple):
        kind = "list" if isinstance(tree, list) else "tuple"
        return {kind: [down(v, jax.tree_util.SequenceKey(i), ["index", i])
                       for i, v in enumerate(tree)]}
    if not _is_leaf(tree):
        kids = _children(tree)
        keys = [_key_json(k) for k, _ in kids]
        if _is_wrapper(keys):
            children = [encode_tree(kids[0][1], leaves, paths, names, convert,
                                    (*_path, kids[0][0]), _name_)]
        else:
            children = [down(child, k, key) for (k, child), key in zip(kids, keys,
                                                                         strict=True)]
        cls = type(tree)
        return {"node": {"type": f"{cls.__module__}.{cls.__qualname__}", "keys": keys,
                         "children": children}}
    leaf = np.asarray(tree) if convert else tree
    if convert and leaf.dtype == object:
        raise TypeError(f"cannot store a leaf of type {type(tree).__name__} "
                        f"({_name_ or 'the position'}): only arrays and numbers")
    leaves.append(leaf)
    if paths is not None:
        paths.append(_path)
    if names is not None:
        names.append(_name_ or "theta")
    return {"leaf": len(leaves) - 1}


def decode_tree(spec: Any, leaves: list) -> PyTree:
    """The tree :func:`encode_tree` described, built of dicts, lists, tuples and None: a
    node of another type (``"node"``) comes back as a dict of its children by key (a list
    when they are positions; its one array for a ``.value`` wrapper) — pass the file's
    leaves through :func:`tree_like` to rebuild the type itself."""
    (kind, body), = spec.items()
    if kind == "none":
        return None
    if kind == "leaf":
        return leaves[body]
    if kind == "dict":
        return {k: decode_tree(v, leaves) for k, v in body.items()}
    if kind == "node":
        keys = body["keys"]
        kids = [decode_tree(v, leaves) for v in body["children"]]
        if _is_wrapper(keys):
            return kids[0]
        if keys and all(k[0] == "index" for k in keys):
            return kids
        return {str(k[1]): v for k, v in zip(keys, kids, strict=True)}
    items = [decode_tree(v, leaves) for v in body]
    return items if kind == "list" else tuple(items)


def leaf_names(tree: PyTree) -> list[str]:
    """Each leaf's readable name (see :func:`encode_tree`), in JAX's leaf order."""
    names: list[str] = []
    _, order = tree_spec(tree, names)
    out = [""] * len(order)
    for k, i in enumerate(order):
        out[i] = names[k]
    return out


def tree_like(like: PyTree, names: list[str], leaves: list, what: str = "the file") -> PyTree:
    """``like``'s structure (a template: any pytree of that structure, e.g. the ``init``
    of the run, or one draw) with ``leaves`` (in JAX's leaf order, named ``names``),
    matched by name. Raises a ValueError when the names differ."""
    want = leaf_names(like)
    treedef = jax.tree.structure(like)
    if want != list(names):
        if sorted(want) != sorted(names) or len(set(names)) != len(names):
            missing = [n for n in want if n not in names][:5]
            extra = [n for n in names if n not in want][:5]
            raise ValueError(
                f"like= does not fit {what}: it has {len(want)} arrays, the file "
                f"{len(names)}" + (f"; the template's {missing} are not in the file"
                                   if missing else "")
                + (f"; the file's {extra} are not in the template" if extra else ""))
        by_name = dict(zip(names, leaves, strict=True))
        leaves = [by_name[n] for n in want]
    return jax.tree.unflatten(treedef, list(leaves))


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


def tree_spec(tree: PyTree, names: list | None = None) -> tuple[Any, list[int]]:
    """A JSON description of ``tree``'s structure (:func:`encode_tree`) and, for each of its
    leaves in the description's order, the leaf's index in JAX's leaf order."""
    paths: list = []
    spec = encode_tree(tree, [], paths, names, convert=False)
    where = {jax.tree_util.keystr(p): i for i, (p, _) in
             enumerate(jax.tree_util.tree_flatten_with_path(tree)[0])}
    try:
        order = [where[jax.tree_util.keystr(p)] for p in paths]
    except KeyError as err:
        raise TypeError(f"cannot describe the pytree of {type(tree).__name__}: its leaf "
                        f"{err} is not where JAX finds it") from None
    if sorted(order) != list(range(len(where))):
        raise TypeError(f"cannot describe the pytree of {type(tree).__name__}: its leaves "
                        "do not have distinct paths")
    return spec, order


def tree_from_spec(spec: Any, order: list[int], leaves: list) -> PyTree:
    """Inverse of :func:`tree_spec`: the tree with ``leaves`` (in JAX's leaf order)."""
    return decode_tree(spec, [leaves[i] for i in order])
