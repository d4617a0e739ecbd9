"""Linear sensitivity measures (rk.sensitivity) against the brute-force rules of
tests/reference/sensitivity.py.  Seed 004's worked example:
tests/seeds/test_seed004_sensitivity.py."""

import numpy as np
import pytest

import riskengine as rk
from riskengine.magnitude.sensitivity import PQ, Dominance, Max, PPercent, Sum
from tests.reference.sensitivity import brute_dominance, brute_pq


def random_cells(rng, count, integer=True):
    for _ in range(count):
        m = int(rng.integers(1, 8))
        if integer:
            x = rng.integers(0, 30, m) * rng.integers(1, 4)
        else:
            x = rng.exponential(10.0, m) ** rng.uniform(0.5, 2)
        yield x


@pytest.mark.parametrize("n, k", [(1, 50), (1, 75), (2, 80), (3, 90), (2, 87.5)])
def test_dominance_equals_brute_force(rng, n, k):
    # k / (100 - k) is exact in binary here, so S > 0 is decided exactly
    for x in random_cells(rng, 300):
        assert (Dominance(n, k).sensitivity(x) > 0) == brute_dominance(x, n, k), x


@pytest.mark.parametrize("p, q", [(20, 100), (25, 100), (10, 50), (20, 50), (12.5, 100)])
def test_pq_and_p_percent_equal_brute_force(rng, p, q):
    for x in random_cells(rng, 300):
        assert (PQ(p, q).sensitivity(x) > 0) == brute_pq(x, p, q), x
        if q == 100:
            assert (rk.sensitivity.p_percent(x, p) > 0) == brute_pq(x, p, 100), x


@pytest.mark.parametrize("rule, brute", [
    (Dominance(2, 70), lambda x: brute_dominance(x, 2, 70)),
    (PQ(15, 60), lambda x: brute_pq(x, 15, 60)),
    (PPercent(7), lambda x: brute_pq(x, 7, 100)),
])
def test_inexact_parameters_away_from_ties(rng, rule, brute):
    # weights such as 70/30 are not exact in binary: compare away from S = 0
    for x in random_cells(rng, 300, integer=False):
        s = rule.sensitivity(x)
        if abs(s) > 1e-9 * max(1.0, float(np.sum(x))):
            assert (s > 0) == brute(x), x


def _grow_tail(x, amount, first_tail_rank):
    """Add ``amount`` to the tail as new respondents no larger than the last non-tail one."""
    x = sorted(x, reverse=True)
    cap = x[first_tail_rank - 1]
    pieces = int(np.ceil(amount / cap)) + 1
    return x + [amount / pieces] * pieces


@pytest.mark.parametrize("rule, first_tail, brute", [
    (Dominance(3, 80), 3, lambda x: brute_dominance(x, 3, 80)),
    (Dominance(1, 75), 1, lambda x: brute_dominance(x, 1, 75)),
    (PQ(20, 50), 2, lambda x: brute_pq(x, 20, 50)),
    (PPercent(25), 2, lambda x: brute_pq(x, 25, 100)),
])
def test_protection_is_the_tail_growth_that_makes_the_cell_safe(rng, rule, first_tail, brute):
    # seed 004: P(X) = S(X)/|w_LAST| "measures the amount of additional suppression needed";
    # checked against the brute-force rule: growing the tail by P(1 + 1e-6) makes the cell
    # safe, by P(1 - 1e-6) leaves it sensitive
    checked = 0
    for x in random_cells(rng, 600, integer=False):
        xs = np.sort(x)[::-1]
        if xs.size < first_tail or xs[first_tail - 1] <= 0:
            continue
        if rule.protection(x) > 12 * xs[first_tail - 1]:
            continue  # keep the brute force small: at most ~13 new respondents
        P = rule.protection(x)
        assert P == pytest.approx(rule.sensitivity(x) / abs(rule.tail_weight))
        if P <= 1e-6:
            assert not brute(list(x)) or abs(rule.sensitivity(x)) < 1e-9
            continue
        assert brute(list(x))
        assert not brute(_grow_tail(list(x), P * (1 + 1e-6), first_tail))
        assert brute(_grow_tail(list(x), P * (1 - 1e-6), first_tail))
        checked += 1
    assert checked > 50


