"""Controlled tabular adjustment (rk.cta) against an independent exact reference.

The reference (tests/reference/cta.py) enumerates the 2^s down/up patterns of the s
sensitive cells and solves each as an LP in the plain adjustment y: the best pattern is
the MILP optimum.
"""

import numpy as np
import pytest

import riskengine as rk
from riskengine.magnitude.cta_milp import cta_stats
from riskengine.tabular import tabular_system
from tests.reference.cta import cta_optimum


def random_case(rng, dims=("r", "c"), shape=None, decimal=False, zeros=True):
    shape = shape or tuple(int(k) for k in rng.integers(2, 4, len(dims)))
    vals = rng.integers(0, 40, shape).astype(float)
    if decimal:
        vals = vals + np.round(rng.random(shape), 3)
    if zeros:
        vals[rng.random(shape) < 0.15] = 0.0
    t = rk.Table(vals, dims=dims, kind="magnitude")
    sens = (rng.random(shape) < 0.3) & (vals > 0)
    if not sens.any():
        sens.flat[int(np.argmax(vals))] = True
    prot = np.where(sens, np.round(rng.uniform(0.1, 0.6, shape) * np.maximum(vals, 1), 2), 0.0)
    cap = np.round(rng.uniform(0.2, 0.8) * vals, 3)
    return t, sens, prot, cap


def _vectors(res, t, sens, prot, cap):
    s = res.system
    return (s.vector(t.values).astype(float),
            np.r_[sens.ravel(), np.zeros(s.n_var - sens.size, bool)],
            np.r_[prot.ravel(), np.zeros(s.n_var - sens.size)], s.vector(cap).astype(float))


def check_feasible(res, t, sens, prot, cap, tol=1e-6):
    a, sv, pv, ev = _vectors(res, t, sens, prot, cap)
    y = res.y
    scale = max(1.0, float(np.abs(a).max()))
    adj = a + y
    assert np.abs(res.system.A @ adj).max() <= 1e-9 * scale          # additive
    assert adj.min() >= -1e-9 * scale                                   # nonnegative
    # protected: to rounding (the MILP's directions are re-solved as an exact LP, so the
    # integrality tolerance of HiGHS, 1e-6, does not shave the protection)
    assert np.all(np.abs(y[sv]) >= pv[sv] - 1e-9 * scale)
    assert np.all(np.abs(y[~sv]) <= ev[~sv] + tol * scale)             # capacities
    rel = res.release
    assert np.allclose(rel.published, adj[: res.system.n_interior].reshape(t.shape))
    for b in res.system.blocks[1:]:
        assert np.allclose(rel.margins[b.keep], adj[b.slice].reshape(b.shape))


@pytest.mark.parametrize("objective", ["abs", "relative"])
def test_milp_is_optimal_against_pattern_enumeration(rng, objective):
    solved = heuristic = 0
    for trial in range(14):
        t, sens, prot, cap = random_case(rng, decimal=trial % 2 == 1)
        try:
            res = rk.cta(t, sens, prot, cap, objective=objective)
        except ValueError as exc:
            assert "infeasible" in str(exc)
            res = None
        s = tabular_system(t.dims, t.shape, t.margins)
        a = s.vector(t.values).astype(float)
        sv = np.r_[sens.ravel(), np.zeros(s.n_var - sens.size, bool)]
        pv = np.r_[prot.ravel(), np.zeros(s.n_var - sens.size)]
        ev = s.vector(cap).astype(float)
        big = pv.sum() + ev.sum()
        u = np.where(sv, pv + big, 0.0)
        pos = a[a > 0]
        w = np.ones(a.size) if objective == "abs" else 1 / np.maximum(a, pos.min())
        ref = cta_optimum(a, s.A, sv, pv, ev, u, w)
        if res is None:
            assert ref is None
            continue
        assert ref is not None
        assert res.status == "optimal" and res.gap <= 1e-9
        assert res.objective == pytest.approx(ref, rel=1e-6, abs=1e-6)
        check_feasible(res, t, sens, prot, cap)
        solved += 1
        # the ordering heuristic is feasible (when it succeeds) and never better
        try:
            heur = rk.cta(t, sens, prot, cap, objective=objective, directions="ordering")
        except ValueError:
            continue
        check_feasible(heur, t, sens, prot, cap)
        assert heur.objective >= res.objective - 1e-6 * max(1.0, res.objective)
        heuristic += 1
    assert solved >= 8 and heuristic >= 4, (solved, heuristic)


