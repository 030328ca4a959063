"""Five posteriordb posteriors as NumPyro models, with Stan's reference draws (issue 19, item 5).

The data are read from ``<data root>/posteriordb`` (:func:`sgmc.datasets.data_root`: by default
``../shared/data`` relative to the working directory or the repository root; never copied into
the repository). Each posterior's folder holds ``model.stan``, ``data.json.zip``,
``reference_draws.json.zip`` (10 chains x 1000 draws of Stan's NUTS) and ``posterior.json``.

>>> from sgmc.lab.experiments import posteriordb
>>> data, ref = posteriordb.load("kidiq-kidscore_momiq")              # doctest: +SKIP
>>> ref["beta"].shape, ref["sigma"].shape                             # doctest: +SKIP
((10, 1000, 2), (10, 1000))
>>> model, args_from_data = posteriordb.MODELS["kidiq-kidscore_momiq"]
>>> # model(*args_from_data(data), subsample_size=None) is Stan's model, as a NumPyro model

Every model is written the way ``sgmc.from_numpyro(model, *args)`` consumes it: the
global (latent) sites are sampled outside one ``numpyro.plate("data", N,
subsample_size=subsample_size)``; every per-row array enters that plate through
``numpyro.subsample(x, event_dim=...)``; the observed sites are inside it. ``subsample_size``
is a keyword, default None (all rows). Stan's ``transformed data`` (logs, standardisation) are
computed on the full data by ``args_from_data``, as Stan does, before any subsampling. Sample
site names are Stan's parameter names; observed sites carry Stan's name for the data vector.

The models (the posteriordb posterior name, then what is subtle in it):

* ``earnings-logearn_interaction_z``: ``log(earn) ~ normal(b1 + b2 z + b3 male + b4 z male,
  sigma)`` with ``z`` the height standardised by its mean and *sample* sd (Stan's ``sd`` divides
  by N - 1). No ``~`` statement for ``beta`` or ``sigma``: Stan's implicit flat priors, an
  improper uniform on R^4 and on ``sigma > 0`` (:class:`~numpyro.distributions.ImproperUniform`;
  the positive support makes NumPyro add the log-transform's Jacobian, as Stan does).
* ``eight_schools-eight_schools_noncentered``: ``theta_trans ~ normal(0, 1)`` (J = 8),
  ``mu ~ normal(0, 5)``, ``tau ~ cauchy(0, 5)`` on ``real<lower=0> tau``, which is a
  half-Cauchy(5) (the truncation only changes the normalising constant); the transformed
  parameter ``theta = theta_trans * tau + mu`` is recorded with ``numpyro.deterministic`` (the
  reference has ``theta``, ``mu``, ``tau``; not ``theta_trans``). The 8 schools are the plate's
  rows: ``theta`` enters it through ``numpyro.subsample`` while ``theta_trans`` stays global.
* ``kidiq-kidscore_momiq``: flat ``beta`` (R^2); ``sigma ~ cauchy(0, 2.5)`` on
  ``real<lower=0>``: half-Cauchy(2.5). Data kept unscaled, as in Stan.
* ``mesquite-logmesquite_logvash``: flat ``beta`` (R^6), flat ``sigma > 0``; regressors
  ``log(diam1 diam2 canopy_height)``, ``log(diam1 diam2)``, ``log(diam1 / diam2)``,
  ``log(total_height)``, ``group`` (0/1); the response ``log(weight)``.
* ``sblri-blr``: ``beta ~ normal(0, 10)`` (D = 5, no intercept), ``sigma ~ normal(0, 10)`` on
  ``real<lower=0>``: half-normal(10) (``target +=`` keeps constants; they do not change the
  posterior); ``y ~ normal(X beta, sigma)``.

Check against Stan (``tests/model/test_posteriordb_models.py``): NumPyro's NUTS, 2 chains x (1000
warm-up + 2000 draws), seed 0, in 64-bit, against the reference, per scalar parameter
``z = (mean_nuts - mean_ref) / sd_ref`` and the ratio ``sd_nuts / sd_ref`` (:func:`compare`).
Largest ``|z|`` over each posterior's scalar parameters, in brackets the largest ``|z| / SE(z)``;
then the largest ``|sd ratio - 1|`` and its largest ``|ratio - 1| / SE``; the tolerance is 4 SE
(SE(z) is 0.02-0.03 here):

* earnings-logearn_interaction_z: max |z| 0.060 (2.5 SE); max |ratio - 1| 0.031 (1.7 SE)
* eight_schools-eight_schools_noncentered: max |z| 0.024 (1.3 SE); max |ratio - 1| 0.103
  (``tau``, heavy-tailed: 2.3 SE)
* kidiq-kidscore_momiq: max |z| 0.058 (1.9 SE); max |ratio - 1| 0.016 (0.7 SE)
* mesquite-logmesquite_logvash: max |z| 0.023 (0.9 SE); max |ratio - 1| 0.026 (1.4 SE)
* sblri-blr: max |z| 0.021 (1.1 SE); max |ratio - 1| 0.016 (0.9 SE)

The same run in 32-bit gave max |z| 0.028, 0.046, 0.062, 0.034, 0.033 (all within 2.4 SE).
The tolerances and their derivation are in the test module's docstring. The test also checks
each model's log density against Stan's, written out by hand, exactly (to 1e-9, up to a
constant): sampling at this cost cannot see a dropped Jacobian (a 1/sigma prior on mesquite's
sigma moves its mean by about 3 SE), the density check does.

Note for consumers: Stan's flat priors are :class:`~numpyro.distributions.ImproperUniform`,
which cannot be sampled: initialise these models with NumPyro's ``init_to_uniform``
(NUTS's default: uniform in (-2, 2) on the unconstrained scale, as used by
``numpyro.infer.util.initialize_model``) or substitute values; not by running the model
under ``seed`` alone.
"""

