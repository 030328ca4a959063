"""A NumPyro model as an sgmc problem: :func:`sgmc.from_numpyro`.

The model's data rows enter through NumPyro's own minibatch construct,
``numpyro.plate("data", N, subsample_size=...)`` with ``numpyro.subsample(x, event_dim)``
for every per-row array. sgmc takes over that plate: it substitutes the plate's indices by
its own minibatch (or a chunk of a full-data pass), so that one trace of the model gives,
per row i of the batch, the log-likelihood of the observed sites inside the plate,

    log p(x_i | θ) = Σ_{observed sites s in the plate} log p_s(x_{s,i} | θ)

(the per-example terms L_i = −log p(x_i | θ) that SVRG, SAGA and EWSG act on), and
everything else — the latent sites' priors, observed sites outside the plate and
``numpyro.factor`` terms — is the exact (never subsampled) term U₀. The plate's
``subsample_size`` and its N/n scale are ignored: the sampler's ``batch_size`` decides and
sgmc weights the batch (the oracle of :mod:`sgmc.model.oracle`).

Every latent site is sampled on the unconstrained scale z with θ = T(z), T = NumPyro's
``biject_to(site.fn.support)`` evaluated in the model (so supports that depend on other
parameters work), and log |det ∂T/∂z| joins U₀:

    U(z) = −log p(T(z)) − log |det ∂T/∂z| − Σ_i log p(x_i | T(z)).

Draws are reported as θ, a dict keyed by site name (with the model's ``deterministic``
sites outside the plate); ``init`` is given as θ.

Not supported (each refused with a message): latent sites inside the data plate (local
latent variables), discrete latent sites, a model without the plate, :class:`sgmc.Stream`
data (the model indexes its own arrays).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from sgmc import _validate as check
from sgmc._pytree import pytree_dataclass, static
from sgmc.model.constraints import numpyro_distributions
from sgmc.model.oracle import Problem

PyTree = Any

__all__ = ["NumPyroPosterior", "from_numpyro"]


def _numpyro():
    try:
        import numpyro
        from numpyro import handlers
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError('sgmc.from_numpyro needs NumPyro: pip install "sgmc[numpyro]"'
                          ) from err
    return numpyro, handlers


class _Layout:
    """The model's arguments apart from their arrays: the tree structure, and its leaves
    that are not arrays (sizes, flags, strings) — static, hashable by their repr."""

    def __init__(self, treedef, static_leaves: dict[int, Any], num_leaves: int) -> None:
        self.treedef, self.static_leaves, self.num_leaves = treedef, static_leaves, num_leaves

    def __repr__(self) -> str:
        return f"_Layout({self.treedef}, {self.static_leaves!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Layout) and repr(self) == repr(other)

    def __hash__(self) -> int:
        return hash(repr(self))

    def rebuild(self, arrays: tuple) -> tuple[tuple, dict]:
        it = iter(arrays)
        leaves = [self.static_leaves[i] if i in self.static_leaves else next(it)
                  for i in range(self.num_leaves)]
        return jax.tree.unflatten(self.treedef, leaves)


def _split_args(args: tuple, kwargs: dict) -> tuple[tuple, _Layout]:
    """The arrays among the model's arguments (dynamic: passed to compiled code, validated
    and cast as data are) and the layout that puts them back."""
    flat, treedef = jax.tree_util.tree_flatten_with_path((args, kwargs))
    arrays, static_leaves = [], {}
    for i, (path, leaf) in enumerate(flat):
        if isinstance(leaf, (np.ndarray, jax.Array)) and np.ndim(leaf) > 0:
            where = "model argument " + (jax.tree_util.keystr(path[1:]) or "")
            arrays.append(jnp.asarray(check.data_array(where, leaf)))
        else:
            static_leaves[i] = leaf
    return tuple(arrays), _Layout(treedef, static_leaves, len(flat))


class _Sites:
    """What the model's trace says once: the data plate's size, the latent sites (outside
    the plate, continuous), the observed sites inside the plate, the deterministic sites
    reported with the draws. Hashable by content (a static part of the problem)."""

    def __init__(self, plate: str, size: int, latent: tuple[str, ...],
                 observed: tuple[str, ...], deterministic: tuple[str, ...]) -> None:
        self.plate, self.size = plate, size
        self.latent, self.observed, self.deterministic = latent, observed, deterministic

    def __repr__(self) -> str:
        return (f"_Sites(plate={self.plate!r}, size={self.size}, latent={self.latent}, "
                f"observed={self.observed}, deterministic={self.deterministic})")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Sites) and repr(self) == repr(other)

    def __hash__(self) -> int:
        return hash(repr(self))


def _in_plate(site: dict, plate: str) -> Any:
    """The frame of ``plate`` among the site's plates, or None."""
    for frame in site.get("cond_indep_stack", ()):
        if frame.name == plate:
            return frame
    return None