def test_preserve_constraints_hold_and_match_reference(rng):
    checked = 0
    for _ in range(12):
        t, sens, prot, cap = random_case(rng, zeros=False)
        cap = 0.9 * t.values
        s = tabular_system(t.dims, t.shape, t.margins)
        a = s.vector(t.values).astype(float)
        for over in ("interior", "all"):
            m = np.zeros(a.size, bool)
            if over == "interior":
                m[: s.n_interior] = True
            else:
                m[:] = True
            idx = np.flatnonzero(m)
            cL = np.zeros(a.size)
            cL[idx] = (a[idx] - a[idx].mean()) / (idx.size * a[idx].var())
            cm = m.astype(float)
            eps = 0.01
            try:
                res = rk.cta(t, sens, prot, cap, preserve=("mean", "variance"), over=over,
                             epsilon=eps)
            except ValueError:
                res = None
            sv = np.r_[sens.ravel(), np.zeros(s.n_var - sens.size, bool)]
            pv = np.r_[prot.ravel(), np.zeros(s.n_var - sens.size)]
            ev = s.vector(cap).astype(float)
            u = np.where(sv, pv + pv.sum() + ev.sum(), 0.0)
            ref = cta_optimum(a, s.A, sv, pv, ev, u, np.ones(a.size),
                            extra=[(cm, 0.0, 0.0), (cL, -eps, eps)])
            if res is None:
                assert ref is None
                continue
            checked += 1
            check_feasible(res, t, sens, prot, cap)
            y = res.y
            assert abs(cm @ y) <= 1e-6 * max(1.0, a.max())
            assert abs(cL @ y) <= eps + 1e-7
            st = res.stats.sel(cells=over)
            assert st.mean_change == pytest.approx(0.0, abs=1e-6)
            assert float(st.slope) == pytest.approx(1 + float(cL @ y), abs=1e-9)
            assert res.objective == pytest.approx(ref, rel=1e-6, abs=1e-6)
    assert checked >= 5


def test_three_dimensional_with_all_two_way_margins(rng):
    for _ in range(3):
        t, sens, prot, cap = random_case(rng, dims=("a", "b", "c"), shape=(2, 3, 2))
        cap = 0.8 * t.values
        s = tabular_system(t.dims, t.shape, t.margins)
        assert len(s.blocks) == 8
        try:
            res = rk.cta(t, sens, prot, cap)
        except ValueError:
            continue
        check_feasible(res, t, sens, prot, cap)
        a = s.vector(t.values).astype(float)
        sv = np.r_[sens.ravel(), np.zeros(s.n_var - sens.size, bool)]
        pv = np.r_[prot.ravel(), np.zeros(s.n_var - sens.size)]
        ev = s.vector(cap).astype(float)
        u = np.where(sv, pv + pv.sum() + ev.sum(), 0.0)
        assert res.objective == pytest.approx(
            cta_optimum(a, s.A, sv, pv, ev, u, np.ones(a.size)), rel=1e-6)


def test_protection_is_not_shaved_by_the_integrality_tolerance():
    # a 1-D table where HiGHS's MILP alone returned a move of 3.9999995 for protection 4
    t = rk.Table(np.array([10.0, 20, 30, 5]), dims=("a",))
    res = rk.cta(t, np.array([False, True, False, False]), 4.0, 0.5 * t.values)
    assert abs(res.adjustment.values[1]) >= 4.0 - 1e-12
    assert res.objective == pytest.approx(8.0, abs=1e-12)


