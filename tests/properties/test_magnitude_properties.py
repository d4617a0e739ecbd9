"""Invariants of sensitivity measures and CTA (Hypothesis)."""

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import riskengine as rk
from riskengine.magnitude.sensitivity import PQ, Dominance, PPercent, Sum

SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

contribs = st.lists(st.floats(0, 1e4, allow_nan=False, allow_subnormal=False), max_size=8)
rules = st.sampled_from([Dominance(1, 70), Dominance(2, 85), PPercent(10), PQ(15, 60),
                         Sum(PPercent(20), Dominance(1, 60))])


@SETTINGS
@given(contribs, contribs, rules)
def test_linear_measures_are_subadditive(x, y, rule):
    # seed 004, "Linear sensitivity measures": nonincreasing weights make S subadditive,
    # S(X u Y) <= S(X) + S(Y) for disjoint cells: two safe cells never make an unsafe union
    w = rule.weights(np.arange(20))
    assert np.all(np.diff(w) <= 0)
    lhs = rule.sensitivity(x + y)
    assert lhs <= rule.sensitivity(x) + rule.sensitivity(y) + 1e-9 * (1 + sum(x) + sum(y))


@st.composite
def tables(draw):
    r, c = draw(st.integers(2, 4)), draw(st.integers(2, 4))
    vals = np.array(draw(st.lists(st.floats(0, 100, allow_subnormal=False), min_size=r * c,
                                  max_size=r * c))).reshape(r, c)
    vals = np.round(vals, 2)
    flags = np.array(draw(st.lists(st.booleans(), min_size=r * c, max_size=r * c))).reshape(r, c)
    sens = flags & (vals > 1)
    frac = draw(st.floats(0.05, 0.5))
    cap = draw(st.floats(0.1, 1.0))
    return vals, sens, frac, cap


@SETTINGS
@given(tables(), st.sampled_from(["milp", "ordering"]), st.sampled_from(["abs", "relative"]))
def test_cta_release_invariants(case, directions, objective):
    vals, sens, frac, cap = case
    t = rk.Table(vals, dims=("r", "c"), kind="magnitude")
    prot = np.where(sens, np.round(frac * vals, 3), 0.0)
    sens = sens & (prot > 0)
    prot = np.where(sens, prot, 0.0)
    try:
        res = rk.cta(t, sens, prot, cap * vals, objective=objective, directions=directions)
    except ValueError as exc:
        assert "infeasible" in str(exc)
        return
    scale = max(1.0, float(vals.max()))
    pub = np.asarray(res.release.published)
    assert pub.min() >= 0
    assert np.allclose(res.release.margins[("r",)], pub.sum(1), rtol=0, atol=1e-9 * scale)
    assert np.all(np.abs(pub - vals)[sens] >= prot[sens] - 1e-6 * scale)
    assert np.all(np.abs(pub - vals)[~sens] <= (cap * vals)[~sens] + 1e-6 * scale)
    assert rk.Release.from_json(res.release.to_json()) == res.release
