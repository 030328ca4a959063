"""Where a run's kept draws go: host memory, or ``.npy`` files on disk (streaming).

The driver hands every finished block's kept draws to a *sink* as host arrays: the draws
(a pytree, leaves (num_chains, n, ...)), the per-draw statistics (dict of (num_chains, n, ...),
``grad_evals`` among them) and the step of each draw (n,). :class:`MemorySink` keeps the blocks
in a list; :class:`DiskSink` writes them into preallocated memory-mapped ``.npy`` files in a
folder, so that host memory does not grow with the run's length and every written draw
survives a crash. A stream folder is also a saved result: :func:`load_stream` (and
``sgmc.Result.load(folder)``) opens it with the draws memory-mapped, not read.

Stream folder layout: ``header.json`` (format, the draws' tree structure, how many draws are
written, the run's metadata once it finished), ``samples_{i}.npy`` (leaf i of the draws in
JAX's leaf order), ``info_{key}.npy`` and ``step.npy``.
"""

from __future__ import annotations

import json
import os
from typing import Any

import jax
import numpy as np

from ._serial import tree_from_spec, tree_spec, write_json_atomic
from .result import Result

PyTree = Any
STREAM_FORMAT = "sgmc.Result/stream1"


class MemorySink:
    """Kept draws as a list of host blocks, concatenated when asked."""

    def __init__(self, blocks: list | None = None) -> None:
        self.blocks = list(blocks or [])

    @property
    def count(self) -> int:
        return sum(len(b[2]) for b in self.blocks)

    def append(self, samples: PyTree, info: dict, steps: np.ndarray) -> None:
        self.blocks.append((samples, info, steps))

    def truncate(self, n: int) -> None:
        """Keep only the first ``n`` draws (blocks never straddle ``n`` in the driver)."""
        while self.blocks and self.count > n:
            self.blocks.pop()

    def arrays(self) -> tuple[PyTree, dict, np.ndarray] | None:
        """(draws, info, steps) of everything kept, or None when nothing was."""
        if not self.blocks:
            return None
        if len(self.blocks) > 1:  # concatenate once, keep the result (checkpoints reuse it)
            self.blocks = [jax.tree.map(  # the draw axis: 1, after chains; steps have only it
                lambda *b: np.concatenate(b, axis=0 if b[0].ndim == 1 else 1), *self.blocks)]
        return self.blocks[0]

    def close(self, meta: dict) -> None:
        pass


class DiskSink:
    """Kept draws written into memory-mapped ``.npy`` files in ``folder`` (see module doc)."""

    def __init__(self, folder: str, total: int, count: int = 0, treedef=None) -> None:
        """A new stream into ``folder`` (which must not hold one), or — with ``count`` > 0 and
        the draws' ``treedef`` — an existing stream continued after its first ``count`` draws
        (later draws a killed run may have written are overwritten)."""
        self.folder = os.fspath(folder)
        self.total = int(total)  # draws per chain the finished run will hold
        self.count = int(count)
        self._files: dict | None = None  # opened on first use: shapes come with the first draws
        self._treedef = treedef
        if self.count:
            self._reopen()

    def _path(self, name: str) -> str:
        return os.path.join(self.folder, f"{name}.npy")

    def _reopen(self) -> None:
        with open(os.path.join(self.folder, "header.json")) as fh:
            header = json.load(fh)
        names = [f"samples_{i}" for i in range(header["num_leaves"])]
        names += [f"info_{k}" for k in header["info"]] + ["step"]
        self._files = {k: np.load(self._path(k), mmap_mode="r+") for k in names}
        self._write_header(None)

    def _open(self, samples: PyTree, info: dict) -> None:
        leaves, self._treedef = jax.tree.flatten(samples)
        named = {f"samples_{i}": x for i, x in enumerate(leaves)}
        named.update({f"info_{k}": v for k, v in info.items()})
        os.makedirs(self.folder, exist_ok=True)
        files = {}
        for k, x in named.items():
            files[k] = np.lib.format.open_memmap(
                self._path(k), mode="w+", dtype=x.dtype, shape=(x.shape[0], self.total,
                                                                *x.shape[2:]))
        files["step"] = np.lib.format.open_memmap(self._path("step"), mode="w+",
                                                  dtype=np.int64, shape=(self.total,))
        self._files = files
        spec, order = tree_spec(samples)
        write_json_atomic(os.path.join(self.folder, "header.json"), {
            "format": STREAM_FORMAT, "spec": spec, "order": order, "num_leaves": len(leaves),
            "info": sorted(info), "count": 0, "num_draws": self.total, "meta": None})

    def append(self, samples: PyTree, info: dict, steps: np.ndarray) -> None:
        if self._files is None:
            self._open(samples, info)
        n, a = len(steps), self.count
        leaves = jax.tree.leaves(samples)
        for i, x in enumerate(leaves):
            self._files[f"samples_{i}"][:, a:a + n] = x
        for k, v in info.items():
            self._files[f"info_{k}"][:, a:a + n] = v
        self._files["step"][a:a + n] = steps
        for f in self._files.values():
            f.flush()
        self.count = a + n
        self._write_header(None)

    def _write_header(self, meta: dict | None) -> None:
        path = os.path.join(self.folder, "header.json")
        with open(path) as fh:
            header = json.load(fh)
        header.update(count=self.count, meta=meta)
        write_json_atomic(path, header)

    def truncate(self, n: int) -> None:
        if n < self.count:
            self.count = n
            self._write_header(None)

    def arrays(self) -> tuple[PyTree, dict, np.ndarray] | None:
        if self._files is None or self.count == 0:
            return None
        n = self.count
        leaves = [self._files[f"samples_{i}"][:, :n] for i in range(self._treedef.num_leaves)]
        info = {k[len("info_"):]: v[:, :n] for k, v in self._files.items()
                if k.startswith("info_")}
        return jax.tree.unflatten(self._treedef, leaves), info, self._files["step"][:n]

    def close(self, meta: dict) -> None:
        """Record the finished run's metadata in the header (the folder is then a result)."""
        if self._files is not None:
            self._write_header(meta)


def load_stream(folder: str | os.PathLike) -> Result:
    """Open a stream folder written by ``sample(..., stream_to=folder)`` as a Result whose
    draws are memory-mapped (read-only). A run still going, or killed, gives the draws
    written so far."""
    folder = os.fspath(folder)
    try:
        with open(os.path.join(folder, "header.json")) as fh:
            header = json.load(fh)
    except (OSError, ValueError) as err:
        raise ValueError(f"{folder} is not an sgmc stream folder ({err})") from None
    if header.get("format") != STREAM_FORMAT:
        raise ValueError(f"{folder} is not an sgmc stream folder (format "
                         f"{header.get('format')!r})")
    n = int(header["count"])

    def load(name):
        return np.load(os.path.join(folder, f"{name}.npy"), mmap_mode="r")

    leaves = [load(f"samples_{i}")[:, :n] for i in range(header["num_leaves"])]
    info = {k: load(f"info_{k}")[:, :n] for k in header["info"]}
    info["step"] = load("step")[:n]
    samples = tree_from_spec(header["spec"], header["order"], leaves)
    return Result(samples, info, header["meta"] or {"incomplete": True})
