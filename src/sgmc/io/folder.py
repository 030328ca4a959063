"""The draws folder: what ``sample(..., stream_to=folder)`` writes, read back and verified.

A draws folder holds a run's kept draws in ``.npy`` files (written block by block by
:class:`sgmc.io.sinks.DiskSink`: the run's ``stream_to`` folder, or a checkpoint's
``PATH.draws/``). It is also a saved result: :func:`read_folder` gives its draws,
memory-mapped rather than read, and ``sgmc.Result.load(folder)`` builds a Result of them.
This module holds what reading and resuming need — the layout, the header, the files'
checks and the checksums — and none of the writing, so that a reader never imports a sink.

Layout: ``header.json`` (format, the draws' tree structure, every file's shape and dtype,
how many draws are written, the run's metadata once it finished), ``samples_{i}.npy``
(leaf i of the draws in JAX's leaf order, shaped (chains, draws, ...)), ``info_{key}.npy``,
``step.npy``, and ``checksums.jsonl``: one line per written block — its draws [start, stop)
and, per file, the SHA-256 of that block's bytes (chain after chain) — appended and
fsynced, never rewritten; a block written again (after a resume) supersedes the lines of
the draws it overwrote. The header never counts a draw that is not on disk, so the counted
draws of a killed run are complete.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from typing import Any, NamedTuple

import numpy as np

from sgmc.errors import CheckpointError
from sgmc.io.serial import leaf_names, tree_from_spec, tree_like

PyTree = Any
#: The header's format tag: part of the file format, so it keeps its first name.
DRAWS_FORMAT = "sgmc.Result/stream1"
CHECKSUMS = "checksums.jsonl"
_READ_BYTES = 16 * 2**20  # read at most this much at once when verifying
_HEADER_READERS = {(1, 0): np.lib.format.read_array_header_1_0,
                   (2, 0): np.lib.format.read_array_header_2_0}


class NpyFile(NamedTuple):
    """One ``.npy`` file of a draws folder: where its data start, and their layout."""

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


def read_header(folder: str, error: type[Exception] = ValueError) -> dict:
    """A draws folder's header.json, or ``error`` naming what is wrong."""
    path = os.path.join(folder, "header.json")
    if not os.path.isdir(folder):
        raise error(f"the stream folder {folder} does not exist")
    try:
        with open(path) as fh:
            header = json.load(fh)
    except (OSError, ValueError) as err:
        raise error(f"{folder} is not an sgmc stream folder ({err})") from None
    if not isinstance(header, dict) or header.get("format") != DRAWS_FORMAT:
        raise error(f"{folder} is not an sgmc stream folder (format "
                    f"{header.get('format') if isinstance(header, dict) else None!r})")
    return header


def check_files(folder: str, header: dict, error: type[Exception]) -> dict[str, NpyFile]:
    """The draws folder's files, each checked to exist with the shape and dtype its
    header records (or, in a header without that record, the shape its count needs)."""
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
        f = NpyFile(path, tuple(shape), np.dtype(dtype), offset)
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


def verify(folder: str, files: dict[str, NpyFile], count: int) -> None:
    """Check the first ``count`` draws of a draws folder against its ``checksums.jsonl``.

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


def read_folder(folder: str | os.PathLike, like: PyTree = None
                ) -> tuple[PyTree, dict[str, np.ndarray], dict[str, Any]]:
    """The pieces of a Result — (draws, info, meta) — of a draws folder written by
    ``sample(..., stream_to=folder)``, the draws memory-mapped (read-only);
    ``sgmc.Result.load(folder)`` builds the Result from them (io never imports it).

    A run still going, or killed, gives the draws written so far, and ``meta``
    ``{"incomplete": True}``. The files are checked to exist with the shapes the header
    records (a ValueError names the one that does not); their checksums are not verified
    here (that would read every draw) — :func:`sgmc.resume` verifies them. ``like``
    rebuilds the draws' own structure, as in :meth:`sgmc.Result.load`.
    """
    folder = os.fspath(folder)
    header = read_header(folder)
    files = check_files(folder, header, ValueError)
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
    return samples, info, header["meta"] or {"incomplete": True}
