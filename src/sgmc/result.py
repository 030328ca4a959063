"""Results of sampling runs: draws, per-draw statistics, metadata; npz save/load, ArviZ."""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import numpy as np

from sgmc._optional import arviz
from sgmc.io.folder import read_folder
from sgmc.io.serial import decode_tree, encode_tree, json_default, leaf_names, tree_like, tree_spec

__all__ = ["Result", "pool_moments"]

PyTree = Any
Names = Any   # a sequence of strings, or a dict: variable name -> sequence of strings
_FORMAT = "sgmc.Result/1"


def _flat_names(tree: PyTree) -> dict[str, np.ndarray]:
    """Variable names for ArviZ, one per leaf, by its path in the pytree: ``theta`` for a
    bare array; keys and attributes joined with ``.`` (dict keys, namedtuple fields, the
    attributes of an Equinox module or a dataclass), ``[i]`` for positions (``x0``, ``x1``…
    at the top level): e.g. ``layers[0].weight``. A Flax NNX ``Param`` is named as its
    array. Names repeated by odd keys (``{"a.b": .., "a": {"b": ..}}``) get ``#2``…"""
    leaves: list[np.ndarray] = []
    names: list[str] = []
    encode_tree(tree, leaves, names=names)
    out: dict[str, np.ndarray] = {}
    for name, leaf in zip(names, leaves, strict=True):
        key, n = name, 1
        while key in out:
            n += 1
            key = f"{name}#{n}"
        out[key] = leaf
    return out


