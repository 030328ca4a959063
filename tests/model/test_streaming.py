"""Out-of-core data: a posterior over a memory-mapped file, read in buffers of rows.

Target: conjugate linear regression (N = 20,000, d = 3). The streamed run (buffers of
B = 2,000 rows, blocks of B / batch = 40 steps, a new buffer each block, minibatches without
replacement) and the in-memory run use the same SGLD settings and seed; the draws must
have the same distribution. SGLD's own bias (minibatch noise inflates its variance
several-fold at this step size) is shared by both, so they are compared with each other,
within tolerances derived from ArviZ's ESS:
means within 4 standard errors of their difference, sqrt(var_s/ESS_s + var_m/ESS_m);
variance ratios within 4 standard errors, sqrt(2/ESS_s + 2/ESS_m) (the variance of a
variance estimate is ≈ 2σ⁴/ESS). Checks that must fail: minibatches drawn with
replacement, or blocks of 2,000 steps (one buffer reused ~50 times), give streamed
variances well above the in-memory ones.

Full passes (SVRG snapshots) read every row of the file, chunk by chunk: they equal the
in-memory passes to float32 rounding, and SVRG on streamed data then samples the exact
posterior as SVRG in memory does, while plain SGLD at the same settings does not.
"""

import numpy as np
import pytest

import sgmc
from sgmc.models.linear import GaussianLoglik, GaussianLogPrior

N, D, B = 20_000, 3, 2_000
RUN = dict(num_steps=4_000, num_chains=32, burn_in=1_000, thin=10, seed=1)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    X, y, _ = sgmc.models.synthetic_linear_data(N, D, correlation=0.3, seed=2)
    folder = tmp_path_factory.mktemp("data")
    np.save(folder / "X.npy", X.astype(np.float32))
    np.save(folder / "y.npy", y.astype(np.float32))
    mu, cov = sgmc.models.linear_regression_posterior(X, y)
    return folder, X, y, mu, cov


def streamed_posterior(source, **kw):
    return sgmc.Posterior(GaussianLoglik(1.0), GaussianLogPrior(1.0),
                          sgmc.Stream(source, buffer_rows=B, **kw))


def sampler(cov, sampling="permutation"):
    lam = float(np.linalg.eigvalsh(np.linalg.inv(cov)).max())
    return sgmc.sgld(0.05 / lam, batch_size=50, estimator=sgmc.uniform(sampling))


def moments(res):
    """Per coordinate: mean, variance, ESS (ArviZ bulk, over all chains)."""
    import arviz as az

    x = np.asarray(res.samples, np.float64)
    flat = x.reshape(-1, D)
    ess = np.array([float(az.ess(x[..., j])) for j in range(D)])
    return flat.mean(0), flat.var(0), ess


def same_distribution(a, b):
    (ma, va, ea), (mb, vb, eb) = moments(a), moments(b)
    mean_ok = np.abs(ma - mb) < 4 * np.sqrt(va / ea + vb / eb)
    var_ok = np.abs(va / vb - 1) < 4 * np.sqrt(2 / ea + 2 / eb)
    return bool(mean_ok.all() and var_ok.all()), (ma, mb, va / vb, ea, eb)


def test_streamed_draws_match_in_memory_draws(files):
    folder, X, y, _, cov = files
    source = {"x": np.load(folder / "X.npy", mmap_mode="r"),
              "y": np.load(folder / "y.npy", mmap_mode="r")}
    post = streamed_posterior(source)
    assert post.data_rows == B and post.num_data == N
    s = sampler(cov)
    streamed = sgmc.sample(post, s, np.zeros(D, np.float32), **RUN)
    memory = sgmc.sample(sgmc.models.linear_regression(X, y), s, np.zeros(D, np.float32), **RUN)
    ok, detail = same_distribution(streamed, memory)
    assert ok, detail
    # The discriminating counterparts: with replacement the streamed draws are overdispersed
    # (the buffer's deviation from the data adds to the noise); with one buffer per 2,000
    # steps each block settles on its own subsample's posterior. Neither passes.
    with pytest.warns(UserWarning, match="permutation"):
        replacing = sgmc.sample(post, sampler(cov, "replacement"), np.zeros(D, np.float32),
                                **RUN)
    long_blocks = sgmc.sample(post, s, np.zeros(D, np.float32), **RUN, draws_per_block=200)
    ok, detail = same_distribution(replacing, memory)
    assert not ok and np.all(detail[2] > 1.2), detail
    ok, detail = same_distribution(long_blocks, memory)
    assert not ok, detail
    # Data passes count all N rows, so streamed and in-memory runs compare per pass.
    assert streamed.meta["num_data"] == N
    np.testing.assert_allclose(streamed.data_passes[0, -1], memory.data_passes[0, -1])
    # Reproducible: the buffers depend on the stream's seed and the block only.
    again = sgmc.sample(post, s, np.zeros(D, np.float32), **RUN)
    np.testing.assert_array_equal(again.samples, streamed.samples)


