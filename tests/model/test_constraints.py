"""Constrained parameters (sgmc.model.constraints, ``Posterior(constraints=...)``) and batched
likelihoods (``Posterior(batched=True)``).

Correctness against targets known exactly, each chosen so that dropping the Jacobian
moves the answer far outside the tolerance:

* positive: σ ~ Gamma(a=3, b=1) (no data): E σ = 3; without the Jacobian e^z the sampled
  density is ∝ σ^{a−2} e^{−σ}, mean 2;
* unit interval: p ~ Beta(2, 1.2): E p = 0.625; without the Jacobian Beta(1, 0.2), mean 0.83;
* simplex: w ~ Dirichlet(2, 3, 5): E w = (0.2, 0.3, 0.5); without the stick-breaking
  Jacobian the sampled density is ∝ Π w_k^{α_k−1} in z, not in w, whose mean differs;
* ordered: (x₁ < x₂), density 2φ(x₁)φ(x₂): E x₁ = −1/√π ≈ −0.564;
* with data: x_i ~ N(0, v), v ~ InvGamma(α, β) → v | x ~ InvGamma(α + N/2, β + Σx²/2),
  mean β'/(α' − 1); without the Jacobian InvGamma(α' + 1, β').

The chains must also mix (ESS ≥ 200 of 80,000 draws; the correct runs have 450–1000): a
run without the Jacobian can drift to the edge of the support and pass a tolerance widened
by its own poor ESS.

Tolerance: |mean − exact| ≤ 4·SE + bias. SE = sd/√ESS from the chains (ArviZ's ESS).
Full-gradient SGLD (unadjusted Langevin) at step h has an O(h) bias: for a target of
curvature λ in z its variance is inflated by 1/(1 − hλ/2); with the steps below hλ/2 ≤ 1 %,
so a bias allowance of 3 % of the posterior sd per unit of hλ/2 (covering the
non-Gaussian shape) is ample and still far below every Jacobian effect (≥ 0.5 sd).
"""

from __future__ import annotations

import arviz
import jax.numpy as jnp
import numpy as np
import pytest

import sgmc

pytest.importorskip("numpyro")
from numpyro.distributions import constraints as C

from sgmc.model.constraints import Constraints

ONE_ROW = jnp.zeros((1, 1))
MIN_ESS = 200  # prior-only targets: one datum that contributes nothing


def _no_lik(params, datum):
    return jnp.zeros(())


def _run(post, init, step, num_steps=6000, chains=16, seed=0):
    return sgmc.sample(post, sgmc.sgld(step_size=step), init, num_steps=num_steps,
                       num_chains=chains, burn_in=1000, seed=seed)


def _check_mean(draws, exact, sd, hl2, what):
    """draws: (chains, draws, ...); exact, sd: the exact mean and sd; hl2 = hλ/2."""
    draws = np.asarray(draws, np.float64)
    flat = draws.reshape(draws.shape[0], draws.shape[1], -1)
    for k in range(flat.shape[-1]):
        ess = float(arviz.ess(flat[..., k]))
        # These targets are easy: a chain that does not mix (as one without the Jacobian
        # drifts off to the support's edge) is a failure, not a wide tolerance.
        assert ess >= MIN_ESS, f"{what}[{k}]: ESS {ess:.0f} < {MIN_ESS}"
        se = np.std(flat[..., k]) / np.sqrt(ess)
        tol = 4 * se + 3 * hl2 * np.ravel(sd)[k] + 1e-12
        got = flat[..., k].mean()
        assert abs(got - np.ravel(exact)[k]) <= tol, (
            f"{what}[{k}]: mean {got:.4f}, exact {np.ravel(exact)[k]:.4f}, tolerance {tol:.4f}"
            f" (SE {se:.4f}, ESS {ess:.0f})")


def test_positive_gamma_prior():
    a, b = 3.0, 1.0
    post = sgmc.Posterior(_no_lik, lambda p: (a - 1) * jnp.log(p["s"]) - b * p["s"], ONE_ROW,
                          constraints={"s": "positive"})
    # In z = log σ the energy is −a z + b e^z: curvature b e^z = a at the mode; h = 0.006.
    res = _run(post, {"s": 1.0}, 0.006)
    assert float(res.samples["s"].min()) > 0
    _check_mean(res.samples["s"], a / b, np.sqrt(a) / b, 0.006 * a / 2, "sigma")


