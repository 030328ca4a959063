"""Checkpoint files: the complete state of an unfinished run, written atomically.

A checkpoint is an ``.npz`` archive (no pickle: loading one never runs code) holding

* ``header``: JSON — the format tag, the run's settings (steps, burn-in, thinning, seed,
  chains, block size, PRNG), where the run stands (steps done, next block), the draws'
  structure, timings, a fingerprint of the problem and the sampler, where the kept draws
  are and how many of them count, and a SHA-256 checksum of every array;
* ``state/{i}``: the leaves of every chain's sampler state and counters (including estimator
  state such as an SVRG snapshot or a SAGA table, momenta, index chains).

The kept draws are not in the archive, so that a checkpoint costs the state and the draws
made since the previous one, not every draw: they are in a draws folder (what
``stream_to`` writes, :mod:`sgmc.io.folder`, with a SHA-256 checksum of every block) — the run's
``stream_to`` folder, or else ``PATH.draws/``, to which a run that keeps its draws in
memory appends the draws made since the previous checkpoint. The header records the folder
and how many of its draws count; later draws a killed run may have written there are
ignored (and overwritten on resume), and :func:`sgmc.resume` verifies the checksums.

The PRNG keys are not stored: they are derived from the seed, and step t uses
``fold_in(run_key, t)``, so a resumed run draws exactly the random numbers the uninterrupted
run would have. The problem and the sampler are code and are not stored either; the run that
resumes passes them again and their fingerprint (structure, hyper-parameters and a hash of
the data) must match; since functions are compared by name only there, a *model probe* —
the energy and gradient at chain 0's position on the first rows of data (:func:`probe`) —
is stored too and must be reproduced by the problem that resumes.

Writing goes to a uniquely named temporary file next to ``PATH`` (two runs never share
one; it is removed if the write fails), which is then renamed over ``PATH`` after the
previous checkpoint was renamed to ``PATH.prev``: a crash at any moment leaves at least one
complete checkpoint, and a damaged file is detected by its checksums and refused.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import zipfile
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

from sgmc.errors import CheckpointError
from sgmc.io.serial import json_default, write_atomic

__all__ = ["fingerprint", "occupant", "probe", "probe_mismatch", "probe_point", "read",
           "summary", "summary_mismatch", "write"]

FORMAT = "sgmc.Checkpoint/2"


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
    the sampler (its kind, hyper-parameters and schedules) — their structure and arrays.

    Functions enter by name only (their code cannot be compared safely), so a model with the
    same names and another body passes this digest; :func:`probe` catches it."""
    return {"problem": _digest(problem), "sampler": _digest(sampler)}


#: The model probe: the first ``PROBE_ROWS`` rows of data, the first ``PROBE_HEAD``
#: gradient entries, and the tolerance (relative to the magnitude of the summed terms, so
#: another backend's rounding passes and another model does not).
PROBE_ROWS = 64
PROBE_HEAD = 8
PROBE_RTOL = 1e-4


def probe_point(position: Any, spec: dict) -> Any:
    """Chain 0's position as one point of the model (its first replica for a kernel that
    stacks replicas): where :func:`probe` evaluates. ``position`` is the chain-stacked
    state position, ``spec`` the run's position spec (``driver.checkpoint.position_spec``),
    whose shapes carry one leading chain axis over a point's."""
    leaves, treedef = jax.tree.flatten(position)
    dims = [len(shape) - 1 for shape in spec["shapes"]]
    if len(leaves) != len(dims) or any(np.ndim(x) <= d for x, d in zip(leaves, dims,
                                                                      strict=False)):
        raise CheckpointError("the sampler state's position does not fit the run's positions "
                              "(different structure)")
    point = [jax.device_get(x[(0,) * (np.ndim(x) - d)]) for x, d in zip(leaves, dims,
                                                                         strict=True)]
    return jax.tree.unflatten(treedef, point)


@partial(jax.jit, static_argnames=("rows",))
def _probe_values(problem: Any, point: Any, rows: int) -> dict[str, jax.Array]:
    """U₀ + Σ_{i<rows} L_i and its gradient at ``point``, each with the magnitude of its
    terms (|U₀| + Σ|L_i|, per gradient entry |∇U₀| + Σ|∇L_i|), which bounds the rounding
    of any evaluation order. One datum at a time: memory O(d), never a full data pass."""
    u0, g0 = jax.value_and_grad(problem.exact_energy)(point)
    flat0, _ = ravel_pytree(g0)
    carry = (u0, jnp.abs(u0), flat0, jnp.abs(flat0))
    if rows:
        def add(carry, datum):
            u, g = jax.value_and_grad(problem.datum_energy)(point, datum)
            g = ravel_pytree(g)[0]
            return (carry[0] + u, carry[1] + jnp.abs(u), carry[2] + g,
                    carry[3] + jnp.abs(g)), None

        carry = jax.lax.scan(add, carry, problem.take(jnp.arange(rows)))[0]
    u, u_scale, g, g_scale = carry
    weights = jnp.cos(jnp.arange(g.size, dtype=g.dtype))  # a fixed direction
    return {"energy": u, "energy_scale": u_scale, "grad_head": g[:PROBE_HEAD],
            "grad_head_scale": g_scale[:PROBE_HEAD], "grad_dot": jnp.dot(weights, g),
            "grad_dot_scale": jnp.dot(jnp.abs(weights), g_scale)}


