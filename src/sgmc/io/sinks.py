"""Where a run's kept draws go while it runs: host memory, or a draws folder on disk.

The driver hands every finished block's kept draws to a *sink* as host arrays: the draws
(a pytree, leaves (num_chains, n, ...)), the per-draw statistics (dict of (num_chains, n, ...),
``grad_evals`` among them) and the step of each draw (n,). :class:`MemorySink` copies them
into arrays allocated once for the whole run (their untouched pages take no memory), whose
first draws it returns as views — never a concatenated copy, so memory peaks at the draws'
size, not twice it. :class:`DiskSink` writes them into the ``.npy`` files of a draws folder
(``stream_to=``; its layout and reading it back: :mod:`sgmc.io.folder`), so that host
memory does not grow with the run's length and every written draw survives a crash. A sink
hands back plain pieces — (draws, info, steps) from ``arrays()`` — and the host loop builds
the Result of them: io never imports :mod:`sgmc.result`.

Writing: every file is created at its full size with the space reserved
(``posix_fallocate``), so that a full disk is reported when the draws folder opens, before
any sampling (where the file system cannot reserve space, the file is extended sparse and a
full disk is reported by the write that meets it); blocks are written with ``os.pwrite`` —
never through a memory map, whose writes into a full disk kill the process with SIGBUS. A
block is written data first (fdatasync'd), then its checksum line, then the header's count
(an atomic rename): the header never counts a draw that is not on disk. A failed write
raises an :class:`OSError` naming the file; the draws counted before it stay valid. Reading
(the Result's arrays) memory-maps the files read-only.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import json
import os
from typing import Any

import jax
import numpy as np

from sgmc.errors import CheckpointError
from sgmc.io.folder import (
    CHECKSUMS,
    DRAWS_FORMAT,
    NpyFile,
    check_files,
    read_header,
    verify,
)
from sgmc.io.memcopy import copy_into
from sgmc.io.serial import naming, tree_spec, write_json_atomic

PyTree = Any
#: posix_fallocate errors that mean "this file system cannot reserve space" (not "full").
_NO_RESERVE = {errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS,
               getattr(errno, "ENOTSUP", errno.EOPNOTSUPP)}


def _named(samples: PyTree, info: dict, steps: np.ndarray | None = None) -> dict[str, Any]:
    """A block's arrays by file name: ``samples_{i}``, ``info_{key}``, ``step``."""
    named = {f"samples_{i}": x for i, x in enumerate(jax.tree.leaves(samples))}
    named.update({f"info_{k}": v for k, v in info.items()})
    if steps is not None:
        named["step"] = steps
    return named


class MemorySink:
    """Kept draws in host arrays of ``total`` draws per chain, allocated at the first block
    and filled block by block; :meth:`arrays` returns views of the first ``count``."""

    def __init__(self, total: int) -> None:
        self.total = int(total)  # draws per chain the finished run will hold
        self.count = 0
        self._arrays: dict[str, np.ndarray] | None = None
        self._treedef = None

    def prepare(self, samples: PyTree, info: dict) -> None:
        """Allocate the arrays for blocks shaped like ``samples`` / ``info`` (any draws)."""
        if self._arrays is not None:
            return
        self._treedef = jax.tree.structure(samples)
        self._arrays = {k: np.empty((x.shape[0], self.total, *x.shape[2:]), x.dtype)
                        for k, x in _named(samples, info).items()}
        self._arrays["step"] = np.empty(self.total, np.int64)

    def append(self, samples: PyTree, info: dict, steps: np.ndarray) -> None:
        self.prepare(samples, info)
        a, n = self.count, len(steps)
        for k, x in _named(samples, info, steps).items():
            if k == "step":
                self._arrays[k][a:a + n] = x
            else:  # (the large copy of a run: split over threads)
                copy_into(self._arrays[k][:, a:a + n], x)
        self.count = a + n

    def truncate(self, n: int) -> None:
        """Keep only the first ``n`` draws."""
        self.count = min(self.count, int(n))

    def arrays(self) -> tuple[PyTree, dict, np.ndarray] | None:
        """(draws, info, steps) of everything kept — views, not copies — or None when
        nothing was."""
        if self._arrays is None or self.count == 0:
            return None
        return _split(self._arrays, self._treedef, self.count)

    def close(self, meta: dict) -> None:
        pass


def _split(arrays: dict, treedef, n: int) -> tuple[PyTree, dict, np.ndarray]:
    """(draws, info, steps) of the first ``n`` draws of arrays stored by file name."""
    leaves = [arrays[f"samples_{i}"][:, :n] for i in range(treedef.num_leaves)]
    info = {k[len("info_"):]: v[:, :n] for k, v in arrays.items() if k.startswith("info_")}
    return jax.tree.unflatten(treedef, leaves), info, arrays["step"][:n]