def test_unit_interval_beta_prior():
    a, b = 2.0, 1.2
    post = sgmc.Posterior(_no_lik,
                          lambda p: (a - 1) * jnp.log(p) + (b - 1) * jnp.log1p(-p), ONE_ROW,
                          constraints="unit_interval")
    # In logit z: energy −a z + (a+b) log(1+e^z), curvature ≤ (a+b)/4 = 0.8; h = 0.05.
    res = _run(post, 0.5, 0.05)
    sd = np.sqrt(a * b / ((a + b) ** 2 * (a + b + 1)))
    _check_mean(res.samples, a / (a + b), sd, 0.05 * 0.8 / 2, "p")


def test_simplex_dirichlet_prior_and_shapes():
    alpha = jnp.array([2.0, 3.0, 5.0])
    post = sgmc.Posterior(_no_lik, lambda p: jnp.sum((alpha - 1) * jnp.log(p["w"])),
                          ONE_ROW, constraints={"w": "simplex"})
    assert post.unconstrain({"w": jnp.ones(3) / 3})["w"].shape == (2,)  # K − 1 sampled
    res = _run(post, {"w": jnp.ones(3) / 3}, 0.01)
    w = np.asarray(res.samples["w"])
    assert w.shape[-1] == 3 and np.allclose(w.sum(-1), 1, atol=1e-5) and w.min() > 0
    a0 = float(alpha.sum())
    sd = np.sqrt(alpha * (a0 - alpha) / (a0 ** 2 * (a0 + 1)))
    # Stick-breaking logits: curvature ≤ Σα/4 = 2.5 per coordinate; h = 0.01.
    _check_mean(w, alpha / a0, sd, 0.01 * 2.5 / 2, "w")


def test_ordered_pair():
    post = sgmc.Posterior(_no_lik, lambda p: -0.5 * jnp.sum(p ** 2), ONE_ROW,
                          constraints=C.ordered_vector)
    res = _run(post, jnp.array([-1.0, 1.0]), 0.02)
    x = np.asarray(res.samples)
    assert np.all(np.diff(x, axis=-1) > 0)
    m = 1 / np.sqrt(np.pi)
    sd = np.sqrt(1 - 1 / np.pi)
    _check_mean(x, [-m, m], [sd, sd], 0.02 * 1.5 / 2, "x")


def test_inverse_gamma_variance_with_data():
    """The data term goes through the transform too (datum_energy of T(z))."""
    rng = np.random.default_rng(1)
    x = rng.normal(0.0, 1.5, size=8).astype(np.float32)
    alpha, beta = 2.0, 2.0

    def loglik(v, xi):
        return -0.5 * xi ** 2 / v - 0.5 * jnp.log(v)

    def logprior(v):
        return -(alpha + 1) * jnp.log(v) - beta / v

    post = sgmc.Posterior(loglik, logprior, x, constraints="positive")
    a1, b1 = alpha + x.size / 2, beta + float(np.sum(x.astype(np.float64) ** 2)) / 2
    # In z = log v the curvature at the mode is about a1 = 6: h = 0.003 gives hλ/2 ≈ 1 %.
    # Without the Jacobian v ~ InvGamma(a1 + 1, b1): the mean moves by 1/a1 of itself,
    # 0.37 sd.
    res = _run(post, 1.0, 0.003)
    _check_mean(res.samples, b1 / (a1 - 1), b1 / ((a1 - 1) * np.sqrt(a1 - 2)),
                0.003 * a1 / 2, "v")


def test_energy_has_the_log_jacobian():
    """U(z) = −log p(e^z) − z for σ = e^z: the energy differs from the unconstrained one by
    exactly the log-Jacobian (checked at a point, to float precision)."""
    post = sgmc.Posterior(_no_lik, lambda s: -s, ONE_ROW, constraints="positive")
    z = jnp.asarray(0.7)
    assert np.isclose(float(post.full_energy(z)), float(jnp.exp(z) - z), rtol=1e-6)
    assert np.isclose(float(post.constrain(z)), float(jnp.exp(z)))
    assert np.isclose(float(post.unconstrain(jnp.exp(z))), 0.7, rtol=1e-6)