def test_stream_reads_only_buffers_never_the_whole_file(files):
    folder = files[0]
    X = np.load(folder / "X.npy", mmap_mode="r")
    y = np.load(folder / "y.npy", mmap_mode="r")
    requests = []

    def fetch(idx):  # a user's reader: here a memory map, read at the given rows only
        requests.append(len(idx))
        return {"x": X[idx], "y": y[idx]}

    post = streamed_posterior(fetch, num_rows=N)
    res = sgmc.sample(post, sgmc.sghmc(1e-3, friction=5.0, batch_size=50,
                                       estimator=sgmc.svrg(40, sampling="permutation")),
                      np.zeros(D, np.float32), num_steps=400, num_chains=2)
    assert res.num_draws == 400
    assert max(requests) == B  # never more than one buffer at a time
    # Blocks of at most B / batch = 40 steps, each with its own buffer (the first buffer
    # serves init and block 0): at least 10 buffers.
    assert len(requests) >= 400 // 40
    assert np.isfinite(res.samples).all()


def test_streamed_full_passes_read_every_row_exactly(files):
    import jax
    import jax.numpy as jnp

    folder, X, y, *_ = files
    xs, ys = np.load(folder / "X.npy", mmap_mode="r"), np.load(folder / "y.npy", mmap_mode="r")
    requests = []

    def fetch(idx):
        requests.append(np.asarray(idx))
        return {"x": xs[idx], "y": ys[idx]}

    post = streamed_posterior(fetch, num_rows=N, pass_rows=1_500)
    memory = sgmc.models.linear_regression(X, y)
    theta = jnp.array([[0.3, -0.2, 0.5], [1.0, 0.0, -1.0]])
    pass_ = jax.jit(jax.vmap(post.full_grad))  # two chains, one pass over the file
    pass_(theta)
    post.stream._ahead[2].result()  # its read-ahead lands before the count starts
    requests.clear()
    grads = pass_(theta)
    post.stream._ahead[2].result()  # the read-ahead of the next pass's first chunk
    # In steady state every row is read once per pass, in consecutive pieces of pass_rows:
    # pieces 0 … 12, then the last 500 rows, read ahead for the next pass (a pass sums
    # them first).
    assert [len(r) for r in requests] == [1_500] * 13 + [500]
    np.testing.assert_array_equal(np.concatenate(requests), np.arange(N))
    # float32 sums of 20,000 terms in another order: relative error ~1e-6 (measured ≤ 2.3e-7;
    # every component here is ≥ 4,000 in size, so no absolute slack is needed).
    np.testing.assert_allclose(grads, jax.vmap(memory.full_grad)(theta), rtol=1e-5)
    np.testing.assert_allclose(post.full_energy(theta[0]), memory.full_energy(theta[0]),
                               rtol=1e-5)


