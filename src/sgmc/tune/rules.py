"""Step-size and friction rules from the exact stationary covariance of each integrator on a
quadratic energy.

In one whitened direction with curvature λ the energy is U(θ) = λθ²/2 and the target at
temperature τ is N(0, τ/λ). The gradient estimate is λθ + ε with ε ~ N(0, B) drawn afresh at
every step (B ≥ 0, the gradient-noise variance). Every update rule of :mod:`sgmc.kernels.dynamics`
(SGLD, and SGHMC with the integrators ``"euler"``, ``"explicit"`` and ``"splitting"``) is then
a linear recursion in its state x (θ for Langevin, (θ, p) for SGHMC),

    x_{k+1} = A x_k + v η_k,    η_k a scalar Gaussian (injected noise plus gradient noise),

whose stationary covariance solves the discrete Lyapunov equation

    Σ = A Σ Aᵀ + Var(η) v vᵀ

(it exists when the spectral radius ρ(A) < 1). :func:`inflation` returns Σ_θθ · λ / τ, the
ratio of the sampled to the target variance (1 is exact), and :func:`largest_step` the
largest step size whose inflation lies within 1 ± ``budget`` at every curvature of a log grid
over [λ_min, λ_max].

What the rules guarantee: under a Gaussian (quadratic-energy) approximation of the target,
and a gradient-noise variance bounded by B in every whitened direction, the stationary
variance of the chain in every whitened direction whose curvature lies in [λ_min, λ_max] is
within a factor 1 ± budget of the target's: covariance inflation ≤ 1 + budget (and deflation
no worse than 1 − budget). The grid of curvatures that :func:`largest_step` checks covers
the whole range because, for every dynamics here, the inflation is non-decreasing in λ and
in B, and the stable curvatures form an interval (0, λ_s) (the closed forms in
:func:`inflation`; checked numerically over λ ∈ [10⁻⁴, 10⁴] and a wide range of steps and
frictions), so its ends bound it. Curvatures outside the range, non-Gaussian features of
the target, non-Gaussian or state-dependent gradient noise, and the bias of the gradient
estimator are not covered.

:func:`friction_rule` chooses the SGHMC friction D = 2√λ_min, critical damping of the
slowest whitened direction.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["DYNAMICS", "anchor_decorrelation", "friction_rule", "inflation", "largest_step"]

#: The dynamics :func:`inflation` knows: SGLD, and SGHMC with each of its integrators.
DYNAMICS = ("langevin", "euler", "explicit", "splitting")


def _positive(name: str, value: float) -> float:
    """``value`` as a float, or a ValueError naming ``name`` unless 0 < value < ∞."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}") from None
    if not (math.isfinite(x) and x > 0.0):
        raise ValueError(f"{name} must be a positive finite number (in (0, inf)), got {value!r}")
    return x


def _nonnegative(name: str, value: float) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}") from None
    if not (math.isfinite(x) and x >= 0.0):
        raise ValueError(f"{name} must be a finite number >= 0 (in [0, inf)), got {value!r}")
    return x


def _check_dynamics(dynamics: str, friction: float | None) -> float | None:
    """Validate ``dynamics`` and the friction it needs (required for SGHMC, refused for
    Langevin, which has none)."""
    if dynamics not in DYNAMICS:
        raise ValueError(f"dynamics must be one of {', '.join(map(repr, DYNAMICS))}, "
                         f"got {dynamics!r}")
    if dynamics == "langevin":
        if friction is not None:
            raise ValueError("friction must be None for dynamics='langevin' (SGLD has no "
                             f"friction), got {friction!r}")
        return None
    if friction is None:
        raise ValueError(f"friction is required for dynamics={dynamics!r} (SGHMC): a positive "
                         "finite number, e.g. friction_rule(curvature_min)")
    return _positive("friction", friction)


