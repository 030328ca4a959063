"""A sampler is a composition: dynamics × estimator × step-size schedule × batching.

:class:`Sampler` ties one dynamics (overdamped, underdamped, pSGLD, Nosé–Hoover) to one
gradient estimator (uniform, SVRG, SAGA, EWSG) with a step-size schedule, a temperature and a
minibatch size. Its ``init``/``step`` pair is what the driver compiles and what couplings (replica
exchange) stack and ``vmap``. The public factories :func:`sgld`, :func:`sghmc`,
:func:`psgld` and :func:`sgnht` validate every argument before anything is compiled.
"""

from __future__ import annotations

import warnings
from types import MappingProxyType
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from sgmc import _validate as check
from sgmc._pytree import pytree_dataclass, replace, static
from sgmc.kernels.dynamics import (
    INIT_MOMENTA,
    INTEGRATORS,
    PSGLD,
    Langevin,
    NoseHoover,
    StepParams,
    Underdamped,
)
from sgmc.kernels.estimators import Batcher, Estimator, Uniform, uniform
from sgmc.kernels.preconditioners import Identity, Preconditioner
from sgmc.rng import Rng, as_rng
from sgmc.schedules import Schedule, as_schedule

__all__ = ["DEFAULT_DIFFUSION", "DEFAULT_FRICTION", "Sampler", "SamplerState", "check_stability",
           "psgld", "sghmc", "sgld", "sgnht"]

#: SGHMC's friction D when a step size is given and the friction is not.
DEFAULT_FRICTION = 10.0

PyTree = Any


class SamplerState(NamedTuple):
    """Everything a chain carries: dynamics state (with the estimator's) and batching."""

    dyn: Any
    batch: Any

    @property
    def position(self) -> PyTree:
        return self.dyn.position


