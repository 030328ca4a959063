"""One run, defined once for tests/io/test_checkpoint.py and for the subprocess it kills.

``python tests/checkpoint_run.py PATH`` runs it with checkpoints to PATH (and prints a line
per checkpoint it sees appear, so the parent knows the run is under way).
"""

import sys

import jax.numpy as jnp

import sgmc

# SVRG-HMC on two chains: the checkpoint must carry momenta, the snapshot and its full
# gradient, and the counters — not only positions. thin = 7 and burn-in 50 make blocks
# with dropped draws and a trailing partial block.
RUN = dict(num_steps=40_003, num_chains=2, burn_in=50, thin=7, seed=11)
EVERY = 2_000


def problem(shift: float = 0.0) -> sgmc.Posterior:
    X, y, _ = sgmc.models.synthetic_linear_data(400, 3, correlation=0.3, seed=5)
    return sgmc.models.linear_regression(X, y + shift)


def sampler(step_size: float = 2e-3) -> object:
    return sgmc.sghmc(step_size, friction=2.0, batch_size=10,
                      estimator=sgmc.svrg(period=100))


INIT = jnp.zeros(3)

if __name__ == "__main__":
    sgmc.sample(problem(), sampler(), INIT, **RUN, checkpoint=sys.argv[1],
                checkpoint_every=EVERY)
    print("finished", flush=True)