def test_sensitive_totals_from_assess_and_upper_bound():
    # a contributions table whose grand total is sensitive too
    data = {"r": ["x", "x", "y", "y"], "c": ["p", "q", "p", "q"],
            "v": [100.0, 1.0, 2.0, 3.0]}
    c = rk.contributions(data, dims=["r", "c"], value="v")
    ds = rk.sensitivity.assess(c, rk.sensitivity.Dominance(1, 80))
    assert bool(ds.sensitive_total)
    res = rk.cta(c, ds, capacity=np.full(c.table.shape, 50.0))
    y = res.y
    P = rk.sensitivity.cell_vector(ds, "protection", c.system)
    S = rk.sensitivity.cell_vector(ds, "sensitive", c.system).astype(bool)
    assert np.all(np.abs(y[S]) >= P[S] - 1e-6)
    # upper = protection: sensitive cells move by exactly their protection (seed 000's
    # first model, "y_i- = p_i (1 - I_i), y_i+ = p_i I_i")
    t = rk.Table(np.array([[20.0, 30.0, 10.0], [15.0, 5.0, 40.0]]), dims=("r", "c"),
                 kind="magnitude")         # a count table's moves are whole (issue 27)
    sens = np.array([[True, False, False], [False, True, False]])
    prot = np.array([[2.5, 0, 0], [0, 3.0, 0]])
    res2 = rk.cta(t, sens, prot, 0.5 * t.values, upper=prot)
    assert np.allclose(np.abs(res2.adjustment.values[sens]), prot[sens], atol=1e-9)


def test_determinism_and_release_round_trip(rng):
    t, sens, prot, cap = random_case(rng, decimal=True)
    cap = 0.9 * t.values
    r1 = rk.cta(t, sens, prot, cap, directions="ordering")
    r2 = rk.cta(t, sens, prot, cap, directions="ordering")
    assert np.array_equal(r1.y, r2.y)
    m1, m2 = rk.cta(t, sens, prot, cap), rk.cta(t, sens, prot, cap)
    assert np.array_equal(m1.y, m2.y)
    rel = m1.release
    assert rel.kind == "magnitude" and isinstance(rel.mechanism, rk.ControlledTabularAdjustment)
    assert rk.Release.from_json(rel.to_json()) == rel
    d = rel.mechanism.to_dict()
    assert set(d) == {"name", "rule", "objective", "preserve", "over", "directions", "epsilon"}


def test_mechanism_protect():
    t = rk.Table(np.array([[20.0, 30.0, 10.0], [15.0, 5.0, 40.0]]), dims=("r", "c"))
    sens = np.array([[False, False, False], [False, True, False]])
    mech = rk.ControlledTabularAdjustment(rule="PPercent(p=10)", preserve=["mean"])
    rel = mech.protect(t, sensitive=sens, protection=3.0, capacity=0.5 * t.values)
    assert rel.mechanism == mech or rel.mechanism.to_dict() == mech.to_dict()
    assert abs(rel.published[1, 1] - 5.0) >= 3.0 - 1e-9


def test_posterior_of_a_cta_release_is_a_clear_error():
    # CTA has no inference route (its protection levels and capacities are confidential:
    # no likelihood); the resolver says so and points to the CTA statistics
    t = rk.Table(np.array([[20.0, 30.0, 10.0], [15.0, 5.0, 40.0]]), dims=("r", "c"))
    sens = np.array([[False, False, False], [False, True, False]])
    rel = rk.cta(t, sens, protection=3.0, capacity=0.5 * t.values).release
    assert rel.mechanism.routes == ()
    with pytest.raises(ValueError, match="no inference route") as exc:
        rk.posterior(rel, rk.priors.Uniform())
    assert "cta_stats" in str(exc.value) and "confidential" in str(exc.value)
    with pytest.raises(ValueError, match="no inference route"):
        rk.posterior(rk.Release.from_json(rel.to_json()))


