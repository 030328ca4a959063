"""One process of a two-process run (several hosts, simulated on this one).

Run by tests/run/test_multihost.py as ``python tests/multihost_run.py PORT PROCESS_ID OUT``:
each process has 2 CPU devices, ``jax.distributed.initialize`` joins them into one runtime
of 4 devices (collectives over gloo), and every process runs the same script, as the docs
say a multi-host run does. Writes its draws to OUT (.npz).
"""

import os
import sys

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"

import jax

jax.config.update("jax_cpu_collectives_implementation", "gloo")
port, pid, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
jax.distributed.initialize(f"localhost:{port}", num_processes=2, process_id=pid,
                           initialization_timeout=120)
print("runtime started", flush=True)  # what follows is sgmc's part

import numpy as np  # noqa: E402
from jax.sharding import Mesh  # noqa: E402

import sgmc  # noqa: E402
from multihost_cases import cases  # noqa: E402


def main():
    assert jax.process_count() == 2 and len(jax.devices()) == 4, jax.devices()
    devices = np.array(jax.devices())
    draws = {}
    for name, (problem, sampler, init, run, axes) in cases().items():
        shape = (4,) if len(axes) == 1 else (2, 2)
        mesh = Mesh(devices.reshape(shape), axes)
        res = sgmc.sample(problem, sampler, init, **run, mesh=mesh, progress=False)
        draws[name] = np.asarray(res.samples)
        draws[name + "/swaps"] = np.asarray(res.info.get("swaps", np.zeros(0)))
    np.savez(out, **draws)


if __name__ == "__main__":
    main()