def _pwrite_all(fd: int, data: memoryview, offset: int) -> None:
    while data:
        n = os.pwrite(fd, data, offset)
        data, offset = data[n:], offset + n


def _sync(fd: int) -> None:
    (os.fdatasync if hasattr(os, "fdatasync") else os.fsync)(fd)


def _as_bytes(x: np.ndarray) -> memoryview:
    """The bytes of a C-contiguous array (any dtype, bfloat16 included)."""
    return memoryview(np.ascontiguousarray(x).reshape(-1).view(np.uint8))


def _create(path: str, shape: tuple, dtype: np.dtype) -> NpyFile:
    """A new ``.npy`` file of ``shape`` and ``dtype`` (contents undefined) with its space
    reserved on disk (sparse where the file system cannot reserve)."""
    buf = io.BytesIO()
    header = {"descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": False,
              "shape": tuple(int(d) for d in shape)}
    try:
        np.lib.format.write_array_header_1_0(buf, header)
    except ValueError:  # a header over 64 KiB
        buf = io.BytesIO()
        np.lib.format.write_array_header_2_0(buf, header)
    head = buf.getvalue()
    size = int(np.prod(shape)) * dtype.itemsize
    with naming(path):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
        try:
            _pwrite_all(fd, memoryview(head), 0)
            reserved = False
            if size and hasattr(os, "posix_fallocate"):
                try:
                    os.posix_fallocate(fd, len(head), size)
                    reserved = True
                except OSError as err:
                    if err.errno not in _NO_RESERVE:
                        raise
            if not reserved:
                os.ftruncate(fd, len(head) + size)
            _sync(fd)
        finally:
            os.close(fd)
    return NpyFile(path, tuple(int(d) for d in shape), dtype, len(head))