def from_numpyro(model: Callable, *args: Any, chunk_size: int = 1024,
                 plate: str = "data", **kwargs: Any) -> NumPyroPosterior:
    """The posterior of a NumPyro model, called as ``model(*args, **kwargs)`` (its data
    included), as an sgmc problem.

    The data rows must enter through ``with numpyro.plate("data", N,
    subsample_size=...):`` with ``numpyro.subsample(x, event_dim=...)`` for each
    per-row array: sgmc's minibatches replace the plate's subsample (the
    ``subsample_size`` given in the model is ignored; the sampler's ``batch_size``
    decides). The observed sites in the plate are the per-datum likelihood (what
    SVRG, SAGA and EWSG reduce the variance of); the latent sites' priors, observed
    sites outside the plate and ``numpyro.factor`` terms are the exact term. Latent
    sites are sampled on the unconstrained scale through NumPyro's transforms with the
    log-Jacobian added; ``init`` is a dict keyed by latent site name on the
    constrained scale, and ``res.samples`` is a dict keyed by site name on the
    constrained scale (with the deterministic sites outside the plate). Needs NumPyro
    (``pip install "sgmc[numpyro]"``). See the module docstring and docs/numpyro.md.

    Args:
        model: the NumPyro model (a function).
        *args: the model's positional arguments. Arrays among the arguments are passed
            to the compiled code as data (validated and cast as data are); other values
            are fixed.
        **kwargs: the model's keyword arguments (as ``*args``).
        chunk_size: rows per chunk in full-data passes.
        plate: the name of the plate that holds the data rows.

    Example:
        >>> def model(x, y=None):                                     # doctest: +SKIP
        ...     w = numpyro.sample("w", dist.Normal(0, 1).expand([x.shape[1]]))
        ...     sigma = numpyro.sample("sigma", dist.HalfNormal(1.0))
        ...     with numpyro.plate("data", x.shape[0], subsample_size=100):
        ...         xb = numpyro.subsample(x, event_dim=1)
        ...         yb = numpyro.subsample(y, event_dim=0)
        ...         numpyro.sample("y", dist.Normal(xb @ w, sigma), obs=yb)
        >>> post = sgmc.from_numpyro(model, X, y)                     # doctest: +SKIP
        >>> res = sgmc.sample(post, sgmc.sgld(1e-4, batch_size=100),
        ...                   {"w": np.zeros(d), "sigma": 1.0}, num_steps=10_000)
        >>> res.samples["sigma"].shape                                # doctest: +SKIP
        (1, 10000)
    """
    return NumPyroPosterior(model, *args, chunk_size=chunk_size, plate=plate, **kwargs)


