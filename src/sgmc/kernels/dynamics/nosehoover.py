"""SGNHT: the stochastic-gradient Nosé–Hoover thermostat (Ding, Fang, Babbush, Chen, Skeel &
Neven 2014, "Bayesian Sampling Using Stochastic Gradient Thermostats", NeurIPS, Algorithm 2).

Continuous dynamics with unit mass, d parameters, injected diffusion A and temperature τ
(the target is exp(−U/τ); the paper's τ = 1):

    dθ = p dt,   dp = −∇U dt − ξ p dt + √(2Aτ) dW,   dξ = (pᵀp/d − τ) dt.

The friction ξ is a state variable, the thermostat: it grows while the kinetic energy per
coordinate exceeds τ and shrinks while it falls short. A stochastic gradient ∇̃U = ∇U + ε,
ε of covariance B I independent across steps, adds h²B to the kick's noise variance 2Ahτ per
step: the momentum is heated as if the diffusion were A + hB/(2τ) instead of A, which SGHMC
with a fixed friction would have to know and subtract (its variance is inflated by about
1 + hB/(2Dτ) otherwise). Here ξ absorbs it: the stationary kinetic energy is τ only when ξ
balances all the diffusion there is, ξ* ≈ A + hB/(2τ), and (θ, p) is then sampled as if the
noise had been known. One scalar ξ corrects the trace of B: for an anisotropic B the
coordinates' excess noise is corrected on average only (``thermostat="diagonal"``, below,
corrects it coordinate by coordinate).

Discretisation (Algorithm 2), the semi-implicit Euler step of SGHMC's ``"euler"``
integrator with the friction read from the state:

    p_{k+1} = p_k − ξ_k p_k h − h ∇̃U(θ_k) + √(2 A h τ) ζ_k,     ζ_k ~ N(0, I),
    θ_{k+1} = θ_k + h p_{k+1},
    ξ_{k+1} = ξ_k + h (p_{k+1}ᵀ p_{k+1} / d − τ),

with ξ₀ = A and p₀ ~ N(0, τ I) (``init_momentum="random"``) or p₀ = 0 (``"zero"``). Each
step costs one gradient estimate at θ_k, as SGHMC. The momentum contracts only while
ξ h < 1: the factory checks A h < 1; the adapted ξ* h < 1 needs h²B/(2τ) < 1 − A h besides,
which cannot be checked before running.

**Known bias.** The kinetic energy is measured on p_{k+1}, whose stationary variance under
the semi-implicit Euler step exceeds τ by about ξhτ/2 even where θ's is exact, so ξ settles
slightly above the balance point and θ's variance comes out low by about ξh/2 relative
(2 % at ξh = 0.04, 11 % at ξh = 0.23); ``tests/kernels/test_sgnht.py`` predicts it exactly on
Gaussian targets (a discrete Lyapunov equation at the ξ where the mean thermostat increment
vanishes).

**Thermostat time scale.** ξ moves by h(pᵀp/d − τ) per step, O(hτ) while the kinetic
energy is off by O(τ); from ξ₀ = A it needs about (ξ* − A)/(hτ) ≈ B/(2τ²) steps to adapt,
and relaxes around ξ* with a time constant of about ξ*/τ (time units, i.e. ξ*/(τh) steps).
Both are fast when the problem is O(1) in the momentum's coordinates (whitened by a
preconditioner, below) and slow for a stiff problem in raw coordinates. Its stationary law
is N(ξ*, τ/d) in the continuous limit, so one scalar thermostat is steadier the more
coordinates it averages over.

**Diagonal thermostat** (``thermostat="diagonal"``, the multivariate SGNHT, mSGNHT, of Gan,
Chen, Henao, Carlson & Carin 2015, "Scalable Deep Poisson Factor Analysis for Topic
Modeling", ICML; Ding et al. 2014 remark that the scalar ξ may be replaced by one thermostat
per dimension). ξ is a vector shaped like the (whitened) momentum, one thermostat per
coordinate, and ⊙ is the elementwise product:

    q_{k+1} = q_k − h ξ_k ⊙ q_k − h Lᵀ∇̃U(θ_k) + √(2Ahτ) ζ_k,
    θ_{k+1} = θ_k + h L q_{k+1},
    ξ_{k+1} = ξ_k + h (q_{k+1} ⊙ q_{k+1} − τ),     ξ₀ = A (every coordinate).

Each ξ_i drives its own coordinate's kinetic energy q_i² to τ and settles at
ξ*_i ≈ A + h B_ii/(2τ): an excess noise of covariance B is corrected coordinate by
coordinate when B is (near) diagonal in the whitened coordinates, and not otherwise (no
diagonal friction cancels B's off-diagonal part). The scalar thermostat is right when B is
(near) isotropic there; under anisotropic noise it can be badly wrong: on an isotropic
Gaussian whose diagonal gradient noise differs 80-fold across 4 coordinates
(hB_ii/(2τ) = 0.05, 0.25, 1 and 4, h = 0.02, A = 1) the eigenvalues of the sampled
covariance relative to the exact one are 0.47, 0.55, 0.85 and 2.07 (± 0.01–0.04) with the
scalar thermostat (its ξ* ≈ 2.3 over-damps the quiet coordinates and under-damps the loud
one), 0.95, 0.97, 1.00 and 1.01 (± 0.02) with the diagonal one. The price: each ξ_i
averages one coordinate, so its stationary law is N(ξ*_i, τ) (continuous limit) instead of
the scalar's N(ξ*, τ/d) — a noisier friction, which may turn negative for a while when ξ*_i
is O(√τ) — and it adapts from the kinetic energy of one coordinate per step, a signal d
times noisier than the scalar's average, so each ξ_i settles more slowly to a given
precision. The known bias and the time scales above hold per coordinate with ξ*_i in place
of ξ*, and so does the stability bound: ξ_i h < 1 for every i (A h < 1 is checked).

**Temperature 0.** The noise vanishes and the thermostat's target kinetic energy is 0:
ξ_{k+1} = ξ_k + h pᵀp/d never decreases. With exact gradients p → 0 and ξ settles
(heavy-ball descent with a friction that has grown); with stochastic gradients p never
vanishes and ξ keeps growing (about h√(B k) after k steps), and past ξ h = 2 the momentum
update diverges. The diagonal thermostat behaves the same way coordinate by coordinate
(ξ_{k+1,i} = ξ_{k,i} + h q_{k+1,i}² ≥ ξ_{k,i}). Use :func:`sgmc.sghmc` for long runs at
τ = 0.

**Mass matrix.** With a preconditioner P = L Lᵀ (:mod:`sgmc.kernels.preconditioners`) the mass is
M = P⁻¹, as for SGHMC (:mod:`sgmc.kernels.dynamics.underdamped`): the state holds the whitened
momentum q = Lᵀp, whose stationary law is N(0, τ I), the kick reads
q' = (1 − ξh) q − h Lᵀ∇̃U + √(2Ahτ) ζ and the move θ += h L q'. The thermostat acts on the
whitened kinetic energy qᵀq = pᵀM⁻¹p, whose stationary mean is τ d: the scheme is the plain
one in z = L⁻¹θ.

**Estimators.** The kick is described to the estimator in the
:class:`~sgmc.contracts.estimator.Context`:
``noise_scale`` = √(2Ahτ), ``drift`` = (1 − ξ_k h) q_k
and, for the "state unchanged" reading q_{k+1} = q_k, ``offset`` = ξ_k h q_k — SGHMC's Euler
kick with the friction D replaced by the current ξ_k. EWSG's derivation (Li, Wang, Zha & Tao,
Thm. 2) applies: it matches the law of the kicked variable given the current state, and
given (θ_k, q_k, ξ_k) the kick is Gaussian with covariance 2Ahτ I and a mean that is affine
in the gradient, exactly the form the theorem needs; ξ_{k+1} and θ_{k+1} are then fixed
functions of the state and q_{k+1}, so matching the kick's law matches the whole step's. The
diagonal thermostat describes its kick the same way with ξ_k h q_k replaced by
h ξ_k ⊙ q_k (a diagonal friction; the kick's noise is still 2Ahτ I).
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from sgmc._pytree import pytree_dataclass, static
from sgmc._tree import normal_like
from sgmc.contracts.estimator import Context
from sgmc.contracts.integrator import Dynamics
from sgmc.kernels.preconditioners import Identity
from sgmc.rng import as_rng

__all__ = ["THERMOSTATS", "NoseHoover", "NoseHooverState", "nosehoover_step"]

IDENTITY = Identity()

#: The thermostat's form: one scalar ξ (Ding et al. 2014) or one per coordinate (mSGNHT).
THERMOSTATS = ("scalar", "diagonal")


class NoseHooverState(NamedTuple):
    position: Any
    momentum: Any           # whitened, q = Lᵀp
    thermostat: Any         # ξ (float32): a scalar per chain, or a tree shaped like q
    est: Any


@pytree_dataclass
class NoseHoover(Dynamics):
    """SGNHT dynamics with injected diffusion ``diffusion`` (A; also ξ's initial value), the
    initial momentum rule, mass matrix ``preconditioner``⁻¹ (the state's momentum is
    whitened) and the thermostat's form, ``"scalar"`` or ``"diagonal"``; see the module
    docstring."""

    diffusion: Any
    init_momentum: str = static("random")
    preconditioner: Any = IDENTITY
    thermostat: str = static("scalar")

    def __post_init__(self):
        if self.thermostat not in THERMOSTATS:
            raise ValueError(f"thermostat must be one of {THERMOSTATS!r}, got "
                             f"{self.thermostat!r}")

    def init(self, problem, estimator, position, key, params):
        k_mom, k_est = jax.random.split(key)
        noise = normal_like(k_mom, position)
        scale = 0.0 if self.init_momentum == "zero" else jnp.sqrt(params.temperature)
        momentum = jax.tree.map(lambda z: scale * z, noise)
        # ξ₀ = A (Algorithm 2): the thermostat starts where it would sit without gradient
        # noise, so with exact gradients there is nothing to adapt.
        thermostat = jnp.asarray(self.diffusion, jnp.float32)
        if self.thermostat == "diagonal":
            thermostat = jax.tree.map(lambda q: jnp.full(jnp.shape(q), thermostat), momentum)
        return NoseHooverState(position, momentum, thermostat,
                               estimator.init(problem, position, k_est))

    def step(self, problem, estimator, state, batch, rng, params):
        return nosehoover_step(problem, estimator, state, batch, rng, params, self.diffusion,
                               self.preconditioner, self.thermostat)


def _num_params(tree) -> int:
    """d, the number of coordinates the thermostat averages the kinetic energy over."""
    return sum(math.prod(jnp.shape(x)) for x in jax.tree.leaves(tree))


def nosehoover_step(problem, estimator, state, batch, rng, params, diffusion, pre=IDENTITY,
                    thermostat="scalar"):
    """One SGNHT step (Ding et al. 2014, Algorithm 2; module docstring), in whitened
    momentum q = Lᵀp:

        q_{k+1} = (1 − ξ_k h) q_k − h Lᵀ∇̃U(θ_k) + √(2Ahτ) ζ_k,
        θ_{k+1} = θ_k + h L q_{k+1},
        ξ_{k+1} = ξ_k + h (q_{k+1}ᵀ q_{k+1} / d − τ);

    with ``thermostat="diagonal"`` ξ is shaped like q, the friction is ξ_k ⊙ q_k and
    ξ_{k+1} = ξ_k + h (q_{k+1} ⊙ q_{k+1} − τ) (Gan et al. 2015).
    """
    r_est, r_noise = as_rng(rng).split()
    h, tau = params.step_size, params.temperature
    xi = state.thermostat
    tmap = jax.tree.map
    # The friction on each momentum leaf: the one scalar ξ, or ξ's matching leaf.
    fric = xi if thermostat == "diagonal" else tmap(lambda _: xi, state.momentum)
    noise_scale = jnp.sqrt(2.0 * diffusion * h * tau)
    noise = r_noise.normal_like(state.position)
    drift = tmap(lambda x, q: (1.0 - x * h) * q, fric, state.momentum)
    # EWSG's "state unchanged" reading q_{k+1} = q_k: the kick's offset is ξ_k h q_k (SGHMC's
    # Euler offset D h q_k with the current thermostat as the friction).
    ctx = Context(t=params.t, step_size=h, temperature=tau, noise_scale=noise_scale,
                  drift=drift, offset=tmap(lambda x, q: x * h * q, fric, state.momentum),
                  preconditioner=pre)
    grad, est, n = estimator.estimate(problem, state.est, state.position, batch, r_est, ctx)
    q = tmap(lambda d, g, z: d - h * g + noise_scale * z, drift, pre.scale_t(grad), noise)
    theta = tmap(lambda x, v: x + h * v, state.position, pre.scale(q))
    # The whitened kinetic energy from the *new* momentum (Algorithm 2): per coordinate for
    # the diagonal thermostat, averaged over the d coordinates for the scalar one.
    if thermostat == "diagonal":
        xi_new = tmap(lambda x, v: (x + h * (jnp.square(v.astype(jnp.float32)) - tau))
                      .astype(x.dtype), xi, q)
        return NoseHooverState(theta, q, xi_new, est), n
    kinetic = sum(jnp.sum(v.astype(jnp.float32) ** 2) for v in jax.tree.leaves(q))
    xi_new = xi + h * (kinetic / _num_params(q) - tau)
    return NoseHooverState(theta, q, xi_new.astype(xi.dtype), est), n
