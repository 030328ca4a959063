"""The one verdict rule (sgmc.lab.experiments.verdict): holds only beyond 2 SE."""

import json
import math

import numpy as np
import pytest

from sgmc.lab.experiments import verdict as V


@pytest.mark.parametrize("effect, se, expected", [
    (0.005, 0.19 * math.sqrt(2), V.NOT_RESOLVED),   # the old demo's SVRG-HMC "yes"
    (2.01, 1.0, V.HOLDS), (2.0, 1.0, V.NOT_RESOLVED), (1.99, 1.0, V.NOT_RESOLVED),
    (-2.01, 1.0, V.NOT_HOLD), (-2.0, 1.0, V.NOT_RESOLVED),
    (0.1 * 3, 0.15, V.NOT_RESOLVED), (-0.1 * 3, 0.15, V.NOT_RESOLVED),  # 2 SE up to rounding
    (0.1, 0.0, V.NOT_RESOLVED), (-0.1, 0.0, V.NOT_RESOLVED), (0.0, 0.0, V.NOT_RESOLVED),
    (float("nan"), 1.0, V.NOT_RESOLVED), (1.0, float("nan"), V.NOT_RESOLVED),
])
def test_rule(effect, se, expected):
    c = V.judge("x beats y", effect, se, se_over="4 seeds")
    assert c.verdict == expected == c.outcome
    V.check_claim_dict(json.loads(json.dumps(c.to_dict())))


def test_out_of_regime_only_keeps_holds():
    held = V.judge("c", 3.0, 1.0, se_over="seeds", in_regime=False)
    assert held.verdict == V.HOLDS
    for effect in (0.5, -3.0):
        c = V.judge("c", effect, 1.0, se_over="seeds", in_regime=False,
                    deviations=["MLP on MNIST, not a ResNet on CIFAR"])
        assert c.verdict == V.NOT_REGIME and c.outcome != V.HOLDS
        d = c.to_dict()
        V.check_claim_dict(d)
        assert d["deviations"] == ["MLP on MNIST, not a ResNet on CIFAR"]
        assert "statistical outcome here" in "\n".join(c.lines())


def test_check_catches_a_holds_under_two_se():
    d = V.judge("c", 0.5, 1.0, se_over="seeds").to_dict()
    d["verdict"] = V.HOLDS
    with pytest.raises(AssertionError):
        V.check_claim_dict(d)


def test_standard_errors():
    m, se = V.mean_se([1.0, 2.0, 3.0, 4.0])
    assert m == 2.5 and se == pytest.approx(np.std([1, 2, 3, 4], ddof=1) / 2)
    m, se = V.paired([3.0, 5.0], [1.0, 2.0])
    assert m == 2.5 and se == pytest.approx(0.5)
    assert V.diff_se(3.0, 4.0) == 5.0
    r, se = V.ratio_se(4.0, 0.4, 2.0, 0.2)
    assert r == 2.0 and se == pytest.approx(2.0 * math.sqrt(0.02))
    # 0/n and n/n keep a nonzero SE (Laplace's p̃ = 1/(n + 2)).
    p, se = V.proportion(0, 20)
    assert p == 0.0 and se == pytest.approx(math.sqrt((1 / 22) * (21 / 22) / 20))
    p, se = V.proportion(10, 20)
    assert p == 0.5 and se == pytest.approx(math.sqrt(0.25 / 20))


def test_publish_prints_rule_and_returns_dicts(capsys):
    claims = [V.judge("A beats B", 3.0, 1.0, se_over="5 seeds", effect_text="acc(A) − acc(B)",
                      measured={"A": {"value": 0.9, "se": 0.01}}, paper={"A": 0.91})]
    out = V.publish(claims)
    text = capsys.readouterr().out
    assert "rule: holds if the effect" in text and "A beats B -> HOLDS" in text
    assert "acc(A) − acc(B) = 3 ± 1 (SE over 5 seeds)" in text
    assert out[0]["paper"] == {"A": 0.91} and out[0]["z"] == 3.0