@dataclass
class Result:
    """The outcome of :func:`sgmc.sample`.

    Attributes:
        samples: pytree shaped like one position, every leaf (num_chains, num_draws, ...).
        info: dict of arrays. ``"grad_evals"`` (num_chains, num_draws): cumulative
            per-example gradient evaluations when each draw was taken (burn-in included);
            ``"step"`` (num_draws,): the step number (1-based) of each draw;
            ``"energy"``, ``"log_prior"``, ``"loglik"``: the drift statistics of each kept
            draw (:mod:`sgmc.run.stats`; with ``store_draws=False`` the only per-draw
            arrays); further keys are per-draw statistics of the sampler or coupling.
        meta: dict of run settings and timings (sampler, num_steps, burn_in, thin, seed,
            num_data, grad_evals_total per chain, sampling_time and compile_time in seconds);
            ``"names"``, set by :meth:`with_names`, the parameter names that
            :meth:`summary` and :meth:`to_arviz` use by default (kept by :meth:`save`).
        final_state: the sampler state after the last step (in memory only, not saved).
        predictive: with ``sample(..., predict=fn)``, the moments of fn(draw) over the kept
            draws (:func:`pool_moments`): ``"mean"``, ``"var"`` (ddof = 0) and ``"count"``
            over every chain's kept draws, and ``"chain_mean"``, ``"chain_var"``,
            ``"chain_count"`` per chain (leading axis num_chains); None without ``predict``.
    """

    samples: PyTree
    info: dict[str, np.ndarray]
    meta: dict[str, Any] = field(default_factory=dict)
    final_state: Any = None
    predictive: dict[str, np.ndarray] | None = None

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
        """Write the draws, info and metadata to an ``.npz`` file (no pickle).

        Any pytree of arrays is stored, every leaf under its path (its name in
        :meth:`to_arviz`); dicts, lists, tuples and None are rebuilt by :meth:`load`, other
        nodes (namedtuples, Equinox modules, Flax NNX states, dataclasses) given a
        template (``load(path, like=init)``)."""
        leaves: list[np.ndarray] = []
        names: list[str] = []
        spec = encode_tree(self.samples, leaves, names=names)
        _, order = tree_spec(self.samples)
        arrays = {f"samples/{i}": a for i, a in enumerate(leaves)}
        arrays.update({f"info/{k}": np.asarray(v) for k, v in self.info.items()})
        if self.predictive is not None:
            arrays.update({f"predictive/{k}": np.asarray(v)
                           for k, v in self.predictive.items()})
        header = {"format": _FORMAT, "spec": spec, "order": order, "names": names,
                  "meta": self.meta}
        arrays["header"] = np.asarray(json.dumps(header, default=json_default))
        with open(path, "wb") as fh:
            np.savez(fh, **arrays)

    @classmethod
    def load(cls, path: str | os.PathLike, like: PyTree = None) -> Result:
        """Read a file written by :meth:`save`, or a folder written by
        ``sgmc.sample(..., stream_to=folder)`` (its draws memory-mapped, not read).

        Without ``like``, the draws come back as dicts, lists, tuples and None: a namedtuple
        or another pytree node (an Equinox module, a Flax NNX ``State``, a dataclass) as a
        dict of its fields by name (a list for positions; an NNX ``Param`` as its array) —
        a file never runs or imports code. ``like``, a pytree of the draws' structure (the
        run's ``init``, or one draw; its leaves are not read), rebuilds that structure
        itself, each leaf matched by its path name (a ValueError names those that differ).
        """
        if os.path.isdir(path):  # a draws folder: io reads it, the Result is built here
            samples, info, meta = read_folder(path, like=like)
            return cls(samples, info, meta)
        with np.load(path, allow_pickle=False) as npz:
            header = json.loads(str(npz["header"]))
            if header.get("format") != _FORMAT:
                raise ValueError(f"{path} is not an sgmc result file (format "
                                 f"{header.get('format')!r})")
            n_leaves = sum(1 for k in npz.files if k.startswith("samples/"))
            leaves = [npz[f"samples/{i}"] for i in range(n_leaves)]
            info = {k[len("info/"):]: npz[k] for k in npz.files if k.startswith("info/")}
            predictive = {k[len("predictive/"):]: npz[k] for k in npz.files
                          if k.startswith("predictive/")} or None
        samples = decode_tree(header["spec"], leaves)
        if like is not None:
            samples = _rebuild(like, samples, header, leaves, str(path))
        return cls(samples, info, header["meta"], predictive=predictive)

    # -- diagnostics -------------------------------------------------------------------
    def diagnose(self, alpha: float = 0.0025):
        """Is the run stationary? The drift test of the statistics every kept draw recorded
        (``info["log_prior"]``, ``["loglik"]``, ``["energy"]``; first vs last part of each
        chain, a false-alarm rate ``alpha``) and their R-hat: :func:`sgmc.stationarity.diagnose`.
        Returns a :class:`sgmc.stationarity.Diagnosis`: ``.verdict`` ("ok", "not
        stationary", "too few draws", "not recorded"), ``.table`` (one row per statistic and
        chain); ``print()`` shows both."""
        from sgmc.stationarity import diagnose

        return diagnose(self, alpha)

    def has_replica_axis(self) -> bool:
        """True if the draws keep every replica (``replica_exchange(..., output="all")``):
        then every leaf of ``samples`` is (num_chains, num_draws, K, ...).

        Decided from ``meta["output"]`` when the run recorded it, else by comparing the draws
        with the final replica state held in memory; a loaded result without that record
        counts as coldest-only (pass ``replica_axis=True`` to :meth:`to_arviz`)."""
        labels = self.info.get("replica_labels")
        if labels is None:
            return False
        if "output" in self.meta:
            return self.meta["output"] == "all"
        dyn = getattr(self.final_state, "dyn", None)
        if dyn is None:
            return False
        # Final positions are (chains, K, *shape); the draws (chains, draws, [K,] *shape).
        drawn = [np.shape(x)[2:] for x in _leaves(self.samples)]
        final = [np.shape(x)[1:] for x in _leaves(dyn.position)]
        return bool(drawn) and drawn == final

    def with_names(self, names: Names) -> Result:
        """This result with parameter names that :meth:`summary` and :meth:`to_arviz` use
        whenever they are not given ``names=`` themselves: set them once, e.g.
        ``res = res.with_names(["intercept", "age", "income"])``.

        The names are checked now (a ValueError says what was expected) and stored in
        ``meta["names"]``, so :meth:`save` and :meth:`load` keep them. The draws are shared
        with this result, not copied; this result itself is left unchanged.

        Args:
            names: as ``names`` of :meth:`to_arviz`: a sequence of strings for a bare-array
                position, or a dict from a variable's name to the names of its last axis;
                None removes stored names.

        Returns:
            A new :class:`Result`, its ``meta`` a copy with ``"names"`` set (or removed).
        """
        meta = {k: v for k, v in self.meta.items() if k != "names"}
        if names is not None:
            axis_names = self._axis_names(names, self.has_replica_axis())
            if isinstance(names, Mapping):
                meta["names"] = axis_names
            else:
                meta["names"] = next(iter(axis_names.values()))
        return dataclasses.replace(self, meta=meta)

    def _axis_names(self, names: Names, rep: bool) -> dict[str, list[str]]:
        """``names`` checked against the draws: {variable: names of its last axis}."""
        leaves = _flat_names(self.samples)
        if isinstance(names, str):
            raise ValueError(f"names must be a sequence of strings or a dict, not the string "
                             f"{names!r}")
        if not isinstance(names, Mapping):
            if len(leaves) != 1:
                raise ValueError(
                    f"a sequence of names fits a position with one array; this position has "
                    f"the variables {list(leaves)}: pass a dict from a variable's name to the "
                    f"names of its last axis, e.g. {{{next(iter(leaves))!r}: [...]}}")
            names = {next(iter(leaves)): names}
        out = {}
        for key, seq in names.items():
            if key not in leaves:
                raise ValueError(f"names has the key {key!r}, which is not a variable of the "
                                 f"draws; the variables are {list(leaves)}")
            if isinstance(seq, str) or not hasattr(seq, "__iter__"):
                raise ValueError(f"names[{key!r}] must be a sequence of strings, not {seq!r}")
            seq = [str(x) for x in seq]
            shape = np.shape(leaves[key])
            if len(shape) <= 2 + rep:
                raise ValueError(
                    f"names[{key!r}]: the variable {key!r} has draws of shape {shape}, with no "
                    f"parameter axis after (chain, draw{', replica' if rep else ''}) to name")
            if len(seq) != shape[-1]:
                raise ValueError(
                    f"names[{key!r}] has {len(seq)} name{'s' * (len(seq) != 1)}; expected "
                    f"{shape[-1]}, one per entry of the last axis of {key!r} (draws of "
                    f"shape {shape})")
            if len(set(seq)) != len(seq):
                dup = sorted({x for x in seq if seq.count(x) > 1})
                raise ValueError(f"names[{key!r}] repeats {dup}; the names must differ")
            out[key] = seq
        return out

    def to_arviz(self, replica_axis: bool | None = None, names: Names = None):
        """An ``arviz.InferenceData``: the draws as ``posterior``, per-draw statistics as
        ``sample_stats``.

        Names and dimensions: a bare-array position is the variable ``theta``; any other
        pytree gives one variable per leaf, named by its path: dict keys, namedtuple fields
        and attributes (of an Equinox module, a dataclass) joined with ``.``, positions in
        lists and tuples as ``[i]`` (``x0``, ``x1``… at the top level), e.g.
        ``layers[0].weight``; a Flax NNX ``Param`` is named as its array. Each variable is
        (chain, draw, ...) with extra dims ``<name>_dim_0``…; draws that keep every replica
        (``output="all"``, see :meth:`has_replica_axis`; force with ``replica_axis``) put a
        ``replica`` dim first (slot 0 = coldest). ``sample_stats`` holds ``grad_evals``
        (cumulative per-example gradient evaluations), ``step`` (step number of each draw)
        and every other (chain, draw, ...) statistic; replica-exchange statistics per
        adjacent pair (``swaps``, ``swap_attempts``, ``energy_variance``) get a ``pair`` dim
        (pair k = slots (k, k+1)), ``replica_labels`` a ``replica`` dim. Scalar metadata
        become attributes (of the InferenceData and of its ``posterior`` group). Values are
        float64 (float32 sums over ~1e6 draws lose digits), counts stay integers.

        Args:
            replica_axis: whether the draws keep every replica (a ``replica`` dim after
                (chain, draw)); None decides by :meth:`has_replica_axis`.
            names: parameter names, as coordinate values of a variable's last dim (else
                0, 1, …). For a bare-array position (``theta``, shape (d,)), a sequence of
                d strings, e.g. ``["intercept", "age", "income"]``: ``theta_dim_0`` then has
                these coordinates. For a pytree position, a dict from a variable's name (as
                above) to the names of its last axis, e.g. ``{"beta": ["age", "income"]}``;
                variables not in the dict keep 0, 1, …. A ValueError names what was expected
                when a key is not a variable or a length differs from the axis. None (the
                default): the names stored by :meth:`with_names`, if any.

        Returns:
            An ``arviz.InferenceData`` with groups ``posterior`` and ``sample_stats``.
        """
        az = arviz()

        c, n = self.num_chains, self.num_draws
        rep = self.has_replica_axis() if replica_axis is None else bool(replica_axis)
        if names is None:
            names = self.meta.get("names")
        axis_names = {} if names is None else self._axis_names(names, rep)
        posterior, dims, coords = {}, {}, {}
        for name, value in _flat_names(self.samples).items():
            value = np.asarray(value)
            if value.shape[:2] != (c, n):
                raise ValueError(f"draws of {name!r} have shape {value.shape}; expected "
                                 f"leading axes (chains, draws) = {(c, n)}")
            if rep and value.ndim < 3:
                raise ValueError(f"replica_axis=True but draws of {name!r} have no axis "
                                 "after (chain, draw)")
            posterior[name] = value.astype(np.float64)
            extra = value.ndim - 2 - rep
            dims[name] = ["replica"] * rep + [f"{name}_dim_{i}" for i in range(extra)]
            if name in axis_names:
                coords[dims[name][-1]] = axis_names[name]
        stats = {}
        for key, value in self.info.items():
            value = np.asarray(value)
            if key == "step" and value.shape == (n,):
                value = np.broadcast_to(value, (c, n))
            if value.ndim < 2 or value.shape[:2] != (c, n):
                continue
            if not np.issubdtype(value.dtype, np.integer):
                value = value.astype(np.float64)
            stats[key] = value
            extra = value.ndim - 2
            if key in _PAIR_STATS and extra == 1:
                dims[key] = ["pair"]
            elif key == "replica_labels" and extra == 1:
                dims[key] = ["replica"]
            else:
                dims[key] = [f"{key}_dim_{i}" for i in range(extra)]
        attrs = {k: v for k, v in self.meta.items()
                 if isinstance(v, (str, int, float)) and not isinstance(v, bool)}
        idata = az.from_dict(posterior=posterior, sample_stats=stats or None, dims=dims,
                             coords=coords or None, attrs=attrs)
        idata.posterior.attrs.update(attrs)   # also on the group, where to_netcdf keeps them
        return idata

    def summary(self, names: Names = None, **kwargs):
        """ArviZ summary table (mean, sd, HDI, MCSE, ESS bulk/tail, R-hat) of the draws, one
        row per parameter. R-hat needs at least 2 chains to be informative.

        The table is a ``pandas.DataFrame`` (a subclass, :class:`SummaryFrame`) that prints
        every column: ``print(res.summary())`` is not cut to the terminal's width (long
        tables still show only the first and last rows, as pandas' ``display.max_rows``
        says; ``to_string()`` gives them all). Indexing, ``.loc``, arithmetic and
        ``to_csv`` work as for any DataFrame.

        Args:
            names: parameter names for the rows, as in :meth:`to_arviz`. For a bare-array
                position of shape (d,), a sequence of d strings: the rows are these names
                (``age`` instead of ``theta[1]``). For a pytree position, a dict from a
                variable's name to the names of its last axis: ``{"beta": ["age",
                "income"]}`` gives the rows ``beta[age]``, ``beta[income]``. None (the
                default): the names stored by :meth:`with_names`, else ``theta[0]``… .
            **kwargs: passed to ``arviz.summary`` (e.g. ``var_names=["beta"]``,
                ``kind="diagnostics"``, ``round_to``).

        Returns:
            The table, a ``pandas.DataFrame`` (an ``xarray.Dataset`` with ``fmt="xarray"``).
        """
        az = arviz()

        if names is None:
            names = self.meta.get("names")
        idata = self.to_arviz(names=names)
        table = az.summary(idata, **kwargs)
        import pandas as pd

        if not isinstance(table, pd.DataFrame):
            return table
        if names is not None and _is_bare(self.samples):
            var = next(iter(_flat_names(self.samples)))
            if idata.posterior[var].ndim == 3:     # (chain, draw, d): rows named alone
                labels = idata.posterior[var].coords[f"{var}_dim_0"].values
                table = table.rename(index={f"{var}[{x}]": str(x) for x in labels})
        return _summary_frame_class()(table)


