"""`sgmc reproduce bnn-uci`: its data preparation and Adam fits (default tier), its quick run
(slow tier; its smoke run is in test_experiments.py's registry-wide smoke test)."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sgmc
import sgmc.nn
from sgmc import datasets
from sgmc.lab.cli import main
from sgmc.lab.experiments import bnn_uci as B
from sgmc.lab.experiments import bnn_uci_parts as P
from sgmc.lab.experiments.verdict import check_claim_dict
from sgmc.models.mlp import MLP


def test_digits_split_is_stratified_standardised_and_holds_out_class_9():
    data = P.prepare("digits", seed=3)
    (Xtr, ytr), (Xva, yva), (_, yte) = data["train"], data["val"], data["test"]
    assert data["K"] == 9 and set(np.unique(ytr)) == set(range(9))
    assert len(data["ood"]) == 180                        # every image of class 9
    # 60/20/20 within every class (±1 image from rounding)
    for c in range(9):
        n = [np.sum(y == c) for y in (ytr, yva, yte)]
        assert abs(n[0] - 0.6 * sum(n)) <= 1 and abs(n[1] - 0.2 * sum(n)) <= 1
    # standardised with the training statistics: mean 0, sd 1 or (constant pixels) 0
    assert np.allclose(Xtr.mean(0), 0, atol=1e-5)
    sd = Xtr.std(0)
    assert np.all((np.abs(sd - 1) < 1e-4) | (sd < 1e-6)) and np.any(sd < 1e-6)
    # a pixel constant on the training part divides by 1, not by ~0: test inputs stay of
    # the order of the data (by 1e-6 they would reach ~1e7; measured max here ~30)
    assert data["max_abs_test"] < 100
    assert np.isfinite(Xva).all() and np.isfinite(data["ood"]).all()


def test_prior_is_sgmc_nn_prior_with_its_default_constant():
    """s² = c/fan_in on weights (c = sgmc.nn.DEFAULT_SCALE), s = 1 on biases."""
    net = MLP((5, 7, 3))
    params = net.init(jax.random.key(0))
    c = sgmc.nn.DEFAULT_SCALE
    want = 0.0
    for layer in params["layers"]:
        s = np.sqrt(c / layer["w"].shape[0])
        want += np.sum(-0.5 * (layer["w"] / s) ** 2 - np.log(s) - 0.5 * np.log(2 * np.pi))
        want += np.sum(-0.5 * layer["b"] ** 2 - 0.5 * np.log(2 * np.pi))
    np.testing.assert_allclose(float(P.prior()(params)), want, rtol=1e-5)
    assert f"scale={c:g}" in P.prior_source()


def test_adam_stops_at_convergence_and_snapshots_at_the_marks():
    """Full-batch Adam: the snapshot at the step mark is exactly there, one step costs N
    per-example gradients, and convergence stops it before the cap."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 3)).astype(np.float32)
    y = (X[:, 0] > 0).astype(np.int32)
    net = MLP((3, 4, 2))
    post = sgmc.Posterior(net, P.prior(), {"x": jnp.asarray(X), "y": jnp.asarray(y)})
    s = P.Settings(adam_lr=0.05, adam_check=50, adam_max=5_000)
    fit = P.Adam(post, s).fit(net.init(jax.random.key(1)), steps_mark=30, seconds_mark=1e9)
    assert fit["ok"] and fit["evals"][1] == 30 and fit["evals_per_step"] == 60
    assert fit["final"][1] < s.adam_max                 # converged before the cap
    assert fit["seconds"][1] == fit["final"][1]         # never reached 1e9 s: the final one
    assert float(post.full_energy(fit["final"][0])) < float(post.full_energy(fit["evals"][0]))


@pytest.mark.slow
@pytest.mark.data
@pytest.mark.skipif("diabetic_retinopathy" not in datasets.available(),
                    reason=f"diabetic retinopathy is absent from {datasets.data_root()}")
def test_bnn_uci_quick(tmp_path, capsys):
    out_json = tmp_path / "result.json"
    assert main(["reproduce", "bnn-uci", "--quick", "--out", str(tmp_path),
                 "--json", str(out_json)]) == 0
    text, result = capsys.readouterr().out, json.loads(out_json.read_text())
    assert result["claims"] and "run time:" in text
    for claim in result["claims"]:
        check_claim_dict(claim)
        assert claim["deviations"]
    summ = result["summary"]
    assert set(summ) == {"digits", "diabetic_retinopathy"}
    for per in summ.values():
        for r in per.values():
            assert set(B.METHODS) <= set(r)
            for m in B.METHODS:
                assert np.all(np.isfinite(r[m]["log_likelihood"]))
            # equal evaluations: the ensemble spent no more than the BMA
            assert np.all(np.asarray(r["ensemble (equal evals)"]["evals"])
                          <= np.asarray(r["BMA"]["evals"]) * 1.001)
    # 6 claims per dataset and τ label
    assert len(result["claims"]) == 6 * sum(len(p) for p in summ.values())
    assert (tmp_path / "bnn_uci.png").is_file()
