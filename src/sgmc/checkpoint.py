"""Checkpoint files: the complete state of an unfinished run, written atomically.

A checkpoint is an ``.npz`` archive (no pickle: loading one never runs code) holding

* ``header``: JSON — the format tag, the run's settings (steps, burn-in, thinning, seed,
  chains, block size, PRNG), where the run stands (steps done, next block), the draws'
  structure, timings, a fingerprint of the problem and the sampler, and a SHA-256 checksum
  of every array;
* ``state/{i}``: the leaves of every chain's sampler state and counters (including estimator
  state such as an SVRG snapshot or a SAGA table, momenta, index chains);
* ``kept/...``: the draws kept so far (unless they stream to disk, see ``stream_to``).

The PRNG keys are not stored: they are derived from the seed, and step t uses
``fold_in(run_key, t)``, so a resumed run draws exactly the random numbers the uninterrupted
run would have. The problem and the sampler are code and are not stored either; the run that
resumes passes them again and their fingerprint (structure, hyper-parameters and a hash of
the data) must match.

Writing goes to ``PATH.tmp`` first, which is then renamed over ``PATH`` after the previous
checkpoint was renamed to ``PATH.prev``: a crash at any moment leaves at least one complete
checkpoint, and a damaged file is detected by its checksums and refused.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import zipfile
from typing import Any

import jax
import numpy as np

from ._serial import json_default
from .errors import CheckpointError

__all__ = ["fingerprint", "read", "write"]

FORMAT = "sgmc.Checkpoint/1"


def _digest(tree: Any) -> str:
    """A hash of a pytree's structure (static settings included) and of its leaves' bytes."""
    leaves, treedef = jax.tree.flatten(tree)
    h = hashlib.blake2b(digest_size=16)
    # Function reprs carry memory addresses that differ between processes; names do not.
    h.update(re.sub(r" at 0x[0-9a-fA-F]+", "", str(treedef)).encode())
    for leaf in leaves:
        a = np.ascontiguousarray(np.asarray(leaf))
        h.update(f"{a.shape}{a.dtype}".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def fingerprint(problem: Any, sampler: Any) -> dict[str, str]:
    """What must match for a checkpoint to continue: the problem (its model and data) and
    the sampler (its kind, hyper-parameters and schedules)."""
    return {"problem": _digest(problem), "sampler": _digest(sampler)}


def _checksum(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


def write(path: str, header: dict, arrays: dict[str, np.ndarray]) -> None:
    """Write a checkpoint atomically; the checkpoint it replaces becomes ``PATH.prev``."""
    arrays = {k: np.asarray(v) for k, v in arrays.items()}
    header = dict(header, format=FORMAT, checksums={k: _checksum(v) for k, v in arrays.items()})
    tmp = f"{path}.tmp"
    with open(tmp, "wb") as fh:
        np.savez(fh, header=np.asarray(json.dumps(header, default=json_default)), **arrays)
        fh.flush()
        os.fsync(fh.fileno())
    if os.path.exists(path):
        os.replace(path, f"{path}.prev")
    os.replace(tmp, path)


def read(path: str) -> tuple[dict, dict[str, np.ndarray]]:
    """The header and arrays of a checkpoint, every checksum verified.

    Raises:
        CheckpointError: the file is missing, not a checkpoint, truncated or corrupted
            (the message names the previous checkpoint when one is intact).
    """
    path = os.fspath(path)
    try:
        with np.load(path, allow_pickle=False) as npz:
            header = json.loads(str(npz["header"]))
            tag = header.get("format") if isinstance(header, dict) else None
            if tag != FORMAT:
                raise CheckpointError(f"{path} is not an sgmc checkpoint (format {tag!r})")
            arrays = {k: npz[k] for k in npz.files if k != "header"}
    except CheckpointError:
        raise
    except FileNotFoundError:
        raise CheckpointError(f"no checkpoint at {path}{_fallback(path)}") from None
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as err:
        raise CheckpointError(f"{path} is not a readable sgmc checkpoint (truncated, "
                              f"corrupted or another kind of file: {err}){_fallback(path)}"
                              ) from None
    expected = header.get("checksums", {})
    bad = sorted(k for k in arrays if expected.get(k) != _checksum(arrays[k]))
    missing = sorted(set(expected) - set(arrays))
    if bad or missing:
        raise CheckpointError(f"{path} is corrupted (arrays {', '.join(bad + missing)} do not "
                              f"match their checksums){_fallback(path)}")
    return header, arrays


def _fallback(path: str) -> str:
    """Advice naming the previous checkpoint, if it is intact."""
    prev = f"{path}.prev"
    if path.endswith(".prev") or not os.path.exists(prev):
        return ""
    try:
        read(prev)
    except CheckpointError:
        return ""
    return f"; the previous checkpoint {prev} is intact: sgmc.resume({prev!r}, problem, sampler)"