def test_bad_input():
    t = rk.Table(np.array([[20.0, 30.0], [15.0, 5.0]]), dims=("r", "c"))
    sens = np.array([[False, False], [False, True]])
    cap = 0.5 * t.values
    with pytest.raises(ValueError, match="shape"):
        rk.cta(t, np.zeros((3, 3), bool), 1.0, cap)
    with pytest.raises(ValueError, match="protection must be >= 0"):
        rk.cta(t, sens, np.array([[0, 0], [0, -1.0]]), cap)
    with pytest.raises(ValueError, match="nonsensitive cell"):
        rk.cta(t, sens, np.array([[1.0, 0], [0, 1.0]]), cap)
    with pytest.raises(ValueError, match="needs a protection level > 0"):
        rk.cta(t, sens, np.zeros((2, 2)), cap)
    with pytest.raises(ValueError, match="capacity must be >= 0"):
        rk.cta(t, sens, 1.0, -cap)
    with pytest.raises(ValueError, match="unknown objective"):
        rk.cta(t, sens, 1.0, cap, objective="l2")
    with pytest.raises(ValueError, match="unknown directions"):
        rk.cta(t, sens, 1.0, cap, directions="random")
    with pytest.raises(ValueError, match="unknown preserve"):
        rk.cta(t, sens, 1.0, cap, preserve=("median",))
    with pytest.raises(TypeError, match="boolean"):
        rk.cta(t, np.zeros((2, 2)), 1.0, cap)
    with pytest.raises(ValueError, match="upper must be >= protection"):
        rk.cta(t, sens, 2.0, cap, upper=1.0)
    with pytest.raises(ValueError, match="infeasible"):
        rk.cta(t, sens, 4.0, np.zeros((2, 2)))
    with pytest.raises(ValueError, match="finite"):
        rk.cta(t, sens, np.nan, cap)
    with pytest.raises(ValueError, match="variance needs"):
        rk.cta(t, sens, 1.0, cap, preserve=("variance",), over="sensitive")


def test_stats_definitions(rng):
    a = rng.uniform(0, 10, 9)
    y = rng.normal(0, 1, 9)
    sens = rng.random(9) < 0.5
    sens[:2] = True
    st = cta_stats(a, y, sens)
    b = a + y
    row = st.sel(cells="all")
    assert float(row.corr) == pytest.approx(np.corrcoef(a, b)[0, 1])
    assert float(row.slope) == pytest.approx(np.polyfit(a, b, 1)[0])
    assert float(row.var_ratio) == pytest.approx(b.var() / a.var())
    assert float(row.mean_change) == pytest.approx(y.mean())
    # seed 000: Var(a+y)/Var(a) = 1 + 2 L + Var(y)/Var(a); Corr = (1 + L)/sqrt(ratio)
    L = float(row.L)
    assert float(row.var_ratio) == pytest.approx(1 + 2 * L + y.var() / a.var())
    assert float(row.corr) == pytest.approx((1 + L) / np.sqrt(float(row.var_ratio)))


def test_bivariate_alternating_steps_never_worsen_covariance(rng):
    checked = 0
    for _ in range(4):
        ta, sens, prot, _ = random_case(rng, zeros=False)
        tb = rk.Table(np.round(ta.values * rng.uniform(0.5, 1.5, ta.shape) + 1, 2),
                      dims=ta.dims, kind="magnitude")
        pb = np.where(sens, 0.3 * tb.values, 0.0)
        try:
            res = rk.cta_bivariate(ta, tb, sens, prot, 0.9 * ta.values, sens, pb,
                                   0.9 * tb.values, preserve=("mean",), max_iter=4)
        except ValueError:
            continue
        checked += 1
        h = np.array(res.history)
        assert np.all(np.diff(h) <= 1e-6 * max(1.0, h[0]))
        check_feasible(res.a, ta, sens, prot, 0.9 * ta.values)
        check_feasible(res.b, tb, sens, pb, 0.9 * tb.values)
        # the reported covariance change is that of the returned tables
        s = res.a.system
        idx = np.arange(s.n_interior)
        a, b = res.a.original[idx], res.b.original[idx]
        a2, b2 = a + res.a.y[idx], b + res.b.y[idx]
        cov = lambda u, v: np.mean((u - u.mean()) * (v - v.mean()))
        assert float(res.stats.covariance_change) == pytest.approx(
            100 * (cov(a2, b2) - cov(a, b)) / abs(cov(a, b)))
        assert abs(cov(a2, b2) - cov(a, b)) == pytest.approx(h[-1], rel=1e-6, abs=1e-9)
    assert checked >= 2


