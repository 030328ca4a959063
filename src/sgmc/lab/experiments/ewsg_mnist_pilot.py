"""Step sizes of the ``ewsg-mnist`` MLP rows, chosen on held-out training images.

The EWSG paper's MNIST settings (Sec. 5.3: γ = 0.1, h = 4·10⁻³ EWSG / 2·10⁻³ SGHMC, SGLD
10⁻⁷, pSGLD 10⁻⁴) are in its own parametrisation; with ours (U the summed negative
log-posterior, unit mass) they do not train, so every sampler's setting is chosen here: each
setting of :data:`GRID` (the paper's included) runs for ``passes`` data passes from the
run's starting point on the first 60,000 − ``val`` training images (so that U has nearly the
full run's scale), and is scored by the accuracy, on the last ``val`` training images, of
the model average of the draws of its last half; the best finite score wins. The test set is
never looked at. SGHMC and EWSG are tuned separately (the paper gives EWSG twice SGHMC's
step) and run the paper's explicit integrator (eq. 3), as in the full run.
"""

from __future__ import annotations

import math

import jax
import numpy as np

from sgmc import ewsg, metrics, psgld, sample, sghmc, sgld
from sgmc.errors import DivergenceError

BATCH = 100
#: Data passes each setting runs in the pilot.
PASSES = 2.0
#: name -> ((h, γ), ...): the settings tried (γ None for the first-order samplers). The
#: paper's setting is the first of each.
GRID = {
    "SGLD": ((1e-7, None), (3e-6, None), (1e-5, None), (3e-5, None)),
    "pSGLD": ((1e-4, None), (1e-7, None), (1e-6, None), (1e-5, None)),
    "SGHMC": ((2e-3, 0.1), (1e-4, 1.0), (3e-4, 1.0), (1e-3, 1.0), (1e-4, 10.0),
              (3e-4, 10.0), (1e-3, 10.0)),
    "EWSG": ((4e-3, 0.1), (1e-4, 1.0), (3e-4, 1.0), (1e-3, 1.0), (1e-4, 10.0),
             (3e-4, 10.0), (1e-3, 10.0)),
}
#: What the full run's pilot chose on 2026-11-27 (docs/experiments.md, ewsg-mnist); the quick
#: and smoke runs, too short to tune, use it.
CHOSEN = {"SGLD": (1e-5, None), "pSGLD": (1e-7, None), "SGHMC": (3e-4, 10.0),
          "EWSG": (3e-4, 10.0)}


def sampler(name: str, h: float, friction: float | None, integrator: str = "explicit"):
    """(sampler, minibatch gradients per step) for one setting of the MLP or CNN rows."""
    if name == "SGLD":
        return sgld(h, batch_size=BATCH), 1
    if name == "pSGLD":
        return psgld(h, batch_size=BATCH), 1
    est = {"estimator": ewsg()} if name == "EWSG" else {}
    return (sghmc(h, friction=friction, batch_size=BATCH, integrator=integrator, **est),
            2 if name == "EWSG" else 1)


def label(h: float, friction: float | None) -> str:
    return f"h={h:g}" + ("" if friction is None else f" γ={friction:g}")


def choose(post, init, X_val, y_val, passes: float = PASSES, seed: int = 0,
           grid: dict | None = None, draws: int = 8) -> dict:
    """Run every setting of ``grid`` (default :data:`GRID`) on ``post`` (the training part)
    for ``passes`` data passes from ``init``, ``draws`` draws evenly spaced, and score each by
    the validation accuracy of the model average of the last half of its draws. Returns
    ``{"chosen": {name: (h, γ)}, "accuracy": {name: {label: score}}, ...}``; a setting that
    diverges scores NaN and is never chosen."""
    n = int(post.num_data)
    y_val = np.asarray(y_val)
    scores, chosen = {}, {}
    for name, settings in (GRID if grid is None else grid).items():
        scores[name] = {}
        for h, g in settings:
            smp, per = sampler(name, h, g)
            thin = max(1, round(passes * n / (BATCH * per) / draws))
            try:
                res = sample(post, smp, init, num_steps=thin * draws, thin=thin,
                             seed=seed + 1, progress=False)
            except DivergenceError:
                acc = math.nan
            else:
                last = jax.tree.map(lambda a: a[0, draws // 2:], res.samples)
                probs = metrics.predictions(post.loglik.predict, last, X_val)
                acc = metrics.classification_metrics(np.mean(probs, axis=0),
                                                     y_val)["accuracy"]
            scores[name][label(h, g)] = acc
            print(f"pilot {name} {label(h, g)}: validation accuracy {acc:.4f}", flush=True)
        finite = [(s, hg) for hg, s in zip(settings, scores[name].values(), strict=True)
                  if np.isfinite(s)]
        chosen[name] = max(finite, key=lambda t: t[0])[1] if finite else settings[0]
    return {"chosen": chosen, "accuracy": scores, "passes": passes,
            "train_images": n, "validation_images": int(y_val.size)}
