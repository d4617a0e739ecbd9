"""rk.suppress: every pattern protects every sensitive cell (independent audit,
tests/reference/intervals.py), the MILP is optimal (brute force over all patterns on small
tables, tests/reference/suppression.py).  Seeds 000 and 004: tests/seeds/."""

import numpy as np
import pytest
import xarray as xr

import riskengine as rk
from riskengine.magnitude.csp import heuristic as H
from riskengine.magnitude.csp.optimal import optimal, optimal_explicit
from tests.magnitude.suppression_cases import capped, csp_problem, random_case
from tests.reference.intervals import (
    independently_protected,
    reference_intervals,
    sums_2d,
    sums_3d,
    sums_groups,
)
from tests.reference.suppression import brute_force_optimum

TOL = 1e-6


def pattern(rel):
    return np.isnan(np.asarray(rel.published, float))


@pytest.mark.parametrize("method", ["heuristic", "optimal"])
@pytest.mark.parametrize("cost", ["value", "count"])
@pytest.mark.parametrize("case", range(4))
def test_2d_patterns_protect(method, cost, case, rng):
    rng = np.random.default_rng(100 + case)
    shape = tuple(rng.integers(3, 6, 2))
    x, sens, prot = random_case(rng, shape, int(rng.integers(1, 4)), zeros=0.1 * (case % 2))
    rel = rk.suppress(rk.Table(x, dims=("r", "c")), sens, prot, method=method, cost=cost)
    supp = pattern(rel)
    assert (supp[sens]).all()
    assert not supp[(x == 0) & ~sens].any()         # zeros are never complements
    assert independently_protected(x, supp, sens, prot, prot, sums_2d(x))
    assert rel.info["n_suppressed"] == int(supp.sum())
    assert rk.Release.from_json(rel.to_json()) == rel


@pytest.mark.parametrize("method", ["heuristic", "optimal"])
def test_3d_patterns_protect(method, rng):
    for _ in range(2):
        shape = (3, 3, 2)
        x, sens, prot = random_case(rng, shape, 2)
        prot = capped(x, prot, ("a", "b", "c"))
        rel = rk.suppress(rk.Table(x, dims=("a", "b", "c")), sens, prot, method=method)
        assert independently_protected(x, pattern(rel), sens, prot, prot, sums_3d(x))


@pytest.mark.parametrize("case", [case if case < 5 else pytest.param(case, marks=pytest.mark.slow)
                                  for case in range(8)])
def test_heuristic_pattern_is_minimal(case):
    # the clean-up leaves no complementary cell that could be published again: without
    # any one of them some sensitive cell's independent LP interval reaches less than
    # its protection (tight within the clean-up's margin 1e-6 x protection counts as
    # reached: the clean-up keeps such a cell)
    rng = np.random.default_rng(700 + case)
    shape = (5, 6) if case < 5 else (4, 3, 3)
    dims = ("a", "b", "c")[: len(shape)]
    sums = sums_2d if len(shape) == 2 else sums_3d
    x, sens, prot = random_case(rng, shape, 3 + case % 3)
    prot = capped(x, prot, dims) if len(shape) == 3 else prot
    supp = pattern(rk.suppress(rk.Table(x, dims=dims), sens, prot, method="heuristic"))
    assert independently_protected(x, supp, sens, prot, prot, sums(x))
    comps = list(zip(*np.nonzero(supp & ~sens)))
    assert comps                        # every case here needs complements
    for c in comps:
        trial = supp.copy()
        trial[c] = False
        lo, hi = reference_intervals(x, trial, sums(x), only=sens)
        need = prot[sens] * (1 + 1e-6) + TOL
        assert ((x[sens] - lo[sens] < need) | (hi[sens] - x[sens] < need)).any(), c


@pytest.mark.parametrize("method", ["heuristic", "optimal"])
def test_subtotal_patterns_protect(method, rng):
    parts = [[0, 1], [2, 3, 4]]
    for _ in range(2):
        x, sens, prot = random_case(rng, (5, 4), 2)
        rel = rk.suppress(rk.Table(x, dims=("v", "w")), sens, prot, method=method,
                          groups={"v": parts})
        assert rel.groups == {"v": ((0, 1), (2, 3, 4))}
        assert np.allclose(rel.subtotals[("v", "w")], [x[:2].sum(0), x[2:].sum(0)])
        assert independently_protected(x, pattern(rel), sens, prot, prot,
                                       sums_groups(x, parts))
        back = rk.Release.from_json(rel.to_json())
        assert back == rel and back.groups == rel.groups


