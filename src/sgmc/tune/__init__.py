"""Tuning: :func:`sgmc.warmup` and the rules it applies.

* :mod:`~sgmc.tune.warmup` — the warm-up (mode, curvature, noise, step, self-check);
* :mod:`~sgmc.tune.rules` — the closed-form tuning rules (step size, friction, batch size);
* :mod:`~sgmc.tune.curvature`, :mod:`~sgmc.tune.laplace` — curvature at the mode and the
  preconditioner it gives;
* :mod:`~sgmc.tune.noise` — the gradient noise model; :mod:`~sgmc.tune.selfcheck` — the
  coupled-pilot self-check; :mod:`~sgmc.tune.report` — what a warm-up reports.
"""

from sgmc.tune import curvature, laplace, noise, report, rules, selfcheck, warmup

__all__ = ["curvature", "laplace", "noise", "report", "rules", "selfcheck", "warmup"]