@pytree_dataclass
class Sampler:
    """dynamics × estimator × schedule × batching; see the module docstring."""

    dynamics: Any
    estimator: Any
    step_size: Schedule | None  # None: unset, to be chosen by sgmc.warmup
    temperature: Any
    batch_size: int | None = static(None)
    name: str = static("sampler")

    #: The kernel contract (:class:`sgmc.contracts.kernel.Kernel`): one chain, no replicas.
    num_replicas = 1
    replica_stacked = ()
    #: The tuning contract (:class:`sgmc.contracts.tunable.Tunable`): a draw is one position.
    draw_replicas = False
    positive_schedules = ()
    run_length = None  # any number of steps
    info_spec = MappingProxyType({"grad_evals": "total"})

    def draw(self, state: SamplerState) -> PyTree:
        """A kept draw records the position."""
        return state.position

    def keeps(self, t: jax.Array) -> jax.Array:
        """Every step's draw may be kept (no stages)."""
        return jnp.ones(jnp.shape(t), bool)

    @staticmethod
    def with_position(state: SamplerState, position: PyTree) -> SamplerState:
        """``state`` with its position replaced (e.g. projected onto a box); momenta and
        estimator state kept."""
        return state._replace(dyn=state.dyn._replace(position=position))

    def meta(self) -> dict:
        return {}

    @property
    def batcher(self) -> Batcher:
        return Batcher(self.batch_size, self.estimator.sampling)

    def params(self, t: jax.Array) -> StepParams:
        """Step t's step size (from the schedule), temperature and index."""
        return StepParams(jnp.asarray(self.step_size(t), jnp.float32),
                          jnp.asarray(self.temperature, jnp.float32), jnp.asarray(t, jnp.int32))

    def init(self, problem, position: PyTree, key: jax.Array) -> SamplerState:
        k_dyn, k_batch = jax.random.split(key)
        dyn = self.dynamics.init(problem, self.estimator, position, k_dyn, self.params(0))
        return SamplerState(dyn, self.batcher.init(problem.data_rows, k_batch))

    def init_evals(self, problem) -> int:
        """Per-example gradient evaluations spent by ``init`` (a SAGA table, say)."""
        return self.estimator.init_evals(problem)

    def transition(self, problem, dyn_state, batch, rng: Rng, params: StepParams):
        """One dynamics step on a given minibatch with given (h, τ) — the coupling's hook."""
        return self.dynamics.step(problem, self.estimator, dyn_state, batch, rng, params)

    def step(self, problem, state: SamplerState, rng: Rng | jax.Array, t: jax.Array):
        """Step t (0-based): draw a minibatch, move; return the new state and
        ``{"grad_evals": n}``. The driver passes t unbatched (shared by all chains)."""
        r_batch, r_step = as_rng(rng).split()
        batch, batch_state = self.batcher.draw(state.batch, r_batch, problem.data_rows)
        dyn, n_evals = self.transition(problem, state.dyn, batch, r_step, self.params(t))
        return SamplerState(dyn, batch_state), {"grad_evals": n_evals}

    @property
    def unset(self) -> tuple[str, ...]:
        """The hyper-parameters left for :func:`sgmc.warmup` to choose (``step_size``,
        ``friction``); empty for a sampler ready to run."""
        return (() if self.step_size is not None else ("step_size",)) + self.dynamics.unset()

    # -- the tuning contract (sgmc.contracts.tunable.Tunable): a sampler is its own base --
    def tuning_base(self) -> Sampler:
        return self

    def tuning_temperatures(self) -> list[float]:
        return [float(self.temperature)]

    def given_steps(self) -> list[float] | None:
        return None if self.step_size is None else [float(self.step_size(0))]

    def with_tuning(self, base: Sampler, steps: list[float], force: bool = False) -> Sampler:
        keep = base.step_size is not None and not force
        return replace(base, step_size=base.step_size if keep else as_schedule(steps[0]))

    def check(self, problem, position: PyTree, num_chains: int = 1) -> None:
        """Validate against a problem and one position, before compiling: hyper-parameters
        set, batch size within [1, N], and the estimator's own checks (e.g. SAGA's table
        memory)."""
        if self.unset:
            raise ValueError(f"{' and '.join(self.unset)} unset: pass "
                             f"{'=..., '.join(self.unset)}=... to sgmc.{self.name.split('-')[0]}"
                             "(...), or let sgmc.warmup(problem, sampler, init) choose "
                             f"{'them' if len(self.unset) > 1 else 'it'}")
        if self.batch_size is not None:
            if not problem.has_data:
                raise ValueError("batch_size must be None for a problem without data "
                                 f"(got batch_size={self.batch_size})")
            check.integer("batch_size", self.batch_size, lo=1, hi=problem.data_rows)
        elif not isinstance(self.estimator, Uniform):
            raise ValueError(f"{type(self.estimator).__name__} needs a minibatch: set "
                             "batch_size (batch_size=None means exact full-data gradients)")
        self.estimator.check(problem, position, num_chains)
        if problem.stream is not None and self.estimator.sampling == "replacement":
            warnings.warn("streamed data with minibatches drawn with replacement: a buffer's "
                          "rows are then reused unevenly and the draws come out "
                          "overdispersed; use sampling='permutation' in the estimator (see "
                          "sgmc.model.stream)", UserWarning, stacklevel=3)


def _common(step_size, batch_size, temperature, estimator):
    schedule = None if step_size is None else as_schedule(step_size)
    if batch_size is not None:
        batch_size = check.integer("batch_size", batch_size, lo=1)
    tau = check.nonnegative("temperature", temperature)
    if estimator is None:
        estimator = uniform()
    if not isinstance(estimator, Estimator):
        raise TypeError("estimator must be an sgmc estimator such as sgmc.uniform(), got "
                        f"{type(estimator).__name__}")
    if estimator.needs_temperature and tau == 0.0:
        raise ValueError(f"temperature must be > 0 with {type(estimator).__name__} (its "
                         "weights divide by the noise amplitude)")
    return schedule, batch_size, tau, estimator.with_batch_size(batch_size)


def _preconditioner(preconditioner) -> Preconditioner:
    if preconditioner is None:
        return Identity()
    if not isinstance(preconditioner, Preconditioner):
        raise TypeError("preconditioner must be None or an sgmc.kernels.preconditioners "
                        "object (e.g. "
                        "sgmc.kernels.preconditioners.diagonal(variances)), got "
                        f"{type(preconditioner).__name__}")
    return preconditioner


