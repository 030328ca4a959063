"""Parameter names in ``Result.summary`` / ``Result.to_arviz`` (``names=``, ``with_names``),
and a summary that prints every column."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

pytest.importorskip("arviz")
pd = pytest.importorskip("pandas")

from sgmc.result import Result  # noqa: E402


def _result(samples, **meta) -> Result:
    c, n = np.shape(next(iter(_leaves(samples))))[:2]
    info = {"grad_evals": np.tile(np.arange(1, n + 1), (c, 1)), "step": np.arange(1, n + 1)}
    return Result(samples, info, {"sampler": "test", "num_data": 10, **meta})


def _leaves(tree):
    return tree.values() if isinstance(tree, dict) else [tree]


@pytest.fixture
def bare():
    rng = np.random.default_rng(0)
    return _result(rng.normal(size=(2, 100, 3)) + np.array([0.0, 10.0, -10.0]))


@pytest.fixture
def tree():
    rng = np.random.default_rng(1)
    return _result({"beta": rng.normal(size=(2, 100, 2)) + np.array([5.0, -5.0]),
                    "sigma": rng.normal(size=(2, 100)),
                    "w": rng.normal(size=(2, 100, 2, 3))})


def test_default_unchanged(bare, tree):
    table = bare.summary()
    assert isinstance(table, pd.DataFrame)
    assert list(table.index) == ["theta[0]", "theta[1]", "theta[2]"]
    assert bare.to_arviz().posterior["theta"].coords["theta_dim_0"].values.tolist() == [0, 1, 2]
    assert list(tree.summary().index)[:3] == ["beta[0]", "beta[1]", "sigma"]
    assert "names" not in bare.meta


def test_bare_array_names(bare):
    table = bare.summary(names=["intercept", "age", "income"])
    assert list(table.index) == ["intercept", "age", "income"]
    # Rows keep their values: the means are 0, 10, -10.
    np.testing.assert_allclose(table["mean"].to_numpy(), [0.0, 10.0, -10.0], atol=0.5)
    assert table.loc["age", "mean"] == pytest.approx(10.0, abs=0.5)
    theta = bare.to_arviz(names=["intercept", "age", "income"]).posterior["theta"]
    assert theta.dims == ("chain", "draw", "theta_dim_0")
    assert theta.coords["theta_dim_0"].values.tolist() == ["intercept", "age", "income"]
    assert float(theta.sel(theta_dim_0="income").mean()) == pytest.approx(-10.0, abs=0.5)
    # Any sequence: a tuple, a numpy array (pandas columns).
    assert list(bare.summary(names=np.array(["a", "b", "c"])).index) == ["a", "b", "c"]
    # Passes through with other arviz.summary arguments.
    diag = bare.summary(names=("a", "b", "c"), kind="diagnostics")
    assert list(diag.index) == ["a", "b", "c"] and "r_hat" in diag.columns


def test_dict_names(tree):
    names = {"beta": ["age", "income"], "w": ["x", "y", "z"]}
    table = tree.summary(names=names)
    assert list(table.index) == ["beta[age]", "beta[income]", "sigma",
                                 "w[0, x]", "w[0, y]", "w[0, z]",
                                 "w[1, x]", "w[1, y]", "w[1, z]"]
    assert table.loc["beta[income]", "mean"] == pytest.approx(-5.0, abs=0.5)
    post = tree.to_arviz(names=names).posterior
    assert post["beta"].coords["beta_dim_0"].values.tolist() == ["age", "income"]
    assert post["w"].dims == ("chain", "draw", "w_dim_0", "w_dim_1")
    assert post["w"].coords["w_dim_0"].values.tolist() == [0, 1]
    assert post["w"].coords["w_dim_1"].values.tolist() == ["x", "y", "z"]
    # Only some variables named: the others keep 0, 1, ….
    partial = tree.summary(names={"beta": ["age", "income"]})
    assert "beta[age]" in partial.index and "w[1, 2]" in partial.index


@pytest.mark.parametrize(("which", "names", "match"), [
    ("bare", ["a", "b"], r"has 2 names; expected 3"),
    ("bare", ["a", "b", "c", "d"], r"has 4 names; expected 3"),
    ("bare", "abc", r"not the string"),
    ("bare", {"gamma": ["a", "b", "c"]}, r"'gamma'.*variables are \['theta'\]"),
    ("bare", ["a", "a", "b"], r"repeats \['a'\]"),
    ("tree", ["age", "income"], r"variables \['beta', 'sigma', 'w'\].*dict"),
    ("tree", {"beta": ["age"]}, r"names\['beta'\] has 1 name; expected 2"),
    ("tree", {"alpha": ["a", "b"]}, r"'alpha'.*variables are \['beta', 'sigma', 'w'\]"),
    ("tree", {"sigma": ["s"]}, r"'sigma'.*no parameter axis"),
    ("tree", {"w": ["x", "y"]}, r"names\['w'\] has 2 names; expected 3"),
])
def test_bad_names_raise(request, which, names, match):
    res = request.getfixturevalue(which)
    for call in (res.summary, res.to_arviz, res.with_names):
        with pytest.raises(ValueError, match=match):
            call(names=names)


def test_with_names_once(bare, tree, tmp_path):
    named = bare.with_names(["intercept", "age", "income"])
    assert "names" not in bare.meta                       # the original is unchanged
    assert named.meta["names"] == ["intercept", "age", "income"]
    assert named.samples is bare.samples
    assert list(named.summary().index) == ["intercept", "age", "income"]
    coords = named.to_arviz().posterior["theta"].coords["theta_dim_0"].values.tolist()
    assert coords == ["intercept", "age", "income"]
    # names= given to a call wins over the stored ones.
    assert list(named.summary(names=["a", "b", "c"]).index) == ["a", "b", "c"]
    # Saved and loaded with the result.
    named.save(tmp_path / "run.npz")
    assert list(Result.load(tmp_path / "run.npz").summary().index) == ["intercept", "age",
                                                                        "income"]
    # None removes them.
    assert named.with_names(None).summary().index[0] == "theta[0]"
    tnamed = tree.with_names({"beta": ["age", "income"]})
    assert list(tnamed.summary().index)[:2] == ["beta[age]", "beta[income]"]


def test_print_shows_every_column(bare):
    table = bare.summary(names=["intercept", "age", "income"])
    with pd.option_context("display.width", 40, "display.max_columns", 4):
        for text in (str(table), repr(table)):
            assert "..." not in text
            for col in ("mean", "sd", "hdi_97%", "mcse_sd", "ess_bulk", "ess_tail", "r_hat"):
                assert col in text
            assert text.splitlines()[1].startswith("intercept")
        # A plain DataFrame of the same table is cut at these settings.
        plain = str(pd.DataFrame(table))
        assert "..." in plain and "mcse_sd" not in plain
    # Long tables are still cut by rows, as pandas' display.max_rows says.
    big = _result(np.random.default_rng(2).normal(size=(2, 50, 100))).summary()
    with pd.option_context("display.max_rows", 10, "display.min_rows", 4):
        text = str(big)
    assert len(text.splitlines()) < 20 and "r_hat" in text and "100 rows" in text


def test_summary_is_still_a_dataframe(bare, tmp_path):
    table = bare.summary(names=["intercept", "age", "income"])
    assert isinstance(table, pd.DataFrame)
    sub = table.loc[["age", "income"], ["mean", "sd"]]
    assert isinstance(sub, pd.DataFrame) and sub.shape == (2, 2)
    assert isinstance(table["mean"], pd.Series)
    doubled = table[["mean"]] * 2
    np.testing.assert_allclose(doubled["mean"], 2 * table["mean"])
    with pd.option_context("display.width", 20, "display.max_columns", 2):
        assert "mcse_sd" in str(table.round(1))        # derived tables print in full too
    table.to_csv(tmp_path / "s.csv")
    back = pd.read_csv(tmp_path / "s.csv", index_col=0)
    pd.testing.assert_frame_equal(back, pd.DataFrame(table), check_exact=False)
    assert pickle.loads(pickle.dumps(table)).equals(table)
    assert not isinstance(bare.summary(fmt="xarray"), pd.DataFrame)   # an xarray.Dataset