@pytest.mark.parametrize("sampler", [
    sgmc.sghmc(step_size=1e-3, friction=10.0, batch_size=4),
    sgmc.sgld(step_size=1e-3, batch_size=4, estimator=sgmc.svrg(period=10)),
    sgmc.sgld(step_size=1e-3, batch_size=4, estimator=sgmc.saga()),
    sgmc.psgld(step_size=1e-4, batch_size=4),
    sgmc.sghmc(step_size=1e-3, friction=10.0, batch_size=4, estimator=sgmc.ewsg()),
    sgmc.replica_exchange(sgmc.sgld(step_size=1e-3, batch_size=4), temperatures=[1.0, 2.0]),
], ids=["sghmc", "svrg", "saga", "psgld", "ewsg", "replica_exchange"])
def test_every_sampler_family_reports_constrained_draws(sampler):
    x = np.linspace(-1, 1, 16, dtype=np.float32)
    post = sgmc.Posterior(lambda p, xi: -0.5 * ((xi - p["mu"]) / p["s"]) ** 2 - jnp.log(p["s"]),
                          lambda p: -0.5 * p["mu"] ** 2 - p["s"], x,
                          constraints={"s": "positive"})
    res = sgmc.sample(post, sampler, {"mu": 0.0, "s": 0.5}, num_steps=200, num_chains=2,
                      seed=0)
    s = np.asarray(res.samples["s"])
    assert s.shape == (2, 200) and np.all(s > 0) and np.all(np.isfinite(s))
    idata = res.to_arviz()
    assert float(idata.posterior["s"].min()) > 0


def test_checkpoint_resume_with_constraints_is_bitwise(tmp_path):
    post = sgmc.Posterior(_no_lik, lambda p: 2 * jnp.log(p["s"]) - p["s"], ONE_ROW,
                          constraints={"s": "positive"})
    kw = dict(num_steps=200, num_chains=2, seed=3, draws_per_block=20)
    whole = sgmc.sample(post, sgmc.sgld(step_size=0.01), {"s": 1.0}, **kw)
    path = tmp_path / "run.ckpt"
    sgmc.sample(post, sgmc.sgld(step_size=0.01), {"s": 1.0}, checkpoint=path,
                checkpoint_every=60, **kw)
    again = sgmc.resume(path, post, sgmc.sgld(step_size=0.01))
    np.testing.assert_array_equal(np.asarray(again.samples["s"]),
                                  np.asarray(whole.samples["s"]))


def test_init_outside_the_support_and_misspelt_keys_are_named():
    post = sgmc.Posterior(_no_lik, lambda p: -p["s"], ONE_ROW, constraints={"s": "positive"})
    with pytest.raises(ValueError, match=r"init\['s'\].*outside its support.*positive"):
        sgmc.sample(post, sgmc.sgld(step_size=0.01), {"s": -1.0}, num_steps=10)
    typo = sgmc.Posterior(_no_lik, lambda p: -p["s"], ONE_ROW, constraints={"sigma": "positive"})
    with pytest.raises(ValueError, match=r"constraints\['sigma'\] matches no leaf"):
        sgmc.sample(typo, sgmc.sgld(step_size=0.01), {"s": 1.0}, num_steps=10)
    with pytest.raises(ValueError, match="not a known constraint"):
        Constraints({"s": "postive"})
    with pytest.raises(TypeError, match="constraint name"):
        Constraints({"s": 3})


def test_constraints_are_static_and_hash_by_content():
    a, b = Constraints({"s": "positive"}), Constraints({"s": "positive"})
    assert a == b and hash(a) == hash(b) and "0x" not in repr(a)
    assert a != Constraints({"s": "unit_interval"})


# -- batched likelihoods ------------------------------------------------------------------

def _regression(batched):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(64, 3)).astype(np.float32)
    y = (X @ np.array([1.0, -2.0, 0.5]) + rng.normal(size=64)).astype(np.float32)
    if batched:
        def loglik(w, rows):
            return -0.5 * (rows["y"] - rows["X"] @ w) ** 2
    else:
        def loglik(w, row):
            return -0.5 * (row["y"] - row["X"] @ w) ** 2
    return sgmc.Posterior(loglik, lambda w: -0.5 * jnp.sum(w ** 2), {"X": X, "y": y},
                          chunk_size=16, batched=batched)