def sgld(step_size: float | Schedule | None = None, batch_size: int | None = None,
         temperature: float = 1.0, estimator: Estimator | None = None,
         preconditioner: Preconditioner | None = None) -> Sampler:
    """Stochastic-gradient Langevin dynamics (Welling & Teh 2011, eq. 4).

        θ_{k+1} = θ_k − h_k P ∇̃U(θ_k) + sqrt(2 h_k τ) L ξ_k,    P = L Lᵀ

    (P = I, the plain SGLD, unless a preconditioner is given; Girolami & Calderhead 2011,
    eq. 9 with a constant metric).

    Args:
        step_size: h > 0, a float or a schedule from :mod:`sgmc.schedules`; None leaves it
            for :func:`sgmc.warmup` to choose.
        batch_size: minibatch size n ∈ [1, N]; ``None`` uses the full data (exact gradient).
        temperature: τ ≥ 0; τ = 0 is (stochastic) gradient descent.
        estimator: gradient estimator, default :func:`sgmc.uniform`.
        preconditioner: a constant P from :mod:`sgmc.kernels.preconditioners` (default identity).
    """
    schedule, batch_size, tau, estimator = _common(step_size, batch_size, temperature, estimator)
    return Sampler(Langevin(_preconditioner(preconditioner)), estimator, schedule, tau,
                   batch_size, "sgld")


def sghmc(step_size: float | Schedule | None = None, friction: float | None = None,
          batch_size: int | None = None, temperature: float = 1.0,
          estimator: Estimator | None = None, integrator: str = "euler",
          init_momentum: str = "random",
          preconditioner: Preconditioner | None = None) -> Sampler:
    """Stochastic-gradient Hamiltonian Monte Carlo (Chen et al. 2014), mass matrix P⁻¹
    (unit mass unless a preconditioner P = L Lᵀ is given; the state then holds the whitened
    momentum q = Lᵀp, see :mod:`sgmc.kernels.dynamics.underdamped`).

    ``integrator="euler"`` (SVRG-HMC paper eq. 1–2, needs friction·h < 1):

        q_{k+1} = (1 − D h) q_k − h Lᵀ∇̃U(θ_k) + sqrt(2 D h τ) ξ_k,   θ_{k+1} = θ_k + h L q_{k+1}

    ``integrator="explicit"``: explicit Euler–Maruyama (EWSG paper eq. 3), the same momentum
    update with θ_{k+1} = θ_k + h L q_k (the old momentum; also needs friction·h < 1).

    ``integrator="splitting"``: the second-order symmetric splitting of eq. (12)–(16), with
    the gradient taken at the half step θ_k + (h/2) L q_k (see
    :mod:`sgmc.kernels.dynamics.underdamped`).

    Args:
        step_size: h > 0, a float or a schedule; None leaves it for :func:`sgmc.warmup`.
        friction: D > 0; None: chosen by :func:`sgmc.warmup` when the step size is unset too,
            else ``DEFAULT_FRICTION`` (10).
        batch_size: minibatch size n ∈ [1, N]; ``None`` uses the full data.
        temperature: τ ≥ 0; τ = 0 is heavy-ball (momentum) descent.
        estimator: gradient estimator, default :func:`sgmc.uniform`.
        integrator: ``"euler"``, ``"explicit"`` or ``"splitting"``.
        init_momentum: ``"random"`` draws q₀ from its stationary law N(0, τ I); ``"zero"``
            starts from q₀ = 0 (the SVRG-HMC paper's Algorithms 1–4).
        preconditioner: a constant P = M⁻¹ from :mod:`sgmc.kernels.preconditioners` (default
            identity).
    """
    schedule, batch_size, tau, estimator = _common(step_size, batch_size, temperature, estimator)
    if friction is None and schedule is not None:
        friction = DEFAULT_FRICTION
    fr = None if friction is None else check.positive("friction", friction)
    check.choice("integrator", integrator, INTEGRATORS)
    check.choice("init_momentum", init_momentum, INIT_MOMENTA)
    dynamics = Underdamped(fr, integrator, init_momentum, _preconditioner(preconditioner))
    check_stability(dynamics, schedule)
    name = "sghmc" if integrator == "euler" else f"sghmc-{integrator}"
    return Sampler(dynamics, estimator, schedule, tau, batch_size, name)


