"""A fixed set of small runs whose draws are pinned (tests/run/test_pinned_draws.py).

``python tests/pinned_runs.py`` records them into ``tests/pinned_draws.json``: the JAX and
jaxlib versions and the kind of CPU they were recorded with, and per array its shape, dtype,
the SHA-256 of its bytes (the bitwise check) and its values (the check under another JAX,
whose XLA may round differently, and to show how far a changed run moved). They were first
recorded before the kernel-contract refactor (issue 17), so that the refactor is tested to
change no draw.
Re-record only for an intended change of behaviour, a new JAX or another kind of CPU (after
checking that the old pins hold within the tolerance of tests/run/test_pinned_draws.py), and
say why in the commit. (Re-recorded 2026-11-28 on an AVX2-only AMD EPYC, where four runs
moved by 1–2 ulp.)
"""

from __future__ import annotations

import hashlib
import json
import os

import jax
import jax.numpy as jnp
import numpy as np

import sgmc

PATH = os.path.join(os.path.dirname(__file__), "pinned_draws.json")


def _posterior():
    rng = np.random.default_rng(7)
    n, d = 64, 3
    X = rng.normal(size=(n, d)).astype(np.float32)
    y = (X @ np.array([1.0, -0.5, 0.25]) + 0.5 * rng.normal(size=n)).astype(np.float32)
    return sgmc.models.linear_regression(X, y, noise_std=0.5, prior_std=2.0), d


def _runs():
    post, d = _posterior()
    init = jnp.zeros(d)
    kw = dict(init=init, num_steps=60, num_chains=2, burn_in=10, thin=5, seed=3,
              progress=False)
    samplers = {
        "sgld": sgmc.sgld(1e-3, batch_size=8),
        "sghmc_euler": sgmc.sghmc(1e-3, friction=20.0, batch_size=8),
        "sghmc_explicit": sgmc.sghmc(1e-3, friction=20.0, batch_size=8, integrator="explicit"),
        "sghmc_splitting": sgmc.sghmc(1e-3, friction=20.0, batch_size=8,
                                      integrator="splitting"),
        "svrg_hmc": sgmc.sghmc(1e-3, friction=20.0, batch_size=8, integrator="splitting",
                               estimator=sgmc.svrg(period=16)),
        "saga_ld": sgmc.sgld(1e-3, batch_size=8, estimator=sgmc.saga()),
        "ewsg": sgmc.sghmc(1e-3, friction=20.0, batch_size=1, integrator="explicit",
                           estimator=sgmc.ewsg(chain_length=2)),
        "sgld_permutation": sgmc.sgld(1e-3, batch_size=8,
                                      estimator=sgmc.uniform(sampling="permutation")),
        "psgld": sgmc.psgld(1e-3, batch_size=8),
        "vr_resgld": sgmc.replica_exchange(sgmc.sgld(1e-3, batch_size=8),
                                           temperatures=[1.0, 3.0], correction=1.0,
                                           energy=sgmc.cv_energy(period=8)),
        "resgld_4": sgmc.replica_exchange(sgmc.sgld(1e-3, batch_size=8),
                                          temperatures=[1.0, 2.0, 4.0, 8.0], correction=1.0),
    }
    out = {}
    for name, sampler in samplers.items():
        res = sgmc.sample(post, sampler, **kw)
        out[name] = np.asarray(res.samples)
        out[name + "/grad_evals"] = np.asarray(res.info["grad_evals"])
        if "swaps" in res.info:
            out[name + "/swaps"] = np.asarray(res.info["swaps"])
    one = sgmc.sample(post, sgmc.sghmc(1e-3, friction=20.0, batch_size=8,
                                       integrator="splitting"), **{**kw, "num_chains": 1})
    out["sghmc_one_chain"] = np.asarray(one.samples)
    obj = sgmc.Objective(lambda x: jnp.sum((x ** 2 - 1.0) ** 2) + 0.3 * jnp.sum(x))
    opt = sgmc.minimize(obj, sgmc.gd_x_ld(step_size=0.05, temperature=1.0, threshold=0.0),
                        init=jnp.full(2, 1.5), num_steps=40, num_replications=3, seed=1,
                        record_every=4)
    out["gdxld/trace"] = np.asarray(opt.trace)
    out["gdxld/x"] = np.asarray(opt.x)
    out["gdxld/exchanges"] = np.asarray(opt.exchanges)
    return out


VERSIONS_KEY = "_recorded_with"


def versions() -> dict:
    """What the bitwise comparison assumes: the JAX and jaxlib versions, and the host CPU
    XLA:CPU compiled for (it uses the host's vector instructions: the same program rounded
    four of these runs 1–2 ulp apart on an AVX2-only AMD EPYC and on the machine where
    the pins were first recorded)."""
    import jaxlib
    return {"jax": jax.__version__, "jaxlib": jaxlib.__version__, "cpu": host_cpu()}


#: The /proc/cpuinfo flags that change the code XLA:CPU emits (vector width, fused
#: multiply-add), by prefix.
_ISA = ("avx", "fma", "f16c", "amx", "sse4")


def host_cpu() -> str:
    """The host CPU's model and vector instruction sets (Linux), else the platform's name."""
    import platform
    try:
        with open("/proc/cpuinfo") as fh:
            info = dict(line.split(":", 1) for line in fh.read().split("\n\n")[0].splitlines()
                        if ":" in line)
    except OSError:
        return platform.processor() or platform.machine()
    info = {k.strip(): v.strip() for k, v in info.items()}
    flags = sorted(f for f in info.get("flags", "").split() if f.startswith(_ISA))
    return " ".join([info.get("model name", platform.machine()), *flags])


def fingerprint(a: np.ndarray) -> dict:
    """What is pinned of one array: shape, dtype, SHA-256 of its bytes, its values."""
    a = np.ascontiguousarray(a)
    return {"shape": list(a.shape), "dtype": str(a.dtype),
            "sha256": hashlib.sha256(a.tobytes()).hexdigest(),
            "values": a.reshape(-1).tolist()}


def record(path: str = PATH) -> None:
    pins = {VERSIONS_KEY: versions()}
    pins.update((k, fingerprint(v)) for k, v in sorted(_runs().items()))
    with open(path, "w") as fh:
        fh.write("{\n" + ",\n".join(f" {json.dumps(k)}: {json.dumps(v)}"
                                      for k, v in pins.items()) + "\n}\n")


if __name__ == "__main__":
    jax.config.update("jax_platforms", "cpu")
    record()
    print(f"wrote {PATH}")
