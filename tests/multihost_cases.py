"""Runs shared by the multi-process test and its single-process reference."""

import jax.numpy as jnp

import sgmc


def cases():
    """name -> (problem, sampler, init, run settings, mesh axes)."""
    X, y, _ = sgmc.models.synthetic_linear_data(1000, 3, seed=0)
    post = sgmc.models.linear_regression(X, y)
    mix = sgmc.models.mixture_posterior(sgmc.models.synthetic_mixture_data(500, seed=0))
    return {
        "svrg_hmc": (post, sgmc.sghmc(2e-3, friction=2.0, batch_size=10,
                                      estimator=sgmc.svrg(period=100)),
                     jnp.zeros(3), dict(num_steps=600, num_chains=8, thin=10, seed=3),
                     ("chains",)),
        "vr_resgld": (mix, sgmc.replica_exchange(
            sgmc.sgld(1e-3, batch_size=20), [25.0, 50.0, 100.0, 1000.0],
            energy=sgmc.cv_energy(period=5), output="all"), jnp.zeros(1),
            dict(num_steps=600, num_chains=2, thin=2, seed=4), ("chains", "replicas")),
    }
