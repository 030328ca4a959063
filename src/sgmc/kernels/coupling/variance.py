"""σ̂² of the swap energies' differences for :mod:`sgmc.kernels.coupling.replica`: the replicate
measurement (plain energies; Alg. 1's single σ̂²; the adaptive c), the per-anchor-age plug-in
measurement of control-variate energies, and — for control-variate energies — the variance of
*plain* minibatch energy differences measured alongside, at the same states on the same
minibatches, so that a run can tell whether its control variate helps at all.

**Why measure the plain variance too.** A control-variate energy (VR-reSGLD, Deng et al.
2021, eq. 5) has d_i = (L_i(θ_k) − L_i(β̂_k)) − (L_i(θ_{k+1}) − L_i(β̂_{k+1})) per datum, which
is small while each replica stays near its anchor (Lemma 1: Var ≤ (D_R²/n) E‖θ − β̂‖²); the
plain energy's d_i = L_i(θ_k) − L_i(θ_{k+1}) is small while the two *replicas* are near each
other, which is exactly when a swap can be accepted. When the hot replica moves further in one
anchor period than the replicas' distance at the moments they can swap, the control variate
adds variance instead of removing it (issue 36, item 3: N = 800, τ = (20, 800), h = 3·10⁻⁴,
m = 20 swaps less than reSGLD). Both σ̃² come from one set of per-example energies
L_i(θ_k) (the plain ones are the first term of the control-variate ones), so measuring the
plain one costs no energy evaluation.

:func:`warn_if_cv_cannot_help` reads the two from a run's ``info`` and warns (a
:class:`ControlVariateWarning`) when the control variate's σ̂² is not below the plain one's.
"""

from __future__ import annotations

import warnings
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from sgmc.errors import ControlVariateWarning
from sgmc.kernels.coupling.energy import CVEnergy
from sgmc.kernels.coupling.rules import log_swap_ratio, swap_energies

__all__ = ["CV_KEYS", "ControlVariateWarning", "age_variance", "cv_regime",
           "replicate_variance", "warn_if_cv_cannot_help"]

#: The ``info`` entries of a control-variate run that :func:`cv_regime` reads: σ̂² per pair of
#: the control-variate energies (the one each step's swap used), of plain minibatch energies
#: at the same states (measured alongside), and a plain swap's acceptance there.
CV_KEYS = ("energy_variance", "plain_energy_variance", "plain_swap_weight")


def _smooth(old, new, gamma):
    """σ̂² ← (1 − γ) σ̂² + γ σ̃², and σ̃² itself where σ̂² is unmeasured (< 0)."""
    return jnp.where(old < 0, new, (1 - gamma) * old + gamma * new).astype(jnp.float32)


def _plain(var, diff, temperature):
    """The plain columns of the state: (σ̂², ω) per pair, ω = min(1, exp(a(ΔŨ − aσ̂²/2))) the
    acceptance probability of a plain reSGLD swap (F = 1) at these states, with ΔŨ the plain
    energy difference on the measurement's minibatch(es) and a = 1/τ_k − 1/τ_{k+1}."""
    a = 1.0 / temperature[:-1] - 1.0 / temperature[1:]
    log_s = log_swap_ratio(a, diff, jnp.maximum(var, 0.0), 1.0)
    return jnp.stack([var, jnp.exp(jnp.minimum(log_s, 0.0))], axis=1).astype(jnp.float32)


def replicate_variance(coupling, problem, state, key, temperature):
    """σ̃² per pair (not per age) and/or c per replica (adaptive) from ``num_replicates``
    independent minibatches at the current states, smoothed into the state (the module
    docstring of :mod:`~sgmc.kernels.coupling.replica`); for control-variate energies the
    plain energies' σ̃² (and a plain swap's acceptance, :func:`_plain`, at the temperatures
    ``temperature`` (K,)) is measured alongside from the same per-example energies (X, the
    plain term; no extra evaluation). Returns (state, evals)."""
    n_data, b = problem.data_rows, coupling._energy_batch(problem)
    idx = jax.random.randint(key, (coupling.num_replicates, b), 0, n_data, dtype=jnp.int32)
    pos, energy = state.dyn.position, state.energy
    # The first measurement is at step 0, where every replica sits at the initial point
    # (σ̃² = 0): the second one replaces it instead of being smoothed into it.
    gamma = jnp.where(state.measured <= 1, 1.0, coupling.smoothing)
    plain = state.plain
    if isinstance(coupling.energy, CVEnergy):
        x, y = jax.vmap(lambda i: jax.vmap(
            lambda s, th: coupling.energy.terms(problem, s, th, i))(energy, pos))(idx)
        coef = energy.coef
        if coupling.energy.adaptive:
            cov = jnp.mean((x - x.mean(0)) * (y - y.mean(0)), axis=0)
            c_new = -cov / jnp.maximum(jnp.var(y, axis=0), 1e-30)
            coef = (1 - gamma) * energy.coef + gamma * c_new
            energy = energy._replace(coef=coef)
        u = x + coef * y
        if not coupling._by_age:
            dx = x[:, :-1] - x[:, 1:]                                   # (R, K − 1)
            p_var = (1 - gamma) * plain[:, 0] + gamma * jnp.var(dx, axis=0, ddof=1)
            plain = _plain(p_var, dx.mean(0), temperature)
    else:
        u = jax.vmap(lambda i: swap_energies(problem, coupling.energy, energy, pos, i)[0])(idx)
    variance = state.variance
    if not coupling._by_age:
        var = jnp.var(u[:, :-1] - u[:, 1:], axis=0, ddof=1)[:, None]   # (K − 1, 1)
        variance = ((1 - gamma) * variance + gamma * var).astype(jnp.float32)
    evals = (coupling.num_replicates * coupling.num_replicas * b
             * coupling.energy.evals_per_datum)
    return state._replace(energy=energy, variance=variance, plain=plain,
                          measured=state.measured + 1), evals