def check_stability(dynamics: Any, step_size: Schedule | None, name: str = "step_size") -> None:
    """Raise ValueError if ``step_size`` (its largest value) is too large for ``dynamics``:
    SGHMC's Euler and explicit Euler integrators need friction · h < 1 (else the momentum
    does not contract), SGNHT diffusion · h < 1 (its thermostat ξ starts at A). Other
    dynamics have no such bound; nothing is checked while the step size or friction is
    unset. ``name`` is the argument's."""
    if isinstance(dynamics, NoseHoover) and step_size is not None:
        a, h = float(dynamics.diffusion), step_size.max_value()
        if a * h >= 1.0:
            raise ValueError(f"diffusion * {name} must be < 1 for sgnht (ξ starts at the "
                             f"diffusion A, and the momentum contracts only while ξ h < 1); "
                             f"got {a} * {h} = {a * h:g}. Lower one of them")
        return
    if not isinstance(dynamics, Underdamped) or dynamics.integrator not in ("euler",
                                                                            "explicit"):
        return
    if step_size is None or dynamics.friction is None:
        return
    fr, h = float(dynamics.friction), step_size.max_value()
    if fr * h >= 1.0:
        form = "Euler" if dynamics.integrator == "euler" else "explicit Euler"
        raise ValueError(f"friction * {name} must be < 1 for the {form} integrator (the "
                         f"momentum would not contract); got {fr} * {h} = {fr * h:g}. Lower "
                         "one, or use integrator='splitting'")


def psgld(step_size: float | Schedule | None = None, batch_size: int | None = None,
          temperature: float = 1.0, alpha: float = 0.99, eps: float = 1e-5,
          estimator: Estimator | None = None) -> Sampler:
    """Preconditioned SGLD with an RMSprop preconditioner (Li et al. 2016).

        V ← α V + (1 − α) ḡ², G = 1/(λ + √V),  θ ← θ − h G ∇̃U + sqrt(2 h τ G) ξ

    with ḡ = ∇̃U/N; the Γ correction is dropped (see :mod:`sgmc.kernels.dynamics.psgld`).

    Args:
        step_size: h > 0, a float or a schedule; None leaves it for :func:`sgmc.warmup`.
        batch_size: minibatch size n ∈ [1, N]; ``None`` uses the full data.
        temperature: τ ≥ 0.
        alpha: RMSprop decay α ∈ [0, 1).
        eps: λ > 0, keeps G bounded.
        estimator: gradient estimator, default :func:`sgmc.uniform`.
    """
    schedule, batch_size, tau, estimator = _common(step_size, batch_size, temperature, estimator)
    if estimator.needs_kick:
        raise ValueError(f"psgld cannot use {type(estimator).__name__}: its weights are "
                         "derived for the kick of SGLD/SGHMC, not pSGLD's preconditioned "
                         "noise; use sgld(...) or sghmc(...)")
    a = check.real("alpha", alpha, lo=0.0, hi=1.0, hi_open=True)
    e = check.positive("eps", eps)
    return Sampler(PSGLD(a, e), estimator, schedule, tau, batch_size, "psgld")


#: SGNHT's injected diffusion A (and the thermostat's starting value) by default.
DEFAULT_DIFFUSION = 1.0