class DiskSink:
    """Kept draws written into ``.npy`` files in ``folder``, a draws folder (see the module
    doc and :mod:`sgmc.io.folder`)."""

    def __init__(self, folder: str, total: int, count: int = 0,
                 template: PyTree | None = None, run: str = "") -> None:
        """A new draws folder ``folder`` (its files are created by :meth:`prepare` or the
        first :meth:`append`; files of an earlier one there are replaced), or — with
        ``count`` > 0 and ``template``, the draws of one step (leaves (chains, ...),
        arrays or ShapeDtypeStructs) — an existing draws folder continued after its first
        ``count`` draws, which are verified against their checksums (later draws a killed
        run may have written are overwritten).

        Raises:
            CheckpointError: continuing a draws folder that is missing, holds another
                run's draws, or has a file missing, does not fit ``template`` or ``total``,
                or whose first ``count`` draws were altered.
        """
        self.folder = os.fspath(folder)
        self.total = int(total)  # draws per chain the finished run will hold
        self.count = int(count)
        self.run = run
        self._files: dict[str, NpyFile] | None = None  # created when the shapes are known
        self._header: dict | None = None
        self._maps: dict[str, np.ndarray] = {}  # read-only memory maps, for arrays()
        self._treedef = None
        if self.count:
            self._reopen(template)

    def _path(self, name: str) -> str:
        return os.path.join(self.folder, f"{name}.npy")

    def _reopen(self, template: PyTree) -> None:
        header = read_header(self.folder, CheckpointError)
        if "files" not in header or not os.path.exists(os.path.join(self.folder, CHECKSUMS)):
            raise CheckpointError(f"the stream folder {self.folder} has no checksums (written "
                                  "by an older sgmc): its draws cannot be verified")
        if header.get("run", "") != self.run:
            raise CheckpointError(
                f"the draws folder {self.folder} holds the draws of another run (run "
                f"{header.get('run') or 'unnamed'}; the checkpoint's is {self.run or 'unnamed'}"
                "): a later run on the same path replaced them, so this checkpoint's draws "
                "are gone. Resume the checkpoint of that later run, or start again")
        if int(header["num_draws"]) != self.total:
            raise CheckpointError(f"the stream folder {self.folder} holds a run of "
                                  f"{header['num_draws']} draws per chain, not {self.total}")
        leaves, self._treedef = jax.tree.flatten(template)
        if header["num_leaves"] != len(leaves):
            raise CheckpointError(f"the draws in {self.folder} have {header['num_leaves']} "
                                  f"arrays; this sampler draws {len(leaves)}")
        self._files = check_files(self.folder, header, CheckpointError)
        for i, x in enumerate(leaves):
            f = self._files[f"samples_{i}"]
            want = (x.shape[0], self.total, *x.shape[1:])
            if f.shape != want or f.dtype != np.dtype(x.dtype):
                raise CheckpointError(f"{f.path} holds draws of shape {f.shape} and dtype "
                                      f"{f.dtype}; this run's are {want}, {np.dtype(x.dtype)}")
        verify(self.folder, self._files, self.count)
        self._header = header

    def prepare(self, samples: PyTree, info: dict) -> None:
        """Create the files for blocks shaped like ``samples`` / ``info`` (any number of
        draws), their space reserved: a full disk shows here, before sampling. Files that
        exist (a continued draws folder) are kept."""
        if self._files is not None:
            return
        leaves, self._treedef = jax.tree.flatten(samples)
        named = _named(samples, info)
        shapes = {k: ((x.shape[0], self.total, *x.shape[2:]), np.dtype(x.dtype))
                  for k, x in named.items()}
        shapes["step"] = ((self.total,), np.dtype(np.int64))
        made_folder = not os.path.isdir(self.folder)
        created: list[str] = []
        try:
            with naming(self.folder):
                os.makedirs(self.folder, exist_ok=True)
            files = {}
            for k, (shape, dtype) in shapes.items():
                created.append(self._path(k))
                files[k] = _create(self._path(k), shape, dtype)
            sums = os.path.join(self.folder, CHECKSUMS)
            created.append(sums)
            with naming(sums), open(sums, "w") as fh:  # a new draws folder: no block yet
                os.fsync(fh.fileno())
            names: list[str] = []
            spec, order = tree_spec(samples, names)
            jax_names = [""] * len(order)
            for k, i in enumerate(order):
                jax_names[i] = names[k]
            header = {"format": DRAWS_FORMAT, "spec": spec, "order": order,
                      "names": jax_names,
                      "num_leaves": len(leaves), "info": sorted(info), "count": 0,
                      "num_draws": self.total, "meta": None, "run": self.run,
                      "files": {k: {"shape": list(f.shape), "dtype": f.dtype.str}
                                for k, f in files.items()}}
            path = os.path.join(self.folder, "header.json")
            created.append(path)
            write_json_atomic(path, header)
        except BaseException:
            for path in created:  # leave the folder as it was: new or empty
                with contextlib.suppress(OSError):
                    os.remove(path)
            if made_folder:
                with contextlib.suppress(OSError):
                    os.rmdir(self.folder)
            raise
        self._files, self._header, self.count = files, header, 0

    def append(self, samples: PyTree, info: dict, steps: np.ndarray) -> None:
        """Write a block after the draws counted so far; count it once it is on disk.

        Raises:
            OSError: a write failed (naming the file); the count is unchanged.
        """
        self.prepare(samples, info)
        a, n = self.count, len(steps)
        digests = {}
        for k, x in _named(samples, info, np.asarray(steps, np.int64)).items():
            f = self._files[k]
            x = np.ascontiguousarray(x, dtype=f.dtype)
            h = hashlib.sha256()
            with naming(f.path):
                fd = os.open(f.path, os.O_WRONLY)
                try:
                    parts = [x] if k == "step" else list(x)  # chain after chain
                    for (offset, _), part in zip(f.chunks(a, a + n), parts, strict=True):
                        data = _as_bytes(part)
                        h.update(data)
                        _pwrite_all(fd, data, offset)
                    _sync(fd)
                finally:
                    os.close(fd)
            digests[k] = h.hexdigest()
        sums = os.path.join(self.folder, CHECKSUMS)
        with naming(sums), open(sums, "a") as fh:
            fh.write(json.dumps({"start": a, "stop": a + n, "sha256": digests}) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        self._write_header(a + n, None)

    def _write_header(self, count: int, meta: dict | None) -> None:
        """Record ``count`` and ``meta`` in header.json (atomically); then count them."""
        header = dict(self._header, count=int(count), meta=meta)
        write_json_atomic(os.path.join(self.folder, "header.json"), header)
        self._header, self.count = header, int(count)

    def truncate(self, n: int) -> None:
        """Count only the first ``n`` draws (the bytes of later ones stay, uncounted); also
        in the header, which a continued draws folder may have left counting more."""
        n = min(int(n), self.count)
        if self._header is not None and n != self._header["count"]:
            self._write_header(n, None)

    def arrays(self) -> tuple[PyTree, dict, np.ndarray] | None:
        """(draws, info, steps) counted so far, as read-only memory maps, or None."""
        if self._files is None or self.count == 0:
            return None
        for k, f in self._files.items():
            if k not in self._maps:
                self._maps[k] = np.load(f.path, mmap_mode="r")
        return _split(self._maps, self._treedef, self.count)

    def close(self, meta: dict) -> None:
        """Record the finished run's metadata in the header (the folder is then a result)."""
        if self._files is not None:
            self._write_header(self.count, meta)
