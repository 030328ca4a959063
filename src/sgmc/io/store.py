"""Where a run's kept draws go: host memory, or ``.npy`` files on disk (streaming).

The driver hands every finished block's kept draws to a *sink* as host arrays: the draws
(a pytree, leaves (num_chains, n, ...)), the per-draw statistics (dict of (num_chains, n, ...),
``grad_evals`` among them) and the step of each draw (n,). :class:`MemorySink` copies them
into arrays allocated once for the whole run (their untouched pages take no memory), whose
first draws it returns as views — never a concatenated copy, so memory peaks at the draws'
size, not twice it. :class:`DiskSink` writes them into ``.npy`` files in a folder, so that
host memory does not grow with the run's length and every written draw survives a crash. A
stream folder is also a saved result: :func:`load_stream` (and
``sgmc.Result.load(folder)``) opens it with the draws memory-mapped, not read.

Stream folder layout: ``header.json`` (format, the draws' tree structure, every file's shape
and dtype, how many draws are written, the run's metadata once it finished),
``samples_{i}.npy`` (leaf i of the draws in JAX's leaf order, shaped (chains, draws, ...)),
``info_{key}.npy``, ``step.npy``, and ``checksums.jsonl``: one line per written block — its
draws [start, stop) and, per file, the SHA-256 of that block's bytes (chain after chain) —
appended and fsynced, never rewritten; a block written again (after a resume) supersedes the
lines of the draws it overwrote.

Writing: every file is created at its full size with the space reserved
(``posix_fallocate``), so that a full disk is reported when the stream opens, before any
sampling (where the file system cannot reserve space, the file is extended sparse and a full
disk is reported by the write that meets it); blocks are written with ``os.pwrite`` — never
through a memory map, whose writes into a full disk kill the process with SIGBUS. A block is
written data first (fdatasync'd), then its checksum line, then the header's count (an atomic
rename): the header never counts a draw that is not on disk. A failed write raises an
:class:`OSError` naming the file; the draws counted before it stay valid. Reading (the
Result's arrays) memory-maps the files read-only.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import json
import os
from collections.abc import Iterator
from typing import Any, NamedTuple

import jax
import numpy as np

from sgmc.errors import CheckpointError
from sgmc.io.serial import (
    leaf_names,
    naming,
    tree_from_spec,
    tree_like,
    tree_spec,
    write_json_atomic,
)
from sgmc.result import Result

PyTree = Any
STREAM_FORMAT = "sgmc.Result/stream1"
CHECKSUMS = "checksums.jsonl"
#: posix_fallocate errors that mean "this file system cannot reserve space" (not "full").
_NO_RESERVE = {errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS,
               getattr(errno, "ENOTSUP", errno.EOPNOTSUPP)}
_READ_BYTES = 16 * 2**20  # read at most this much at once when verifying
_HEADER_READERS = {(1, 0): np.lib.format.read_array_header_1_0,
                   (2, 0): np.lib.format.read_array_header_2_0}


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
            else:
                self._arrays[k][:, a:a + n] = x
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


class _File(NamedTuple):
    """One ``.npy`` file of a stream: where its data start, and their layout."""

    path: str
    shape: tuple
    dtype: np.dtype
    offset: int  # bytes before the data (the .npy header)

    @property
    def row(self) -> int:
        """Bytes of one draw of one chain."""
        per_draw = int(np.prod(self.shape[1:] if len(self.shape) == 1 else self.shape[2:]))
        return per_draw * self.dtype.itemsize

    def chunks(self, start: int, stop: int) -> Iterator[tuple[int, int]]:
        """(offset, length) in the file of draws [start, stop), chain after chain."""
        chains = 1 if len(self.shape) == 1 else self.shape[0]
        total = self.shape[0] if len(self.shape) == 1 else self.shape[1]
        for c in range(chains):
            yield self.offset + (c * total + start) * self.row, (stop - start) * self.row


def _pwrite_all(fd: int, data: memoryview, offset: int) -> None:
    while data:
        n = os.pwrite(fd, data, offset)
        data, offset = data[n:], offset + n


def _sync(fd: int) -> None:
    (os.fdatasync if hasattr(os, "fdatasync") else os.fsync)(fd)


def _as_bytes(x: np.ndarray) -> memoryview:
    """The bytes of a C-contiguous array (any dtype, bfloat16 included)."""
    return memoryview(np.ascontiguousarray(x).reshape(-1).view(np.uint8))


def _create(path: str, shape: tuple, dtype: np.dtype) -> _File:
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
    return _File(path, tuple(int(d) for d in shape), dtype, len(head))


class DiskSink:
    """Kept draws written into ``.npy`` files in ``folder`` (see the module doc)."""

    def __init__(self, folder: str, total: int, count: int = 0,
                 template: PyTree | None = None) -> None:
        """A new stream into ``folder`` (its files are created by :meth:`prepare` or the
        first :meth:`append`; files of an earlier stream there are replaced), or — with
        ``count`` > 0 and ``template``, the draws of one step (leaves (chains, ...),
        arrays or ShapeDtypeStructs) — an existing stream continued after its first
        ``count`` draws, which are verified against their checksums (later draws a killed
        run may have written are overwritten).

        Raises:
            CheckpointError: continuing a stream whose folder or a file is missing, does not
                fit ``template`` or ``total``, or whose first ``count`` draws were altered.
        """
        self.folder = os.fspath(folder)
        self.total = int(total)  # draws per chain the finished run will hold
        self.count = int(count)
        self._files: dict[str, _File] | None = None  # created when the shapes are known
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
        if int(header["num_draws"]) != self.total:
            raise CheckpointError(f"the stream folder {self.folder} holds a run of "
                                  f"{header['num_draws']} draws per chain, not {self.total}")
        leaves, self._treedef = jax.tree.flatten(template)
        if header["num_leaves"] != len(leaves):
            raise CheckpointError(f"the draws in {self.folder} have {header['num_leaves']} "
                                  f"arrays; this sampler draws {len(leaves)}")
        self._files = _check_files(self.folder, header, CheckpointError)
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
        exist (a continued stream) are kept."""
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
            with naming(sums), open(sums, "w") as fh:  # a new stream: no block yet
                os.fsync(fh.fileno())
            names: list[str] = []
            spec, order = tree_spec(samples, names)
            jax_names = [""] * len(order)
            for k, i in enumerate(order):
                jax_names[i] = names[k]
            header = {"format": STREAM_FORMAT, "spec": spec, "order": order,
                      "names": jax_names,
                      "num_leaves": len(leaves), "info": sorted(info), "count": 0,
                      "num_draws": self.total, "meta": None,
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
        in the header, which a continued stream may have left counting more."""
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


def read_header(folder: str, error: type[Exception] = ValueError) -> dict:
    """A stream folder's header.json, or ``error`` naming what is wrong."""
    path = os.path.join(folder, "header.json")
    if not os.path.isdir(folder):
        raise error(f"the stream folder {folder} does not exist")
    try:
        with open(path) as fh:
            header = json.load(fh)
    except (OSError, ValueError) as err:
        raise error(f"{folder} is not an sgmc stream folder ({err})") from None
    if not isinstance(header, dict) or header.get("format") != STREAM_FORMAT:
        raise error(f"{folder} is not an sgmc stream folder (format "
                    f"{header.get('format') if isinstance(header, dict) else None!r})")
    return header


def _check_files(folder: str, header: dict, error: type[Exception]) -> dict[str, _File]:
    """The stream's files, each checked to exist with the shape and dtype its header
    records (or, in a header without that record, the shape its count needs)."""
    names = [f"samples_{i}" for i in range(header["num_leaves"])]
    names += [f"info_{k}" for k in header["info"]] + ["step"]
    recorded = header.get("files", {})
    files = {}
    for k in names:
        path = os.path.join(folder, f"{k}.npy")
        try:
            with open(path, "rb") as fh:
                read = _HEADER_READERS.get(np.lib.format.read_magic(fh))
                if read is None:
                    raise ValueError("an unsupported .npy format version")
                shape, fortran, dtype = read(fh)
                offset = fh.tell()
            size = os.path.getsize(path)
        except FileNotFoundError:
            raise error(f"{path} is missing from the stream folder {folder}") from None
        except (OSError, ValueError) as err:
            raise error(f"{path} is not a readable .npy file ({err})") from None
        want = recorded.get(k)
        f = _File(path, tuple(shape), np.dtype(dtype), offset)
        if want is not None and (f.shape != tuple(want["shape"])
                                 or f.dtype != np.dtype(want["dtype"])):
            raise error(f"{path} holds an array of shape {f.shape} and dtype {f.dtype}; the "
                        f"stream's header records {tuple(want['shape'])}, "
                        f"{np.dtype(want['dtype'])}")
        count = int(header["count"])
        long_enough = len(f.shape) >= (1 if k == "step" else 2) and (
            f.shape[0 if k == "step" else 1] >= count)
        if fortran or not long_enough or size < offset + np.prod(f.shape) * f.dtype.itemsize:
            raise error(f"{path} does not hold the stream's {count} draws (shape {f.shape}, "
                        f"{size} bytes)")
        files[k] = f
    return files


def verify(folder: str, files: dict[str, _File], count: int) -> None:
    """Check the first ``count`` draws of a stream against ``checksums.jsonl``.

    Raises:
        CheckpointError: naming the file whose bytes differ from their checksum, or the
            draws no checksum covers.
    """
    path = os.path.join(folder, CHECKSUMS)
    try:
        with open(path) as fh:
            lines = fh.read().splitlines()
    except OSError as err:
        raise CheckpointError(f"cannot read {path}, the checksums of the draws in {folder} "
                              f"({err})") from None
    records: list[tuple[int, int, dict]] = []
    for i, line in enumerate(lines):
        try:
            rec = json.loads(line)
            start, stop, sha = int(rec["start"]), int(rec["stop"]), dict(rec["sha256"])
        except (ValueError, KeyError, TypeError):
            if i == len(lines) - 1:
                break  # a last line cut short by a crash: its block was never counted
            raise CheckpointError(f"{path} is damaged (line {i + 1})") from None
        records = [r for r in records if r[0] < start]  # a block written again replaces
        records.append((start, stop, sha))               # the lines it overwrote
    covered = 0
    for start, stop, sha in records:
        if covered >= count:
            break
        if start > covered or set(sha) != set(files):
            break
        for k, digest in sha.items():
            f = files[k]
            h = hashlib.sha256()
            with open(f.path, "rb") as fh:
                for offset, length in f.chunks(start, stop):
                    fh.seek(offset)
                    while length > 0:  # in pieces: a checkpoint's block may be large
                        piece = fh.read(min(length, _READ_BYTES))
                        if not piece:
                            break  # (a file cut short: the digest differs)
                        h.update(piece)
                        length -= len(piece)
            if h.hexdigest() != digest:
                raise CheckpointError(
                    f"{f.path} was altered: its draws {start} to {stop - 1} do not match the "
                    f"checksum written with them ({path})")
        covered = max(covered, stop)
    if covered < count:
        raise CheckpointError(
            f"the draws {covered} to {count - 1} in {folder} have no checksum in {path} "
            "(written by another run, or removed): they cannot be verified")


def load_stream(folder: str | os.PathLike, like: PyTree = None) -> Result:
    """Open a stream folder written by ``sample(..., stream_to=folder)`` as a Result whose
    draws are memory-mapped (read-only). A run still going, or killed, gives the draws
    written so far. The files are checked to exist with the shapes the header records
    (a ValueError names the one that does not); their checksums are not verified here (that
    would read every draw) — :func:`sgmc.resume` verifies them. ``like`` rebuilds the
    draws' own structure, as in :meth:`sgmc.Result.load`.
    """
    folder = os.fspath(folder)
    header = read_header(folder)
    files = _check_files(folder, header, ValueError)
    n = int(header["count"])

    def load(name):
        return np.load(files[name].path, mmap_mode="r")

    leaves = [load(f"samples_{i}")[:, :n] for i in range(header["num_leaves"])]
    info = {k: load(f"info_{k}")[:, :n] for k in header["info"]}
    info["step"] = load("step")[:n]
    samples = tree_from_spec(header["spec"], header["order"], leaves)
    if like is not None:
        names = header.get("names") or leaf_names(samples)
        samples = tree_like(like, names, leaves, folder)
    return Result(samples, info, header["meta"] or {"incomplete": True})