@pytest.mark.parametrize("cost", ["value", "count"])
@pytest.mark.parametrize("case", range(3))
def test_optimal_matches_brute_force(cost, case):
    rng = np.random.default_rng(7 + case)
    x, sens, prot = random_case(rng, (3, 3), 1 + case % 2)
    rel = rk.suppress(x, sens, prot, method="optimal", cost=cost)
    w = x if cost == "value" else np.ones_like(x)
    best = brute_force_optimum(x, sens, prot, prot, w, sums_2d(x))
    got = w[pattern(rel)].sum()
    assert abs(got - best) < 1e-6
    heur = rk.suppress(x, sens, prot, method="heuristic", cost=cost)
    assert w[pattern(heur)].sum() >= best - 1e-6


@pytest.mark.parametrize("case", range(6))
def test_ground_node_structures_match_brute_force(case):
    # structures whose network needs a ground node (a cell in one equation only): a
    # 1-D table with its total and a 2-D table with row totals only
    rng = np.random.default_rng(60 + case)
    if case % 2 == 0:
        x, sens, prot = random_case(rng, (int(rng.integers(3, 7)),), 1 + case % 3)
        t = rk.Table(x, dims=("v",))
        sums = [(np.ones(x.shape, bool), x.sum())]
    else:
        x, sens, prot = random_case(rng, (3, 4), 1 + case % 3)
        t = rk.Table(x, dims=("v", "w"), margins=[("v",)])
        sums = [r for r in sums_2d(x) if r[0].sum() == x.shape[1]]      # rows only
    best = brute_force_optimum(x, sens, prot, prot, x, sums)
    for method in ("heuristic", "optimal"):
        rel = rk.suppress(t, sens, prot, method=method)
        supp = pattern(rel)
        assert independently_protected(x, supp, sens, prot, prot, sums)
        if method == "optimal":
            assert rel.info["status"] == "optimal"
            assert abs(x[supp].sum() - best) < 1e-6
        else:
            assert x[supp].sum() >= best - 1e-6


def test_same_input_same_pattern(rng):
    x, sens, prot = random_case(rng, (8, 7), 6)
    t = rk.Table(x, dims=("r", "c"))
    a = rk.suppress(t, sens, prot)
    b = rk.suppress(t, sens, prot)
    c = rk.suppress(xr.DataArray(x, dims=("r", "c")), xr.DataArray(sens, dims=("r", "c")),
                    xr.DataArray(prot, dims=("r", "c")))
    assert a == b
    assert np.array_equal(pattern(a), pattern(c))
    # ties: a table of equal cells has many optimal patterns; the result is stable
    flat = np.full((5, 5), 10.0)
    s = np.zeros((5, 5), bool)
    s[2, 2] = True
    p1 = pattern(rk.suppress(flat, s, np.full((5, 5), 3.0)))
    p2 = pattern(rk.suppress(flat, s, np.full((5, 5), 3.0)))
    assert np.array_equal(p1, p2) and int(p1.sum()) == 4


def test_asymmetric_protection_and_decimals():
    x = np.array([[0.15, 2.2, 3.35], [1.1, 0.05, 4.4], [2.25, 1.3, 0.1]])
    sens = np.zeros((3, 3), bool)
    sens[0, 0] = True
    lo, hi = np.full((3, 3), 0.1), np.full((3, 3), 0.9)
    rel = rk.suppress(x, sens, (lo, hi))
    assert rel.kind == "magnitude"
    assert independently_protected(x, pattern(rel), sens, lo, hi, sums_2d(x))
    a = rk.audit(rel, sens, (lo, hi), table=x)
    assert a.attrs["n_under_protected"] == 0