@cache
def _summary_frame_class() -> type:
    """:class:`SummaryFrame`, made when first needed (pandas is imported then, not with
    sgmc)."""
    import pandas as pd

    class SummaryFrame(pd.DataFrame):
        """A ``pandas.DataFrame`` that prints every column (:meth:`Result.summary`).

        ``print`` and ``repr`` use ``to_string`` with no width limit: all columns are shown,
        rows are cut as pandas' ``display.max_rows`` and ``display.min_rows`` say. Every
        other use is that of a DataFrame; tables derived from it (``.loc``, ``round``,
        arithmetic) print the same way."""

        @property
        def _constructor(self):
            return SummaryFrame

        def __repr__(self) -> str:
            return self.to_string(max_rows=pd.get_option("display.max_rows"),
                                  min_rows=pd.get_option("display.min_rows"),
                                  show_dimensions=len(self) > pd.get_option("display.max_rows"))

        __str__ = __repr__

    SummaryFrame.__module__ = __name__
    SummaryFrame.__qualname__ = "SummaryFrame"
    return SummaryFrame


def __getattr__(name: str):
    if name == "SummaryFrame":   # made on first use (also by pickle, to load a table)
        return _summary_frame_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _is_bare(tree: PyTree) -> bool:
    """True if the position is one array (no dict, list or other pytree node around it)."""
    import jax

    return jax.tree_util.treedef_is_leaf(jax.tree.structure(tree))