from __future__ import annotations

import json
import os
import re
import zipfile
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import numpyro
import numpyro.distributions as dist
from numpyro.distributions import constraints

from sgmc import datasets
from sgmc._optional import arviz

__all__ = [
    "MODELS",
    "NAMES",
    "compare",
    "data_folder",
    "earnings_logearn_interaction_z",
    "eight_schools_noncentered",
    "kidiq_kidscore_momiq",
    "load",
    "mesquite_logmesquite_logvash",
    "sblri_blr",
]

NAMES: tuple[str, ...] = ("earnings-logearn_interaction_z",
                          "eight_schools-eight_schools_noncentered",
                          "kidiq-kidscore_momiq",
                          "mesquite-logmesquite_logvash",
                          "sblri-blr")

_INDEXED = re.compile(r"^(?P<base>[^\[\]]+)\[(?P<idx>[0-9,\s]+)\]$")


# --------------------------------------------------------------------------- data


def data_folder(root: str | os.PathLike[str] | None = None) -> str:
    """The folder holding the posteriordb posteriors: ``<data root>/posteriordb``, the data root
    as found by :func:`sgmc.datasets.data_root` (``root``, else ``SGMC_DATA``, else
    ``../shared/data``)."""
    return str(datasets.data_root(root) / "posteriordb")


def _read_zipped_json(path: str) -> Any:
    with zipfile.ZipFile(path) as zf:
        with zf.open(zf.namelist()[0]) as fh:
            return json.load(fh)


