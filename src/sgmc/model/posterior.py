"""The two problems a user builds: a Bayesian :class:`Posterior` and an :class:`Objective` to
minimise — each the energy of :class:`~sgmc.model.oracle.Problem` written from the user's
functions (``loglik`` and ``logprior``; ``f``), with the weight of its data term (a
posterior's sum; an objective's mean over the data) and the words its messages use for the
user's functions. A NumPyro model is a third problem of this kind:
:func:`sgmc.from_numpyro` (:mod:`sgmc.model.numpyro`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from sgmc import _validate as check
from sgmc._pytree import pytree_dataclass, static
from sgmc.model.checks import ModelShapeError
from sgmc.model.data import stream_or_data
from sgmc.model.oracle import Problem

PyTree = Any

__all__ = ["Objective", "Posterior"]


@pytree_dataclass
class Posterior(Problem):
    """A Bayesian posterior p(θ | x₁..x_N) ∝ p(θ) Π_i p(x_i | θ).

    Energy U(θ) = −log p(θ) − Σ_i log p(x_i | θ) (the notation of docs/samplers.md). With
    ``constraints``, the chains move on the unconstrained scale z, θ = T(z), with energy
    U(z) = −log p(T(z)) − log |det ∂T/∂z| − Σ_i log p(x_i | T(z)) (:mod:`sgmc.model.constraints`);
    ``loglik`` and ``logprior`` still take θ, ``init`` is given as θ and draws are reported
    as θ.

    With ``temperature`` τ ≠ 1 the likelihood is tempered (Wenzel et al. 2020, Eq. 1, with the
    temperature on the likelihood term only; Aitchison 2021):
    U_τ(θ) = −log p(θ) − (1/τ) Σ_i log p(x_i | θ), so p_τ(θ | x) ∝ p(θ) p(x | θ)^{1/τ}.
    τ < 1 ("cold") counts every datum 1/τ times, sharpening the posterior around the data;
    τ > 1 flattens it. τ = 1 is Bayes' posterior, the only one whose model average is the
    Bayesian predictive: a τ chosen on validation data is a modelling choice (it repairs a
    misspecified prior or likelihood) and its price is that the draws no longer come from
    the stated model. This is not the sampler's ``temperature`` (``sgmc.sghmc(...,
    temperature=T)`` samples exp(−U/T), prior included); for a Gaussian prior N(0, s²) the
    two agree when the likelihood's τ = T and the prior's variance is T s².

    Args:
        loglik: ``loglik(params, datum) -> scalar``, the log-likelihood of ONE datum, where
            ``datum`` is one slice of ``data`` along its leading axis. With
            ``batched=True``: ``loglik(params, batch) -> (n,)``, the log-likelihoods of the
            n rows of a batch of data (a network applied to a minibatch at once).
        logprior: ``logprior(params) -> scalar``.
        data: an array or pytree of arrays sharing a leading axis of length N, or an
            :class:`sgmc.Stream` of data too large for the device (read in buffers).
        chunk_size: rows per chunk in full-data passes (memory O(chunk_size · d)).
        constraints: which parameters are constrained, e.g. ``{"sigma": "positive",
            "p": "unit_interval", "cuts": "ordered", "weights": "simplex"}`` (names or
            NumPyro constraint objects, following the params' structure; unlisted leaves
            are unconstrained): see :class:`sgmc.model.constraints.Constraints`. Needs NumPyro
            (``pip install "sgmc[numpyro]"``), whose transforms and Jacobians are used.
        batched: ``loglik`` takes a batch of rows and returns one value per row. A
            per-example gradient (SVRG, SAGA, EWSG) is then the gradient of a batch of one.
        temperature: τ > 0, the likelihood's temperature (above); default 1, Bayes'
            posterior.
    """

    data: PyTree
    loglik: Callable = static()
    logprior: Callable = static()
    chunk_size: int = static(1024)
    data_rows: int = static(0)
    stream: Any = static(None)
    data_shards: int = static(1)
    constraints: Any = static(None)
    batched: bool = static(False)
    temperature: float = static(1.0)

    def __init__(self, loglik: Callable, logprior: Callable, data: PyTree,
                 chunk_size: int = 1024, constraints: Any = None,
                 batched: bool = False, temperature: float = 1.0) -> None:
        check.callable_("loglik", loglik)
        check.callable_("logprior", logprior)
        if not isinstance(batched, (bool, np.bool_)):
            raise TypeError(f"batched must be True or False, got {batched!r}")
        if constraints is not None:
            from sgmc.model.constraints import Constraints

            if not isinstance(constraints, Constraints):
                constraints = Constraints(constraints)
        arrays, n = stream_or_data(self, data)
        chunk = check.integer("chunk_size", chunk_size, lo=1)
        tau = check.positive("temperature", temperature)
        object.__setattr__(self, "data", arrays)
        object.__setattr__(self, "temperature", float(tau))
        object.__setattr__(self, "loglik", loglik)
        object.__setattr__(self, "logprior", logprior)
        object.__setattr__(self, "chunk_size", min(chunk, n))
        object.__setattr__(self, "data_rows", n)
        object.__setattr__(self, "constraints", constraints)
        object.__setattr__(self, "batched", bool(batched))

    @property
    def data_weight(self) -> float:
        # A streamed buffer of B rows stands for all N: each of its terms counts N/B times;
        # a tempered likelihood counts each datum 1/τ times.
        return (self.stream.weight if self.stream is not None else 1.0) / self.temperature

    def exact_energy(self, params: PyTree) -> jax.Array:
        if self.constraints is None:
            return -self.logprior(params)
        theta, log_det = self.constraints.constrain_with_log_det(params)
        return -self.logprior(theta) - log_det

    def datum_energy(self, params: PyTree, datum: PyTree) -> jax.Array:
        if self.batched:
            return self.chunk_energies(params, jax.tree.map(lambda a: a[None], datum))[0]
        return -self.loglik(self.constrain(params), datum)

    def chunk_energies(self, params: PyTree, chunk: PyTree) -> jax.Array:
        if not self.batched:
            return super().chunk_energies(params, chunk)
        n = jax.tree.leaves(chunk)[0].shape[0]
        out = -self.loglik(self.constrain(params), chunk)
        if jnp.shape(out) != (n,):
            raise ModelShapeError(f"with batched=True, loglik(params, batch) must return one "
                                  f"value per row, shape ({n},) for {n} rows; got shape "
                                  f"{jnp.shape(out)}")
        return out

    term_names = ("logprior", "loglik")

    def describe_term(self, exact: bool) -> tuple[str, str]:
        if exact:
            return "logprior", ("logprior(params) must return a scalar: the log prior density "
                                "of the whole point (sum over its entries, e.g. with jnp.sum)")
        return "loglik", ("loglik(params, datum) must return a scalar log-likelihood of ONE "
                          "datum (one row of the data along its leading axis): sum over the "
                          "datum's entries (e.g. with jnp.sum), or, for a loglik(params, batch) "
                          "that returns one value per row of a batch, shape (n,), pass "
                          "batched=True")

    @property
    def constrained(self) -> bool:
        return self.constraints is not None

    def constrain(self, params: PyTree) -> PyTree:
        return params if self.constraints is None else self.constraints.constrain(params)

    def unconstrain(self, params: PyTree) -> PyTree:
        return params if self.constraints is None else self.constraints.unconstrain(params)

    def check_support(self, params: PyTree, name: str = "init") -> None:
        if self.constraints is not None:
            self.constraints.check(params, name)


@pytree_dataclass
class Objective(Problem):
    """A function to minimise: F(x) = (1/N) Σ_i f(x, x_i), or F(x) = f(x) without data.

    As an energy for samplers, U = F (so exp(−F/τ) is the Gibbs measure at temperature τ);
    minibatch estimates are batch means (Dong & Tong, Alg. 2).

    Args:
        f: ``f(x, datum) -> scalar`` when ``data`` is given, else ``f(x) -> scalar``.
        data: optional array or pytree of arrays sharing a leading axis, or an
            :class:`sgmc.Stream` (a batch mean over a buffer is already unbiased for the mean
            over all rows, so no weight changes).
        chunk_size: rows per chunk in full-data passes.
    """

    data: PyTree
    f: Callable = static()
    chunk_size: int = static(1024)
    data_rows: int = static(0)
    stream: Any = static(None)
    data_shards: int = static(1)

    def __init__(self, f: Callable, data: PyTree = None, chunk_size: int = 1024) -> None:
        check.callable_("f", f)
        chunk = check.integer("chunk_size", chunk_size, lo=1)
        if data is None:
            arrays, n = None, 0
        else:
            arrays, n = stream_or_data(self, data)
        object.__setattr__(self, "data", arrays)
        object.__setattr__(self, "f", f)
        object.__setattr__(self, "chunk_size", max(1, min(chunk, n)))
        object.__setattr__(self, "data_rows", n)

    @property
    def data_weight(self) -> float:
        return 1.0 / self.data_rows if self.data_rows else 0.0

    def exact_energy(self, params: PyTree) -> jax.Array:
        if self.has_data:
            return jnp.zeros((), jnp.result_type(*jax.tree.leaves(params), jnp.float32))
        return self.f(params)

    def datum_energy(self, params: PyTree, datum: PyTree) -> jax.Array:
        return self.f(params, datum)

    term_names = ("f", "f")

    def describe_term(self, exact: bool) -> tuple[str, str]:
        if exact:
            return "f", ("f(x) must return a scalar: the objective's value at the point (sum "
                         "or average over its entries)")
        return "f", ("f(x, datum) must return a scalar: the loss of ONE datum (one row of the "
                     "data along its leading axis), averaged over the data by sgmc")