_PAIR_STATS = ("swaps", "swap_attempts", "energy_variance", "plain_energy_variance",
               "plain_swap_weight")


def pool_moments(count: np.ndarray, mean: np.ndarray, m2: np.ndarray) -> dict[str, np.ndarray]:
    """Per-chain running moments (count n_c, mean μ_c, M₂,c = Σ (x − μ_c)², leading axis
    the chains) and their pooling over chains by Chan et al.'s parallel formula, in float64:

        n = Σ_c n_c,   μ = Σ_c n_c μ_c / n,   M₂ = Σ_c M₂,c + Σ_c n_c (μ_c − μ)²,

    with variances M₂ / n (ddof = 0: the spread of fn over the kept draws themselves; for
    Monte Carlo averages of thousands of draws the choice is immaterial). No draw: NaN."""
    count = np.asarray(count, np.int64)
    mean, m2 = np.asarray(mean, np.float64), np.asarray(m2, np.float64)
    shape = (-1,) + (1,) * (mean.ndim - 1)
    n_c = count.reshape(shape).astype(np.float64)
    n = n_c.sum(axis=0)
    nan = np.full(mean.shape[1:], np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        pooled = np.where(n > 0, (n_c * mean).sum(axis=0) / n, nan)
        dev = np.where(n_c > 0, mean - pooled, 0.0)
        m2_all = m2.sum(axis=0) + (n_c * dev**2).sum(axis=0)
        return {"mean": pooled, "var": np.where(n > 0, m2_all / n, nan),
                "count": np.int64(count.sum()),
                "chain_mean": np.where(n_c > 0, mean, np.nan),
                "chain_var": np.where(n_c > 0, m2 / np.maximum(n_c, 1), np.nan),
                "chain_count": count}


def _rebuild(like: PyTree, samples: PyTree, header: dict, leaves: list, what: str) -> PyTree:
    """The draws in ``like``'s structure: the stored leaves (in the description's order)
    matched to the template's by name."""
    names, order = header.get("names"), header.get("order")
    if names is None or order is None:  # a file of an earlier sgmc: dicts, lists, tuples
        return tree_like(like, leaf_names(samples), _leaves(samples), what)
    jax_leaves: list = [None] * len(order)
    jax_names: list = [None] * len(order)
    for k, i in enumerate(order):
        jax_leaves[i], jax_names[i] = leaves[k], names[k]
    return tree_like(like, jax_names, jax_leaves, what)


def _leaves(tree: PyTree) -> list:
    import jax

    return jax.tree.leaves(tree)
