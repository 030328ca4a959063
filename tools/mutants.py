"""Mutation testing of the algorithm modules and of the guards that keep a run honest:
``make mutants`` (or ``python tools/mutants.py``).

Each mutant is one plausible one-line mistake in an update rule (a wrong power of τ, a
missing factor, a gradient at the wrong point, a table never written ...), applied to a fresh
copy of ``src/`` and ``tests/`` in a temporary folder; the tests that guard that module run
there (``pytest -x``: a mutant dies at the first failure, or when the tests time out). A
mutant that no test kills is a *survivor*; every survivor must be explained in
``tests/README.md`` (an equivalent mutant, or why no test can see it). The score is
killed / (killed + survivors).

Why a curated list and not mutmut or cosmic-ray: cosmic-ray generates 5,055 operator mutants
for these modules (estimators 1,386, dynamics 657, coupling 1,339, optimize.py 516,
objectives.py 1,157; ``cosmic-ray init``, measured 2026-11-23), most of them syntactic
variants of each other or of constants in error messages; each needs a fresh process that
imports JAX and compiles the programs under test (10–60 s here), so a full run would take
14–80 hours on 2 cores. The list below takes minutes and holds the mistakes that matter: each
changes what the sampler computes.

Usage::

    python tools/mutants.py              # all mutants, 2 workers
    python tools/mutants.py -k swap      # those whose id contains "swap"
    python tools/mutants.py --list       # ids and descriptions only
    python tools/mutants.py --jobs 1     # one at a time

Exit status 0 when the score is at least ``--min-score`` (default 0.95), else 1.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The fast tests that guard each area (run in this order; -x stops at the first failure).
T_DYN = ("tests/kernels/test_kernels.py", "tests/kernels/test_gaussian_posterior.py")
T_EST = ("tests/kernels/test_kernels.py", "tests/kernels/test_variance_reduced.py",
         "tests/kernels/test_estimators.py")
T_EWSG = ("tests/kernels/test_kernels.py", "tests/kernels/test_ewsg.py")
T_REPLICA = ("tests/kernels/test_swap_rule.py", "tests/kernels/test_replica.py")
T_CVW = ("tests/kernels/test_cv_regime_warning.py",)
T_OPT = ("tests/model/test_objectives.py", "tests/run/test_optimize.py")
T_CYC = ("tests/kernels/test_cyclical.py",)
T_SGNHT = ("tests/kernels/test_sgnht.py",)
T_TUNE = ("tests/tune/test_noise.py", "tests/tune/test_selfcheck.py")
T_PRE = ("tests/kernels/test_preconditioners.py",)
T_RULES = ("tests/tune/test_tuning.py",)
T_PRED = ("tests/run/test_predictive.py",)
T_NUMPYRO = ("tests/model/test_numpyro.py",)
T_CONS = ("tests/model/test_constraints.py",)
T_PATHS = ("tests/io/test_checkpoint_paths.py",)
T_GUARDS = ("tests/run/test_run_guards.py",)
T_WARMUP_INT = ("tests/tune/test_warmup_interrupt.py",)
T_NET = ("tests/tune/test_network_guard.py",)
T_OPT_INT = ("tests/run/test_optimize_interrupt.py",)
T_DIV = ("tests/run/test_driver.py",)
T_COPY = ("tests/io/test_memcopy.py",)
T_PIPE = ("tests/run/test_pipeline.py",)


@dataclass(frozen=True)
class Mutant:
    id: str
    path: str          # relative to src/sgmc
    old: str           # must occur exactly once in the file
    new: str
    what: str
    tests: tuple[str, ...]


M = Mutant
MUTANTS: list[Mutant] = [
    # -- dynamics: overdamped ---------------------------------------------------------------
    M("sgld-noise-no-tau", "kernels/dynamics/langevin.py",
      "jnp.sqrt(2.0 * h * tau)", "jnp.sqrt(2.0 * h)",
      "SGLD noise without the temperature", T_DYN),
    M("sgld-noise-no-2", "kernels/dynamics/langevin.py",
      "jnp.sqrt(2.0 * h * tau)", "jnp.sqrt(h * tau)",
      "SGLD noise variance hτ instead of 2hτ", T_DYN),
    M("sgld-drift-sign", "kernels/dynamics/langevin.py",
      "x - h * g + scale * z", "x + h * g + scale * z",
      "SGLD climbs the energy", T_DYN),
    M("sgld-drift-half", "kernels/dynamics/langevin.py", "x - h * g + scale * z",
      "x - 0.5 * h * g + scale * z", "SGLD drift halved", T_DYN),
    # -- dynamics: pSGLD ----------------------------------------------------------------------
    M("psgld-noise-no-G", "kernels/dynamics/psgld.py", "jnp.sqrt(2.0 * h * tau * G) * z",
      "jnp.sqrt(2.0 * h * tau) * z", "pSGLD noise not preconditioned", T_DYN),
    M("psgld-noise-no-tau", "kernels/dynamics/psgld.py", "jnp.sqrt(2.0 * h * tau * G) * z",
      "jnp.sqrt(2.0 * h * G) * z", "pSGLD noise without the temperature", T_DYN),
    M("psgld-rms-no-sqrt", "kernels/dynamics/psgld.py", "1.0 / (self.eps + jnp.sqrt(v))",
      "1.0 / (self.eps + v)", "pSGLD preconditioner 1/(λ + V) instead of 1/(λ + √V)", T_DYN),
    M("psgld-per-datum", "kernels/dynamics/psgld.py", "(g * per_datum) ** 2", "g ** 2",
      "pSGLD's RMS of the summed gradient instead of the per-datum mean", T_DYN),
    # -- dynamics: underdamped ----------------------------------------------------------------
    M("euler-noise-no-tau", "kernels/dynamics/underdamped.py", "jnp.sqrt(2.0 * fr * h * tau)",
      "jnp.sqrt(2.0 * fr * h)", "SGHMC noise without τ (every integrator)", T_DYN),
    M("euler-noise-no-friction", "kernels/dynamics/underdamped.py", "jnp.sqrt(2.0 * fr * h * tau)",
      "jnp.sqrt(2.0 * h * tau)", "SGHMC noise without the friction", T_DYN),
    M("euler-friction-sign", "kernels/dynamics/underdamped.py",
      "(1.0 - fr * h) * p, state.momentum",
      "(1.0 + fr * h) * p, state.momentum", "momentum grows instead of decaying", T_DYN),
    M("euler-gradient-sign", "kernels/dynamics/underdamped.py", "d - h * g + noise_scale * z",
      "d + h * g + noise_scale * z", "Euler kick up the gradient", T_DYN),
    M("euler-uses-old-momentum", "kernels/dynamics/underdamped.py",
      "moving = state.momentum if explicit else p", "moving = state.momentum",
      "semi-implicit Euler moves with the old momentum (explicit Euler)", T_DYN),
    M("explicit-uses-new-momentum", "kernels/dynamics/underdamped.py",
      "moving = state.momentum if explicit else p", "moving = p",
      "explicit Euler moves with the new momentum", T_DYN),
    M("splitting-grad-at-theta", "kernels/dynamics/underdamped.py",
      "estimator.estimate(problem, state.est, half, batch, r_est, ctx)",
      "estimator.estimate(problem, state.est, state.position, batch, r_est, ctx)",
      "splitting gradient at θ_k instead of the half step", T_DYN),
    M("splitting-decay-full", "kernels/dynamics/underdamped.py", "decay = jnp.exp(-0.5 * fr * h)",
      "decay = jnp.exp(-fr * h)", "splitting friction decay e^{−Dh} per half", T_DYN),
    M("splitting-second-half-missing", "kernels/dynamics/underdamped.py",
      "theta = tmap(lambda x, p: x + 0.5 * h * p, half, pre.scale(p))", "theta = half",
      "splitting omits the second position half step", T_DYN),
    M("splitting-kick-offset-sign", "kernels/dynamics/underdamped.py",
      "(1.0 / decay - decay) * p", "(decay - 1.0 / decay) * p",
      "EWSG's kick offset with the wrong sign (splitting)", T_DYN + T_EWSG),
    M("euler-kick-offset-sign", "kernels/dynamics/underdamped.py",
      "drift, tmap(lambda p: h * fr * p, state.momentum),",
      "drift, tmap(lambda p: -h * fr * p, state.momentum),",
      "EWSG's kick offset with the wrong sign (Euler)", T_DYN + T_EWSG),
    M("init-momentum-scale", "kernels/dynamics/underdamped.py",
      'scale = 0.0 if self.init_momentum == "zero" else jnp.sqrt(params.temperature)',
      'scale = 0.0 if self.init_momentum == "zero" else 1.0',
      "initial momentum drawn at τ = 1 whatever τ", ("tests/run/test_validation.py", *T_DYN)),
    # -- dynamics: SGNHT (scalar thermostat, Ding et al. 2014; diagonal, Gan et al. 2015) -----
    M("sgnht-theta-old-momentum", "kernels/dynamics/nosehoover.py",
      "state.position, pre.scale(q))", "state.position, pre.scale(state.momentum))",
      "SGNHT moves θ with the old momentum (both thermostats)", T_SGNHT),
    M("sgnht-xi-old-momentum", "kernels/dynamics/nosehoover.py", "for v in jax.tree.leaves(q))",
      "for v in jax.tree.leaves(state.momentum))",
      "scalar thermostat updated from the old momentum's kinetic energy", T_SGNHT),
    M("sgnht-diag-xi-mean", "kernels/dynamics/nosehoover.py",
      "(x + h * (jnp.square(v.astype(jnp.float32)) - tau))",
      "(x + h * (jnp.mean(jnp.square(v.astype(jnp.float32))) - tau))",
      "diagonal thermostat driven by the mean kinetic energy (the scalar one per coordinate)",
      T_SGNHT),
    M("sgnht-diag-xi-sign", "kernels/dynamics/nosehoover.py",
      "(x + h * (jnp.square(v.astype(jnp.float32)) - tau))",
      "(x - h * (jnp.square(v.astype(jnp.float32)) - tau))",
      "diagonal thermostat falls while its coordinate is too hot", T_SGNHT),
    M("sgnht-diag-xi-old-momentum", "kernels/dynamics/nosehoover.py", ".astype(x.dtype), xi, q)",
      ".astype(x.dtype), xi, state.momentum)",
      "diagonal thermostat updated from the old momentum", T_SGNHT),
    # -- cyclical SG-MCMC (cyclical.py) --------------------------------------------------------
    M("cyclical-lr-no-sqrt", "kernels/cyclical.py",
      "params.step_size * (jnp.sqrt(c) if self.sqrt_step else c), tau, t)",
      "params.step_size * c, tau, t)",
      "cSGHMC's step size h₀·c with the friction D/√c (learning rate c², not c)", T_CYC),
    M("cyclical-friction-fixed", "kernels/cyclical.py",
      "friction=self.dynamics.friction / jnp.sqrt(self.factor(t)))",
      "friction=self.dynamics.friction)",
      "cSGHMC's friction not rescaled: the momentum decay D·h_t fades with the step", T_CYC),
    M("cyclical-sqrt-for-sgld", "kernels/cyclical.py",
      'return self.scale == "learning_rate" and isinstance(self.dynamics,\n'
      "                                                            (Underdamped, NoseHoover))",
      'return self.scale == "learning_rate"',
      "the √c step for every sampler: cSGLD's learning rate follows √c", T_CYC),
    M("cyclical-phase-off-by-one", "kernels/cyclical.py",
      "rest = cycle_length - jnp.mod(jnp.asarray(t, jnp.int32), cycle_length)",
      "rest = cycle_length - jnp.mod(jnp.asarray(t, jnp.int32) + 1, cycle_length)",
      "the cosine's phase one step ahead (k = t + 2 in eq. 1)", T_CYC),
    M("cyclical-explores-with-noise", "kernels/cyclical.py",
      "tau = jnp.where(self.keeps(t), params.temperature, jnp.zeros_like(params.temperature))",
      "tau = params.temperature", "the exploration stage runs at the sampler's τ, not 0",
      T_CYC),
    # -- warm-up: the noise where a run is, and the self-check (issue 31) ---------------------
    M("noise-anchor-distance-linear", "tune/noise.py", "x + math.sqrt(1.0 - rho) * (u - v)",
      "x + (1.0 - rho) * (u - v)",
      "the anchor's distance scales with 1 − ρ instead of √(1 − ρ)", T_TUNE),
    M("noise-plain-top-eigenvalue", "tune/noise.py", "        proj2 = (test @ vt[0]) ** 2",
      "        proj2 = (fit @ vt[0]) ** 2",
      "the top direction's variance measured on the rows that found it (biased up)", T_TUNE),
    M("decorrelation-rho", "tune/rules.py", "        out = max(out, 1.0 - rho)",
      "        out = max(out, rho)", "the anchor's correlation used as its distance", T_TUNE),
    M("decorrelation-uniform-ages", "tune/rules.py", "np.linalg.matrix_power(a, m)) @",
      "np.linalg.matrix_power(a, m - 1)) @", "SVRG's anchor ages summed to m − 2", T_TUNE),
    M("selfcheck-coupling-halves", "tune/selfcheck.py",
      "(a + b) * (1.0 / math.sqrt(2.0))", "(a + b) * 0.5",
      "the coarse pilot's noise is the mean of the fine steps' (variance halved)", T_TUNE),
    M("selfcheck-never-halves", "tune/selfcheck.py", "            h, length = h / 2.0, time_units",
      "            h, length = h, time_units",
      "a pilot that disagrees does not halve the step", T_TUNE),
    M("selfcheck-sd-unsigned", "tune/selfcheck.py",
      "        if abs(bias) > tol + crit * se:", "        if bias > tol + crit * se:",
      "only positive biases disagree (a deflating integrator passes)", T_TUNE),
    # -- preconditioners (preconditioners.py) -------------------------------------------------
    M("pre-dense-scale-t-untransposed", "kernels/preconditioners.py",
      "return _flat(lambda f: self.chol.T @ f)(g)", "return _flat(lambda f: self.chol @ f)(g)",
      "dense scale_t applies L instead of Lᵀ (P g = L L g)", T_PRE),
    M("pre-low-rank-scale-t-as-scale", "kernels/preconditioners.py",
      "return _flat(lambda f: self._middle(self.s * f, self.factor))(g)",
      "return _flat(lambda f: self.s * self._middle(f, self.factor))(g)",
      "low-rank scale_t = scale (L taken as symmetric: S^{1/2} on the wrong side)", T_PRE),
    M("pre-low-rank-factor-no-sqrt", "kernels/preconditioners.py",
      "jnp.asarray(np.sqrt(lam) - 1.0, jnp.float32))",
      "jnp.asarray(lam - 1.0, jnp.float32))",
      "low-rank factor λ − 1 instead of √λ − 1 (P corrected by λ², not λ)", T_PRE),
    M("pre-low-rank-unscale-first-order", "kernels/preconditioners.py",
      "inv = 1.0 / (1.0 + self.factor) - 1.0", "inv = -self.factor",
      "low-rank L⁻¹ with (1 + a)⁻¹ − 1 ≈ −a (first order only)", T_PRE),
    M("pre-from-draws-no-shrinkage", "kernels/preconditioners.py",
      "cov = n / (n + 5.0) * cov + 1e-3 * 5.0 / (n + 5.0) * np.eye(cov.shape[0])",
      "cov = cov + 1e-3 * 5.0 / (n + 5.0) * np.eye(cov.shape[0])",
      "from_draws adds Stan's ridge without shrinking Σ̂ by n/(n + 5)", T_PRE),
    M("pre-low-rank-largest-eigenvalues", "kernels/preconditioners.py",
      "order = np.argsort(-np.abs(np.log(np.maximum(lam, 1e-12))))[:min(rank, lam.size)]",
      "order = np.argsort(-lam)[:min(rank, lam.size)]",
      "low-rank from_draws corrects the r largest eigenvalues, not those farthest from 1 "
      "(a squeezed direction left uncorrected)", T_PRE),
    # -- the tuning rules (tuning.py) -----------------------------------------------------------
    M("tune-increment-euler-undamped", "tune/rules.py",
      "n = [[-h * h * lam, zero + h * (1.0 - d * h)], [-h * lam, zero - d * h]]",
      "n = [[-h * h * lam, zero + h], [-h * lam, zero - d * h]]",
      "Euler's θ row moves with the undamped momentum (A₀₁ = h, not h(1 − Dh))", T_RULES),
    M("tune-increment-splitting-c-not-c2", "tune/rules.py",
      "c2m1 = math.expm1(-d * h)  # c² − 1", "c2m1 = math.expm1(-0.5 * d * h)  # c² − 1",
      "splitting's momentum decay c − 1 where c² − 1 belongs (one half-step of friction)",
      T_RULES),
    M("tune-linear-map-euler-h-not-squared", "tune/rules.py",
      "a = np.array([[1.0 - h * h * lam, h * (1.0 - d * h)], [-h * lam, 1.0 - d * h]])",
      "a = np.array([[1.0 - h * lam, h * (1.0 - d * h)], [-h * lam, 1.0 - d * h]])",
      "_linear_map's Euler A₀₀ = 1 − hλ instead of 1 − h²λ", T_RULES),
    M("tune-noise-variance-h-not-squared", "tune/rules.py", "return h * h * noise + injected",
      "return h * noise + injected", "gradient noise enters Var(η) as hB, not h²B", T_RULES),
    M("tune-noise-variance-no-friction", "tune/rules.py",
      '(1.0 if dynamics == "langevin" else friction)', "1.0",
      "SGHMC's injected variance 2hτ without the friction D", T_RULES),
    M("tune-friction-rule-no-2", "tune/rules.py",
      'return 2.0 * math.sqrt(_positive("curvature_min", curvature_min))',
      'return math.sqrt(_positive("curvature_min", curvature_min))',
      "friction √λ_min (half the critical damping 2√λ_min)", T_RULES),
    M("tune-largest-step-returns-failing-end", "tune/rules.py",
      "            hi = mid\n    return lo", "            hi = mid\n    return hi",
      "largest_step returns the failing end of the bisection's bracket", T_RULES),
    M("tune-largest-step-coarse-bisection", "tune/rules.py",
      "while hi / lo > 1.0 + 1e-4:", "while hi / lo > 1.1:",
      "largest_step stops at the growth factor's bracket (up to 10 % short)", T_RULES),
    # -- predictive moments (run/moments.py, Welford) ---------------------------------------
    M("welford-m2-old-mean", "run/moments.py",
      "return Moments(n, mean, m.m2 + delta * (x - mean))",
      "return Moments(n, mean, m.m2 + delta * delta)",
      "Welford's M₂ adds δ² (the old mean twice) instead of δ(x − μ_new)", T_PRED),
    M("welford-mean-old-count", "run/moments.py",
      "mean = m.mean + delta / n.astype(m.mean.dtype)",
      "mean = m.mean + delta / (m.count + 2).astype(m.mean.dtype)",
      "Welford's mean step δ/(n + 1) (the count off by one)", T_PRED),
    M("predictive-observes-every-step", "run/loop.py",
      "return jax.lax.cond(kept(t, done), lambda m: welford_b(m, predict_b(draw(states))),",
      "return jax.lax.cond(kept(t, True), lambda m: welford_b(m, predict_b(draw(states))),",
      "predictive moments ignore the `done` flag (a finished chunk's extra steps counted)",
      T_PRED),
    # -- divergence: finiteness checked after every draw (run/loop.py) ---------------------
    M("finite-not-checked-at-draws", "run/loop.py",
      "                c = p.check(states, c, t_end)\n", "",
      "a block of draws never checks its states: a diverged chain goes on unnoticed", T_DIV),
    M("finite-checked-one-step-late", "run/loop.py",
      "                c = p.check(states, c, t_end)\n",
      "                c = p.check(states, c, t_end + 1)\n",
      "the first bad step recorded one step after the draw that found it", T_DIV),
    M("first-block-not-pipelined", "run/host.py",
      "            if per_draw is None and i + 1 < len(run.plan):",
      "            if timed and per_draw is None and i + 1 < len(run.plan):",
      "the second block waits until the first (timed) one is on the host", T_PIPE),
    # -- a block's copy into the sink, split over threads (io/memcopy.py) -----------------------
    M("copy-drops-last-piece", "io/memcopy.py",
      "for a, b in itertools.pairwise(cuts) if b > a]",
      "for a, b in itertools.pairwise(cuts[:-1]) if b > a]",
      "the last piece of a split copy is never copied (its draws stay uninitialised)", T_COPY),
    M("copy-rows-of-first-chain-only", "io/memcopy.py",
      "        if len(rows) == len(dst):\n            pairs = rows",
      "        if len(rows) == len(dst):\n            pairs = rows[:1]",
      "with few chains, only the first chain's rows are copied", T_COPY),
    # -- pooling the chains' moments (result.py, Chan et al.) ----------------------------------
    M("pool-no-between-chain-term", "result.py",
      "m2_all = m2.sum(axis=0) + (n_c * dev**2).sum(axis=0)", "m2_all = m2.sum(axis=0)",
      "pooled M₂ without the between-chain term Σ n_c (μ_c − μ)²", T_PRED),
    M("pool-between-unweighted", "result.py",
      "m2_all = m2.sum(axis=0) + (n_c * dev**2).sum(axis=0)",
      "m2_all = m2.sum(axis=0) + (dev**2).sum(axis=0)",
      "between-chain term not weighted by the chains' counts", T_PRED),
    M("pool-mean-unweighted", "result.py",
      "pooled = np.where(n > 0, (n_c * mean).sum(axis=0) / n, nan)",
      "pooled = np.where(n > 0, mean.mean(axis=0), nan)",
      "pooled mean the plain average of the chains' means (unequal counts)", T_PRED),
    M("pool-var-ddof-1", "result.py", '"var": np.where(n > 0, m2_all / n, nan)',
      '"var": np.where(n > 0, m2_all / (n - 1), nan)',
      "pooled variance M₂/(n − 1) where ddof = 0 is documented", T_PRED),
    M("pool-chain-var-ddof-1", "result.py", "m2 / np.maximum(n_c, 1)",
      "m2 / np.maximum(n_c - 1, 1)", "per-chain variance M₂/(n_c − 1)", T_PRED),
    # -- NumPyro models: Jacobians and constrained sites (numpyro_model.py) ------------------
    M("numpyro-log-det-dropped", "model/numpyro.py",
      "numpyro.factor(f\"_{msg['name']}_log_det\", log_det)",
      "numpyro.factor(f\"_{msg['name']}_log_det\", 0.0 * log_det)",
      "the latent sites' log-Jacobian left out of U", T_NUMPYRO),
    M("numpyro-log-det-sign", "model/numpyro.py",
      "numpyro.factor(f\"_{msg['name']}_log_det\", log_det)",
      "numpyro.factor(f\"_{msg['name']}_log_det\", -log_det)",
      "the log-Jacobian subtracted from log p (added to U)", T_NUMPYRO),
    M("numpyro-log-det-summed-over-plates", "model/numpyro.py",
      "log_det = sum_rightmost(log_det, jnp.ndim(log_det) - jnp.ndim(value)\n"
      "                                        + len(msg[\"fn\"].event_shape))",
      "log_det = jnp.sum(log_det)",
      "log-Jacobian summed over the batch axes too (a plate around the site counts it "
      "once per element again)", T_NUMPYRO),
    M("numpyro-log-det-at-theta", "model/numpyro.py",
      "log_det = t.log_abs_det_jacobian(z[msg[\"name\"]], value)",
      "log_det = t.log_abs_det_jacobian(value, value)",
      "the log-Jacobian evaluated at θ instead of z", T_NUMPYRO),
    M("numpyro-unconstrain-skipped", "model/numpyro.py",
      "return {name: biject_to(supports[name]).inv(theta[name]) for name in self.sites.latent}",
      "return {name: theta[name] for name in self.sites.latent}",
      "unconstrain returns θ itself (init taken as z)", T_NUMPYRO),
    # -- constraint Jacobians (constraints.py) ------------------------------------------------
    M("constraints-log-det-dropped", "model/constraints.py",
      "return y, jnp.sum(t.log_abs_det_jacobian(x, y))", "return y, jnp.zeros((), x.dtype)",
      "Posterior(constraints=...) without the log-Jacobian", T_CONS),
    M("constraints-log-det-sign", "model/constraints.py",
      "return y, jnp.sum(t.log_abs_det_jacobian(x, y))",
      "return y, -jnp.sum(t.log_abs_det_jacobian(x, y))",
      "the log-Jacobian with the wrong sign (U + log|det|)", T_CONS),
    M("constraints-log-det-at-theta", "model/constraints.py",
      "return y, jnp.sum(t.log_abs_det_jacobian(x, y))",
      "return y, jnp.sum(t.log_abs_det_jacobian(y, y))",
      "the log-Jacobian evaluated at θ instead of z", T_CONS),
    M("constraints-unconstrain-forward", "model/constraints.py",
      "x if c is None else biject_to(c).inv(x), theta)",
      "x if c is None else biject_to(c)(x), theta)",
      "unconstrain applies T instead of T⁻¹", T_CONS),
    M("constraints-log-det-last-leaf", "model/constraints.py",
      "return theta, sum(ld for _, ld in out)", "return theta, out[-1][1]",
      "only the last leaf's log-Jacobian (the others' overwritten, not added)", T_CONS),
    # -- estimators ---------------------------------------------------------------------------
    M("batch-scale-n-minus-1", "model/oracle.py",
      "return self.data_weight * self.data_rows / batch_size",
      "return self.data_weight * self.data_rows / max(batch_size - 1, 1)",
      "minibatch scale N/(n − 1) instead of N/n", T_EST),
    M("uniform-count", "kernels/estimators/uniform.py", "jnp.asarray(batch.shape[0], jnp.int32))",
      "jnp.asarray(1, jnp.int32))", "uniform estimator counts one evaluation per step",
      (*T_EST, "tests/kernels/test_gaussian_posterior.py")),
    M("svrg-sign", "kernels/estimators/svrg.py", "g0 + scale * (a - b) + w * g",
      "g0 + scale * (a + b) + w * g", "SVRG adds the anchor term", T_EST),
    M("svrg-no-full-term", "kernels/estimators/svrg.py", "g0 + scale * (a - b) + w * g",
      "g0 + scale * (a - b)", "SVRG drops the full gradient at the anchor", T_EST),
    M("svrg-never-refreshes", "kernels/estimators/svrg.py", "return t % period == 0",
      "return t == 0", "SVRG snapshot never refreshed after the first", T_EST),
    M("svrg-count", "kernels/estimators/svrg.py", "(2 * batch.shape[0] + n_snap)",
      "(batch.shape[0] + n_snap)", "SVRG counts one gradient per example, not two", T_EST),
    M("saga-table-never-written", "kernels/estimators/saga.py",
      "table = jax.tree.map(lambda t, v, o: t.at[batch].set(v + 0.0 * o), state.table, new,\n"
      "                             old)", "table = state.table",
      "SAGA's table never written", T_EST),
    M("saga-sum-not-updated", "kernels/estimators/saga.py",
      "table_sum = jax.tree.map(jnp.add, state.table_sum,",
      "table_sum = jax.tree.map(lambda a, b: a, state.table_sum,",
      "SAGA's running sum never updated", T_EST),
    M("saga-duplicates-counted-twice", "kernels/estimators/saga.py",
      "unique = _weighted(diff, _first_occurrence(batch))", "unique = diff",
      "SAGA's running sum adds a repeated index twice", T_EST),
    M("saga-sign", "kernels/estimators/saga.py", "g0 + scale * d + w * g", "g0 - scale * d + w * g",
      "SAGA subtracts the correction", T_EST),
    M("batcher-skips-last", "kernels/estimators/batching.py",
      "return as_rng(rng).randint((b,), 0, num_data, dtype=jnp.int32), state",
      "return as_rng(rng).randint((b,), 0, num_data - 1, dtype=jnp.int32), state",
      "uniform batches never draw the last datum", T_EST),
    M("permutation-same-every-epoch", "kernels/estimators/batching.py",
      "epoch = state.epoch + new_epoch.astype(jnp.int32)", "epoch = state.epoch",
      "permutation batches repeat the first epoch's order forever", T_EST),
    # -- EWSG ---------------------------------------------------------------------------------
    M("ewsg-mh-sign", "kernels/estimators/ewsg.py", "accept = jnp.log(u) < e_prop - e",
      "accept = jnp.log(u) < e - e_prop", "EWSG's index chain prefers the smaller weight",
      T_EWSG),
    M("ewsg-never-switches", "kernels/estimators/ewsg.py",
      "jnp.where(accept, prop, idx), jax.tree.map(pick, g_prop, g),",
      "jnp.where(accept, prop, idx), g,", "EWSG keeps the uniform index's gradient (plain SG)",
      T_EWSG),
    M("ewsg-persistent-index-lost", "kernels/estimators/ewsg.py", "jnp.where(accept, prop, idx)",
      "jnp.where(False, prop, idx)", "persistent EWSG forgets accepted indices", T_EWSG),
    M("ewsg-prior-not-folded", "kernels/estimators/ewsg.py",
      "prior = jax.tree.map(lambda g: h * g / scale, g0)",
      "prior = jax.tree.map(lambda g: 0.0 * g, g0)", "EWSG's x omits the prior term", T_EWSG),
    M("ewsg-offset-ignored", "kernels/estimators/ewsg.py",
      "base = jax.tree.map(lambda k: k / scale, ctx.offset)", "base = None",
      "EWSG's default x ignores the momentum (x = 0)", T_EWSG),
    M("ewsg-batch-scale", "kernels/estimators/ewsg.py", "terms = b if by_batch else 1",
      "terms = 1", "batch grouping averages instead of summing the minibatch", T_EWSG),
    # -- coupling: replica exchange ---------------------------------------------------------
    M("swap-tau-squared", "kernels/coupling/rules.py", "a = 1.0 / tau[:-1] - 1.0 / tau[1:]",
      "a = 1.0 / tau[:-1] ** 2 - 1.0 / tau[1:] ** 2", "swap exponent with 1/τ²", T_REPLICA),
    M("swap-correction-doubled", "kernels/coupling/rules.py",
      "log_s = log_swap_ratio(a, u[:-1] - u[1:], ctx.variance, self.correction(ctx.t))",
      "log_s = log_swap_ratio(a, u[:-1] - u[1:], 2 * ctx.variance, self.correction(ctx.t))",
      "the variance correction doubled where it is called", T_REPLICA),
    M("swap-ratio-sign", "kernels/coupling/rules.py", "log_s = log_swap_ratio(a, u[:-1] - u[1:],",
      "log_s = log_swap_ratio(a, u[1:] - u[:-1],", "swap test with the energies reversed",
      T_REPLICA),
    M("swap-ratio-formula", "kernels/coupling/rules.py",
      "return a * (diff - a * variance / (2.0 * correction))",
      "return a * (diff - variance / (2.0 * correction))",
      "correction aσ̂²/2F instead of a²σ̂²/2F", T_REPLICA),
    M("swap-perm-one-way", "kernels/coupling/rules.py",
      "return jnp.arange(k) + jnp.pad(up, (0, 1)) - jnp.pad(up, (1, 0))",
      "return jnp.arange(k) + jnp.pad(up, (0, 1))", "an accepted swap copies instead of swaps",
      T_REPLICA),
    M("variance-ddof", "kernels/coupling/variance.py",
      "var = jnp.var(u[:, :-1] - u[:, 1:], axis=0, ddof=1)[:, None]",
      "var = jnp.var(u[:, :-1] - u[:, 1:], axis=0, ddof=0)[:, None]",
      "σ̃² with ddof = 0 (biased low)", T_REPLICA),
    M("variance-no-smoothing", "kernels/coupling/variance.py",
      "gamma = jnp.where(state.measured <= 1, 1.0, coupling.smoothing)",
      "gamma = coupling.smoothing",
      "the first σ̃² (at the common start) smoothed in instead of replaced", T_REPLICA),
    M("age-variance-no-smoothing", "kernels/coupling/variance.py",
      "cur = _smooth(state.variance[:, j], new, coupling.smoothing)",
      "cur = jnp.where(state.variance[:, j] < 0, new, state.variance[:, j])",
      "σ̂² per age frozen at its first measurement", T_REPLICA),
    # -- coupling: the control-variate regime warning (issue 36, item 3) ----------------------
    M("cv-warning-comparison", "kernels/coupling/variance.py",
      "if not np.any(ratio >= 1.0):", "if not np.any(ratio > 1.0):",
      "no warning when the CV σ̂² equals the plain one", T_CVW),
    M("cv-warning-unweighted", "kernels/coupling/variance.py",
      "plain_w = (w * plain).sum(axis=(0, 1)) / total", "plain_w = plain.mean(axis=(0, 1))",
      "the plain σ̂² averaged over all states, not where swaps happen", T_CVW),
    M("cv-plain-variance-is-cv", "kernels/coupling/energy.py",
      "return (plug_in(d), plug_in(x[:-1] - x[1:]),", "return (plug_in(d), plug_in(d),",
      "the plain energies' σ̃² taken from the control-variate differences", T_CVW),
    M("cv-plain-weight-sign", "kernels/coupling/variance.py",
      "log_s = log_swap_ratio(a, diff, jnp.maximum(var, 0.0), 1.0)",
      "log_s = log_swap_ratio(a, -diff, jnp.maximum(var, 0.0), 1.0)",
      "a plain swap's acceptance with the energies reversed", T_CVW),
    M("anchors-only-with-variance", "kernels/coupling/replica.py",
      "energy, n_ref = jax.lax.cond(t % self.energy.period == 0, refresh,",
      "energy, n_ref = jax.lax.cond(t % self.variance_period == 0, refresh,",
      "anchors refreshed on the variance period, not the cv_energy period", T_REPLICA),
    M("cooldown-ignored", "kernels/coupling/replica.py",
      "allowed = ~((self.cooldown > 0) & (state.last_swap == window))", "allowed = True",
      "cool-down never blocks a swap", T_REPLICA),
    M("adaptive-c-sign", "kernels/coupling/variance.py",
      "c_new = -cov / jnp.maximum(jnp.var(y, axis=0), 1e-30)",
      "c_new = cov / jnp.maximum(jnp.var(y, axis=0), 1e-30)",
      "adaptive coefficient with the wrong sign", T_REPLICA),
    M("cv-energy-control-sign", "kernels/coupling/energy.py",
      "y = scale * problem.batch_energy_sum(state.anchor, idx) - state.anchor_sum",
      "y = scale * problem.batch_energy_sum(state.anchor, idx) + state.anchor_sum",
      "control term not mean zero", T_REPLICA),
    M("cv-energy-coef-ignored", "kernels/coupling/energy.py",
      "return x + state.coef * y, 2 * idx.shape[0]",
      "return x - y, 2 * idx.shape[0]", "control-variate energy ignores the coefficient c",
      T_REPLICA),
    M("cv-diff-variance-scale", "kernels/coupling/energy.py",
      "plug_in = lambda v: scale * scale * n * jnp.var(v, axis=1, ddof=1)",
      "plug_in = lambda v: scale * n * jnp.var(v, axis=1, ddof=1)",
      "plug-in σ̃² scaled by wN/n instead of (wN/n)²", T_REPLICA),
    # -- coupling: the greedy rule (GD×LD) --------------------------------------------------
    M("greedy-threshold-sign", "kernels/coupling/rules.py",
      "accept = u[1] < u[0] - self.threshold", "accept = u[1] < u[0] + self.threshold",
      "GD×LD exchanges unless Y is worse by more than t0", T_OPT),
    M("greedy-direction", "kernels/coupling/rules.py", "accept = u[1] < u[0] - self.threshold",
      "accept = u[0] < u[1] - self.threshold", "GD×LD exchanges when X is better", T_OPT),
    M("greedy-copy-swaps", "kernels/coupling/rules.py",
      "moved = jnp.array([1, 1] if self.copy else [1, 0], jnp.int32)",
      "moved = jnp.array([1, 0], jnp.int32)", "nGD×LD swaps instead of copying", T_OPT),
    M("greedy-bound-ignored", "kernels/coupling/rules.py",
      "accept = accept & jnp.all(norms <= self.bound)", "accept = accept",
      "SGD×SGLD exchanges outside the bound M_v", T_OPT),
    M("box-reflect-period", "kernels/coupling/rules.py", "y = jnp.mod(x - lo, 2.0 * width)",
      "y = jnp.mod(x - lo, width)", "reflection folds with the wrong period", T_OPT),
    # -- objectives -------------------------------------------------------------------------
    M("rastrigin-cos-pi", "objectives.py",
      "return 10.0 * x.shape[-1] + jnp.sum(x ** 2 - 10.0 * jnp.cos(2.0 * jnp.pi * x))",
      "return 10.0 * x.shape[-1] + jnp.sum(x ** 2 - 10.0 * jnp.cos(jnp.pi * x))",
      "Rastrigin with cos(πx)", T_OPT),
    M("griewank-no-sqrt", "objectives.py",
      "return 1.0 + jnp.sum(x ** 2) / 4000.0 - jnp.prod(jnp.cos(x / jnp.sqrt(i)))",
      "return 1.0 + jnp.sum(x ** 2) / 4000.0 - jnp.prod(jnp.cos(x / i))",
      "Griewank with cos(x_i / i)", T_OPT),
    M("wells-norm", "objectives.py", "norm = 1.0 / (2.0 * jnp.pi * self.variance)",
      "norm = 1.0 / (2.0 * jnp.pi * jnp.sqrt(self.variance))",
      "well density normalised with the sd", T_OPT),
    M("kde-variance-as-sd", "objectives.py",
      "return -jnp.exp(-d2 / (2.0 * var)) / (2.0 * jnp.pi * var) + wells_regulariser(x)",
      "return -jnp.exp(-d2 / (2.0 * var ** 2)) / (2.0 * jnp.pi * var ** 2) + "
      "wells_regulariser(x)", "KDE kernel parameter read as a standard deviation", T_OPT),
    M("regulariser-side", "objectives.py",
      "return jnp.sum(jnp.where(x < -1.0, (x + 1.0) ** 2, 0.0)",
      "return jnp.sum(jnp.where(x < -2.0, (x + 1.0) ** 2, 0.0)",
      "regulariser starts at −2 instead of −1", T_OPT),
    # -- optimisation ---------------------------------------------------------------------
    M("minimize-best-keeps-worse", "run/optimize.py",
      "np.argmin(np.where(np.isnan(values), np.inf, values), axis=1)",
      "np.argmax(np.where(np.isnan(values), -np.inf, values), axis=1)",
      "best-so-far keeps the worst value", T_OPT),
    # -- reliability guards: each one removed is a run that loses or mixes draws silently --
    M("draws-of-another-run", "io/sinks.py", 'if header.get("run", "") != self.run:',
      "if False:", "a checkpoint resumes into another run's draws folder", T_PATHS),
    M("path-of-another-run", "io/lock.py", "if found and not overwrite:", "if False:",
      "a new run takes over a path holding another run's checkpoint", T_PATHS),
    M("lock-ignored", "io/lock.py", "if owner is not None and not self._stale(owner):",
      "if False:", "a live run's lock is taken over", T_PATHS),
    M("predict-probe-ignored", "io/checkpoint.py",
      '    if stored["shape"] != found["shape"]:\n        return f"shape',
      '    return None\n    if stored["shape"] != found["shape"]:\n        return f"shape',
      "resume accepts another predict of the same shape", T_PATHS),
    M("memory-unchecked", "run/memory.py", "if free is None or need <= MEMORY_WARN * free:",
      "if True:", "kept draws that cannot fit are compiled and run", T_GUARDS),
    M("no-draw-kept", "run/preflight.py", "if count == 0 and settings.num_draws:", "if False:",
      "a run that keeps none of its draws starts", T_GUARDS),
    M("run-length-ignored", "run/preflight.py",
      "length, steps = kernel.run_length, settings.num_steps",
      "length, steps = None, settings.num_steps",
      "a cyclical schedule built for another num_steps, silently", T_GUARDS),
    M("init-spread-unnamed", "run/preflight.py", 'hint = "" if not init_spread else (',
      'hint = "" if True else (', "a non-finite spread start blames init alone", T_GUARDS),
    M("like-order-unchecked", "run/snapshot.py",
      "if order != list(names) and sorted(order) == sorted(names):", "if False:",
      "like= with reordered names fills the state in the wrong order", T_GUARDS),
    M("run-error-bare", "run/host.py",
      "return run.failed(RunError, err) if cause is None else", "return err if cause is None else",
      "a block failing at run time loses the draws made", T_GUARDS),
    M("warmup-bare-interrupt", "tune/warmup.py",
      "raise interrupted(problem, at, passes) from None", "raise",
      "Ctrl-C in warmup is a bare KeyboardInterrupt", T_WARMUP_INT),
    M("guard-step-past-edge", "tune/stationary.py",
      "return h / step_size, pilots, spent, burn",
      "return 4.0 * h / step_size, pilots, spent, burn",
      "the network recipe's step twice past its stationary edge (a run that drifts)", T_NET),
    M("guard-no-margin", "tune/stationary.py", "return max(h / 2.0, floor), keep * thin,",
      "return max(h, floor), keep * thin,",
      "the guard returns the edge step itself, whose verdict is a coin flip", T_NET),
    M("minimize-one-block", "run/optimize.py",
      "    settings = Settings(steps, 0, every, seed, reps, \"threefry\", per_block,",
      "    per_block = steps // every\n"
      "    settings = Settings(steps, 0, every, seed, reps, \"threefry\", per_block,",
      "minimize runs as one block: Ctrl-C is answered at the end", T_OPT_INT),
]


def _copy_tree(dest: str) -> None:
    for part in ("src", "tests", "pyproject.toml"):
        src = os.path.join(ROOT, part)
        if os.path.isdir(src):
            shutil.copytree(src, os.path.join(dest, part),
                            ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy(src, dest)


def _apply(workdir: str, m: Mutant) -> None:
    path = os.path.join(workdir, "src", "sgmc", m.path)
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    count = text.count(m.old)
    if count != 1:
        raise SystemExit(f"mutant {m.id}: {m.old!r} occurs {count} times in {m.path} "
                         "(the list is out of date with the code)")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text.replace(m.old, m.new))


def _run(m: Mutant, timeout: float) -> tuple[Mutant, str, float, str]:
    """(mutant, "killed" | "survived" | "timeout", seconds, last output line)."""
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="sgmc-mutant-") as work:
        _copy_tree(work)
        _apply(work, m)
        env = dict(os.environ, PYTHONPATH=os.path.join(work, "src"), JAX_PLATFORMS="cpu",
                   PYTHONDONTWRITEBYTECODE="1")
        tests = list(dict.fromkeys(t for t in m.tests if os.path.exists(os.path.join(ROOT, t))))
        # One process per mutant (-n 0: the workers run mutants side by side), and the slow
        # tier's tests of the guarding files too (-m: a mutant they kill is killed).
        cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-rf", "-p", "no:cacheprovider",
               "-n", "0", "-m", "slow or not slow", *tests]
        try:
            proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True,
                                  timeout=timeout)
        except subprocess.TimeoutExpired:
            return m, "timeout", time.perf_counter() - t0, ""
    lines = proc.stdout.strip().splitlines() or [""]
    # The test that killed it (pytest's short summary), else the closing line.
    failed = [ln.split(" - ")[0][len("FAILED "):] for ln in lines if ln.startswith("FAILED ")]
    last = f"killed by {failed[0]}" if failed else lines[-1]
    status = "survived" if proc.returncode == 0 else "killed"
    if proc.returncode not in (0, 1):  # collection errors, crashes: the mutant broke import
        status = "killed"
    return m, status, time.perf_counter() - t0, last


def _check_sgmc_resolves_to_copy() -> None:
    """The mutated copy must shadow the editable install (PYTHONPATH precedes it)."""
    with tempfile.TemporaryDirectory() as work:
        os.makedirs(os.path.join(work, "sgmc"))
        with open(os.path.join(work, "sgmc", "__init__.py"), "w") as fh:
            fh.write("")
        out = subprocess.run([sys.executable, "-c", "import sgmc; print(sgmc.__file__)"],
                             env=dict(os.environ, PYTHONPATH=work), capture_output=True,
                             text=True, check=True).stdout
        if not out.startswith(work):
            raise SystemExit(f"PYTHONPATH does not shadow the installed sgmc ({out.strip()}): "
                             "mutants would not be tested")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-k", default="", help="only mutants whose id contains this (several: "
                    "comma-separated)")
    ap.add_argument("--jobs", type=int, default=2, help="mutants run at once (default 2)")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per mutant")
    ap.add_argument("--min-score", type=float, default=0.95)
    ap.add_argument("--list", action="store_true", help="list the mutants and exit")
    args = ap.parse_args(argv)
    keys = [k for k in args.k.split(",") if k] or [""]
    chosen = [m for m in MUTANTS if any(k in m.id for k in keys)]
    if args.list:
        for m in chosen:
            print(f"{m.id:<36} {m.path:<28} {m.what}")
        return 0
    _check_sgmc_resolves_to_copy()
    t0 = time.perf_counter()
    results = []
    with cf.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for m, status, secs, last in pool.map(lambda m: _run(m, args.timeout), chosen):
            results.append((m, status))
            print(f"{status:<9} {secs:6.0f} s  {m.id:<36} {last}", flush=True)
    # A mutant that makes the tests hang is caught (a run would never finish): counted killed.
    survivors = [m for m, s in results if s == "survived"]
    killed = len(results) - len(survivors)
    score = killed / max(len(results), 1)
    print(f"\nmutation score: {killed}/{len(results)} = {score:.1%} "
          f"({time.perf_counter() - t0:.0f} s)")
    if survivors:
        print("survivors (explain each in tests/README.md):")
        for m in survivors:
            print(f"  {m.id}: {m.what} ({m.path})")
    return 0 if score >= args.min_score else 1


if __name__ == "__main__":
    sys.exit(main())
