"""Pieces of :mod:`.bnn_uci`: settings, data (stratified splits, the OOD inputs), the prior,
the Adam fits (MAP and deep-ensemble members) and the metrics of one set of predictions."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np
import optax

from sgmc import datasets, nn
from sgmc.metrics import classification_metrics, predictive_entropy

HIDDEN = 100
BATCH = 100
FRACTIONS = (0.6, 0.2, 0.2)
OOD_SCALE = 3.0       # UCI sets: OOD inputs ~ N(0, 3²) per standardised feature
OOD_ROWS = 1_000      # UCI sets: how many
DIGITS_OOD_CLASS = 9  # digits: trained without this class; its images are the OOD inputs


@dataclass(frozen=True)
class Settings:
    seeds: int = 5
    datasets: tuple[str, ...] = ("digits", "eeg", "diabetic_retinopathy")
    # Two temperatures: each costs a warm-up, whose network guard ran 100-400 s per case
    # here (2 loaded cores); (1, 0.3, 0.1) did not fit the budget.
    taus: tuple[float, ...] = (1.0, 0.1)
    chains: int = 4               # C, and the ensemble's size M
    steps: int = 2_000            # sampling steps after burn-in
    burn_in: int = 1_000          # used while warmup's report.burn_in is None
    thin: int = 10
    rows: int | None = None       # a training subset (smoke)
    warmup_kw: dict = field(default_factory=dict)   # extra sgmc.warmup arguments (smoke)
    adam_lr: float = 1e-3
    adam_check: int = 100         # convergence checked every this many Adam steps
    adam_tol: float = 1e-4        # ... stopped when U·τ/N fell by less than this (nats)
    adam_max: int = 20_000


# -------------------------------------------------------------------------------- prior
def prior():
    """``sgmc.nn.prior()``: weights N(0, c/fan_in) with c = ``sgmc.nn.DEFAULT_SCALE``,
    biases N(0, 1)."""
    return nn.prior(family="gaussian", scale=nn.DEFAULT_SCALE, bias_scale=1.0)


def prior_source() -> str:
    return f"sgmc.nn.prior(family='gaussian', scale={nn.DEFAULT_SCALE:g}, bias_scale=1)"


# -------------------------------------------------------------------------------- data
def _stratified(y: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """Index arrays (train, val, test) holding FRACTIONS of every class."""
    parts: list[list[np.ndarray]] = [[], [], []]
    for c in np.unique(y):
        idx = rng.permutation(np.flatnonzero(y == c))
        cuts = np.round(np.cumsum(FRACTIONS)[:2] * len(idx)).astype(int)
        for p, chunk in zip(parts, np.split(idx, cuts), strict=True):
            p.append(chunk)
    return tuple(rng.permutation(np.concatenate(p)) for p in parts)


def load_raw(name: str, root=None) -> tuple[np.ndarray, np.ndarray]:
    """Features and integer labels; FileNotFoundError when a UCI file is absent."""
    if name == "digits":
        from sklearn.datasets import load_digits

        d = load_digits()
        return d.data.astype(np.float64), d.target.astype(np.int64)
    ds = datasets.load(name, root)
    return ds.X, ds.y.astype(np.int64)


def prepare(name: str, seed: int, root=None, rows: int | None = None) -> dict:
    """The seed's stratified 60/20/20 split, standardised with the training mean and sd (a
    zero sd replaced by 1), and the OOD inputs: digits' held-out class (all its images, the
    class never trained on) or N(0, OOD_SCALE²) noise in standardised units."""
    X, y = load_raw(name, root)
    rng = np.random.default_rng(seed)
    ood_raw = None
    if name == "digits":
        ood_raw = X[y == DIGITS_OOD_CLASS]
        X, y = X[y != DIGITS_OOD_CLASS], y[y != DIGITS_OOD_CLASS]
    tr, va, te = _stratified(y, rng)
    if rows:
        tr, va, te = tr[:rows], va[:rows // 2], te[:rows // 2]
    mean, sd = X[tr].mean(0), X[tr].std(0)
    sd[sd == 0] = 1.0

    def std(a):
        return ((a - mean) / sd).astype(np.float32)

    k = int(y.max()) + 1
    if ood_raw is not None:
        ood, ood_what = std(ood_raw), f"the {len(ood_raw)} images of the held-out class " \
                                      f"{DIGITS_OOD_CLASS}"
    else:
        n_ood = OOD_ROWS if not rows else rows // 2
        ood = (OOD_SCALE * rng.standard_normal((n_ood, X.shape[1]))).astype(np.float32)
        ood_what = f"{n_ood} inputs ~ N(0, {OOD_SCALE:g}²) per standardised feature"
    return {"name": name, "K": k, "d": X.shape[1],
            "train": (std(X[tr]), y[tr]), "val": (std(X[va]), y[va]),
            "test": (std(X[te]), y[te]), "ood": ood, "ood_what": ood_what,
            "max_abs_test": float(np.abs(std(X[te])).max())}


def eval_inputs(data: dict) -> tuple[np.ndarray, tuple[slice, slice, slice]]:
    """Validation, test and OOD inputs in one array (one ``predict``), and their slices."""
    xs = [data["val"][0], data["test"][0], data["ood"]]
    ends = np.cumsum([len(x) for x in xs])
    return (np.concatenate(xs),
            (slice(0, ends[0]), slice(ends[0], ends[1]), slice(ends[1], ends[2])))


# -------------------------------------------------------------------------------- metrics
def scores(probs: np.ndarray, data: dict, parts) -> dict:
    """Test metrics, validation log-likelihood and OOD entropy of predictions on
    :func:`eval_inputs`."""
    probs = np.asarray(probs, np.float64)
    va, te, oo = parts
    m = classification_metrics(probs[te], data["test"][1])
    return {"accuracy": m["accuracy"], "log_likelihood": m["log_likelihood"],
            "brier": m["brier"], "ece": m["ece"], "ood_entropy": predictive_entropy(probs[oo]),
            "val_log_likelihood": classification_metrics(probs[va], data["val"][1])
            ["log_likelihood"]}


def average_scores(items: list[dict]) -> dict:
    return {k: float(np.mean([d[k] for d in items])) for k in items[0]}


# -------------------------------------------------------------------------------- Adam
class Adam:
    """Full-batch Adam on a posterior's energy U (tempered as the posterior is): one step
    costs N per-example gradients. One compiled program serves every member of a case."""

    def __init__(self, post, s: Settings):
        self.post, self.s, self.n = post, s, int(post.num_data)
        self.opt = optax.adam(s.adam_lr)
        vg = jax.value_and_grad(post.full_energy)
        opt = self.opt

        @jax.jit
        def chunk(params, state, k):
            def body(_, c):
                p, st, _e = c
                e, g = vg(p)
                u, st = opt.update(g, st, p)
                return optax.apply_updates(p, u), st, e
            return jax.lax.fori_loop(0, k, body, (params, state, jnp.float32(0.0)))

        self.chunk = chunk
        self.energy = jax.jit(post.full_energy)

    def fit(self, init, *, steps_mark: int | None = None, seconds_mark: float | None = None):
        """Adam from ``init`` until U·τ/N fell by less than ``adam_tol`` over ``adam_check``
        steps (the best energy seen; at most ``adam_max`` steps). Also returns the iterate at
        ``steps_mark`` steps (equal gradient evaluations) and at ``seconds_mark`` seconds
        (equal wall time); a mark not reached before convergence is the converged iterate."""
        s, tau = self.s, float(self.post.temperature)
        t0 = time.perf_counter()
        p, st = init, self.opt.init(init)
        step, best, snaps = 0, math.inf, {}
        while True:
            k = s.adam_check
            if steps_mark is not None and "evals" not in snaps and step < steps_mark:
                k = min(k, steps_mark - step)
            p, st, _ = self.chunk(p, st, k)
            step += k
            e = float(self.energy(p))
            secs = time.perf_counter() - t0
            if steps_mark is not None and step == steps_mark:
                snaps["evals"] = (p, step, secs)
            if seconds_mark is not None and "seconds" not in snaps and secs >= seconds_mark:
                snaps["seconds"] = (p, step, secs)
            if not math.isfinite(e):
                return {"ok": False, "steps": step, "seconds": secs}
            done = (best - e) * tau / self.n < s.adam_tol or step >= s.adam_max
            best = min(best, e)
            if done:
                break
        final = (p, step, secs)
        out = {"ok": True, "final": final, "energy": best, "evals_per_step": self.n}
        for key in ("evals", "seconds"):
            out[key] = snaps.get(key, final)
        return out


def one_draw_probs(net, final_state, X) -> list[np.ndarray]:
    """Each chain's last state (a posterior draw) predicted on X."""
    pos = final_state.position
    c = jax.tree.leaves(pos)[0].shape[0]
    return [np.asarray(net.predict(jax.tree.map(lambda a, i=i: a[i], pos), X))
            for i in range(c)]