def test_combinations(rng):
    a, b = PPercent(20), Dominance(1, 70)
    for x in random_cells(rng, 100, integer=False):
        assert Sum(a, b).sensitivity(x) == pytest.approx(a.sensitivity(x) + b.sensitivity(x))
        assert Max(a, b).sensitivity(x) == max(a.sensitivity(x), b.sensitivity(x))
        assert Max(a, b).protection(x) == max(a.protection(x), b.protection(x))
        assert Sum(a, b).protection(x) == pytest.approx(
            (a.sensitivity(x) + b.sensitivity(x)) / abs(a.tail_weight + b.tail_weight))
        # Max is sensitive exactly when some rule is
        assert (Max(a, b).sensitivity(x) > 0) == (a.sensitivity(x) > 0 or b.sensitivity(x) > 0)


def test_degenerate_cells():
    assert PPercent(10).sensitivity([]) == 0.0          # empty cell: safe
    assert PPercent(10).sensitivity([7.0]) == 7.0       # single respondent: S = x1
    assert Dominance(2, 80).sensitivity([3.0, 2.0]) == 5.0
    assert PPercent(10).sensitivity([0.0, 0.0]) == 0.0


def test_bad_input():
    with pytest.raises(ValueError, match="nonnegative"):
        rk.sensitivity.p_percent([3, -1], 10)
    with pytest.raises(ValueError, match="finite"):
        rk.sensitivity.p_percent([3, np.nan], 10)
    with pytest.raises(TypeError, match="numeric"):
        rk.sensitivity.p_percent(["a"], 10)
    with pytest.raises(ValueError, match="k must be a percentage"):
        Dominance(2, 100)
    with pytest.raises(ValueError, match="n must be >= 1"):
        Dominance(0, 50)
    with pytest.raises(TypeError, match="n must be an integer"):
        Dominance(1.5, 50)
    with pytest.raises(ValueError, match="p must be > 0"):
        PPercent(0)
    with pytest.raises(ValueError, match="q must be a percentage"):
        PQ(10, 120)
    with pytest.raises(ValueError, match="at least two"):
        Sum(PPercent(10))
    with pytest.raises(TypeError, match="rule must be"):
        rk.sensitivity.protection([1, 2], "p%")
    with pytest.raises(TypeError, match="Contributions"):
        rk.sensitivity.assess(np.ones((2, 2)), PPercent(10))


def test_assess_matches_cell_by_cell(rng):
    n = 120
    data = {"r": rng.choice(["a", "b", "c"], n), "s": rng.choice(["x", "y", "z", "w"], n),
            "v": rng.exponential(10.0, n) ** 2}
    c = rk.contributions(data, dims=["r", "s"], value="v")
    for rule in (Dominance(2, 80), PQ(10, 50), Max(PPercent(10), Dominance(1, 60)),
                 Sum(PPercent(15), Dominance(2, 75))):
        ds = rk.sensitivity.assess(c, rule)
        assert ds.attrs["rule"] == rule.describe()
        S = rk.sensitivity.cell_vector(ds, "S", c.system)
        P = rk.sensitivity.cell_vector(ds, "protection", c.system)
        sens = rk.sensitivity.cell_vector(ds, "sensitive", c.system)
        for i in range(c.n_cells):
            assert S[i] == pytest.approx(rule.sensitivity(c.cell(i)), abs=1e-9)
            assert sens[i] == (S[i] > 0)
            want = rule.protection(c.cell(i)) if S[i] > 0 else 0.0
            assert P[i] == pytest.approx(want, abs=1e-9)
        assert set(ds.data_vars) >= {"S", "S_total_r", "S_total_s", "S_total",
                                     "sensitive_total_r", "protection_total"}