def test_streamed_svrg_samples_the_exact_posterior(files):
    """SVRG-LD (h = 0.05/λ_max, snapshots every 400 steps) on streamed data, scored in the
    posterior's whitened coordinates z = L⁻¹(θ − μ) (Σ = LLᵀ): the covariance of z must be
    the identity and its mean 0. Tolerances: Euler's stationary variance along an eigen-
    direction is 1/(1 − hλ/2) ≤ 1.025 times the exact one; a variance estimate has standard
    error √(2/ESS) and a mean 1/√ESS (ESS from ArviZ, minimum over coordinates, ~1,200):
    eigenvalues within [1 − 4√(2/ESS), 1.025 + 4√(2/ESS)], means within 4/√ESS. Plain SGLD
    at the same settings must fail (its minibatch noise inflates the covariance several
    times), and SVRG streamed must match SVRG in memory."""
    import arviz as az

    folder, X, y, mu, cov = files
    source = {"x": np.load(folder / "X.npy", mmap_mode="r"),
              "y": np.load(folder / "y.npy", mmap_mode="r")}
    post = streamed_posterior(source)
    lam = float(np.linalg.eigvalsh(np.linalg.inv(cov)).max())
    svrg = sgmc.sgld(0.05 / lam, batch_size=50,
                     estimator=sgmc.svrg(400, sampling="permutation"))
    whiten = np.linalg.inv(np.linalg.cholesky(cov))

    def score(res):
        z = (np.asarray(res.samples, np.float64) - mu) @ whiten.T
        ess = min(float(az.ess(z[..., j])) for j in range(D))
        flat = z.reshape(-1, D)
        return np.linalg.eigvalsh(np.cov(flat.T)), np.abs(flat.mean(0)), ess

    streamed = sgmc.sample(post, svrg, np.zeros(D, np.float32), **RUN)
    eig, mean, ess = score(streamed)
    tol = 4 * np.sqrt(2 / ess)
    assert ess > 500, ess
    assert np.all(eig > 1 - tol) and np.all(eig < 1.025 + tol), (eig, tol)
    assert np.all(mean < 4 / np.sqrt(ess)), (mean, ess)
    # Counted cost: 10 snapshots (one per 400 steps) of all N rows, and 2 × 50 per step.
    assert streamed.info["grad_evals"][0, -1] == 10 * N + 4_000 * 100

    plain = sgmc.sample(post, sampler(cov), np.zeros(D, np.float32), **RUN)
    assert score(plain)[0].max() > 3, score(plain)[0]
    memory = sgmc.sample(sgmc.models.linear_regression(X, y), svrg,
                         np.zeros(D, np.float32), **RUN)
    ok, detail = same_distribution(streamed, memory)
    assert ok, detail


def test_stream_bad_input(files):
    _, X, y, *_ = files
    with pytest.raises(ValueError, match="buffer_rows"):
        sgmc.Stream({"x": X, "y": y}, buffer_rows=N + 1)
    with pytest.raises(ValueError, match="num_rows is required"):
        sgmc.Stream(lambda idx: X[idx], buffer_rows=10)
    with pytest.raises(ValueError, match="pass_rows"):
        sgmc.Stream({"x": X, "y": y}, buffer_rows=10, pass_rows=0)
    with pytest.raises(ValueError, match="leading"):
        sgmc.Stream({"x": X, "y": y[:-1]}, buffer_rows=10)
    post = streamed_posterior({"x": X, "y": y})
    with pytest.raises(ValueError, match="SAGA"):
        sgmc.sample(post, sgmc.sgld(1e-4, batch_size=10, estimator=sgmc.saga()),
                    np.zeros(D, np.float32), num_steps=10)


@pytest.mark.parametrize("model", ["linear", "logistic", "softmax", "mlp"])
def test_models_stream_memory_mapped_features(tmp_path, model):
    # X stays a memory map (only y, N numbers, is read up front); the streamed posterior's
    # exact full passes equal the in-memory model's (float32 sums in another order).
    import jax

    from sgmc.models._common import check_xy

    rng = np.random.default_rng(0)
    X = rng.normal(size=(3_000, 4)).astype(np.float32)
    y = {"linear": rng.normal(size=3_000), "logistic": rng.integers(0, 2, 3_000),
         "softmax": rng.integers(0, 3, 3_000), "mlp": rng.integers(0, 3, 3_000)}[model]
    np.save(tmp_path / "X.npy", X)
    mm = np.load(tmp_path / "X.npy", mmap_mode="r")
    build = {"linear": sgmc.models.linear_regression,
             "logistic": sgmc.models.logistic_regression,
             "softmax": sgmc.models.softmax_regression,
             "mlp": lambda X, y, **kw: sgmc.models.mlp(X, y, hidden=(5,), **kw)}[model]
    assert np.shares_memory(check_xy(mm, y, streamed=True)[0], mm)  # not copied
    streamed, memory = build(mm, y, buffer_rows=500), build(X, y)
    assert isinstance(streamed.stream, sgmc.Stream) and streamed.stream.num_data == 3_000
    assert streamed.data_rows == 500 and streamed.num_data == 3_000
    theta = (memory.loglik.init(jax.random.key(0)) if model == "mlp" else
             np.full((4, 3) if model == "softmax" else 4, 0.1, np.float32))
    np.testing.assert_allclose(streamed.full_energy(theta), memory.full_energy(theta),
                               rtol=1e-5)
