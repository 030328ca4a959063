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
    (0.1, 0.0, V.HOLDS), (-0.1, 0.0, V.NOT_HOLD), (0.0, 0.0, V.NOT_RESOLVED),
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