def test_suppress_errors():
    x = np.array([[5.0, 1.0], [2.0, 3.0]])
    sens = np.array([[True, False], [False, False]])
    with pytest.raises(ValueError, match="unknown method"):
        rk.suppress(x, sens, x, method="magic")
    with pytest.raises(ValueError, match="unknown cost"):
        rk.suppress(x, sens, x, cost="money")
    with pytest.raises(ValueError, match="lower protection"):
        rk.suppress(x, sens, x + 1)
    with pytest.raises(ValueError, match="shape"):
        rk.suppress(x, np.ones((3, 3), bool), x)
    with pytest.raises(ValueError, match="cannot be protected"):
        # upper protection 10 on cell (0, 0): its row total is 6, so no table puts it at 15
        rk.suppress(x, sens, (np.zeros((2, 2)), np.full((2, 2), 10.0)))
    with pytest.raises(TypeError, match="suppress_zeros"):
        rk.CellSuppression(suppress_zeros=1)


def test_mechanism_round_trip_and_registry():
    m = rk.CellSuppression(method="optimal", cost="count")
    from riskengine.mechanisms import mechanism_from_dict
    assert mechanism_from_dict(m.to_dict()).to_dict() == m.to_dict()
    rel = rk.suppress(np.array([[5, 1, 4], [2, 3, 6], [7, 7, 7]]),
                      np.array([[0, 1, 0], [0, 0, 0], [0, 0, 0]], bool), np.ones((3, 3)))
    assert rel.kind == "count"
    d = rel.to_dict()
    assert "groups" not in d and "subtotals" not in d      # old format, no new fields
    assert rk.Release.from_json(rel.to_json()) == rel


@pytest.mark.parametrize("case", range(8))
def test_row_generation_matches_explicit_milp(case):
    # two formulations of the same optimum: the row-generation solver used by
    # rk.suppress and one explicit MILP with a deviation vector per protection task
    # (2-D tables by flows and, cases 5 and 7, by LPs)
    rng = np.random.default_rng(300 + case)
    shape = (4, 5) if case % 2 else (3, 3, 2)
    x, sens, prot = random_case(rng, shape, 2 + case % 2)
    dims = ("a", "b", "c")[: len(shape)]
    prot = capped(x, prot, dims)
    prob = csp_problem(x, sens, prot, prot, dims, suppress_totals=case in (4, 5, 6),
                       route="lp" if case in (5, 7) else "auto")
    assert (prob.net is not None) == (len(shape) == 2 and case not in (5, 7))
    heur = H.cleanup(prob, H.heuristic(prob))
    a, info = optimal(prob, heur)
    b = optimal_explicit(prob)
    assert info["status"] == "optimal" and info["gap"] == 0.0
    assert abs(prob.w[a].sum() - prob.w[b].sum()) < 1e-6 * prob.w.sum()
    assert prob.w[heur].sum() >= prob.w[a].sum() - 1e-9


@pytest.mark.slow
def test_time_limit_returns_the_best_protecting_pattern_with_its_gap():
    # a 3-D table whose optimum takes far longer than the limit: the call returns the
    # best audited pattern with a proven lower bound (the limit covers the whole call)
    rng = np.random.default_rng(77)
    shape, dims = (8, 6, 4), ("a", "b", "c")
    x, sens, prot = random_case(rng, shape, 30)
    prot = capped(x, prot, dims)
    t = rk.Table(x, dims=dims)
    heur = rk.suppress(t, sens, prot, method="heuristic")
    rel = rk.suppress(t, sens, prot, method="optimal", time_limit=1.0)
    info = rel.info
    assert info["status"] in ("optimal", "time_limit")
    cost = info["value_suppressed"]
    assert info["lower_bound"] <= cost * (1 + 1e-6)       # costs carry a 1e-7 tie-break
    assert cost <= heur.info["value_suppressed"] * (1 + 1e-9)       # never worse
    if info["status"] == "time_limit":
        assert info["gap"] == pytest.approx((cost - info["lower_bound"]) / cost, rel=1e-6)
    else:
        assert info["gap"] == 0.0
    assert independently_protected(x, pattern(rel), sens, prot, prot, sums_3d(x))
    for bad in (0, -1.0, np.nan, np.inf):
        with pytest.raises(ValueError, match="time_limit"):
            rk.suppress(t, sens, prot, method="optimal", time_limit=bad)