def sgnht(step_size: float | Schedule | None = None, diffusion: float = DEFAULT_DIFFUSION,
          batch_size: int | None = None, temperature: float = 1.0,
          estimator: Estimator | None = None, init_momentum: str = "random",
          preconditioner: Preconditioner | None = None, name: str | None = None,
          thermostat: str = "scalar") -> Sampler:
    """The stochastic-gradient Nosé–Hoover thermostat, SGNHT (Ding, Fang, Babbush, Chen,
    Skeel & Neven 2014, Algorithm 2), mass matrix P⁻¹ (unit mass unless a preconditioner
    P = L Lᵀ is given; the state holds the whitened momentum q = Lᵀp and the thermostat ξ,
    see :mod:`sgmc.kernels.dynamics.nosehoover`):

        q_{k+1} = (1 − ξ_k h) q_k − h Lᵀ∇̃U(θ_k) + sqrt(2 A h τ) ζ_k,
        θ_{k+1} = θ_k + h L q_{k+1},
        ξ_{k+1} = ξ_k + h (q_{k+1}ᵀ q_{k+1} / d − τ),     ξ₀ = A.

    The thermostat ξ, SGHMC's friction made a state variable, settles where the kinetic
    energy per coordinate is τ — at ξ* ≈ A + hB/(2τ) for gradient noise of variance B per
    coordinate — so unknown (isotropic) gradient noise is corrected without being
    estimated. One gradient estimate per step, as SGHMC.

    ``thermostat="diagonal"``: the multivariate SGNHT of Gan, Chen, Henao, Carlson & Carin
    (2015, "Scalable Deep Poisson Factor Analysis for Topic Modeling", ICML) — the
    per-dimension thermostats Ding et al. (2014) remark on — with one ξ_i per whitened
    momentum coordinate (ξ shaped like q, ⊙ elementwise):

        q_{k+1} = q_k − h ξ_k ⊙ q_k − h Lᵀ∇̃U(θ_k) + sqrt(2 A h τ) ζ_k,
        θ_{k+1} = θ_k + h L q_{k+1},
        ξ_{k+1} = ξ_k + h (q_{k+1} ⊙ q_{k+1} − τ),     ξ₀ = A in every coordinate.

    Which one: the scalar ξ corrects only the average (the trace) of the excess gradient
    noise B, right when B is (near) isotropic in the whitened coordinates and badly wrong
    when it is not — on an isotropic Gaussian with diagonal noise hB_ii/(2τ) = 0.05, 0.25,
    1, 4 in four coordinates its sampled covariance has eigenvalues 0.47, 0.55, 0.85 and
    2.07 relative to the exact one (± 0.01–0.04). The diagonal thermostat corrects each
    coordinate (there 0.95, 0.97, 1.00, 1.01, ± 0.02) when B is (near) diagonal in the
    whitened coordinates (it cannot cancel B's off-diagonal part), at the price of a
    noisier friction: each ξ_i averages one coordinate, so its stationary law is
    N(ξ*_i, τ) instead of the scalar's N(ξ*, τ/d), and each adapts from one coordinate's
    kinetic energy per step (a signal d times noisier than the scalar's average).

    Args:
        step_size: h > 0, a float or a schedule from :mod:`sgmc.schedules`. Required:
            :func:`sgmc.warmup` tunes sgld, sghmc and psgld only, so None is refused.
        diffusion: A > 0, the injected noise's diffusion and ξ's initial value, with
            diffusion · h < 1 (the momentum contracts at the start; the adapted
            ξ* = A + hB/(2τ) must stay below 1/h too, which is not checked).
        batch_size: minibatch size n ∈ [1, N]; ``None`` uses the full data.
        temperature: τ ≥ 0. At τ = 0 ξ never decreases (target kinetic energy 0, every
            coordinate's for the diagonal thermostat): with stochastic gradients it grows
            without bound, see :mod:`sgmc.kernels.dynamics.nosehoover`.
        estimator: gradient estimator, default :func:`sgmc.uniform`; every estimator works,
            EWSG included (the kick given the state is SGHMC's Euler kick with D = ξ_k, a
            diagonal friction for the diagonal thermostat).
        init_momentum: ``"random"`` draws q₀ from its stationary law N(0, τ I); ``"zero"``
            starts from q₀ = 0.
        preconditioner: a constant P = M⁻¹ from :mod:`sgmc.kernels.preconditioners` (default
            identity); the thermostat then acts on the whitened kinetic energy qᵀq (the
            diagonal one on each q_i²).
        name: the sampler's name (in results and reports), a non-empty string; default
            ``"sgnht"``, or ``"sgnht-diagonal"`` for the diagonal thermostat.
        thermostat: ``"scalar"`` (one ξ, Ding et al. 2014) or ``"diagonal"`` (one ξ_i per
            coordinate, Gan et al. 2015).

    Raises:
        ValueError: ``step_size`` None or ≤ 0, ``diffusion`` ≤ 0, diffusion · step_size ≥ 1,
            ``init_momentum`` not ``"random"``/``"zero"``, ``thermostat`` not
            ``"scalar"``/``"diagonal"``, and the checks every factory makes (batch size,
            temperature, estimator).
    """
    from sgmc.kernels.dynamics.nosehoover import THERMOSTATS

    if step_size is None:
        raise ValueError("step_size must be given to sgnht (h > 0): sgmc.warmup tunes sgld, "
                         "sghmc and psgld only")
    check.choice("thermostat", thermostat, THERMOSTATS)
    if name is None:
        name = "sgnht" if thermostat == "scalar" else f"sgnht-{thermostat}"
    if not isinstance(name, str) or not name:
        raise TypeError(f"name must be a non-empty string, got {name!r}")
    schedule, batch_size, tau, estimator = _common(step_size, batch_size, temperature, estimator)
    a = check.positive("diffusion", diffusion)
    check.choice("init_momentum", init_momentum, INIT_MOMENTA)
    dynamics = NoseHoover(a, init_momentum, _preconditioner(preconditioner), thermostat)
    check_stability(dynamics, schedule)
    return Sampler(dynamics, estimator, schedule, tau, batch_size, name)