def age_variance(coupling, problem, state, key, t, temperature):
    """σ̂² of this step's anchor age j = t mod m: the plug-in σ̃² on a fresh minibatch,
    smoothed into the table (the module docstring of
    :mod:`~sgmc.kernels.coupling.replica`), and the plain energies' σ̃² from the same
    minibatch smoothed into its own entry, with a plain swap's acceptance there
    (:func:`_plain`, at the temperatures ``temperature`` (K,)). Returns (variance table, plain
    columns (K − 1, 2), σ̂²_j (K − 1,), evals)."""
    j = t % coupling._ages
    idx = jax.random.randint(key, (coupling._energy_batch(problem),), 0, problem.data_rows,
                             dtype=jnp.int32)
    new, plain, diff, evals = coupling.energy.diff_variance(problem, state.energy,
                                                            state.dyn.position, idx)
    cur = _smooth(state.variance[:, j], new, coupling.smoothing)
    # The plain σ̂² does not depend on an anchor's age: one entry, smoothed at every attempt,
    # as a reSGLD run measuring every step (v = 1) would smooth it.
    p_cur = _plain(_smooth(state.plain[:, 0], plain, coupling.smoothing), diff, temperature)
    return state.variance.at[:, j].set(cur), p_cur, cur, evals


def cv_regime(info: dict, burn: int = 0) -> dict | None:
    """The control-variate regime of a run from its ``info`` (all of :data:`CV_KEYS`; None
    for a run without control-variate energies): per adjacent pair, over chains and kept
    draws from ``burn`` on, the means of σ̂² of the control-variate energies (``cv``) and of
    plain minibatch energies at the same states (``plain``), both weighted by a plain swap's
    acceptance ω there (``cv_w``, ``plain_w``: where swaps happen), and ``ratio`` =
    cv_w / plain_w.

    Why weighted: the plain σ̂² is ∝ (θ_k − θ_{k+1})² near the modes, tiny exactly when
    the replicas are close enough to swap and huge when they are not; its unweighted mean
    is dominated by states where no swap could be accepted whatever the variance (issue 36,
    item 3: at m = 20 the unweighted ratio was 0.19 while VR-reSGLD swapped less; the
    ω-weighted ratio was 1.8). Weighted by ω, the comparison is made where it matters."""
    if not all(k in info for k in CV_KEYS):
        return None
    cv, plain, w = (np.asarray(info[k], np.float64)[:, burn:] for k in CV_KEYS)
    total = w.sum(axis=(0, 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        cv_w = (w * cv).sum(axis=(0, 1)) / total
        plain_w = (w * plain).sum(axis=(0, 1)) / total
        ratio = cv_w / plain_w
    return {"cv": cv.mean(axis=(0, 1)), "plain": plain.mean(axis=(0, 1)), "cv_w": cv_w,
            "plain_w": plain_w, "ratio": ratio}


def warn_if_cv_cannot_help(result: Any, stacklevel: int = 2) -> None:
    """``warnings.warn`` a :class:`ControlVariateWarning` when a replica-exchange run with
    control-variate energies measured, for some adjacent pair, a σ̂² of its energy
    differences ≥ that of plain minibatch energies at the same states, both averaged where
    a plain swap would be accepted (:func:`cv_regime`'s ``ratio`` ≥ 1; the end of
    ``sgmc.sample`` and ``sgmc.resume``). Nothing for other runs."""
    reg = cv_regime(result.info)
    if reg is None:
        return
    ratio = np.nan_to_num(reg["ratio"], nan=0.0)  # (no weight at all: nothing to compare)
    if not np.any(ratio >= 1.0):
        return
    k = int(np.argmax(ratio))
    period = result.meta.get("energy_period")
    warnings.warn(
        f"sgmc.sample: the control-variate swap energies (cv_energy, anchor period "
        f"m = {period}) had σ̂² = {reg['cv_w'][k]:.4g} for pair {k}, ≥ the σ̂² = "
        f"{reg['plain_w'][k]:.4g} of plain minibatch energies at the same states (ratio "
        f"{ratio[k]:.3g}; both averaged where a plain swap would be accepted): the control "
        "variate cannot help here — the replicas move further from their anchors in one "
        "period than the swapping pairs are apart. Use a shorter anchor period "
        "(cv_energy(period=...)), a smaller step size, or minibatch_energy() "
        "(docs/replica-exchange.md, 'When control variates help')",
        ControlVariateWarning, stacklevel=stacklevel + 1)
