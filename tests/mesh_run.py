"""Sharded runs against single-device runs, on 8 simulated CPU devices.

Run by tests/run/test_mesh.py in a subprocess, because the device count must be set before JAX
starts: ``XLA_FLAGS=--xla_force_host_platform_device_count=8 python tests/mesh_run.py``.
Prints one JSON line: for each case, whether the draws are bitwise equal and the largest
absolute difference.
"""

import json
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh

import sgmc
from sgmc.run import starts


def mesh(shape, names):
    n = int(np.prod(shape))
    return Mesh(np.array(jax.devices()[:n]).reshape(shape), names)


def compare(problem, sampler, init, mesh_, **run):
    one = sgmc.sample(problem, sampler, init, **run)
    many = sgmc.sample(problem, sampler, init, **run, mesh=mesh_)
    a, b = np.asarray(one.samples), np.asarray(many.samples)
    stats = {k: {"equal": bool(np.array_equal(one.info[k], many.info[k])),
                 "max_rel_diff": float(np.max(np.abs(one.info[k] - many.info[k])
                                              / np.maximum(np.abs(one.info[k]), 1e-30)))}
             for k in one.info}
    return {"bitwise": bool(np.array_equal(a, b)), "max_abs_diff": float(np.abs(a - b).max()),
            "stats": stats, "devices": int(mesh_.devices.size),
            "sharded_over": len(many.final_state.dyn.position.sharding.device_set)}


def main():
    assert len(jax.devices()) == 8, jax.devices()
    X, y, _ = sgmc.models.synthetic_linear_data(1000, 3, seed=0)
    post = sgmc.models.linear_regression(X, y)
    run = dict(num_steps=600, num_chains=8, thin=10, seed=3)
    sgld = sgmc.sgld(1e-4, batch_size=10)
    svrg = sgmc.sghmc(2e-3, friction=2.0, batch_size=10, estimator=sgmc.svrg(period=100))
    out = {
        "sgld_8dev": compare(post, sgld, jnp.zeros(3), mesh((8,), ("chains",)), **run),
        "svrg_4dev": compare(post, svrg, jnp.zeros(3), mesh((4,), ("chains",)), **run),
        "svrg_8dev": compare(post, svrg, jnp.zeros(3), mesh((8,), ("chains",)), **run),
        # The data's 1000 rows split over 4 devices: full passes sum per device.
        "svrg_data_2x4": compare(post, svrg, jnp.zeros(3), mesh((2, 4), ("chains", "data")),
                                 **run),
    }
    # Streamed data: buffers put on the mesh, full passes read from the file by a callback.
    folder = tempfile.mkdtemp()
    np.save(f"{folder}/x.npy", np.asarray(X, np.float32))
    np.save(f"{folder}/y.npy", np.asarray(y, np.float32))
    stream = sgmc.Stream({k: np.load(f"{folder}/{k}.npy", mmap_mode="r") for k in "xy"},
                         buffer_rows=200, pass_rows=300)
    streamed = sgmc.Posterior(post.loglik, post.logprior, stream)
    svrg_p = sgmc.sghmc(2e-3, friction=2.0, batch_size=10,
                        estimator=sgmc.svrg(period=100, sampling="permutation"))
    out["svrg_stream_8dev"] = compare(streamed, svrg_p, jnp.zeros(3),
                                      mesh((8,), ("chains",)), **run)
    data = sgmc.models.synthetic_mixture_data(500, seed=0)
    mix = sgmc.models.mixture_posterior(data)
    rx = sgmc.replica_exchange(sgmc.sgld(1e-3, batch_size=20), [25.0, 50.0, 100.0, 1000.0],
                               energy=sgmc.cv_energy(period=5), output="all")
    out["replicas_2x4"] = compare(mix, rx, jnp.zeros(1), mesh((2, 4), ("chains", "replicas")),
                                  num_steps=600, num_chains=2, thin=2, seed=4)
    # Meshes as JAX's documentation now builds them: jax.make_mesh, explicit axis types.
    explicit = jax.make_mesh((8,), ("chains",))
    out["make_mesh_axis_types"] = [t.name for t in explicit.axis_types]
    out["sgld_make_mesh_8dev"] = compare(post, sgld, jnp.zeros(3), explicit, **run)
    out["replicas_make_mesh_2x4"] = compare(mix, rx, jnp.zeros(1),
                                            jax.make_mesh((2, 4), ("chains", "replicas")),
                                            num_steps=600, num_chains=2, thin=2, seed=4)
    out["svrg_data_make_mesh_2x4"] = compare(post, svrg, jnp.zeros(3),
                                             jax.make_mesh((2, 4), ("chains", "data")), **run)
    # resume onto a make_mesh mesh: a checkpoint from a 300-step-in run, continued sharded.
    path = f"{folder}/run.ckpt"
    whole = sgmc.sample(post, sgld, jnp.zeros(3), **run)
    sgmc.sample(post, sgld, jnp.zeros(3), **run, checkpoint=path, checkpoint_every=300,
                draws_per_block=30, mesh=explicit)  # checkpoints at steps 300 (.prev) and 600
    resumed = sgmc.resume(f"{path}.prev", post, sgld, mesh=explicit)
    out["resume_make_mesh_8dev"] = {
        "bitwise": bool(np.array_equal(np.asarray(whole.samples),
                                       np.asarray(resumed.samples))),
        "sharded_over": len(resumed.final_state.dyn.position.sharding.device_set)}
    # minimize: replications over the devices of a make_mesh mesh (and the data's rows).
    f = sgmc.Objective(lambda x, row: jnp.sum((x - row) ** 2) + jnp.sum(jnp.sin(3 * x)),
                       jnp.asarray(np.random.default_rng(0).normal(size=(64, 2)), jnp.float32))
    method = sgmc.sgd_x_sgld(0.01, temperature=0.5, batch_size=8, threshold=0.1, bound=10.0)
    args = dict(num_steps=400, num_replications=8, seed=2)
    alone = sgmc.minimize(f, method, jnp.zeros(2), **args)
    out["minimize_make_mesh_8dev"] = {}
    for name, m in (("chains", explicit), ("chains_data", jax.make_mesh((4, 2),
                                                                        ("chains", "data")))):
        spread = sgmc.minimize(f, method, jnp.zeros(2), **args, mesh=m)
        out["minimize_make_mesh_8dev"][name] = {
            "bitwise": bool(np.array_equal(alone.trace, spread.trace)
                            and np.array_equal(alone.x, spread.x)),
            "max_abs_diff": float(np.abs(alone.trace - spread.trace).max()),
            "grad_evals_equal": bool(np.array_equal(alone.grad_evals, spread.grad_evals))}
    # init's leaves committed to two devices: checked for finiteness one leaf at a time
    # (one compiled call cannot take them together), the bad leaf named.
    d0, d1 = jax.devices()[:2]
    init = {"a": jax.device_put(jnp.ones(3), d0), "b": jax.device_put(jnp.ones(2), d1)}
    out["init_on_two_devices"] = {"accepted": sorted(starts._as_init(init))}
    try:
        starts._as_init({**init, "b": jax.device_put(jnp.array([1.0, jnp.nan]), d1)})
    except ValueError as err:
        out["init_on_two_devices"]["error"] = str(err)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
