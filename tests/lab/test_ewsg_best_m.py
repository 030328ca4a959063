"""The best index-chain length M against n (ewsg-gaussian, Fig. 1d–1h; issue 36, item 2): the
shift of log2(best M) gets its standard error from independent replications, never SE = 0."""

import math

import pytest

from sgmc.lab.experiments import ewsg_best_m as bm
from sgmc.lab.experiments import verdict as V


def _rows(best: int, ms=(1, 2, 4, 8)) -> dict:
    return {m: 0.1 + abs(math.log2(m) - math.log2(best)) for m in ms}


def test_best_log2m_is_the_argmin():
    assert bm.best_log2m({1: 0.3, 2: 0.1, 4: 0.2}) == 1.0


def test_replications_rerun_both_ends_on_new_data_and_chains(monkeypatch):
    calls = []

    def fake(n, seed, chain_seed, ms, chains, passes):
        calls.append((n, seed, chain_seed))
        return _rows(8 if n == 100 else (1, 2, 4)[seed % 3], ms)

    monkeypatch.setattr(bm, "m_sweep", fake)
    main = {20: _rows(2), 50: _rows(4), 100: _rows(8)}
    reps = bm.replicate_shifts(main, seed=0, chains=10, passes=1, replications=4)
    assert [r["shift"] for r in reps] == [2.0, 2.0, 1.0, 3.0]   # r = 0 is the main sweep
    assert sorted({c[0] for c in calls}) == [20, 100] and len(calls) == 6
    assert len({c[2] for c in calls if c[0] == 20}) == 3         # fresh chains each time
    assert {c[1] for c in calls} == {1, 2, 3}                    # fresh data each time


def test_claim_has_a_real_standard_error():
    main = {20: _rows(2), 100: _rows(8)}
    varied = [{"shift": s} for s in (2.0, 3.0, 2.0, 3.0, 2.0, 3.0)]
    c = bm.best_m_claim(main, varied)
    assert c.effect == pytest.approx(2.5) and c.se == pytest.approx(V.mean_se([2, 3] * 3)[1])
    assert c.verdict == V.HOLDS and "6 replications" in c.se_over
    V.check_claim_dict(c.to_dict())
    # Replications that all agree give SE 0: no evidence, not resolved.
    same = bm.best_m_claim(main, [{"shift": 2.0}] * 6)
    assert same.se == 0 and same.verdict == V.NOT_RESOLVED
    # One n only (quick): nothing to measure, outside the paper's regime.
    one = bm.best_m_claim({20: _rows(2)}, [])
    assert math.isnan(one.effect) and one.verdict == V.NOT_REGIME


def test_failing_samplers_put_the_claim_outside_the_regime():
    main = {20: _rows(2), 100: {m: 17.0 + v for m, v in _rows(8).items()}}
    c = bm.best_m_claim(main, [{"shift": s} for s in (2.0, 1.0, 3.0)])
    assert any("does not sample accurately" in d for d in c.deviations)
    assert c.verdict in (V.HOLDS, V.NOT_REGIME)