def test_batched_likelihood_gives_the_same_oracle():
    one, many = _regression(False), _regression(True)
    w = jnp.array([0.3, -0.1, 0.2])
    idx = jnp.array([3, 7, 7, 60])
    assert np.allclose(one.full_energy(w), many.full_energy(w), rtol=1e-6)
    for f in ("batch_energies", "estimate_energy"):
        assert np.allclose(getattr(one, f)(w, idx), getattr(many, f)(w, idx), rtol=1e-6)
    assert np.allclose(one.full_grad(w), many.full_grad(w), rtol=1e-5)
    assert np.allclose(one.batch_grads(w, idx), many.batch_grads(w, idx), rtol=1e-5)
    res = [sgmc.sample(p, sgmc.sgld(step_size=1e-3, batch_size=8,
                                    estimator=sgmc.svrg(period=8)),
                       jnp.zeros(3), num_steps=50, num_chains=1, seed=0)
           for p in (one, many)]
    np.testing.assert_allclose(np.asarray(res[0].samples), np.asarray(res[1].samples),
                               rtol=1e-4, atol=1e-5)


def test_batched_likelihood_of_the_wrong_shape_is_named():
    bad = sgmc.Posterior(lambda w, rows: jnp.sum(rows["y"] * w[0]), lambda w: 0.0,
                         {"y": np.ones(8, np.float32)}, batched=True)
    with pytest.raises(ValueError, match=r"batched=True.*one value per row"):
        sgmc.sample(bad, sgmc.sgld(step_size=1e-3), jnp.zeros(1), num_steps=10)


def test_lightweight_saga_is_not_used_on_a_constrained_glm():
    """A GLM's lightweight SAGA table holds ∂L/∂(predictor) at z; with constraints the
    predictor must see T(z), so the dense table is used: the draws equal dense SAGA's."""
    X, y, _ = sgmc.models.synthetic_linear_data(40, 2, seed=0)
    glm = sgmc.models.linear_regression(X, y)
    post = sgmc.Posterior(glm.loglik, glm.logprior, glm.data,
                          constraints=C.interval(-5.0, 5.0))
    from sgmc.kernels.estimators.saga import is_glm
    assert is_glm(glm) and not is_glm(post)
    runs = [sgmc.sample(post, sgmc.sgld(step_size=1e-3, batch_size=4, estimator=est),
                        jnp.zeros(2), num_steps=50, seed=0)
            for est in (sgmc.saga(), sgmc.saga(lightweight=False))]
    np.testing.assert_array_equal(np.asarray(runs[0].samples), np.asarray(runs[1].samples))


def test_stein_discrepancy_refuses_constrained_draws():
    post = sgmc.Posterior(_no_lik, lambda s: -s, ONE_ROW, constraints="positive")
    with pytest.raises(ValueError, match="constrained parameters"):
        sgmc.diagnostics.score_function(post)
    assert not _regression(False).constrained and post.constrained


def test_every_constrained_leaf_adds_its_log_jacobian():
    """Two constrained leaves and a free one: U(z) = −log p(T(z)) − Σ_leaves log|det ∂T/∂z|,
    each leaf's log-Jacobian counted once (positive, σ = e^z: z; unit interval, p = the
    logistic of z: log p(1 − p)), the free leaf none (checked at a point, to float
    precision)."""
    post = sgmc.Posterior(_no_lik,
                          lambda q: -q["s"] + jnp.log(q["p"]) - 0.5 * q["m"] ** 2, ONE_ROW,
                          constraints={"s": "positive", "p": "unit_interval"})
    z = {"m": jnp.asarray(0.3), "p": jnp.asarray(-0.4), "s": jnp.asarray(0.7)}
    s, p = np.exp(0.7), 1.0 / (1.0 + np.exp(0.4))
    log_det = 0.7 + np.log(p) + np.log1p(-p)
    want = s - np.log(p) + 0.5 * 0.3 ** 2 - log_det
    assert np.isclose(float(post.full_energy(z)), want, rtol=1e-6, atol=1e-6)
