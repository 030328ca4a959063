"""EWSG: exponentially weighted stochastic gradients (Li, Wang, Zha & Tao, Alg. 1 and eq. 4).

Underdamped Langevin (EWSG paper eq. 3, explicit Euler–Maruyama θ_{k+1} = θ_k + h r_k,
r_{k+1} = r_k − (∇V(θ_k) + γ r_k)h + σ√h ξ: ``sghmc(..., integrator="explicit")``; the
semi-implicit ``"euler"`` form has the same momentum kernel, so the same weights; friction
D = γ and noise σ = √(2Dτ)): the momentum kick with a stochastic gradient N∇L_I has the
transition density of the full-gradient kick when the index I is drawn with (Thm. 2, eq. 4)

    p_i ∝ exp(−‖x + Σ_j a_j‖²/2 + ‖x + N a_i‖²/2),   a_i = √h w ∇L_i(θ_k)/σ,
    x = (r_{k+1} − r_k + hγ r_k)/(σ√h) + √h ∇U₀(θ_k)/σ,

(w the data weight; the exact prior term ∇U₀ is folded into x so that only the likelihood is
subsampled). The first term does not depend on i. Since r_{k+1} is not known before the
gradient is chosen, the practical algorithm (Alg. 1) uses a choice of x — by default the
paper's "momentum unchanged" reading r_{k+1} = r_k, x = √h γ r_k/σ (+ prior term) — and
draws I by M steps of a Metropolis chain with uniform proposals j, accepted with probability
min(1, exp(‖x + N a_j‖²/2 − ‖x + N a_i‖²/2)). The gradient used is ∇U₀ + w N ∇L_I.

For the splitting integrator the kick is p'' = p' − h∇̃ + σ√h ξ between two friction decays
c = e^{−Dh/2}; the same reading (p_{k+1} = p_k) gives x = (1/c − c) p_k/(σ√h), equal to the
Euler choice to first order in h; for "euler" and "explicit" (same kick) the offset is
hγ r_k. The dynamics describe their kick in the context — its noise scale σ√h, the kicked
variable before the kick (``ctx.drift``) and this "state unchanged" offset (``ctx.offset``)
— so that the estimator does not need to know the integrator; ``x="next_zero"`` reads
x = (−drift + h∇U₀)/(σ√h).

Overdamped Langevin (the paper's Sec. F variant, derived the same way): the step
θ_{k+1} = θ_k − h∇U + √(2hτ) ξ has density ∝ exp(−‖θ_{k+1} − θ_k + h∇U‖²/(4hτ)); with
x = (θ_{k+1} − θ_k + h∇U₀)/√(2hτ) and a_i = h w∇L_i/√(2hτ) the stochastic kernel matches the
full one when p_i ∝ exp(‖x + N a_i‖²/2) exactly as above. The "state unchanged" reading
θ_{k+1} = θ_k gives the default x = h∇U₀/√(2hτ).

Other choices of x compared in the paper: ``"zero"`` (x = 0), ``"one"`` (x = 1 in every
coordinate) and ``"next_zero"`` (r_{k+1} = 0: x = −(1 − hγ) r_k/(σ√h); for overdamped
dynamics θ_{k+1} = 0). A temperature τ > 0 is required (σ = 0 makes the weights singular).

With a preconditioner P = L Lᵀ (:mod:`sgmc.kernels.preconditioners`) the kick is isotropic in the
whitened coordinates (z = L⁻¹θ; the momentum q = Lᵀp), where the gradient enters as Lᵀ∇: the
same weights with a_i = c Lᵀ∇L_i and the prior term h Lᵀ∇U₀/σ√h, i.e. the norms above taken
in the kick noise's covariance.

Minibatches (b > 1), ``grouping="batch"`` (the default): the minibatch is one term of
V = Σ_B V_B — the paper's "n/b minibatches" reading (Sec. 5.1: "the number of minibatches n/b")
— so one chain over minibatches (b fresh uniform indices proposed and accepted together) with
a_B = √h w Σ_{i∈B}∇L_i/σ and the gradient (N/b)Σ_{i∈B}∇L_i: the paper's b = 1 derivation
(eq. 4–5) applied verbatim with minibatches as the data terms. It needs only summed minibatch
gradients (per-example gradients of a network are slow on CPU). ``grouping="slot"``: one
index chain per minibatch slot, each giving N∇L_I; the b estimates are averaged. The slot
reading is much more biased at large N: a slot chain with M = 1 keeps the larger of two values
‖x + N a_i‖, which at N = 10⁴ nearly always decides, biasing the kick (measured on EEG by
``sgmc reproduce ewsg-logistic``). For b = 1 the two groupings are the same chain. Each
chain starts from the driver's uniform minibatch draw at every step (Alg. 1 as printed, the
default), or persists in the estimator state across steps (``persistent=True``, Sec. 4.3's
reading). Cost: (M + 1) per-example gradients per slot per
step, counted.

EWSG + SVRG (the paper's App. G, not in our copy): the same weights applied to the
SVRG-corrected per-example terms t_i = ∇L_i(θ) − ∇L_i(w) + g/N (Σ_i t_i = Σ_i ∇L_i(θ)), i.e.
a_i = √h w t_i/σ and the gradient ∇U₀ + w N t_I.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from sgmc import _validate as check
from sgmc._pytree import pytree_dataclass, replace, static
from sgmc.contracts.estimator import SAMPLING_SCHEMES, Estimator
from sgmc.kernels.estimators.svrg import svrg
from sgmc.kernels.estimators.uniform import Uniform
from sgmc.rng import as_rng

__all__ = ["EWSG", "X_CHOICES", "EWSGState", "ewsg"]

X_CHOICES = ("default", "zero", "one", "next_zero")
GROUPINGS = ("slot", "batch")
#: Index chains of at most this many Metropolis steps are written out instead of looped.
UNROLLED_CHAIN = 4


class EWSGState(NamedTuple):
    idx: Any        # the slots' current indices (persistent mode; unused otherwise)
    control: Any    # SVRG snapshot state when combined with SVRG, else ()


def _sq_norm(tree) -> jax.Array:
    """Σ over leaves of the squared norm over all but the leading (slot) axis."""
    return sum(jnp.sum(x.reshape(x.shape[0], -1) ** 2, axis=1) for x in jax.tree.leaves(tree))


@pytree_dataclass
class EWSG(Estimator):
    """EWSG gradient estimator; see :func:`ewsg` and the module docstring."""

    chain_length: int = static(1)
    x: str = static("default")
    persistent: bool = static(False)
    grouping: str = static("batch")
    sampling: str = static("replacement")
    batch_size: int | None = static(None)
    control: Any = None  # an SVRG estimator whose corrected per-example terms are weighted

    needs_temperature = True
    needs_kick = True

    def with_batch_size(self, batch_size: int | None) -> EWSG:
        return replace(self, batch_size=batch_size)

    def noise_proxy(self):
        """Bounded by its uniform minibatches (or by its SVRG terms, with a control)."""
        return (Uniform(self.sampling) if self.control is None
                else self.control.with_batch_size(self.batch_size))

    def check(self, problem, position, num_chains: int) -> None:
        if not problem.has_data:
            raise ValueError("EWSG needs a problem with data")

    def init(self, problem, position, key):
        b = self.batch_size or 1
        control = () if self.control is None else self.control.init(problem, position, key)
        return EWSGState(jax.random.randint(key, (b,), 0, problem.data_rows, dtype=jnp.int32),
                         control)

    def _x(self, problem, point, g0, ctx):
        """x (one pytree, shared by all slots) and the factor c with a_i = c ∇L_i, given the
        exact-term gradient g0 = ∇U₀(θ), from the kick the dynamics describe in ``ctx``
        (:class:`~sgmc.contracts.estimator.Context`): x = (v' − drift + h∇U₀)/s for the
        reading v' of the kicked variable after the step."""
        h, scale = ctx.step_size, ctx.noise_scale
        if scale is None:
            raise ValueError("EWSG needs dynamics that describe their kick in the Context "
                             "(noise_scale, drift, offset): SGLD or SGHMC, not pSGLD")
        if self.x == "one":
            base = jax.tree.map(jnp.ones_like, point)
        elif self.x == "default" and ctx.offset is not None:  # "state unchanged"
            base = jax.tree.map(lambda k: k / scale, ctx.offset)
        elif self.x == "next_zero":                              # v' = 0
            base = jax.tree.map(lambda v: -v / scale, ctx.drift)
        else:  # "zero", or the default with a zero offset (overdamped: θ unchanged)
            base = None
        if ctx.preconditioner is not None:  # the kick's coordinates: Lᵀ∇U₀
            g0 = ctx.preconditioner.scale_t(g0)
        prior = jax.tree.map(lambda g: h * g / scale, g0)
        x = prior if base is None else jax.tree.map(jnp.add, prior, base)
        return x, h * problem.data_weight / scale

    def estimate(self, problem, state, point, batch, rng, ctx):
        if batch is None:
            raise ValueError("EWSG needs a minibatch (batch_size)")
        n_data, b = problem.data_rows, batch.shape[0]
        g0 = problem.exact_grad(point)
        x, c = self._x(problem, point, g0, ctx)

        control, n_snap = (), 0
        by_batch = self.grouping == "batch"
        if self.control is not None:
            control, n_snap = self.control.refresh(problem, state.control, point, ctx.t)

        # The terms the index chain weighs, with a leading slot axis: per-example gradients
        # (slots), or the minibatch mean as one term (batch; a summed gradient, no
        # per-example gradients needed). With SVRG: t_i = ∇L_i(θ) − ∇L_i(w) + g/N, which
        # sum to Σ_i ∇L_i(θ).
        def grads(idx):
            if by_batch:
                if self.control is None:
                    total = problem.batch_grad_sum(point, idx)
                else:
                    total = jax.tree.map(lambda at, aw, g: at - aw + b * g / n_data,
                                         problem.batch_grad_sum(point, idx),
                                         problem.batch_grad_sum(control.anchor, idx),
                                         control.anchor_grad)
                return jax.tree.map(lambda v: v[None] / b, total)
            if self.control is None:
                return problem.batch_grads(point, idx)
            chunk = problem.take(idx)
            return jax.tree.map(lambda at, aw, g: at - aw + g / n_data,
                                problem.chunk_grads(point, chunk),
                                problem.chunk_grads(control.anchor, chunk),
                                control.anchor_grad)

        pre = ctx.preconditioner
        if pre is not None and pre.kind != "identity":
            # The kick is isotropic in whitened coordinates: the gradient enters it as Lᵀ∇.
            whiten = jax.vmap(pre.scale_t)
        else:
            def whiten(g):
                return g

        def energy(g):  # ‖x + N a_i‖²/2 per slot, or ‖x + (N/b) Σ_B a_i‖²/2 for the batch
            return 0.5 * _sq_norm(jax.tree.map(lambda xi, gi: xi + n_data * c * gi, x,
                                               whiten(g)))

        start = state.idx if self.persistent else batch
        key = as_rng(rng).key()  # the index chain's draws are made inside its loop
        g_cur = grads(start)

        def mh(m, carry):
            idx, g, e = carry
            k_prop, k_acc = jax.random.split(jax.random.fold_in(key, m))
            prop = jax.random.randint(k_prop, (b,), 0, n_data, dtype=jnp.int32)
            g_prop = grads(prop)
            e_prop = energy(g_prop)
            u = jax.random.uniform(k_acc, (1,) if by_batch else (b,))
            accept = jnp.log(u) < e_prop - e
            pick = lambda new, old: jnp.where(
                accept.reshape(-1, *([1] * (new.ndim - 1))), new, old)
            return (jnp.where(accept, prop, idx), jax.tree.map(pick, g_prop, g),
                    jnp.where(accept, e_prop, e))

        carry = (start, g_cur, energy(g_cur))
        if self.chain_length <= UNROLLED_CHAIN:
            # Written out, not looped: on XLA:CPU a convolution's gradient inside a loop
            # runs 10–25× slower (jax-ml/jax#12868), and M is small.
            for m in range(self.chain_length):
                carry = mh(m, carry)
        else:
            carry = jax.lax.fori_loop(0, self.chain_length, mh, carry)
        idx, g, _ = carry
        scale = problem.batch_scale(b)
        terms = b if by_batch else 1  # data behind each entry of g's slot axis
        grad = jax.tree.map(lambda e, gs: e + scale * terms * gs.sum(0), g0, g)
        per_term = 1 if self.control is None else 2
        n = jnp.asarray((self.chain_length + 1) * b * per_term + n_snap, jnp.int32)
        return grad, EWSGState(idx if self.persistent else state.idx, control), n


def ewsg(chain_length: int = 1, x: str = "default", persistent: bool = False,
         grouping: str = "batch", sampling: str = "replacement",
         svrg_period: int | None = None) -> EWSG:
    """EWSG gradient estimator (Li et al., Alg. 1).

    Args:
        chain_length: M ≥ 1, Metropolis steps of the index chain per step.
        x: ``"default"`` (the paper's √h γ r/σ), ``"zero"``, ``"one"`` or ``"next_zero"``.
        persistent: keep each slot's index chain across steps instead of restarting it from
            the uniform minibatch draw (Alg. 1 as printed, the default).
        grouping: for batch size b > 1, ``"batch"`` (the default; the paper's n/b
            minibatches as the terms of V) treats a whole minibatch as one term of
            V = Σ_B V_B (proposal: b fresh uniform indices, accepted or rejected together,
            eq. 5's weight from (N/b) Σ_{i∈B} ∇L_i); ``"slot"`` runs one index chain per
            minibatch slot (each slot's estimate N∇L_I, averaged). Identical for b = 1.
        sampling: how the starting minibatch is drawn, ``"replacement"`` or ``"permutation"``.
        svrg_period: combine with SVRG (paper Sec. G): the weights act on the SVRG-corrected
            per-example terms ∇L_i(θ) − ∇L_i(w) + g/N, with a snapshot every ``svrg_period``
            steps (2 per-example gradients per term, plus N per snapshot).
    """
    control = None if svrg_period is None else svrg(svrg_period)
    return EWSG(check.integer("chain_length", chain_length, lo=1),
                check.choice("x", x, X_CHOICES), bool(persistent),
                check.choice("grouping", grouping, GROUPINGS),
                check.choice("sampling", sampling, SAMPLING_SCHEMES), None, control)