@pytree_dataclass
class NumPyroPosterior(Problem):
    """The posterior of a NumPyro model (see the module docstring): built by
    :func:`sgmc.from_numpyro`. ``data`` are the row indices 0..N−1 (what the
    sampler's minibatches draw); the model's own arrays are ``arrays``."""

    #: How the preflight checks name the two terms (sgmc.run.preflight).
    term_names = ("the model's prior (the sites outside the data plate)",
                  "the model's likelihood (the observed sites in the data plate)")

    def describe_term(self, exact: bool) -> tuple[str, str]:
        # Each term traces the whole model: name it, and the term in words.
        return "the model", f"{self.term_names[0 if exact else 1]} must be a scalar"

    data: Any
    arrays: tuple
    model: Callable = static()
    layout: Any = static()
    sites: Any = static()
    chunk_size: int = static(1024)
    data_rows: int = static(0)
    stream: Any = static(None)
    data_shards: int = static(1)

    def __init__(self, model: Callable, *args: Any, chunk_size: int = 1024,
                 plate: str = "data", **kwargs: Any) -> None:
        _numpyro()
        check.callable_("model", model)
        from sgmc.model.stream import Stream

        if any(isinstance(a, Stream) for a in jax.tree.leaves((args, kwargs))):
            raise TypeError("sgmc.from_numpyro does not take an sgmc.Stream: the model "
                            "indexes its own arrays, which must fit on the device")
        arrays, layout = _split_args(args, kwargs)
        object.__setattr__(self, "arrays", arrays)
        object.__setattr__(self, "model", model)
        object.__setattr__(self, "layout", layout)
        sites = self._discover(plate)
        object.__setattr__(self, "sites", sites)
        object.__setattr__(self, "data", jnp.arange(sites.size, dtype=jnp.int32))
        object.__setattr__(self, "data_rows", sites.size)
        chunk = check.integer("chunk_size", chunk_size, lo=1)
        object.__setattr__(self, "chunk_size", min(chunk, sites.size))

    # -- the model's trace --------------------------------------------------------------
    def _trace(self, idx: jax.Array, z: dict | None = None, theta: dict | None = None,
               seed: bool = False, plate: str | None = None, seed_value: int = 0) -> dict:
        """The model's trace with the data plate on rows ``idx`` and the latent sites at
        z (unconstrained: pushed through T, the log-Jacobian recorded as a factor site
        ``_NAME_log_det``), at θ (as given), or (``seed``) at random points of their
        supports."""
        numpyro, handlers = _numpyro()
        from numpyro.distributions.util import sum_rightmost
        from numpyro.infer.initialization import init_to_uniform

        biject_to = numpyro_distributions().transforms.biject_to
        plate = plate or self.sites.plate

        def substitute(msg):
            if msg["type"] == "plate" and msg["name"] == plate:
                msg["args"] = (msg["args"][0], idx.shape[0])  # no size-mismatch warning
                return idx
            if msg["type"] != "sample" or msg.get("is_observed"):
                return None
            if theta is not None:
                return theta.get(msg["name"])
            if z is not None and msg["name"] in z:
                t = biject_to(msg["fn"].support)
                value = t(z[msg["name"]])
                log_det = t.log_abs_det_jacobian(z[msg["name"]], value)
                # Summed over the event dimensions only: the factor keeps the site's batch
                # shape, so a plate around the site (which broadcasts the factor to it)
                # counts each element's log-Jacobian once.
                log_det = sum_rightmost(log_det, jnp.ndim(log_det) - jnp.ndim(value)
                                        + len(msg["fn"].event_shape))
                numpyro.factor(f"_{msg['name']}_log_det", log_det)
                return value
            if seed and not msg["fn"].support.is_discrete:
                # A point of the support (uniform in (−2, 2) on the unconstrained scale, as
                # NumPyro's NUTS starts): improper priors cannot be sampled.
                return init_to_uniform(msg)
            return None

        # The seed handler inside the substitution: a site's rng_key is set before
        # init_to_uniform reads it.
        model = handlers.seed(self.model, rng_seed=seed_value) if seed else self.model
        model = handlers.substitute(model, substitute_fn=substitute)
        args, kwargs = self.layout.rebuild(self.arrays)
        return handlers.trace(model).get_trace(*args, **kwargs)

    def _discover(self, plate: str) -> _Sites:
        try:
            tr = self._trace(jnp.arange(1, dtype=jnp.int32), seed=True, plate=plate)
        except Exception as err:
            raise ValueError(f"running the model with its arguments failed: "
                             f"{type(err).__name__}: {err}") from err
        plates = {name: s for name, s in tr.items() if s["type"] == "plate"}
        if plate not in plates:
            raise ValueError(
                f"the model has no numpyro.plate named {plate!r} (found: "
                f"{', '.join(map(repr, plates)) or 'none'}): write its data rows as "
                f"`with numpyro.plate({plate!r}, N, subsample_size=...):` with "
                "numpyro.subsample(x, event_dim=...) for each per-row array, or pass "
                "plate='NAME'")
        size = int(plates[plate]["args"][0])
        latent, observed, deterministic = [], [], []
        for name, s in tr.items():
            inside = _in_plate(s, plate) is not None
            if s["type"] == "deterministic" and not inside:
                deterministic.append(name)
            if s["type"] != "sample":
                continue
            if s.get("is_observed"):
                if inside:
                    observed.append(name)
                continue
            if inside:
                raise ValueError(f"the latent site {name!r} is inside the plate {plate!r}: "
                                 "local latent variables (one per data row) are not "
                                 "supported; only global parameters can be sampled")
            if s["fn"].support.is_discrete:
                raise ValueError(f"the latent site {name!r} is discrete; sgmc samples "
                                 "continuous parameters only")
            latent.append(name)
        if not observed:
            raise ValueError(f"no observed site is inside the plate {plate!r}: the "
                             "likelihood of the data rows must be written there (obs=...)")
        if not latent:
            raise ValueError("the model has no latent site to sample")
        sites = _Sites(plate, size, tuple(latent), tuple(observed), tuple(deterministic))
        object.__setattr__(self, "sites", sites)
        self._check_rows(min(size, 3))
        return sites

    def _check_rows(self, n: int) -> None:
        """The observed sites give one term per row of a batch of n rows (the arrays were
        passed through numpyro.subsample)."""
        idx = jnp.arange(n, dtype=jnp.int32)
        tr = self._trace(idx, seed=True)
        for name in self.sites.observed:
            try:
                out = self._rows_of(tr[name], n)
            except Exception as err:
                raise ValueError(
                    f"the observed site {name!r} does not have one term per row of the "
                    f"plate {self.sites.plate!r} on a batch of {n} rows ({err}); pass every "
                    "per-row array through numpyro.subsample(x, event_dim=...) inside the "
                    "plate") from err
            if out.shape != (n,):
                raise ValueError(f"the observed site {name!r} gives terms of shape "
                                 f"{out.shape} on a batch of {n} rows, expected ({n},)")

    def _rows_of(self, site: dict, n: int) -> jax.Array:
        """Per-row log-likelihood of one observed site in the plate: its log-density summed
        over every batch axis but the plate's (the plate's N/n scale left out, a user's
        scale kept)."""
        frame = _in_plate(site, self.sites.plate)
        lp = site["fn"].log_prob(site["value"])
        axis = lp.ndim + frame.dim
        if axis < 0 or lp.shape[axis] != n:
            raise ValueError(f"its log-density has shape {lp.shape}")
        per_row = jnp.sum(jnp.moveaxis(lp, axis, 0).reshape(n, -1), axis=1)
        scale = site.get("scale")
        if scale is not None:
            size = self.sites.size
            per_row = per_row * (scale / (size / n) if n != size else scale)
        return per_row

    # -- the oracle (sgmc.model.oracle.Problem) ----------------------------------------------
    @property
    def data_weight(self) -> float:
        return 1.0

    def exact_energy(self, params: PyTree) -> jax.Array:
        tr = self._trace(jnp.arange(1, dtype=jnp.int32), z=params)
        total = jnp.zeros((), jnp.result_type(*jax.tree.leaves(params), jnp.float32))
        for s in tr.values():
            if s["type"] != "sample" or _in_plate(s, self.sites.plate) is not None:
                continue
            lp = jnp.sum(s["fn"].log_prob(s["value"]))
            if s.get("scale") is not None:
                lp = lp * s["scale"]
            total = total - lp
        return total

    def chunk_energies(self, params: PyTree, chunk: jax.Array) -> jax.Array:
        n, size = chunk.shape[0], self.sites.size
        # A batch of all N rows leaves the plate's rows as they are (NumPyro subsamples
        # only a smaller batch): take all rows in order, then the chunk's.
        rows = jnp.arange(size, dtype=jnp.int32) if n == size else chunk
        tr = self._trace(rows, z=params)
        out = -sum(self._rows_of(tr[name], n) for name in self.sites.observed)
        return out[chunk] if n == size else out

    def datum_energy(self, params: PyTree, datum: jax.Array) -> jax.Array:
        return self.chunk_energies(params, jnp.reshape(datum, (1,)))[0]

    # -- the model's scale --------------------------------------------------------------
    @property
    def constrained(self) -> bool:
        return True

    def constrain(self, params: PyTree) -> dict:
        tr = self._trace(jnp.arange(1, dtype=jnp.int32), z=params)
        names = self.sites.latent + self.sites.deterministic
        return {name: tr[name]["value"] for name in names}

    def initial_point(self, seed: int = 0) -> dict:
        """A point to start chains from, on the constrained scale (a dict keyed by latent
        site name): each latent site uniform in (−2, 2) on its unconstrained scale, as
        NumPyro's NUTS starts (``init_to_uniform``). ``seed`` picks the point."""
        seed = check.integer("seed", seed, lo=0, hi=2**32 - 1)
        tr = self._trace(jnp.arange(1, dtype=jnp.int32), seed=True, seed_value=seed)
        return {name: tr[name]["value"] for name in self.sites.latent}

    def _supports(self, theta: dict) -> dict:
        numpyro, _ = _numpyro()
        # θ may be outside a support (what check_support reports): NumPyro's own argument
        # validation must not raise first, about a distribution the user did not write.
        with numpyro.validation_enabled(False):
            tr = self._trace(jnp.arange(1, dtype=jnp.int32), theta=theta)
        return {name: tr[name]["fn"].support for name in self.sites.latent}

    def unconstrain(self, params: PyTree) -> dict:
        theta = self._latent_part(params)
        biject_to = numpyro_distributions().transforms.biject_to
        supports = self._supports(theta)
        return {name: biject_to(supports[name]).inv(theta[name]) for name in self.sites.latent}

    def _latent_part(self, params: Any, name: str = "init") -> dict:
        if not isinstance(params, dict):
            raise TypeError(f"{name} of a NumPyro model must be a dict keyed by latent site "
                            f"name ({', '.join(self.sites.latent)}), got "
                            f"{type(params).__name__}")
        missing = [k for k in self.sites.latent if k not in params]
        unknown = [k for k in params if k not in self.sites.latent
                   and k not in self.sites.deterministic]
        if missing or unknown:
            raise ValueError(f"{name} must give every latent site of the model "
                             f"({', '.join(self.sites.latent)}), on the constrained scale"
                             + (f"; missing: {', '.join(missing)}" if missing else "")
                             + (f"; not latent sites: {', '.join(unknown)}" if unknown else ""))
        return {k: jnp.asarray(params[k]) for k in self.sites.latent}

    def check_support(self, params: PyTree, name: str = "init") -> None:
        theta = self._latent_part(params, name)
        # One chain's point decides the supports (they may depend on other parameters).
        lead = {k: jax.tree.map(lambda x: x[0], v) for k, v in theta.items()}
        supports = self._supports(lead)
        for k, v in theta.items():
            if not bool(jnp.all(supports[k](v))):
                raise ValueError(f"{name}[{k!r}] is outside the support of the site {k!r} "
                                 f"({supports[k]}); give a point inside it (on the "
                                 "constrained scale)")
