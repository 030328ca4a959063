"""Runs on a device mesh give the draws of the same run on one device.

JAX fixes its device count at start-up, so the sharded runs happen in a subprocess with
``XLA_FLAGS=--xla_force_host_platform_device_count=8`` (tests/mesh_run.py), which runs each
case with and without ``mesh=`` and reports the differences.

Tolerances (measured values in brackets): plain SGLD is bitwise equal — its per-chain
arithmetic is the same program split by chains. SVRG-HMC on streamed data, whose full passes
read the file through a host callback, was bitwise too with earlier JAX; with JAX 0.10 the
partitioned program rounds differently [1.4e-6 after 600 steps], so it joins the
tolerance group below. The in-memory SVRG-HMC and the replica exchange with
control-variate energies contain full-data reductions that XLA fuses differently in the
partitioned program, so float32 sums are
reassociated: after 600 steps positions (of order 1–10) agree within 1e-4 absolute
[2e-6–7e-6], σ̂² within 1e-3 relative, and every discrete outcome — swap counts, attempts,
replica labels, gradient evaluations — is identical. The same holds with the data split
over a "data" axis (full passes summed per device, then added: another summation order).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest
from jax.sharding import Mesh

import sgmc

HERE = Path(__file__).resolve().parent.parent  # tests/: the helper scripts


@pytest.fixture(scope="module")
def report():
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=8",
               PYTHONPATH=os.pathsep.join([str(HERE.parent / "src"),
                                           os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, str(HERE / "mesh_run.py")], env=env,
                         capture_output=True, text=True, timeout=1200)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("case", ["sgld_8dev"])
def test_bitwise_on_eight_devices(report, case):
    c = report[case]
    assert c["sharded_over"] == 8
    assert c["bitwise"] and all(s["equal"] for s in c["stats"].values())


@pytest.mark.parametrize("case", ["svrg_4dev", "svrg_8dev", "svrg_data_2x4",
                                  "svrg_stream_8dev"])
def test_svrg_sampler_matches_to_float_tolerance(report, case):
    c = report[case]
    assert c["sharded_over"] == c["devices"]
    assert c["max_abs_diff"] < 1e-4
    assert c["stats"]["grad_evals"]["equal"] and c["stats"]["step"]["equal"]


def test_replica_exchange_over_chains_and_replicas(report):
    c = report["replicas_2x4"]
    assert c["sharded_over"] == 8  # 2 chains × 4 replicas, one replica per device
    assert c["max_abs_diff"] < 1e-4
    stats = c["stats"]
    for k in ("swaps", "swap_attempts", "replica_labels", "grad_evals", "step"):
        assert stats[k]["equal"], k
    assert stats["energy_variance"]["max_rel_diff"] < 1e-3


def test_meshes_made_by_jax_make_mesh(report):
    """``jax.make_mesh`` gives explicit axis types (a ShardingTypeError before issue 19):
    the draws are those of the same run on one device, as with ``Mesh(...)``, and a
    checkpoint resumes onto such a mesh bitwise."""
    assert report["make_mesh_axis_types"] == ["Explicit"]
    c = report["sgld_make_mesh_8dev"]
    assert c["sharded_over"] == 8 and c["bitwise"]
    c = report["replicas_make_mesh_2x4"]
    assert c["sharded_over"] == 8 and c["max_abs_diff"] < 1e-4
    assert all(c["stats"][k]["equal"] for k in ("swaps", "replica_labels", "grad_evals"))
    c = report["svrg_data_make_mesh_2x4"]
    assert c["max_abs_diff"] < 1e-4 and c["stats"]["grad_evals"]["equal"]
    c = report["resume_make_mesh_8dev"]
    assert c["sharded_over"] == 8 and c["bitwise"]
    # minimize's replications over 8 devices; with a data axis, full passes sum per device
    # (another order of additions: float tolerance, as for the samplers above).
    c = report["minimize_make_mesh_8dev"]
    assert c["chains"]["bitwise"] and c["chains"]["grad_evals_equal"]
    assert c["chains_data"]["max_abs_diff"] < 1e-4 and c["chains_data"]["grad_evals_equal"]


def test_mesh_arguments_are_checked():
    X, y, _ = sgmc.models.synthetic_linear_data(100, 2, seed=0)
    post = sgmc.models.linear_regression(X, y)
    one = Mesh(np.array(jax.devices()[:1]), ("chains",))
    with pytest.raises(TypeError, match=r"jax\.sharding\.Mesh"):
        sgmc.sample(post, sgmc.sgld(1e-4), np.zeros(2), 10, mesh="cpu")
    with pytest.raises(ValueError, match="axis named 'chains'"):
        sgmc.sample(post, sgmc.sgld(1e-4), np.zeros(2), 10,
                    mesh=Mesh(np.array(jax.devices()[:1]), ("x",)))
    with pytest.raises(ValueError, match="not a replica-exchange"):
        sgmc.sample(post, sgmc.sgld(1e-4), np.zeros(2), 10,
                    mesh=Mesh(np.array(jax.devices()[:1]).reshape(1, 1),
                              ("chains", "replicas")))
    data_mesh = Mesh(np.array(jax.devices()[:1]).reshape(1, 1), ("chains", "data"))
    streamed = sgmc.Posterior(post.loglik, post.logprior,
                              sgmc.Stream(jax.tree.map(np.asarray, post.data), buffer_rows=50))
    with pytest.raises(ValueError, match="in-memory data"):
        sgmc.sample(streamed, sgmc.sgld(1e-4), np.zeros(2), 10, mesh=data_mesh)
    split = sgmc.sample(post, sgmc.sgld(1e-4, batch_size=None), np.zeros(2), 10,
                        mesh=data_mesh)  # full-batch gradients through the per-part sum
    whole = sgmc.sample(post, sgmc.sgld(1e-4, batch_size=None), np.zeros(2), 10)
    np.testing.assert_array_equal(split.samples, whole.samples)
    res = sgmc.sample(post, sgmc.sgld(1e-4), np.zeros(2), 10, num_chains=2, mesh=one)
    ref = sgmc.sample(post, sgmc.sgld(1e-4), np.zeros(2), 10, num_chains=2)
    np.testing.assert_array_equal(res.samples, ref.samples)


def test_init_on_several_devices_is_checked_leaf_by_leaf(report):
    """Leaves of ``init`` committed to different devices cannot go through one compiled
    finiteness check: each is checked where it lives, and a non-finite one is named."""
    c = report["init_on_two_devices"]
    assert c["accepted"] == ["a", "b"]
    assert c["error"] == "init['b'] contains non-finite values (NaN or inf)"