def _stack_reference(chains: list[dict[str, list[float]]]) -> dict[str, np.ndarray]:
    """Stan's flat names (``beta[1]``, ``beta[2]``, ``a[1,2]``) joined into arrays of shape
    ``(chains, draws, *param_shape)``, in the order the names first appear."""
    per_chain = [{k: np.asarray(v, dtype=np.float64) for k, v in c.items()} for c in chains]
    names = list(per_chain[0])
    for c in per_chain[1:]:
        if set(c) != set(names):
            raise ValueError("reference chains name different parameters")
    flat = {k: np.stack([c[k] for c in per_chain]) for k in names}  # (chains, draws)
    groups: dict[str, list[tuple[tuple[int, ...], str]]] = {}
    for k in names:
        m = _INDEXED.match(k)
        if m is None:
            groups.setdefault(k, []).append(((), k))
        else:
            idx = tuple(int(i) - 1 for i in m["idx"].split(","))  # Stan indexes from 1
            groups.setdefault(m["base"], []).append((idx, k))
    out: dict[str, np.ndarray] = {}
    for base, entries in groups.items():
        if entries[0][0] == ():
            if len(entries) != 1:
                raise ValueError(f"reference parameter {base!r} is both scalar and indexed")
            out[base] = flat[entries[0][1]]
            continue
        shape = tuple(max(e[0][d] for e in entries) + 1 for d in range(len(entries[0][0])))
        if len(entries) != int(np.prod(shape)):
            raise ValueError(f"reference parameter {base!r}: {len(entries)} entries do not "
                             f"fill shape {shape}")
        arr = np.empty(flat[entries[0][1]].shape + shape)
        for idx, k in entries:
            arr[(Ellipsis, *idx)] = flat[k]
        out[base] = arr
    return out


