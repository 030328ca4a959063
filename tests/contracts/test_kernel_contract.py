"""The driver runs any kernel that meets the written contract (sgmc.contracts.kernel.Kernel), and
nothing else: a kernel written here from scratch — an exact autoregressive Gaussian sampler
with a count and a state in its info — runs with chains, thinning, burn-in and checkpoints;
its info is reduced as its ``info_spec`` declares (checked to fail when every entry is kept
as "last"); a kernel whose info disagrees with its
declaration, or that lacks members, is refused with the reason."""

from __future__ import annotations

from types import MappingProxyType
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sgmc
from sgmc.contracts.kernel import KERNEL_MEMBERS, Kernel
from sgmc.pytree import pytree_dataclass, static

RHO = 0.5


class ARState(NamedTuple):
    position: jax.Array
    steps: jax.Array


@pytree_dataclass
class AR1:
    """θ' = ρθ + √(1 − ρ²) ξ: an exact kernel for N(0, I) (stationary at any ρ)."""

    rho: float = RHO
    name: str = static("ar1")
    batch_size = None
    num_replicas = 1
    replica_stacked = ()
    positive_schedules = ()
    run_length = None
    info_spec = MappingProxyType({"grad_evals": "total", "ones": "sum", "steps": "last"})

    def init(self, problem, position, key):
        return ARState(position, jnp.int32(0))

    def step(self, problem, state, rng, t):
        z = rng.normal_like(state.position)
        new = self.rho * state.position + jnp.sqrt(1.0 - self.rho**2) * z
        steps = state.steps + 1
        return ARState(new, steps), {"grad_evals": jnp.int32(3), "ones": jnp.float32(1.0),
                                     "steps": steps.astype(jnp.float32)}

    def draw(self, state):
        return state.position

    def init_evals(self, problem):
        return 7

    def check(self, problem, position, num_chains):
        pass

    def keeps(self, t):
        return jnp.ones(jnp.shape(t), bool)

    def meta(self):
        return {"kind": "ar1"}


def _problem():
    return sgmc.Objective(lambda x: 0.5 * jnp.sum(x ** 2))


def test_the_protocol_lists_its_members():
    annotations = set(getattr(Kernel, "__annotations__", {}))
    methods = {k for k, v in vars(Kernel).items() if callable(v) or isinstance(v, property)}
    assert set(KERNEL_MEMBERS) == (annotations | methods) - {"__init__"} - {
        k for k in methods if k.startswith("_")}
    assert isinstance(AR1(), Kernel)


def test_a_kernel_written_from_scratch_runs_and_is_exact(tmp_path):
    res = sgmc.sample(_problem(), AR1(), jnp.zeros(3), num_steps=6000, num_chains=4,
                      burn_in=100, thin=2, seed=1, checkpoint=tmp_path / "ck")
    x = np.asarray(res.samples)
    assert x.shape == (4, 2950, 3)
    # Exact target N(0, 1): the lag-2 autocorrelation ρ² = 0.25 inflates the variance of the
    # mean by (1 + ρ²)/(1 − ρ²) = 5/3; 4·2950·3 draws → SE of the mean ≈ 0.0075.
    assert abs(x.mean()) < 5 * np.sqrt(5 / 3 / x.size)
    assert abs(x.var() - 1.0) < 0.05
    # info reduced as declared: "sum" over the 2 steps of a draw, "last" the value at the
    # draw, "total" the running count from init_evals = 7 at 3 per step.
    np.testing.assert_array_equal(res.info["ones"], 2.0)
    np.testing.assert_array_equal(res.info["steps"][0], res.info["step"].astype(np.float32))
    np.testing.assert_array_equal(res.info["grad_evals"][0], 7 + 3 * res.info["step"])
    assert res.meta["sampler"] == "ar1" and res.meta["kind"] == "ar1"
    again = sgmc.resume(tmp_path / "ck", _problem(), AR1())  # finished run: same Result
    np.testing.assert_array_equal(again.samples, res.samples)


def test_info_that_disagrees_with_its_declaration_is_refused():
    @pytree_dataclass
    class Undeclared(AR1):
        info_spec = MappingProxyType({"grad_evals": "total"})

    with pytest.raises(TypeError, match="info_spec declares"):
        sgmc.sample(_problem(), Undeclared(), jnp.zeros(2), 10)

    @pytree_dataclass
    class BadReduction(AR1):
        info_spec = MappingProxyType({"grad_evals": "total", "ones": "mean", "steps": "last"})

    with pytest.raises(TypeError, match="unknown reductions"):
        sgmc.sample(_problem(), BadReduction(), jnp.zeros(2), 10)


def test_a_kernel_without_the_members_is_refused_by_name():
    class Half:
        name = "half"

        def step(self, problem, state, rng, t):
            return state, {}

    with pytest.raises(TypeError, match=r"lacks .*init.*draw"):
        sgmc.sample(_problem(), Half(), jnp.zeros(2), 10)
