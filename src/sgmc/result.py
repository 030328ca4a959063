"""Results of sampling runs: draws, per-draw statistics, metadata; npz save/load, ArviZ."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Result"]

PyTree = Any
_FORMAT = "sgmc.Result/1"


def _encode(tree: PyTree, leaves: list) -> Any:
    """A JSON description of a pytree of arrays (dict / list / tuple / namedtuple / None)."""
    if tree is None:
        return {"none": None}
    if isinstance(tree, tuple) and hasattr(tree, "_fields"):
        return {"dict": {k: _encode(v, leaves) for k, v in tree._asdict().items()}}
    if isinstance(tree, Mapping):
        for k in tree:
            if not isinstance(k, str):
                raise TypeError(f"only string dictionary keys can be saved, got {k!r}")
        return {"dict": {k: _encode(v, leaves) for k, v in tree.items()}}
    if isinstance(tree, (list, tuple)):
        kind = "list" if isinstance(tree, list) else "tuple"
        return {kind: [_encode(v, leaves) for v in tree]}
    leaves.append(np.asarray(tree))
    return {"leaf": len(leaves) - 1}


def _decode(spec: Any, leaves: list) -> PyTree:
    (kind, body), = spec.items()
    if kind == "none":
        return None
    if kind == "leaf":
        return leaves[body]
    if kind == "dict":
        return {k: _decode(v, leaves) for k, v in body.items()}
    items = [_decode(v, leaves) for v in body]
    return items if kind == "list" else tuple(items)


def _flat_names(tree: PyTree, prefix: str = "") -> dict[str, np.ndarray]:
    """Variable names for ArviZ: 'theta' for a bare array, joined keys for nested trees."""
    if isinstance(tree, tuple) and hasattr(tree, "_fields"):
        tree = tree._asdict()
    if isinstance(tree, Mapping):
        out = {}
        for k, v in tree.items():
            out.update(_flat_names(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    if isinstance(tree, (list, tuple)):
        out = {}
        for i, v in enumerate(tree):
            out.update(_flat_names(v, f"{prefix}[{i}]" if prefix else f"x{i}"))
        return out
    if tree is None:
        return {}
    return {prefix or "theta": np.asarray(tree)}


@dataclass
class Result:
    """The outcome of :func:`sgmc.sample`.

    Attributes:
        samples: pytree shaped like one position, every leaf (num_chains, num_draws, ...).
        info: dict of arrays. ``"grad_evals"`` (num_chains, num_draws): cumulative
            per-example gradient evaluations when each draw was taken (burn-in included);
            ``"step"`` (num_draws,): the step number (1-based) of each draw; further keys
            are per-draw statistics of the sampler or coupling.
        meta: dict of run settings and timings (sampler, num_steps, burn_in, thin, seed,
            num_data, grad_evals_total per chain, sampling_time and compile_time in seconds).
        final_state: the sampler state after the last step (in memory only, not saved).
    """

    samples: PyTree
    info: dict[str, np.ndarray]
    meta: dict[str, Any] = field(default_factory=dict)
    final_state: Any = None

    @property
    def num_chains(self) -> int:
        return int(self.info["grad_evals"].shape[0])

    @property
    def num_draws(self) -> int:
        return int(self.info["grad_evals"].shape[1])

    @property
    def data_passes(self) -> np.ndarray:
        """Cumulative data passes at each draw, (num_chains, num_draws): grad_evals / N."""
        n = max(int(self.meta.get("num_data", 0)), 1)
        return self.info["grad_evals"] / n

    def __repr__(self) -> str:
        leaves = _flat_names(self.samples)
        shapes = ", ".join(f"{k}: {v.shape}" for k, v in leaves.items())
        return (f"Result(sampler={self.meta.get('sampler')!r}, chains={self.num_chains}, "
                f"draws={self.num_draws}, samples={{{shapes}}})")

    # -- persistence -----------------------------------------------------------------
    def save(self, path: str | os.PathLike) -> None:
        """Write the draws, info and metadata to an ``.npz`` file (no pickle)."""
        leaves: list[np.ndarray] = []
        spec = _encode(self.samples, leaves)
        arrays = {f"samples/{i}": a for i, a in enumerate(leaves)}
        arrays.update({f"info/{k}": np.asarray(v) for k, v in self.info.items()})
        header = {"format": _FORMAT, "spec": spec, "meta": self.meta}
        arrays["header"] = np.asarray(json.dumps(header, default=_json_default))
        with open(path, "wb") as fh:
            np.savez(fh, **arrays)

    @classmethod
    def load(cls, path: str | os.PathLike) -> Result:
        """Read a file written by :meth:`save`, or a folder written by
        ``sgmc.sample(..., stream_to=folder)`` (its draws memory-mapped, not read).
        Namedtuples come back as dicts."""
        if os.path.isdir(path):
            from ._store import load_stream

            return load_stream(path)
        with np.load(path, allow_pickle=False) as npz:
            header = json.loads(str(npz["header"]))
            if header.get("format") != _FORMAT:
                raise ValueError(f"{path} is not an sgmc result file (format "
                                 f"{header.get('format')!r})")
            n_leaves = sum(1 for k in npz.files if k.startswith("samples/"))
            leaves = [npz[f"samples/{i}"] for i in range(n_leaves)]
            info = {k[len("info/"):]: npz[k] for k in npz.files if k.startswith("info/")}
        return cls(_decode(header["spec"], leaves), info, header["meta"])

    # -- diagnostics -------------------------------------------------------------------
    def to_arviz(self):
        """An ``arviz.InferenceData`` with the draws as ``posterior`` and per-draw
        statistics (gradient evaluations, …) as ``sample_stats``."""
        import arviz as az

        stats = {k: np.asarray(v) for k, v in self.info.items()
                 if np.ndim(v) >= 2 and np.shape(v)[:2] == (self.num_chains, self.num_draws)}
        # float64: float32 sums over ~1e6 draws lose digits (numpy reduces strided axes naively).
        posterior = {k: v.astype(np.float64) for k, v in _flat_names(self.samples).items()}
        return az.from_dict(posterior=posterior, sample_stats=stats,
                            attrs={k: v for k, v in self.meta.items()
                                   if isinstance(v, (str, int, float))})

    def summary(self, **kwargs):
        """ArviZ summary table (mean, sd, ESS bulk/tail, R-hat) of the draws."""
        import arviz as az

        return az.summary(self.to_arviz(), **kwargs)


def _json_default(obj: Any) -> Any:
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, np.generic):
        return obj.item()
    raise TypeError(f"cannot store {type(obj).__name__} in result metadata")