def load(name: str, root: str | os.PathLike[str] | None = None
         ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """One posteriordb posterior's data and Stan reference draws.

    Args:
        name: a posteriordb posterior name, one of :data:`NAMES` (any folder under
            :func:`data_folder` with the same files is read too).
        root: the data root (the folder holding ``posteriordb/``); default
            :func:`sgmc.datasets.data_root`.

    Returns:
        ``(data, reference)``: ``data`` is the posterior's data JSON object as parsed (lists
        and numbers); ``reference`` maps each of Stan's parameter names to a float64 array of
        shape ``(chains, draws, *param_shape)`` (10 x 1000 here), indexed parameters such as
        ``beta[1]..beta[k]`` joined into one array ``beta`` of shape ``(chains, draws, k)``.

    Raises:
        FileNotFoundError: the posterior's folder or one of its files is absent (the message
            names the path and how to point at the data).
    """
    folder = os.path.join(data_folder(root), name)
    paths = [os.path.join(folder, f) for f in ("data.json.zip", "reference_draws.json.zip")]
    for path in paths:
        if not os.path.isfile(path):
            raise FileNotFoundError(
                f"posteriordb posterior {name!r}: {path} not found. The posteriors are read from "
                f"<data root>/posteriordb, the data root being ../shared/data (relative to the "
                f"working directory or the repository) unless root=... or the SGMC_DATA "
                f"environment variable says otherwise.")
    data = _read_zipped_json(paths[0])
    reference = _stack_reference(_read_zipped_json(paths[1]))
    return data, reference


def _vec(data: Mapping[str, Any], key: str) -> np.ndarray:
    return np.asarray(data[key], dtype=np.float64)


# --------------------------------------------------------------------------- models


def _flat(shape: tuple[int, ...] = ()) -> dist.Distribution:
    """Stan's implicit prior on an unconstrained parameter: improper uniform on R^shape."""
    return dist.ImproperUniform(constraints.real, (), shape)


def _flat_positive() -> dist.Distribution:
    """Stan's implicit prior on ``real<lower=0>``: improper uniform on (0, inf). NumPyro
    samples it as ``exp`` of an unconstrained value and adds the log-Jacobian, as Stan does."""
    return dist.ImproperUniform(constraints.positive, (), ())


def earnings_logearn_interaction_z(log_earn: Any, z_height: Any, male: Any, *,
                                   subsample_size: int | None = None) -> None:
    """posteriordb ``earnings-logearn_interaction_z`` (ARM ch. 4): a linear regression of log
    earnings on standardised height, sex and their interaction; flat priors on ``beta``
    (4) and ``sigma > 0``. Arguments are Stan's transformed data
    (:func:`earnings_args`)."""
    n = np.shape(log_earn)[0]
    beta = numpyro.sample("beta", _flat((4,)))
    sigma = numpyro.sample("sigma", _flat_positive())
    with numpyro.plate("data", n, subsample_size=subsample_size):
        z = numpyro.subsample(z_height, event_dim=0)
        m = numpyro.subsample(male, event_dim=0)
        mu = beta[0] + beta[1] * z + beta[2] * m + beta[3] * (z * m)
        numpyro.sample("log_earn", dist.Normal(mu, sigma),
                       obs=numpyro.subsample(log_earn, event_dim=0))


def earnings_args(data: Mapping[str, Any]) -> tuple[np.ndarray, ...]:
    """Stan's ``transformed data`` of ``earnings-logearn_interaction_z``: ``(log_earn,
    z_height, male)``, ``z_height`` standardised with the sample sd (N - 1), as Stan's
    ``sd``; the interaction ``inter = z_height .* male`` is formed in the model, row by row."""
    height = _vec(data, "height")
    z_height = (height - height.mean()) / height.std(ddof=1)
    return np.log(_vec(data, "earn")), z_height, _vec(data, "male")


def eight_schools_noncentered(y: Any, sigma: Any, *,
                              subsample_size: int | None = None) -> None:
    """posteriordb ``eight_schools-eight_schools_noncentered``: the non-centred eight schools
    model. ``theta_trans ~ normal(0, 1)``, ``mu ~ normal(0, 5)``, ``tau ~ cauchy(0, 5)`` with
    ``tau > 0`` (half-Cauchy), ``theta = theta_trans * tau + mu`` (a deterministic site),
    ``y ~ normal(theta, sigma)`` with the schools' known ``sigma``. The J schools are the
    plate's rows."""
    j = np.shape(y)[0]
    theta_trans = numpyro.sample("theta_trans", dist.Normal(0.0, 1.0).expand([j]).to_event(1))
    mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
    tau = numpyro.sample("tau", dist.HalfCauchy(5.0))
    theta = numpyro.deterministic("theta", theta_trans * tau + mu)
    with numpyro.plate("data", j, subsample_size=subsample_size):
        numpyro.sample("y", dist.Normal(numpyro.subsample(theta, event_dim=0),
                                        numpyro.subsample(sigma, event_dim=0)),
                       obs=numpyro.subsample(y, event_dim=0))


def eight_schools_args(data: Mapping[str, Any]) -> tuple[np.ndarray, ...]:
    """``(y, sigma)`` of ``eight_schools``."""
    return _vec(data, "y"), _vec(data, "sigma")


def kidiq_kidscore_momiq(kid_score: Any, mom_iq: Any, *,
                         subsample_size: int | None = None) -> None:
    """posteriordb ``kidiq-kidscore_momiq`` (ARM ch. 3): ``kid_score ~ normal(beta[1] +
    beta[2] * mom_iq, sigma)``, flat ``beta`` (2), ``sigma ~ cauchy(0, 2.5)`` with
    ``sigma > 0`` (half-Cauchy)."""
    n = np.shape(kid_score)[0]
    beta = numpyro.sample("beta", _flat((2,)))
    sigma = numpyro.sample("sigma", dist.HalfCauchy(2.5))
    with numpyro.plate("data", n, subsample_size=subsample_size):
        mu = beta[0] + beta[1] * numpyro.subsample(mom_iq, event_dim=0)
        numpyro.sample("kid_score", dist.Normal(mu, sigma),
                       obs=numpyro.subsample(kid_score, event_dim=0))


def kidiq_args(data: Mapping[str, Any]) -> tuple[np.ndarray, ...]:
    """``(kid_score, mom_iq)`` of ``kidiq``, unscaled."""
    return _vec(data, "kid_score"), _vec(data, "mom_iq")


def mesquite_logmesquite_logvash(log_weight: Any, x: Any, *,
                                 subsample_size: int | None = None) -> None:
    """posteriordb ``mesquite-logmesquite_logvash`` (ARM ch. 4): ``log_weight ~ normal(beta[1]
    + x @ beta[2:6], sigma)``, flat ``beta`` (6) and ``sigma > 0``; ``x`` holds Stan's
    transformed data columns (:func:`mesquite_args`)."""
    n = np.shape(log_weight)[0]
    beta = numpyro.sample("beta", _flat((6,)))
    sigma = numpyro.sample("sigma", _flat_positive())
    with numpyro.plate("data", n, subsample_size=subsample_size):
        mu = beta[0] + numpyro.subsample(x, event_dim=1) @ beta[1:]
        numpyro.sample("log_weight", dist.Normal(mu, sigma),
                       obs=numpyro.subsample(log_weight, event_dim=0))


def mesquite_args(data: Mapping[str, Any]) -> tuple[np.ndarray, ...]:
    """Stan's ``transformed data`` of ``mesquite-logmesquite_logvash``: ``(log_weight, x)``
    with the columns of ``x`` (N, 5) ``log_canopy_volume``, ``log_canopy_area``,
    ``log_canopy_shape``, ``log_total_height``, ``group``."""
    d1, d2 = _vec(data, "diam1"), _vec(data, "diam2")
    x = np.stack([np.log(d1 * d2 * _vec(data, "canopy_height")), np.log(d1 * d2),
                  np.log(d1 / d2), np.log(_vec(data, "total_height")), _vec(data, "group")],
                 axis=1)
    return np.log(_vec(data, "weight")), x


def sblri_blr(X: Any, y: Any, *, subsample_size: int | None = None) -> None:
    """posteriordb ``sblri-blr``: ``y ~ normal(X * beta, sigma)`` without intercept,
    ``beta ~ normal(0, 10)`` (D), ``sigma ~ normal(0, 10)`` with ``sigma > 0``
    (half-normal)."""
    n, d = np.shape(X)
    beta = numpyro.sample("beta", dist.Normal(0.0, 10.0).expand([d]).to_event(1))
    sigma = numpyro.sample("sigma", dist.HalfNormal(10.0))
    with numpyro.plate("data", n, subsample_size=subsample_size):
        mu = numpyro.subsample(X, event_dim=1) @ beta
        numpyro.sample("y", dist.Normal(mu, sigma), obs=numpyro.subsample(y, event_dim=0))


def sblri_args(data: Mapping[str, Any]) -> tuple[np.ndarray, ...]:
    """``(X, y)`` of ``sblri``: X is (N, D)."""
    X = np.asarray(data["X"], dtype=np.float64).reshape(int(data["N"]), int(data["D"]))
    return X, _vec(data, "y")


#: posteriordb posterior name -> (NumPyro model, data JSON -> the model's positional args):
#: ``model(*args_from_data(data), subsample_size=None)``.
MODELS: dict[str, tuple[Callable[..., None], Callable[[Mapping[str, Any]], tuple]]] = {
    "earnings-logearn_interaction_z": (earnings_logearn_interaction_z, earnings_args),
    "eight_schools-eight_schools_noncentered": (eight_schools_noncentered, eight_schools_args),
    "kidiq-kidscore_momiq": (kidiq_kidscore_momiq, kidiq_args),
    "mesquite-logmesquite_logvash": (mesquite_logmesquite_logvash, mesquite_args),
    "sblri-blr": (sblri_blr, sblri_args),
}


# --------------------------------------------------------------------------- comparison


def _moments(x: np.ndarray) -> dict[str, np.ndarray]:
    """Per scalar component of ``x`` (chains, draws, *shape): mean, sd, and their Monte Carlo
    SEs from ArviZ's ESS (``method="mean"`` and ``"sd"``).

    SE(mean) = sd / sqrt(ESS_mean). SE(sd) by the delta method on the variance:
    Var(s^2) ~ (m4 - s^4) / ESS_sd, so SE(s) ~ sqrt(m4 - s^4) / (2 s sqrt(ESS_sd)), with m4
    the fourth central moment (a normal's gives s / sqrt(2 ESS_sd))."""
    az = arviz()
    x = np.asarray(x, dtype=np.float64)
    if x.ndim < 2:
        raise ValueError(f"draws must have shape (chains, draws, ...), got {x.shape}")
    shape = x.shape[2:]
    flat = x.reshape(x.shape[0], x.shape[1], -1)
    mean = flat.mean(axis=(0, 1))
    sd = flat.std(axis=(0, 1), ddof=1)
    m4 = ((flat - mean) ** 4).mean(axis=(0, 1))
    ess_mean = np.array([float(az.ess(flat[:, :, i], method="mean"))
                         for i in range(flat.shape[2])])
    ess_sd = np.array([float(az.ess(flat[:, :, i], method="sd"))
                       for i in range(flat.shape[2])])
    with np.errstate(divide="ignore", invalid="ignore"):
        se_mean = sd / np.sqrt(ess_mean)
        se_sd = np.sqrt(np.maximum(m4 - sd**4, 0.0)) / (2 * sd * np.sqrt(ess_sd))
    out = {"mean": mean, "sd": sd, "se_mean": se_mean, "se_sd": se_sd,
           "ess_mean": ess_mean, "ess_sd": ess_sd}
    return {k: v.reshape(shape) for k, v in out.items()}


def compare(draws: Mapping[str, Any], reference: Mapping[str, np.ndarray]
            ) -> dict[str, dict[str, np.ndarray]]:
    """Draws against reference draws, per parameter of ``reference``, in reference-sd units.

    Args:
        draws: parameter name -> array ``(chains, draws, *param_shape)`` (a sampler's output;
            names as in ``reference``; extra names are ignored).
        reference: the same for the reference (:func:`load`).

    Returns:
        parameter name -> dict of arrays of shape ``param_shape``:

        * ``z``: ``(mean - mean_ref) / sd_ref``; ``se_z``: its Monte Carlo SE,
          ``sqrt(SE_mean^2 + SE_mean_ref^2) / sd_ref``;
        * ``sd_ratio``: ``sd / sd_ref``; ``se_sd_ratio``: its SE by the delta method,
          ``sd_ratio * sqrt((SE_sd / sd)^2 + (SE_sd_ref / sd_ref)^2)``;
        * ``mean``, ``sd``, ``mean_ref``, ``sd_ref``, ``ess``, ``ess_ref`` (ESS of the mean).

        SE(mean) = sd / sqrt(ESS) and SE(sd) as in the delta method on the variance, the ESS
        from :func:`arviz.ess` (``method="mean"``, ``"sd"``) on each set of draws.

    Raises:
        KeyError: a reference parameter is missing from ``draws``.
        ValueError: shapes of a parameter differ beyond (chains, draws).
    """
    out: dict[str, dict[str, np.ndarray]] = {}
    for name, ref in reference.items():
        if name not in draws:
            raise KeyError(f"draws have no parameter {name!r} (they have {sorted(draws)})")
        x = np.asarray(draws[name], dtype=np.float64)
        if x.shape[2:] != np.shape(ref)[2:]:
            raise ValueError(f"{name}: draws have parameter shape {x.shape[2:]}, the reference "
                             f"{np.shape(ref)[2:]}")
        a, r = _moments(x), _moments(np.asarray(ref))
        z = (a["mean"] - r["mean"]) / r["sd"]
        se_z = np.sqrt(a["se_mean"] ** 2 + r["se_mean"] ** 2) / r["sd"]
        ratio = a["sd"] / r["sd"]
        se_ratio = ratio * np.sqrt((a["se_sd"] / a["sd"]) ** 2 + (r["se_sd"] / r["sd"]) ** 2)
        out[name] = {"z": z, "se_z": se_z, "sd_ratio": ratio, "se_sd_ratio": se_ratio,
                     "mean": a["mean"], "sd": a["sd"], "mean_ref": r["mean"],
                     "sd_ref": r["sd"], "ess": a["ess_mean"], "ess_ref": r["ess_mean"]}
    return out
