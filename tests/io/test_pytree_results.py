"""Results, saved runs, streamed draws and checkpoints for params that are not dicts:
an Equinox MLP, a Flax NNX state, a NamedTuple and a ``jax.tree_util.register_dataclass``
dataclass.

- ``to_arviz`` / ``summary`` name every leaf by its path (``layers[0].weight``,
  ``hidden.kernel``, ``w``), with the draws' values;
- ``Result.save`` / ``Result.load(path, like=init)`` give back the params' own structure,
  bitwise; without ``like`` the draws load as dicts and lists named by path; a leaf that is
  not an array is refused at save time (never an object array in the file);
- ``stream_to=`` writes the same draws as the in-memory run, and the folder loads back with
  ``like=init`` into the params' structure;
- ``checkpoint=`` works; ``sgmc.resume(path, problem, sampler, like=init)`` rebuilds the
  positions in the params' structure (the file alone cannot hold an Equinox module or a
  class: without ``like`` a CheckpointError says to pass it), bitwise the uninterrupted run.

Before these changes: an Equinox module or a dataclass failed ``to_arviz`` with a
misleading "'theta' has shape ()", ``save`` wrote an object array that did not load, and
``stream_to=`` / ``checkpoint=`` raised "int() argument must be ... not 'MLP'"; ``like=``
did not exist (NNX states and NamedTuples loaded back as dicts only).
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sgmc

CASES = ("equinox", "nnx", "namedtuple", "dataclass")
RUN = {"num_steps": 12, "num_chains": 2, "seed": 3, "init_per_chain": False}

rng = np.random.default_rng(0)
X = rng.normal(size=(32, 2)).astype(np.float32)
Y = (X @ np.array([1.0, -1.0], np.float32) + 0.1 * rng.normal(size=32)).astype(np.float32)
DATA = {"x": X, "y": Y}


def logprior(params: Any) -> jax.Array:
    return sum(-0.5 * jnp.sum(p**2) for p in jax.tree.leaves(params))


class LinParams(NamedTuple):
    w: Any
    b: Any


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class Lin:
    w: Any
    b: Any
    scale: float = dataclasses.field(default=1.0, metadata={"static": True})


def make(case: str) -> tuple[Any, Any, list[str]]:
    """(params init, loglik of one datum, the expected ArviZ names in draw order)."""
    if case == "equinox":
        eqx = pytest.importorskip("equinox")
        model = eqx.nn.MLP(2, 1, width_size=3, depth=1, key=jax.random.key(0))
        init, static = eqx.partition(model, eqx.is_inexact_array)

        def loglik(p, d):
            return -0.5 * (eqx.combine(p, static)(d["x"])[0] - d["y"]) ** 2

        names = ["layers[0].weight", "layers[0].bias", "layers[1].weight", "layers[1].bias"]
        return init, loglik, names
    if case == "nnx":
        nnx = pytest.importorskip("flax.nnx")

        class Net(nnx.Module):
            def __init__(self, rngs):
                self.hidden = nnx.Linear(2, 3, rngs=rngs)
                self.out = nnx.Linear(3, 1, rngs=rngs)

            def __call__(self, x):
                return self.out(nnx.relu(self.hidden(x)))

        graphdef, init = nnx.split(Net(nnx.Rngs(0)))

        def loglik(p, d):
            return -0.5 * (nnx.merge(graphdef, p)(d["x"])[0] - d["y"]) ** 2

        return init, loglik, ["hidden.bias", "hidden.kernel", "out.bias", "out.kernel"]

    def loglik(p, d):
        return -0.5 * (d["x"] @ p.w + p.b - d["y"]) ** 2

    if case == "namedtuple":
        return LinParams(jnp.zeros(2), jnp.zeros(())), loglik, ["w", "b"]
    return Lin(jnp.zeros(2), jnp.zeros(()), 2.0), loglik, ["w", "b"]


@pytest.fixture(scope="module", params=CASES)
def case(request):
    """(case, init, posterior, in-memory result)."""
    init, loglik, names = make(request.param)
    post = sgmc.Posterior(loglik, logprior, DATA)
    res = sgmc.sample(post, sgmc.sgld(1e-3, batch_size=8), init, **RUN)
    assert jax.tree.structure(res.samples) == jax.tree.structure(init)
    return request.param, init, post, res, names


def _assert_same_draws(a: Any, b: Any) -> None:
    assert jax.tree.structure(a) == jax.tree.structure(b)
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def _by_name(tree: Any, names: list[str]) -> dict[str, np.ndarray]:
    """The leaves of ``tree`` under the expected names, matched through their key paths."""
    from sgmc.io.serial import leaf_names

    return dict(zip(leaf_names(tree), jax.tree.leaves(tree), strict=True))


def test_arviz_names_and_summary(case):
    name, _init, _, res, names = case
    if name in ("nnx", "namedtuple"):
        pytest.skip("named by their keys before these changes too (covered by the others)")
    idata = res.to_arviz()
    assert list(idata.posterior.data_vars) == names
    for var, value in _by_name(res.samples, names).items():
        da = idata.posterior[var]
        assert da.dims[:2] == ("chain", "draw")
        np.testing.assert_array_equal(da.values, np.asarray(value, np.float64))
    table = res.summary()
    assert table.shape[0] == sum(x[0, 0].size for x in jax.tree.leaves(res.samples))
    assert all(any(row.startswith(n) for n in names) for row in table.index)
    assert np.isfinite(table["ess_bulk"]).all() and np.isfinite(table["r_hat"]).all()
    assert "layers[0].weight" in repr(res) or name != "equinox"


def test_save_load_round_trip(case, tmp_path):
    _name, init, _, res, names = case
    path = tmp_path / "run.npz"
    res.save(path)
    with np.load(path, allow_pickle=False) as npz:  # no object array in the file
        assert all(npz[k].dtype != object for k in npz.files)
    back = sgmc.Result.load(path, like=init)
    _assert_same_draws(back.samples, res.samples)
    assert type(back.samples) is type(init)
    np.testing.assert_array_equal(back.info["grad_evals"], res.info["grad_evals"])
    assert back.meta["sampler"] == res.meta["sampler"]
    assert set(back.to_arviz().posterior.data_vars) == set(names)
    # Without a template: plain dicts and lists, named as in ArviZ, the same arrays.
    plain = sgmc.Result.load(path)
    assert list(plain.to_arviz().posterior.data_vars) == list(res.to_arviz().posterior)
    assert sorted(map(repr, _by_name(plain.samples, names))) == sorted(map(repr, names))
    # A template of another structure is refused, naming what differs.
    with pytest.raises(ValueError, match="like= does not fit"):
        sgmc.Result.load(path, like={"w": np.zeros(2)})


def test_stream_to(case, tmp_path):
    _name, init, post, res, _names = case
    folder = tmp_path / "draws"
    streamed = sgmc.sample(post, sgmc.sgld(1e-3, batch_size=8), init, stream_to=folder, **RUN)
    _assert_same_draws(streamed.samples, res.samples)
    back = sgmc.Result.load(folder, like=init)
    assert type(back.samples) is type(init)
    _assert_same_draws(back.samples, res.samples)
    assert list(back.to_arviz().posterior.data_vars) == list(res.to_arviz().posterior)


def test_checkpoint_and_resume_with_a_template(case, tmp_path):
    """checkpoint= works for any pytree; resume rebuilds the positions from ``like=init``
    (the file holds no code), bitwise the uninterrupted run, and says so without it."""
    _name, init, post, res, _ = case
    path = tmp_path / "run.ckpt"
    smp = sgmc.sgld(1e-3, batch_size=8)
    sgmc.sample(post, smp, init, checkpoint=path, checkpoint_every=6, draws_per_block=2, **RUN)
    assert sgmc.io.checkpoint.read(f"{path}.prev")[0]["t0"] == 6  # resumed mid-run
    with pytest.raises(sgmc.CheckpointError, match="pass like=init"):
        sgmc.resume(f"{path}.prev", post, smp)
    again = sgmc.resume(f"{path}.prev", post, smp, like=init)
    assert type(again.samples) is type(init)
    _assert_same_draws(again.samples, res.samples)


def test_save_refuses_object_leaves(tmp_path):
    res = sgmc.Result({"a": np.zeros((1, 2)), "b": np.array([["x", None]], dtype=object)},
                      {"grad_evals": np.zeros((1, 2), np.int64)}, {})
    with pytest.raises(TypeError, match="cannot store a leaf"):
        res.save(tmp_path / "bad.npz")
    assert not (tmp_path / "bad.npz").exists()


def test_dict_names_unchanged_with_custom_nodes_inside(tmp_path):
    """A dict position holding a dataclass: the dict's keys as before, then the fields."""
    init = {"lin": Lin(jnp.zeros(2), jnp.zeros(())), "s": jnp.zeros(())}

    def loglik(p, d):
        return -0.5 * (d["x"] @ p["lin"].w + p["lin"].b + p["s"] - d["y"]) ** 2

    res = sgmc.sample(sgmc.Posterior(loglik, logprior, DATA), sgmc.sgld(1e-3, batch_size=8),
                      init, **RUN)
    assert list(res.to_arviz().posterior.data_vars) == ["lin.w", "lin.b", "s"]
    res.save(tmp_path / "r.npz")
    _assert_same_draws(sgmc.Result.load(tmp_path / "r.npz", like=init).samples, res.samples)


def test_checkpoint_positions_rebuilt_from_a_template(case):
    """What ``sgmc.resume(..., like=init)`` needs (``driver.checkpoint``): the positions'
    description names every leaf; without a template it cannot be rebuilt (a
    CheckpointError saying to pass ``like=init``), with one it is, shapes and dtypes from
    the checkpoint."""
    from sgmc.run.snapshot import position_spec, position_template

    _, init, _, _, names = case
    positions = jax.tree.map(lambda x: jnp.stack([x, x + 1]), init)
    spec = position_spec(positions)
    assert sorted(spec["names"]) == sorted(names)
    with pytest.raises(sgmc.CheckpointError, match="pass like=init"):
        position_template(spec)
    template = position_template(spec, like=init)
    assert jax.tree.structure(template) == jax.tree.structure(positions)
    for t, x in zip(jax.tree.leaves(template), jax.tree.leaves(positions), strict=True):
        assert (t.shape, t.dtype) == (x.shape, x.dtype)
    with pytest.raises(sgmc.CheckpointError, match="like= does not fit"):
        position_template(spec, like={"w": np.zeros(2)})