def probe(problem: Any, point: Any) -> dict[str, Any]:
    """The model's energy and gradient at ``point`` on the first rows of data, as a few
    JSON numbers (stored in a checkpoint's header, compared on resume by
    :func:`probe_mismatch`): what tells one model from another when their functions have
    the same names. Works without data (an Objective's f alone)."""
    rows = min(problem.data_rows, PROBE_ROWS) if problem.has_data else 0
    values = jax.device_get(_probe_values(problem, point, rows))
    out: dict[str, Any] = {"rows": rows}
    for k, v in values.items():
        v = np.asarray(v, np.float64)
        out[k] = v.tolist()
    return out


def probe_mismatch(stored: dict, found: dict) -> str | None:
    """None if two probes agree within :data:`PROBE_RTOL` of their terms' magnitude (NaN
    matches NaN), else what differs, with the stored and the found values."""
    if stored.get("rows") != found.get("rows"):
        return (f"the probe's rows differ (stored {stored.get('rows')}, found "
                f"{found.get('rows')})")
    for key, what in (("energy", "energy"), ("grad_head", "gradient (first entries)"),
                      ("grad_dot", "gradient (projection)")):
        a, b = np.asarray(stored[key], np.float64), np.asarray(found[key], np.float64)
        scale = np.maximum(np.asarray(stored[f"{key}_scale"], np.float64),
                           np.asarray(found[f"{key}_scale"], np.float64))
        same = (a.shape == b.shape) and bool(np.all(
            (np.abs(a - b) <= PROBE_RTOL * scale + 1e-30)
            | (np.isnan(a) & np.isnan(b)) | (a == b)))
        if not same:
            return (f"the model's {what} on the first {found['rows']} rows of data at the "
                    f"checkpoint's position differs: stored {_short(a)}, found {_short(b)}")
    return None


def summary(value: Any) -> dict[str, Any]:
    """A few JSON numbers that tell one array from another (``predict``'s value at the
    checkpointed draw): its shape, first :data:`PROBE_HEAD` entries and a projection on a
    fixed direction, each with its magnitude; compared by :func:`summary_mismatch`."""
    v = np.asarray(value, np.float64).reshape(-1)
    w = np.cos(np.arange(v.size, dtype=np.float64))
    return {"shape": list(np.shape(value)), "head": v[:PROBE_HEAD].tolist(),
            "head_scale": (np.abs(v[:PROBE_HEAD]) + np.mean(np.abs(v)) if v.size else
                           np.zeros(0)).tolist(),
            "dot": float(np.dot(w, v)), "dot_scale": float(np.dot(np.abs(w), np.abs(v)))}


def summary_mismatch(stored: dict, found: dict) -> str | None:
    """None if two :func:`summary` records agree within :data:`PROBE_RTOL` of their
    magnitude (NaN matches NaN), else what differs, with both values."""
    if stored["shape"] != found["shape"]:
        return f"shape {stored['shape']} stored, {found['shape']} found"
    for key in ("head", "dot"):
        a, b = np.asarray(stored[key], np.float64), np.asarray(found[key], np.float64)
        scale = np.maximum(np.asarray(stored[f"{key}_scale"]), np.asarray(found[f"{key}_scale"]))
        if not np.all((np.abs(a - b) <= PROBE_RTOL * scale + 1e-30)
                      | (np.isnan(a) & np.isnan(b)) | (a == b)):
            return f"stored {_short(np.asarray(stored['head']))}, found " \
                   f"{_short(np.asarray(found['head']))} (first entries)"
    return None


def _short(x: np.ndarray) -> str:
    return np.array2string(np.asarray(x), precision=8, separator=", ")


def _checksum(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


def write(path: str, header: dict, arrays: dict[str, np.ndarray]) -> None:
    """Write a checkpoint atomically; the checkpoint it replaces becomes ``PATH.prev``.

    Raises:
        OSError: the write failed (nothing is left of it; ``PATH`` or ``PATH.prev`` still
            holds the previous checkpoint).
    """
    arrays = {k: np.asarray(v) for k, v in arrays.items()}
    header = dict(header, format=FORMAT, checksums={k: _checksum(v) for k, v in arrays.items()})

    def replace(tmp: str, path: str) -> None:
        if os.path.exists(path):
            os.replace(path, f"{path}.prev")
        os.replace(tmp, path)

    write_atomic(path, lambda fh: np.savez(
        fh, header=np.asarray(json.dumps(header, default=json_default)), **arrays),
        replace=replace)


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
            if isinstance(tag, str) and tag.startswith("sgmc.Checkpoint/") and tag != FORMAT:
                raise CheckpointError(f"{path} was written by another version of sgmc "
                                      f"(format {tag!r}; this version reads {FORMAT!r})")
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


def occupant(path: str) -> tuple[list[str], str]:
    """What another run left at checkpoint path ``path``: the files (``PATH``,
    ``PATH.prev``, a non-empty ``PATH.draws`` folder) and, from the checkpoint's header
    (read without verifying anything else), a description of that run ("seed 1, 8,000 of
    20,000 steps done"); ([], "") when the path is free."""
    found = [p for p in (path, f"{path}.prev") if os.path.exists(p)]
    draws = f"{os.path.abspath(path)}.draws"
    if os.path.isdir(draws) and os.listdir(draws):
        found.append(draws)
    about = ""
    for p in found[:2]:
        try:
            with np.load(p, allow_pickle=False) as npz:
                header = json.loads(str(npz["header"]))
            s = header["settings"]
            about = (f"seed {s['seed']}, {int(header['t0']):,} of {int(s['num_steps']):,} "
                     "steps done")
            break
        except Exception:
            continue
    return found, about


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
