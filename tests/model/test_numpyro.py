"""NumPyro models as problems (``sgmc.from_numpyro``, sgmc.model.numpyro).

The oracle is checked against NumPyro's own potential energy (``numpyro.infer.util.
potential_energy``: −log joint on the unconstrained scale, Jacobians included) on the same
model run without subsampling — a trusted reference for the energy, the gradient and the
log-Jacobian; the per-row terms against the distributions' log-densities; sampling against
a conjugate posterior known exactly whose answer moves far outside the tolerance without
the Jacobian (see tests/model/test_constraints.py for the tolerance's derivation).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sgmc

numpyro = pytest.importorskip("numpyro")
import numpyro.distributions as dist  # noqa: E402
from numpyro.infer.util import potential_energy  # noqa: E402
from test_constraints import _check_mean  # noqa: E402

RNG = np.random.default_rng(0)
N, D = 37, 3
X = RNG.normal(size=(N, D)).astype(np.float32)
Y = (X @ np.array([1.0, -2.0, 0.5]) + 0.7 * RNG.normal(size=N)).astype(np.float32)


def regression(x, y=None, subsample_size=None):
    w = numpyro.sample("w", dist.Normal(0.0, 1.0).expand([x.shape[1]]).to_event(1))
    sigma = numpyro.sample("sigma", dist.HalfNormal(1.0))
    with numpyro.plate("data", x.shape[0], subsample_size=subsample_size):
        xb = numpyro.subsample(x, event_dim=1)
        yb = numpyro.subsample(y, event_dim=0)
        numpyro.sample("y", dist.Normal(xb @ w, sigma), obs=yb)


def schools(sigma, y=None, subsample_size=None):
    """Eight schools, non-centred: a deterministic site, a positive scale, a hierarchy."""
    mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
    tau = numpyro.sample("tau", dist.HalfCauchy(5.0))
    eta = numpyro.sample("eta", dist.Normal(0.0, 1.0).expand([sigma.shape[0]]).to_event(1))
    theta = numpyro.deterministic("theta", mu + tau * eta)
    with numpyro.plate("data", sigma.shape[0], subsample_size=subsample_size) as i:
        numpyro.sample("y", dist.Normal(theta[i], numpyro.subsample(sigma, event_dim=0)),
                       obs=numpyro.subsample(y, event_dim=0))


def mixture_weights(y, subsample_size=None):
    """A simplex and an ordered vector: a two-component mixture with ordered means."""
    w = numpyro.sample("w", dist.Dirichlet(jnp.ones(2)))
    mu = numpyro.sample("mu", dist.TransformedDistribution(
        dist.Normal(0.0, 3.0).expand([2]).to_event(1),
        dist.transforms.OrderedTransform()))
    with numpyro.plate("data", y.shape[0], subsample_size=subsample_size):
        yb = numpyro.subsample(y, event_dim=0)
        numpyro.sample("y", dist.MixtureSameFamily(dist.Categorical(w),
                                                   dist.Normal(mu, 1.0)), obs=yb)


def grouped_scales(y, subsample_size=None):
    """A latent site inside another plate: its log-Jacobian must count once per element."""
    with numpyro.plate("groups", y.shape[1]):
        s = numpyro.sample("s", dist.HalfNormal(1.0))
    with numpyro.plate("data", y.shape[0], subsample_size=subsample_size):
        numpyro.sample("y", dist.Normal(0.0, s).to_event(1),
                       obs=numpyro.subsample(y, event_dim=1))


SCHOOLS = (np.array([15, 10, 16, 11, 9, 11, 10, 18], np.float32),
           np.array([28, 8, -3, 7, -1, 1, 18, 12], np.float32))
MODELS = {
    "regression": (regression, (X, Y)),
    "schools": (schools, SCHOOLS),
    "mixture": (mixture_weights, (RNG.normal(size=25).astype(np.float32),)),
    "grouped": (grouped_scales, (RNG.normal(size=(10, 3)).astype(np.float32),)),
}


def _random_z(post, seed):
    """A random unconstrained point (shapes from a prior draw of the model)."""
    tr = post._trace(jnp.arange(1, dtype=jnp.int32), seed=True)
    z0 = post.unconstrain({n: tr[n]["value"] for n in post.sites.latent})
    keys = jax.random.split(jax.random.key(seed), len(z0))
    return {k: 0.5 * jax.random.normal(key, jnp.shape(z0[k]))
            for key, k in zip(keys, sorted(z0), strict=True)}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_energy_and_gradient_are_numpyros_potential_energy(name):
    model, args = MODELS[name]
    post = sgmc.from_numpyro(model, *args, chunk_size=4)  # chunks + remainder
    reference = jax.jit(jax.value_and_grad(lambda z: potential_energy(model, args, {}, z)))
    ours = jax.jit(lambda z: (post.full_energy(z), post.full_grad(z)))
    for seed in range(3):
        z = _random_z(post, seed)
        want, want_grad = reference(z)
        got, got_grad = ours(z)
        np.testing.assert_allclose(got, want, rtol=2e-5)
        for k in want_grad:
            np.testing.assert_allclose(got_grad[k], want_grad[k], rtol=2e-4, atol=1e-4)


def test_rows_are_the_observed_sites_log_densities():
    post = sgmc.from_numpyro(regression, X, Y)
    theta = {"w": jnp.array([0.5, -1.0, 0.2]), "sigma": jnp.asarray(0.8)}
    z = post.unconstrain(theta)
    for idx in (jnp.array([3, 7, 7, 30]), jnp.array([5]),
                jnp.asarray(RNG.permutation(N)), jnp.asarray(RNG.integers(0, N, N))):
        want = -dist.Normal(X[np.asarray(idx)] @ theta["w"], 0.8).log_prob(Y[np.asarray(idx)])
        np.testing.assert_allclose(post.batch_energies(z, idx), want, rtol=1e-5)
    assert np.allclose(post.datum_energy(z, jnp.asarray(4)), -dist.Normal(
        X[4] @ theta["w"], 0.8).log_prob(Y[4]), rtol=1e-5)


def test_conjugate_variance_posterior_is_sampled_exactly():
    """x_i ~ N(0, v), v ~ InvGamma(2, 2): v | x ~ InvGamma(2 + N/2, 2 + Σx²/2). With 8 rows
    dropping the Jacobian of v = e^z moves the mean by 0.37 sd (tests/test_constraints)."""
    x = np.random.default_rng(1).normal(0.0, 1.5, size=8).astype(np.float32)

    def model(x):
        v = numpyro.sample("v", dist.InverseGamma(2.0, 2.0))
        with numpyro.plate("data", x.shape[0], subsample_size=4):
            numpyro.sample("x", dist.Normal(0.0, jnp.sqrt(v)),
                           obs=numpyro.subsample(x, event_dim=0))

    post = sgmc.from_numpyro(model, x)
    a1, b1 = 2.0 + x.size / 2, 2.0 + float(np.sum(x.astype(np.float64) ** 2)) / 2
    res = sgmc.sample(post, sgmc.sgld(step_size=0.003), {"v": 1.0}, num_steps=6000,
                      num_chains=16, burn_in=1000, seed=0)
    _check_mean(res.samples["v"], b1 / (a1 - 1), b1 / ((a1 - 1) * np.sqrt(a1 - 2)),
                0.003 * a1 / 2, "v")


SAMPLERS = {
    "sgld": sgmc.sgld(step_size=1e-4, batch_size=8),
    "sghmc": sgmc.sghmc(step_size=1e-3, batch_size=8),
    "psgld": sgmc.psgld(step_size=1e-4, batch_size=8),
    "svrg": sgmc.sgld(step_size=1e-4, batch_size=8, estimator=sgmc.svrg(period=10)),
    "saga": sgmc.sghmc(step_size=1e-3, batch_size=8, estimator=sgmc.saga()),
    "ewsg": sgmc.sghmc(step_size=1e-3, batch_size=8, estimator=sgmc.ewsg()),
    "replica_exchange": sgmc.replica_exchange(sgmc.sgld(step_size=1e-4, batch_size=8),
                                              temperatures=[1.0, 3.0]),
}


def test_replica_exchange_reports_every_replica_constrained():
    """output="all": each replica's point goes through the model on its own (a
    deterministic site mixing parameters would broadcast across replicas otherwise)."""
    post = sgmc.from_numpyro(schools, *SCHOOLS)
    rx = sgmc.replica_exchange(sgmc.sgld(step_size=1e-3), temperatures=[1.0, 3.0, 9.0],
                               output="all")
    res = sgmc.sample(post, rx, {"mu": 0.0, "tau": 1.0, "eta": np.zeros(8)}, num_steps=20,
                      seed=0)
    s = {k: np.asarray(v) for k, v in res.samples.items()}
    assert s["tau"].shape == (1, 20, 3) and s["theta"].shape == (1, 20, 3, 8)
    assert np.all(s["tau"] > 0)
    np.testing.assert_allclose(s["theta"], s["mu"][..., None] + s["tau"][..., None] * s["eta"],
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_every_sampler_runs_and_reports_sites(name):
    post = sgmc.from_numpyro(regression, X, Y)
    res = sgmc.sample(post, SAMPLERS[name], {"w": np.zeros(3), "sigma": 1.0},
                      num_steps=100, num_chains=2, seed=0)
    assert set(res.samples) == {"w", "sigma"}
    assert res.samples["w"].shape == (2, 100, 3) and res.samples["sigma"].shape == (2, 100)
    assert np.all(np.asarray(res.samples["sigma"]) > 0)
    assert np.all(np.isfinite(np.asarray(res.samples["w"])))
    assert float(res.to_arviz().posterior["sigma"].min()) > 0


def test_deterministic_sites_are_reported_and_accepted_back_as_init():
    post = sgmc.from_numpyro(schools, *SCHOOLS)
    init = {"mu": 0.0, "tau": 1.0, "eta": np.zeros(8)}
    res = sgmc.sample(post, sgmc.sgld(step_size=1e-3), init, num_steps=50, num_chains=2,
                      seed=0)
    s = {k: np.asarray(v) for k, v in res.samples.items()}
    assert set(s) == {"mu", "tau", "eta", "theta"}
    np.testing.assert_allclose(s["theta"], s["mu"][..., None] + s["tau"][..., None] * s["eta"],
                               rtol=1e-5, atol=1e-5)
    last = {k: v[0, -1] for k, v in s.items()}  # a draw, deterministic site included
    again = sgmc.sample(post, sgmc.sgld(step_size=1e-3), last, num_steps=10, seed=0)
    assert again.samples["theta"].shape == (1, 10, 8)


def test_checkpoint_resume_is_bitwise(tmp_path):
    post = sgmc.from_numpyro(regression, X, Y)
    smp = sgmc.sgld(step_size=1e-4, batch_size=8)
    kw = dict(num_steps=120, num_chains=2, seed=3, draws_per_block=20)
    init = {"w": np.zeros(3), "sigma": 1.0}
    whole = sgmc.sample(post, smp, init, **kw)
    path = tmp_path / "run.ckpt"
    sgmc.sample(post, smp, init, checkpoint=path, checkpoint_every=40, **kw)
    again = sgmc.resume(path, sgmc.from_numpyro(regression, X, Y), smp)
    for k in ("w", "sigma"):
        np.testing.assert_array_equal(np.asarray(again.samples[k]),
                                      np.asarray(whole.samples[k]))


def test_models_sgmc_cannot_sample_are_refused_by_name():
    def no_plate(y):
        mu = numpyro.sample("mu", dist.Normal())
        numpyro.sample("y", dist.Normal(mu), obs=y)

    def local_latent(y):
        mu = numpyro.sample("mu", dist.Normal())
        with numpyro.plate("data", y.shape[0]):
            z = numpyro.sample("z", dist.Normal(mu))
            numpyro.sample("y", dist.Normal(z), obs=numpyro.subsample(y, event_dim=0))

    def discrete(y):
        k = numpyro.sample("k", dist.Bernoulli(0.5))
        with numpyro.plate("data", y.shape[0]):
            numpyro.sample("y", dist.Normal(k), obs=numpyro.subsample(y, event_dim=0))

    def not_subsampled(y):
        mu = numpyro.sample("mu", dist.Normal())
        with numpyro.plate("data", y.shape[0], subsample_size=2):
            numpyro.sample("y", dist.Normal(mu), obs=y)

    y = np.arange(6, dtype=np.float32)
    with pytest.raises(ValueError, match=r"no numpyro\.plate named 'data'"):
        sgmc.from_numpyro(no_plate, y)
    with pytest.raises(ValueError, match="latent site 'z' is inside the plate"):
        sgmc.from_numpyro(local_latent, y)
    with pytest.raises(ValueError, match="latent site 'k' is discrete"):
        sgmc.from_numpyro(discrete, y)
    with pytest.raises(ValueError, match=r"numpyro\.subsample"):
        sgmc.from_numpyro(not_subsampled, y)


def test_init_is_checked_on_the_constrained_scale():
    post = sgmc.from_numpyro(regression, X, Y)
    smp = sgmc.sgld(step_size=1e-4)
    with pytest.raises(ValueError, match=r"init\['sigma'\] is outside the support"):
        sgmc.sample(post, smp, {"w": np.zeros(3), "sigma": -1.0}, num_steps=10)
    with pytest.raises(ValueError, match="missing: sigma"):
        sgmc.sample(post, smp, {"w": np.zeros(3)}, num_steps=10)
    with pytest.raises(ValueError, match="not latent sites: s"):
        sgmc.sample(post, smp, {"w": np.zeros(3), "sigma": 1.0, "s": 1.0}, num_steps=10)
    with pytest.raises((TypeError, ValueError), match="dict keyed by latent site"):
        sgmc.sample(post, smp, np.zeros(4), num_steps=10)