def _linear_map(dynamics: str, step_size: float, curvature: float,
                friction: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """A and v of the one-step map x' = A x + v η on U = λθ²/2 (module docstring), with
    η = −h ε + σ ξ the scalar noise of the (single) kick: ε ~ N(0, B) the gradient noise,
    ξ ~ N(0, 1) and σ the injected noise's scale (see :func:`_noise_variance`). h: step
    size, λ: curvature, D: friction, read off :mod:`sgmc.kernels.dynamics` exactly as written.

    ``"langevin"`` (SGLD, Welling & Teh 2011 eq. 4), θ' = θ − h(λθ + ε) + √(2hτ) ξ:

        A = [1 − hλ],  v = [1].

    ``"euler"`` (semi-implicit), p' = (1 − Dh) p − h(λθ + ε) + √(2Dhτ) ξ, θ' = θ + h p':

        A = [[1 − h²λ, h(1 − Dh)], [−hλ, 1 − Dh]],  v = [h, 1].

    ``"explicit"`` (explicit Euler–Maruyama), the same p', θ' = θ + h p (the old momentum):

        A = [[1, h], [−hλ, 1 − Dh]],  v = [0, 1].

    ``"splitting"``, with c = e^{−Dh/2}: θ₁ = θ + (h/2) p; p₁ = c p;
    p₂ = p₁ − h(λθ₁ + ε) + √(2Dhτ) ξ; p' = c p₂; θ' = θ₁ + (h/2) p'. As a product of the
    sub-steps' matrices (drift T = [[1, h/2], [0, 1]], decay C = diag(1, c), kick
    K = [[1, 0], [−hλ, 1]], η entering the kick's momentum, after which C and T act on it):

        A = T C K C T = [[1 − c h²λ/2, (h/2)(1 + c² − c h²λ/2)], [−c hλ, c² − c h²λ/2]],
        v = T C [0, 1]ᵀ = [c h/2, c].
    """
    h, lam = step_size, curvature
    if dynamics == "langevin":
        return np.array([[1.0 - h * lam]]), np.array([1.0])
    d = friction
    if dynamics == "euler":
        a = np.array([[1.0 - h * h * lam, h * (1.0 - d * h)], [-h * lam, 1.0 - d * h]])
        return a, np.array([h, 1.0])
    if dynamics == "explicit":
        return np.array([[1.0, h], [-h * lam, 1.0 - d * h]]), np.array([0.0, 1.0])
    c = math.exp(-0.5 * d * h)
    drift = np.array([[1.0, 0.5 * h], [0.0, 1.0]])
    decay = np.diag([1.0, c])
    kick = np.array([[1.0, 0.0], [-h * lam, 1.0]])
    return drift @ decay @ kick @ decay @ drift, drift @ decay @ np.array([0.0, 1.0])


def _increment(dynamics: str, h: float, lam: np.ndarray,
               d: float | None) -> tuple[np.ndarray, np.ndarray]:
    """N = A − I (stacked over the curvatures ``lam``, shape (m, n, n)) and v (n,), the
    entries of :func:`_linear_map` written without the cancellation of 1 − 1 (e^{−Dh} − 1
    by ``expm1``), so that small steps keep their precision."""
    lam = np.asarray(lam, dtype=float)
    zero = np.zeros_like(lam)
    if dynamics == "langevin":
        return (-h * lam)[:, None, None], np.array([1.0])
    if dynamics == "euler":
        n = [[-h * h * lam, zero + h * (1.0 - d * h)], [-h * lam, zero - d * h]]
        v = np.array([h, 1.0])
    elif dynamics == "explicit":
        n = [[zero, zero + h], [-h * lam, zero - d * h]]
        v = np.array([0.0, 1.0])
    else:
        c = math.exp(-0.5 * d * h)
        c2m1 = math.expm1(-d * h)  # c² − 1
        q = c * h * h * lam / 2.0
        n = [[-q, 0.5 * h * (2.0 + c2m1) - 0.5 * h * q], [-c * h * lam, c2m1 - q]]
        v = np.array([0.5 * c * h, c])
    return np.moveaxis(np.array(n), -1, 0), v


def _noise_variance(dynamics: str, step_size: float, temperature: float,
                    friction: float | None = None, noise: float = 0.0) -> float:
    """Var(η) of the kick's noise η = −h ε + σ ξ: h² B + σ², with σ² = 2hτ for Langevin
    and σ² = 2Dhτ for every SGHMC integrator (B: the gradient-noise variance ``noise``)."""
    h = step_size
    injected = 2.0 * h * temperature * (1.0 if dynamics == "langevin" else friction)
    return h * h * noise + injected


def _stationary(n: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Σ solving the discrete Lyapunov equation Σ = A Σ Aᵀ + Q with A = I + N (stacked
    over a leading axis; Q the same for all), in the equivalent form

        N Σ + Σ Nᵀ + N Σ Nᵀ = −Q,

    a linear system in the n(n+1)/2 entries of the symmetric Σ. It is the equation that
    ``scipy.linalg.solve_discrete_lyapunov`` solves (the tests compare the two), but that
    solver forms I − A ⊗ A, whose entries cancel to O(h) and lose about log₁₀(1/(1 − ρ(A)))
    digits: at small steps of weakly damped directions its answer was off by 10⁻³ to 10⁻²,
    enough to mislead the bisection of :func:`largest_step`. The entries of N are O(h) and
    computed without cancellation, and so is this system's solution."""
    m, dim = n.shape[0], n.shape[1]
    pairs = [(i, j) for i in range(dim) for j in range(i, dim)]
    cols = []
    for i, j in pairs:
        e = np.zeros((dim, dim))
        e[i, j] = e[j, i] = 1.0
        nt = np.swapaxes(n, 1, 2)
        img = n @ e + e @ nt + n @ e @ nt
        cols.append(np.stack([img[:, a, b] for a, b in pairs], axis=-1))
    lhs = np.stack(cols, axis=-1)  # (m, k, k): column c is L(basis c)
    rhs = -np.broadcast_to(np.array([q[a, b] for a, b in pairs]), (m, len(pairs)))
    try:
        s = np.linalg.solve(lhs, rhs[..., None])[..., 0]
    except np.linalg.LinAlgError:  # ρ(A) = 1 up to rounding somewhere: inf there
        s = np.full((m, len(pairs)), math.inf)
        for i in range(m):
            try:
                s[i] = np.linalg.solve(lhs[i], rhs[i])
            except np.linalg.LinAlgError:
                pass
    out = np.empty((m, dim, dim))
    for c, (i, j) in enumerate(pairs):
        out[:, i, j] = out[:, j, i] = s[:, c]
    return out


def _stable(n: np.ndarray) -> np.ndarray:
    """Whether ρ(A) < 1 for A = I + N (N stacked, 1 × 1 or 2 × 2), by the Jury conditions
    written in N, so that they keep their precision when ρ(A) is close to 1 (where
    |eig(A)| − 1 would cancel): for 1 × 1, −2 < N < 0; for 2 × 2, with t = tr N and
    δ = det N (tr A = 2 + t, det A = 1 + t + δ), |det A| < 1 and |tr A| < 1 + det A read
    t + δ < 0, 2 + t + δ > 0, δ > 0 and 4 + 2t + δ > 0."""
    if n.shape[-1] == 1:
        x = n[:, 0, 0]
        return (x < 0.0) & (x > -2.0)
    t = n[:, 0, 0] + n[:, 1, 1]
    det = n[:, 0, 0] * n[:, 1, 1] - n[:, 0, 1] * n[:, 1, 0]
    return (t + det < 0.0) & (2.0 + t + det > 0.0) & (det > 0.0) & (4.0 + 2.0 * t + det > 0.0)


def inflation(dynamics: str, step_size: float, curvature: float, temperature: float = 1.0,
              friction: float | None = None, noise: float = 0.0) -> float:
    """The stationary variance of θ relative to the target's, Σ_θθ · λ / τ (1 is exact).

    On U(θ) = λθ²/2 (``curvature`` λ) at temperature τ, with a gradient estimate λθ + ε,
    ε ~ N(0, B) (``noise`` B) independent at every step, the one-step map of ``dynamics`` is
    x' = A x + v η (A and v per integrator: :func:`_linear_map`; Var(η) = h²B + 2hτ for
    Langevin, h²B + 2Dhτ for SGHMC), and the stationary covariance solves the discrete
    Lyapunov equation

        Σ = A Σ Aᵀ + Var(η) v vᵀ

    (the equation of ``scipy.linalg.solve_discrete_lyapunov``, solved in a form that keeps
    its precision at small steps: :func:`_stationary`). ``"langevin"`` is SGLD (Welling &
    Teh 2011, eq. 4), where this reduces to the closed form

        Σ λ / τ = (1 + hB/(2τ)) / (1 − hλ/2);

    ``"euler"``, ``"explicit"`` and ``"splitting"`` are SGHMC (Chen, Fox & Guestrin 2014)
    with unit mass, friction D (``friction``, required) and the integrators of
    :mod:`sgmc.kernels.dynamics.underdamped`. Their Lyapunov solutions have closed forms too
    (derived symbolically from the same A and v; the tests check them), with
    g = 1 + hB/(2Dτ) the gradient noise's share:

        euler:      g · 2(2 − Dh) / (4 − 2Dh − h²λ)                (over-disperses)
        explicit:   g · 2D(2 − Dh + h²λ) / ((D − hλ)(4 − 2Dh + h²λ)) (over-disperses more;
                    stable only for hλ < D)
        splitting:  g · x / sinh x,  x = Dh/2                      (under-disperses, for
                    every λ within its stability range: the kick's noise variance 2Dhτ
                    falls short of the 2τ(e^{x} − e^{−x}) that would make it exact)

    Returns ``inf`` if the spectral radius of A is ≥ 1 (no stationary law), and ``inf`` for
    ``"euler"``/``"explicit"`` with D h ≥ 1, which the samplers refuse.

    Raises:
        ValueError: unknown ``dynamics``; ``friction`` missing (SGHMC) or given (Langevin);
            ``step_size``, ``curvature``, ``temperature``, ``friction`` not in (0, ∞);
            ``noise`` not in [0, ∞).
    """
    d = _check_dynamics(dynamics, friction)
    h = _positive("step_size", step_size)
    lam = _positive("curvature", curvature)
    tau = _positive("temperature", temperature)
    b = _nonnegative("noise", noise)
    return float(_inflation(dynamics, h, np.array([lam]), tau, d, b)[0])


def _inflation(dynamics: str, h: float, lam: np.ndarray, tau: float, d: float | None,
               b: float) -> np.ndarray:
    """:func:`inflation` on validated arguments, at every curvature of the array ``lam``."""
    lam = np.asarray(lam, dtype=float)
    if dynamics in ("euler", "explicit") and d * h >= 1.0:
        return np.full(lam.shape, math.inf)
    n, v = _increment(dynamics, h, lam, d)
    stable = _stable(n)
    out = np.full(lam.shape, math.inf)
    if not stable.any():
        return out
    # The Lyapunov operator is invertible when ρ(A) < 1: solve only there.
    q = _noise_variance(dynamics, h, tau, d, b) * np.outer(v, v)
    with np.errstate(all="ignore"):
        sigma = _stationary(n[stable], q)[:, 0, 0] * lam[stable] / tau
    out[stable] = np.where(np.isfinite(sigma) & (sigma > 0.0), sigma, math.inf)
    return out


def largest_step(dynamics: str, curvature_min: float, curvature_max: float,
                 temperature: float = 1.0, friction: float | None = None, noise: float = 0.0,
                 budget: float = 0.1, grid: int = 33) -> float:
    """The largest step size h with |inflation − 1| ≤ ``budget`` at every curvature of a
    log-spaced grid of ``grid`` points over [λ_min, λ_max] (and D h < 1 for ``"euler"`` and
    ``"explicit"``), and at every smaller step.

    Both inflation (> 1) and deflation (< 1) count against the budget: "splitting"
    under-disperses the position (its inflation falls below 1 as h grows); "euler" and
    "explicit" over-disperse.

    Search: from a tiny step (where the condition holds: every scheme is consistent,
    inflation → 1 as h → 0) h grows by factors of 1.1 until the condition fails, then
    bisection on log h between the last step that passed and the first that failed, to a
    relative precision of 1e-4. Is the set of good steps an interval (0, h*], so that
    bisection finds its end? For "langevin", "euler" and "explicit", yes: on a fine scan of
    h up to the stability limit (curvatures 10⁻⁶ to 10³, frictions 0.1 · 2√λ_min to
    10√λ, gradient noise B from 0 to 100λ) |inflation − 1| grows with h, as the closed forms
    in :func:`inflation` show (every factor grows with h). For "splitting" only without
    gradient noise: its inflation is (1 + hB/(2Dτ)) · x/sinh x with x = Dh/2, the noise
    inflating and the integrator deflating, so with large B (e.g. B = 100λ, D = 10√λ) the
    inflation climbs past 1 + budget and, at larger h, falls back below it. The upward scan
    returns the end of the *first* interval of good steps; a later window where the two
    errors cancel is not a robust choice and is never returned.

    Args:
        dynamics: one of :data:`DYNAMICS`.
        curvature_min: λ_min > 0, the smallest whitened curvature.
        curvature_max: λ_max ≥ λ_min, the largest.
        temperature: τ > 0.
        friction: D > 0, required for the SGHMC integrators (e.g. :func:`friction_rule`).
        noise: B ≥ 0, a bound on the gradient-noise variance in every whitened direction.
        budget: the tolerated relative error of the variance, in (0, ∞).
        grid: number of curvatures checked, ≥ 1 (λ_min alone when the range is a point).

    Returns:
        h*, the largest acceptable step size (within a relative 1e-4, on the safe side).

    Raises:
        ValueError: as :func:`inflation`, and for curvature_max < curvature_min, a budget
            not in (0, ∞) or a grid that is not an integer ≥ 1.
    """
    d = _check_dynamics(dynamics, friction)
    lo_c = _positive("curvature_min", curvature_min)
    hi_c = _positive("curvature_max", curvature_max)
    if hi_c < lo_c:
        raise ValueError(f"curvature_max must be >= curvature_min, got {curvature_max!r} < "
                         f"{curvature_min!r}")
    tau = _positive("temperature", temperature)
    b = _nonnegative("noise", noise)
    eps = _positive("budget", budget)
    if isinstance(grid, bool) or not isinstance(grid, (int, np.integer)) or grid < 1:
        raise ValueError(f"grid must be an integer >= 1, got {grid!r}")
    lams = np.geomspace(lo_c, hi_c, int(grid)) if hi_c > lo_c else np.array([lo_c])

    def ok(h: float) -> bool:
        return bool(np.all(np.abs(_inflation(dynamics, h, lams, tau, d, b) - 1.0) <= eps))

    # A tiny step: far below every time scale of the problem (1/√λ_max, 1/λ_max, 1/D,
    # D/λ_max, and the gradient noise's τ/B and τD/B).
    scales = [1.0 / math.sqrt(hi_c), 1.0 / hi_c]
    if d is not None:
        scales += [1.0 / d, d / hi_c]
    if b > 0:
        scales += [tau / b] + ([tau * d / b] if d is not None else [])
    lo = 1e-3 * min(1.0, eps) * min(scales)
    for _ in range(20):
        if ok(lo):
            break
        lo /= 10.0
    else:  # pragma: no cover - the schemes are consistent
        raise ValueError("no step size meets the budget (even a vanishing one)")
    while ok(1.1 * lo):
        lo *= 1.1
        if lo > 1e300:  # pragma: no cover - every scheme is unstable for large h
            raise ValueError("the budget holds at every step size; no largest step")
    hi = 1.1 * lo
    while hi / lo > 1.0 + 1e-4:
        mid = math.sqrt(lo * hi)
        if ok(mid):
            lo = mid
        else:
            hi = mid
    return lo


def friction_rule(curvature_min: float) -> float:
    """The SGHMC friction D = 2√λ_min: critical damping of the slowest whitened direction.

    In a direction of curvature λ the continuous dynamics dθ = p dt,
    dp = −λθ dt − D p dt + √(2Dτ) dW have eigenvalues (−D ± √(D² − 4λ))/2: the slowest mode
    relaxes at rate about min(D/2, λ/D) (D/2 when underdamped, D < 2√λ; λ/D when
    overdamped, D ≫ 2√λ), which is largest, √λ, at D = 2√λ. The direction of least
    curvature λ_min mixes slowest, so its critical damping maximises the worst-case
    relaxation rate; stiffer directions are then underdamped and relax at rate D/2 = √λ_min
    too.
    """
    return 2.0 * math.sqrt(_positive("curvature_min", curvature_min))


def anchor_decorrelation(dynamics: str, step_size: float, curvatures: np.ndarray,
                         friction: float | None, ages: tuple[str, float]) -> float:
    """E[1 − ρ(k)] over the anchor's age k, at the curvature where it is largest: how far a
    stationary chain has moved from the point where an estimator stored its gradients (an
    SVRG anchor, a SAGA entry), as a fraction of the distance between two independent
    draws (whose difference has variance 2 Var θ; after k steps it is 2(1 − ρ(k)) Var θ).

    ρ(k) = (A^k Σ)_θθ / Σ_θθ is the lag-k autocorrelation of θ under the one-step map A of
    :func:`_linear_map` (Σ its stationary covariance, whose scale does not matter), and the
    expectation over the ages has a closed form: for k uniform on 0, …, m − 1
    (``("uniform", m)``), E[A^k] = (I − A^m)(I − A)^{-1}/m; for P(k) = p(1 − p)^{k−1},
    k ≥ 1 (``("geometric", p)``), E[A^k] = pA(I − (1 − p)A)^{-1}. The result lies in
    [0, 2] (negative correlation, an underdamped swing, moves a chain past the independent
    distance). The largest over ``curvatures`` is returned: the estimator's error at the
    chain grows with the distance, so the fastest-moving direction bounds it."""
    kind, value = ages
    out = 0.0
    for lam in np.atleast_1d(np.asarray(curvatures, float)):
        a, v = _linear_map(dynamics, step_size, float(lam), friction)
        n, _ = _increment(dynamics, step_size, np.array([lam]), friction)
        if not _stable(n)[0]:
            return 2.0
        sigma = _stationary(n, np.outer(v, v))[0]
        eye = np.eye(a.shape[0])
        if kind == "uniform":
            m = max(round(value), 1)
            mean_power = (eye - np.linalg.matrix_power(a, m)) @ np.linalg.solve(
                -n[0], eye) / m if m > 1 else eye
        elif kind == "geometric":
            p = float(value)
            mean_power = p * a @ np.linalg.inv(eye - (1.0 - p) * a)
        else:
            raise ValueError(f"ages must be ('uniform', m) or ('geometric', p), got {ages!r}")
        rho = float((mean_power @ sigma)[0, 0] / sigma[0, 0])
        out = max(out, 1.0 - rho)
    return float(min(max(out, 0.0), 2.0))