def test_no_standard_error_is_not_resolved():
    """SE 0 is no standard error (one grid, one seed): the helper says "not resolved", and
    why, in a deviation; the svrg-hmc "larger steps" claims (concrete 0.22 ± 0) among them."""
    for effect in (0.22, 0.74, -0.3):
        c = V.judge("2nd tolerates larger steps", effect, 0.0, se_over="one grid")
        assert c.verdict == c.outcome == V.NOT_RESOLVED
        assert any(d.startswith(V.NO_SE) for d in c.deviations)
        V.check_claim_dict(json.loads(json.dumps(c.to_dict())))
    # a smoke run re-judges it the same way, without a second deviation
    (s,) = V.smoke([V.judge("c", 0.22, 0.0, se_over="one grid")], "2 steps")
    assert s.outcome == V.NOT_RESOLVED and s.verdict == V.NOT_REGIME
    assert sum(d.startswith(V.NO_SE) for d in s.deviations) == 1


def test_exact_effect_decides_by_its_sign():
    """With ``exact`` (why the effect has no sampling error), SE 0 decides by the sign."""
    why = "both sides are closed-form stability limits"
    for effect, expected in ((0.1, V.HOLDS), (-0.1, V.NOT_HOLD), (0.0, V.NOT_RESOLVED)):
        c = V.judge("c", effect, 0.0, se_over="exact formulas", exact=why)
        assert c.verdict == c.outcome == expected
        d = json.loads(json.dumps(c.to_dict()))
        assert d["exact"] == why
        V.check_claim_dict(d)


@pytest.mark.parametrize("se", [0.0, None, float("nan"), float("inf")])
def test_check_refuses_holds_without_standard_error(se):
    """check_claim_dict refuses a "holds" with SE 0, missing or not finite, naming the claim;
    it accepts the same claim when it states why the effect is exact."""
    d = V.judge("concrete: SVRG2nd-HMC tolerates larger steps than SVRG-HMC", 0.22, 1.0,
                se_over="4 chains").to_dict()
    d.update(verdict=V.HOLDS, outcome=V.HOLDS, se=se)
    if se is None:
        del d["se"]
    with pytest.raises(ValueError, match="concrete: SVRG2nd-HMC tolerates larger steps"):
        V.check_claim_dict(d)
    if se == 0.0:
        d["exact"] = "a difference of two exact formulas"
        V.check_claim_dict(d)


def test_svrg_hmc_larger_steps_with_se_zero_is_not_resolved():
    """The svrg-hmc "larger steps" claim is judged on the stability boundary replicated over
    seeds (issue 36): when every seed gives the same boundary ratio (SE 0) it reads "not
    resolved" with the deviation saying so; with ratios that differ it is judged."""
    from sgmc.lab.experiments import svrg_hmc as S

    def result(second, first):
        rec = lambda bs: [{"boundary": b, "censored": None, "probes": []} for b in bs]
        return {"task": "regression", "dataset": "concrete",
                "samplers": {"SVRG2nd-HMC": {"boundary": rec(second)},
                             "SVRG-HMC": {"boundary": rec(first)}}}

    (c,) = [c for c in S.judge_dataset(result([1.4] * 4, [1.2] * 4), S.FULL)
            if "SVRG2nd-HMC tolerates" in c.claim]
    assert c.se == 0 and c.effect > 0 and c.verdict == V.NOT_RESOLVED
    assert S.NO_SE_DEVIATION in c.deviations
    assert sum("no standard error" in d for d in c.deviations) == 1
    assert "owed" in S.NO_SE_DEVIATION
    V.check_claim_dict(c.to_dict())
    (c,) = [c for c in S.judge_dataset(result([1.4, 1.4, 1.7, 1.4], [1.2] * 4), S.FULL)
            if "SVRG2nd-HMC tolerates" in c.claim]
    assert c.se > 0 and S.NO_SE_DEVIATION not in c.deviations
    assert c.se_over.startswith("4 seeds")