def test_given_directions(rng):
    # the MILP's own directions, given back, give the same optimum as an LP
    for _ in range(5):
        t, sens, prot, cap = random_case(rng, zeros=False)
        cap = 0.9 * t.values
        try:
            res = rk.cta(t, sens, prot, cap)
        except ValueError:
            continue
        given = rk.cta(t, sens, prot, cap, directions=res.directions)
        assert given.objective == pytest.approx(res.objective, rel=1e-9, abs=1e-9)
        assert given.release.mechanism.directions == "given"
        assert np.array_equal(given.directions, res.directions)
    t = rk.Table(np.array([[20.0, 30.0], [15.0, 5.0]]), dims=("r", "c"))
    sens = np.array([[False, False], [False, True]])
    with pytest.raises(ValueError, match=r"\+1 or -1"):
        rk.cta(t, sens, 1.0, t.values, directions=np.zeros((2, 2)))
    with pytest.raises(ValueError, match="below its protection"):
        rk.cta(t, sens, 6.0, t.values, directions=-np.ones((2, 2)))


def test_ordering_directions_follow_the_definition():
    # seed 002 section 4: sensitive cells sorted by value, largest first, directions
    # alternating (down first); a cell below its protection can only go up
    t = rk.Table(np.array([[50.0, 10, 30, 7], [40, 20, 25, 5], [9, 60, 3, 12]]), dims=("r", "c"))
    sens = np.array([[True, False, True, False], [True, False, False, True],
                     [False, True, True, False]])
    prot = np.where(sens, 2.0, 0.0)
    prot[2, 2] = 4.0                                    # value 3 < protection 4: must go up
    res = rk.cta(t, sens, prot, np.inf, directions="ordering")
    d = res.directions[: t.values.size].reshape(t.shape)
    # by value: 60 down, 50 up, 40 down, 30 up, 5 down, 3 (forced up; alternation continues)
    assert d[2, 1] == -1 and d[0, 0] == 1 and d[1, 0] == -1 and d[0, 2] == 1
    assert d[1, 3] == -1 and d[2, 2] == 1
    rel = res.release
    assert rk.Release.from_json(rel.to_json()).mechanism.directions == "ordering"
    given = rk.cta(t, sens, prot, np.inf, directions=d)
    assert rk.Release.from_json(given.release.to_json()).mechanism.directions == "given"
    assert given.objective == pytest.approx(res.objective)


def test_subtotals_are_cells_of_the_system(rng):
    # one level of subtotals along r: the subtotals are adjusted like every other cell,
    # the release carries them, and the MILP optimum equals the pattern enumeration
    parts = [[0, 1], [2, 3]]
    checked = 0
    for trial in range(8):
        t, sens, prot, cap = random_case(rng, shape=(4, 3), decimal=trial % 2 == 1)
        s = tabular_system(t.dims, t.shape, t.margins, {"r": parts})
        try:
            res = rk.cta(t, sens, prot, cap, groups={"r": parts})
        except ValueError as exc:
            assert "infeasible" in str(exc)
            continue
        a = s.vector(t.values).astype(float)
        sv = np.r_[sens.ravel(), np.zeros(s.n_var - sens.size, bool)]
        pv = np.r_[prot.ravel(), np.zeros(s.n_var - sens.size)]
        ev = s.vector(cap).astype(float)
        u = np.where(sv, pv + pv.sum() + ev.sum(), 0.0)
        ref = cta_optimum(a, s.A, sv, pv, ev, u, np.ones(a.size))
        assert res.status == "optimal"
        assert res.objective == pytest.approx(ref, rel=1e-6, abs=1e-6)
        adj = a + res.y
        assert np.abs(s.A @ adj).max() <= 1e-9 * max(1.0, a.max())
        assert np.all(np.abs(res.y[sv]) >= pv[sv] - 1e-9 * max(1.0, a.max()))
        assert np.all(np.abs(res.y[~sv]) <= ev[~sv] + 1e-6 * max(1.0, a.max()))
        rel = res.release
        assert rel.groups == {"r": ((0, 1), (2, 3))}
        sub = adj[s.block(("r", "c"), "r").slice].reshape(2, 3)
        assert np.allclose(rel.subtotals[("r", "c")], sub)
        assert np.allclose(rel.system().A @ rel.cell_vector(rel.system()), 0.0, atol=1e-9)
        assert rk.Release.from_json(rel.to_json()) == rel
        checked += 1
    assert checked >= 4
