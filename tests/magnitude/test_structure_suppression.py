"""Suppression and the audit of hierarchical tables and linked table sets, against the
independent dense LP of tests/reference/cell_system.py.

Random small publications (seeded; counts Poisson with a rate drawn in 1..6, the
frequency rule ``Frequency(3)``): every pattern ``rk.suppress`` returns (heuristic, and
``method="optimal"`` on the smallest) leaves every sensitive cell's LP interval -- over the
finest cells only, the reference's membership rows of the published cells as equations --
reaching ``protection_levels`` below and above its true value; ``rk.audit``'s bounds equal
that LP for every suppressed and every finest cell; ``forced`` / ``frozen`` are obeyed;
union bounds equal the LP of the sum.  The optimal pattern's cost equals the cheapest
protecting subset of the candidate cells (brute force) on tiny cases.  A linked pair of
tables where protecting each on its own discloses a cell exactly and joint protection
does not.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import riskengine as rk
from tests.reference import cell_system as ref_cs

RULE = rk.sensitivity.Frequency(3)
TOL = 1e-6


class View:
    """A publication as the reference sees it: one row per variable of the system that
    some table publishes (the reference's member set of its cells, checked equal for
    every cell of the variable), and its true value."""

    def __init__(self, case, ts):
        s = ts.system
        ref = ref_cs.reference_cells(case.tables)
        pid = ref_cs.published_ids(s)
        assert set(pid) == set(ref.cells)
        by_var = {}
        for key, j in pid.items():
            by_var.setdefault(j, set()).add(ref.cells[key])
        assert all(len(v) == 1 for v in by_var.values())
        self.ids = np.array(sorted(by_var))
        keys = [next(k for k in ref.cells if pid[k] == j) for j in self.ids]
        self.rows = ref_cs.membership_rows(ref, s, keys)
        self.finest = case.finest_values(s).reshape(-1)
        self.true = self.rows @ self.finest
        self.system = s
        self.ref, self.keys = ref, keys

    def bounds(self, hidden_var, queries):
        """LP bounds of ``queries`` given the variables not in ``hidden_var``."""
        return ref_cs.audit_release(self.rows, self.true, hidden_var, queries)

    def check_release(self, rel, sens):
        """Every published value true, every sensitive variable hidden and protected by
        the reference LP; ``rk.audit`` equal to it on the suppressed and finest cells.
        Returns the reference bounds of the hidden variables."""
        s = self.system
        vals = rel.values[self.ids]
        hidden = np.isnan(vals)
        np.testing.assert_array_equal(vals[~hidden], self.true[~hidden])
        np.testing.assert_array_equal(rel.hidden, np.isin(np.arange(s.n_var),
                                                          self.ids[hidden]))
        assert np.isnan(rel.values[~s.published]).all()
        assert not (sens & ~hidden).any()
        n_fin = s.n_interior
        Q = np.vstack([self.rows[hidden], np.eye(n_fin)])
        lo, hi = self.bounds(hidden, Q)
        lo_h, hi_h = lo[: hidden.sum()], hi[: hidden.sum()]
        plo, phi = RULE.protection_levels(self.true)
        v = self.true[hidden]
        sh = sens[hidden]
        assert np.all(lo_h[sh] <= v[sh] - plo[hidden][sh] + TOL)
        assert np.all(hi_h[sh] >= v[sh] + phi[hidden][sh] - TOL)
        a = rk.audit(rel)
        got_lo = np.concatenate([a["lower"].values[self.ids[hidden]],
                                 a["lower"].values[:n_fin]])
        got_hi = np.concatenate([a["upper"].values[self.ids[hidden]],
                                 a["upper"].values[:n_fin]])
        np.testing.assert_allclose(got_lo, lo, atol=TOL, rtol=0)
        np.testing.assert_allclose(got_hi, hi, atol=TOL, rtol=0)
        np.testing.assert_array_equal(a["suppressed"].values, rel.hidden)
        width = hi_h - lo_h
        np.testing.assert_array_equal(a["exact"].values[self.ids[hidden]], width <= 1e-4)
        return hidden, lo_h, hi_h


def sensitive_of(view):
    return RULE.sensitive(view.true)


def protectable(case) -> rk.TableSet:
    """The set with its finest values (as from microdata): without them the protection
    of a set whose finest cells no table publishes can fail, see
    test_suppress_rule_when_the_completion_is_fractional."""
    ts = rk.TableSet(case.tables)
    return rk.TableSet(case.tables, finest=case.finest_values(ts.system))


# --- heuristic on random publications --------------------------------------------------


def check_heuristic(case):
    ts = protectable(case)
    view = View(case, ts)
    sens = sensitive_of(view)
    if len(case.tables) == 1 and next(iter(case.tables.values())).hierarchies:
        rel = rk.suppress(next(iter(case.tables.values())), RULE)
    else:
        rel = rk.suppress(ts, RULE)
    assert isinstance(rel, rk.TableSetRelease)
    hidden, _, _ = view.check_release(rel, sens)
    assert rel.info["n_suppressed"] == int(hidden.sum())
    assert rel.info["n_sensitive"] == int(sens.sum())
    # the auditor's view: nothing under-protected, no approximate disclosure (table= with
    # every finest value: see test_audit_rule_with_unpublished_finest_cells)
    a = rk.audit(rel, RULE, table=ts)
    assert not a["under_protected"].values.any()
    assert not a["approximate_disclosure"].values.any()
    np.testing.assert_array_equal(a["sensitive"].values[view.ids], sens)
    plo, phi = RULE.protection_levels(view.true)
    np.testing.assert_array_equal(a["protection_lower"].values[view.ids],
                                  np.where(sens, plo, 0))
    # the same with the sensitive cells and protection as vectors over the system
    sv = np.zeros(ts.system.n_var, bool)
    sv[view.ids] = sens
    pv = np.zeros(ts.system.n_var)
    pv[view.ids] = phi
    b = rk.audit(rel, sv, pv)
    assert not b["approximate_disclosure"].values.any()
    cells = rel.cells
    np.testing.assert_array_equal(cells.index.to_numpy(), view.ids)
    np.testing.assert_array_equal(cells["suppressed"].to_numpy(bool), rel.hidden[view.ids])
    np.testing.assert_array_equal(np.isnan(cells["value"].to_numpy(float)),
                                  rel.hidden[view.ids])
    # each table as published: NaN exactly where its cells are hidden
    for name in case.tables:
        tab = rel.table(name)
        _, _, ids = ts.system.grids[name]
        ok = ids >= 0
        np.testing.assert_array_equal(np.isnan(tab.values[ok]), rel.hidden[ids[ok]])
        assert np.isnan(tab.values[~ok]).all()
    return rel, view, sens


@pytest.mark.parametrize("seed", range(8))
def test_heuristic_protects_random_hierarchical_tables(seed):
    rng = np.random.default_rng([31, seed])
    n_hidden = 0
    for _ in range(4):
        case = ref_cs.random_table_case(rng, rk, max_depth=2, max_grid=80)
        rel, _, _ = check_heuristic(case)
        n_hidden += int(rel.hidden.sum())
    assert n_hidden > 0


@pytest.mark.parametrize("seed", range(8))
def test_heuristic_protects_random_linked_sets(seed):
    rng = np.random.default_rng([32, seed])
    n_hidden = 0
    for _ in range(4):
        case = ref_cs.random_linked_case(rng, rk, max_depth=2, max_grid=100)
        rel, _, _ = check_heuristic(case)
        n_hidden += int(rel.hidden.sum())
    assert n_hidden > 0


@pytest.mark.parametrize("seed", range(6))
def test_forced_cells_hidden_frozen_cells_published(seed):
    rng = np.random.default_rng([33, seed])
    done = 0
    while done < 3:
        case = ref_cs.random_linked_case(rng, rk, max_depth=2, max_grid=80) if done % 2 \
            else ref_cs.random_table_case(rng, rk, max_depth=2, max_grid=80)
        ts = protectable(case)
        view = View(case, ts)
        sens = sensitive_of(view)
        free = np.flatnonzero(~sens & (view.true > 0))
        if free.size < 3:
            continue
        pick = rng.permutation(free)
        forced_var, frozen_var = view.ids[pick[:1]], view.ids[pick[1:3]]
        n = ts.system.n_var
        forced = np.isin(np.arange(n), forced_var)
        frozen = np.isin(np.arange(n), frozen_var)
        try:
            rel = rk.suppress(ts, RULE, forced=forced, frozen=frozen)
        except ValueError as e:
            # a frozen cell can make protection impossible; the library must say so, and
            # the reference must agree: with every candidate hidden (nonzero, not frozen)
            # some sensitive cell is not protected
            assert "cannot be protected" in str(e), e
            hid = (~np.isin(view.ids, frozen_var) & (view.true > 0)) | sens
            lo, hi = view.bounds(hid, view.rows[hid & sens])
            plo, phi = RULE.protection_levels(view.true[hid & sens])
            v = view.true[hid & sens]
            assert not (np.all(lo <= v - plo + TOL) and np.all(hi >= v + phi - TOL))
            continue
        assert rel.hidden[forced_var].all()
        assert not rel.hidden[frozen_var].any()
        view.check_release(rel, sens)
        # a callable gets the cells frame
        rel2 = rk.suppress(ts, RULE, forced=lambda c, m=forced: m, frozen=lambda c, m=frozen: m)
        np.testing.assert_array_equal(rel2.hidden, rel.hidden)
        done += 1


def test_audit_rule_with_unpublished_finest_cells():
    """Two one-way tables (geo; sex): the geo x sex cells are published by neither, so
    ``TableSet.values`` is NaN there; the rule's audit must read the published cells."""
    a = rk.Table(np.array([1, 5, 6]), dims=("geo",), coords={"geo": ["N", "S", "W"]},
                 name="A")
    b = rk.Table(np.array([4, 8]), dims=("sex",), coords={"sex": ["F", "M"]}, name="B")
    ts = rk.TableSet({"A": a, "B": b})
    rel = rk.suppress(ts, RULE)
    audit = rk.audit(rel, RULE, table=ts)
    assert audit["sensitive"].values[ts.system.find(table="A", geo="N")]
    assert not audit["under_protected"].values.any()


# three 2-way tables of this 3 x 3 x 3 population (found by a seeded search,
# np.random.default_rng(1)): the LP completion of the finest cells is fractional
POP333 = np.array([[[0, 4, 0], [1, 0, 4], [3, 4, 4]], [[2, 0, 2], [0, 1, 2], [3, 0, 4]],
                   [[4, 3, 4], [2, 4, 1], [2, 4, 1]]])


def test_suppress_rule_when_the_completion_is_fractional():
    co = {d: [f"{d}{i + 1}" for i in range(3)] for d in "abc"}
    tables = {"AB": POP333.sum(2), "BC": POP333.sum(0), "AC": POP333.sum(1)}
    dims = {"AB": ("a", "b"), "BC": ("b", "c"), "AC": ("a", "c")}
    ts = rk.TableSet({n: rk.Table(v, dims=dims[n], coords={d: co[d] for d in dims[n]},
                                  name=n) for n, v in tables.items()})
    rel = rk.suppress(ts, RULE)
    # the same pattern as with the finest values known: the rule reads published cells
    full = rk.TableSet(ts.tables, finest=POP333)
    np.testing.assert_array_equal(rel.hidden, rk.suppress(full, RULE).hidden)


def test_reference_rejects_an_unprotected_pattern():
    """The oracle is not vacuous: hiding only the sensitive cell of the hand-made set
    leaves it exact, and View.check_release says so."""
    case = districts_and_regions()
    ts = rk.TableSet(case.tables)
    view = View(case, ts)
    vals = ts.values.copy()
    vals[ts.system.find(table="A", geo="N1", sex="F")] = np.nan
    rel = rk.TableSetRelease(ts, vals, rk.CellSuppression())
    with pytest.raises(AssertionError):
        view.check_release(rel, sensitive_of(view))


def test_frozen_sensitive_cell_is_an_error():
    case = districts_and_regions()
    ts = rk.TableSet(case.tables)
    s = ts.system
    j = s.find(table="A", geo="N1", sex="F")              # a count of 2: sensitive
    frozen = np.zeros(s.n_var, bool)
    frozen[j] = True
    with pytest.raises(ValueError, match=r"A\(N1, F\) is sensitive and frozen"):
        rk.suppress(ts, RULE, frozen=frozen)


# --- optimal ----------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(4))
def test_optimal_protects_and_costs_no_more_than_heuristic(seed):
    rng = np.random.default_rng([34, seed])
    for k in range(3):
        case = ref_cs.random_linked_case(rng, rk, max_depth=2, max_grid=40) if k % 2 else \
            ref_cs.random_table_case(rng, rk, max_depth=2, max_grid=40)
        ts = protectable(case)
        view = View(case, ts)
        sens = sensitive_of(view)
        heur = rk.suppress(ts, RULE)
        opt = rk.suppress(ts, RULE, method="optimal")
        assert opt.info["status"] == "optimal"
        view.check_release(opt, sens)
        x = view.true
        assert x[np.isnan(opt.values[view.ids])].sum() <= \
            x[np.isnan(heur.values[view.ids])].sum()


def tiny_cases(rng, n):
    """Publications with 1+ sensitive cell and 3..12 candidate complements (published,
    nonzero, not sensitive)."""
    out = []
    while len(out) < n:
        case = ref_cs.random_linked_case(rng, rk, max_depth=2, max_grid=24, rate=(1, 5)) \
            if len(out) % 2 else \
            ref_cs.random_table_case(rng, rk, max_depth=2, max_grid=20, rate=(1, 5), ndims=2)
        view = View(case, protectable(case))
        sens = sensitive_of(view)
        cand = ~sens & (view.true > 0)
        if sens.any() and 3 <= cand.sum() <= 12:
            out.append((case, view, sens, cand))
    return out


def protects(view, sens, extra) -> bool:
    """Whether hiding the sensitive variables and ``extra`` protects every sensitive one
    (reference LP)."""
    x = view.true
    plo, phi = RULE.protection_levels(x)
    hid = sens.copy()
    hid[list(extra)] = True
    for j in np.flatnonzero(sens):
        lo, hi = view.bounds(hid, view.rows[j])
        if lo[0] > x[j] - plo[j] + TOL or hi[0] < x[j] + phi[j] - TOL:
            return False
    return True


def test_optimal_equals_brute_force_minimum(rng):
    """The cheapest protecting pattern by brute force: with the optimal pattern's cost
    ``c``, every pattern cheaper than ``c`` fails -- by monotonicity (hiding more only
    widens intervals) it suffices to check the maximal ones, each a subset of the
    candidates to which no other candidate can be added below ``c`` -- and the optimal
    pattern protects (independent LP)."""
    checked = 0
    for case, view, sens, cand in tiny_cases(rng, 10):
        ts = protectable(case)
        opt = rk.suppress(ts, RULE, method="optimal")
        assert opt.info["status"] == "optimal"
        view.check_release(opt, sens)
        x = view.true
        hidden = np.isnan(opt.values[view.ids])
        best = x[hidden].sum()
        base = x[sens].sum()
        cidx = np.flatnonzero(cand)
        for r in range(len(cidx) + 1):
            for extra in itertools.combinations(cidx, r):
                c = base + x[list(extra)].sum()
                if c >= best:
                    continue
                rest = [k for k in cidx if k not in extra]
                if any(c + x[k] < best for k in rest):
                    continue                               # not maximal below best
                assert not protects(view, sens, extra), (extra, c, best)
                checked += 1
        assert protects(view, sens, np.flatnonzero(hidden & ~sens))
    assert checked > 10


# --- a linked pair: protected alone, disclosed together ---------------------------------------

GEO = rk.Hierarchy({"North": ["N1", "N2"]})
SEX = ["F", "M"]


class _Case:
    def __init__(self, tables, finest):
        self.tables = tables
        self._finest = finest

    def finest_values(self, s):
        """The hand-written geo x sex counts, summed over the dims ``s`` lacks."""
        assert s.coords["geo"] == ["N1", "N2"] and s.coords.get("sex", SEX) == SEX
        return self._finest.sum(axis=tuple(k for k, d in enumerate(("geo", "sex"))
                                           if d not in s.dims))


def districts_and_regions():
    """Table A: district x sex with the sex totals only (margin ("sex",)); table B: the
    district totals.  Counts by hand: N1 = (2 F, 5 M), N2 = (8 F, 5 M)."""
    finest = np.array([[2, 5], [8, 5]])
    a = rk.Table(finest, dims=("geo", "sex"), coords={"sex": SEX}, hierarchies={"geo": GEO},
                 margins=[("sex",)], name="A")
    b = rk.Table(finest.sum(axis=1), dims=("geo",), hierarchies={"geo": GEO}, name="B")
    return _Case({"A": a, "B": b}, finest)


def combine(ts, releases):
    """One release of the set from releases of its tables made one at a time: a cell is
    published when some table publishes it."""
    s = ts.system
    vals = np.full(s.n_var, np.nan)
    for name, rel in releases.items():
        _, _, ids = s.grids[name]
        _, _, own = rel.system.grids[name]
        ok = ids >= 0
        v = rel.values[own[ok]]
        j = ids[ok]
        vals[j] = np.where(np.isnan(v), vals[j], v)
    return rk.TableSetRelease(ts, vals, rk.CellSuppression())


def test_tables_protected_alone_disclose_together():
    case = districts_and_regions()
    ts = rk.TableSet(case.tables)
    s = ts.system
    view = View(case, ts)
    sens = sensitive_of(view)
    n1f = s.find(table="A", geo="N1", sex="F")
    assert sens[view.ids == n1f].all() and sens.sum() == 1
    alone = {name: rk.suppress(t, RULE) for name, t in case.tables.items()}
    # A alone hides the two F cells (its district totals are not published); B has
    # nothing sensitive
    a_hidden = [alone["A"].system.labels()[j] for j in np.flatnonzero(alone["A"].hidden)]
    assert a_hidden == ["A(N1, F)", "A(N2, F)"]
    assert not alone["B"].hidden.any()
    for name, rel in alone.items():       # each is protected on its own
        own = rk.TableSet({name: case.tables[name]})
        View(_Case({name: case.tables[name]}, case._finest), own).check_release(
            rel, sensitive_of(View(_Case({name: case.tables[name]}, case._finest), own)))
    # together: B's N1 = 7 and A's (N1, M) = 5 give (N1, F) = 2
    both = combine(ts, alone)
    assert both.hidden[n1f]
    hidden = np.isnan(both.values[view.ids])
    lo, hi = view.bounds(hidden, view.rows[view.ids == n1f])
    assert lo[0] == pytest.approx(2, abs=TOL) and hi[0] == pytest.approx(2, abs=TOL)
    a = rk.audit(both)
    assert a["exact"].values[n1f]
    assert a["lower"].values[n1f] == pytest.approx(2, abs=TOL)
    assert a["upper"].values[n1f] == pytest.approx(2, abs=TOL)
    assert rk.audit(both, RULE, table=ts)["under_protected"].values[n1f]
    # joint protection: protected in the reference LP and by the audit
    joint = rk.suppress(ts, RULE)
    view.check_release(joint, sens)
    aj = rk.audit(joint, RULE, table=ts)
    assert not aj["exact"].values[joint.hidden].any()
    assert not aj["under_protected"].values.any()
    lo, hi = view.bounds(np.isnan(joint.values[view.ids]), view.rows[view.ids == n1f])
    assert lo[0] <= 1 + TOL and hi[0] >= 3 - TOL


def test_random_tables_protected_alone_often_disclose_together(rng):
    """The same on random linked pairs (each table hierarchical): whenever the tables
    protected one at a time leave a sensitive cell exactly known together (the reference
    LP), rk.audit says so too; the set protected jointly never does."""
    leaks = 0
    tried = 0
    while tried < 40:
        case = ref_cs.random_linked_case(rng, rk, max_depth=2, max_grid=60, rate=(1, 5),
                                         n_tables=2)
        if any(not t.hierarchies for t in case.tables.values()):
            continue
        tried += 1
        ts = protectable(case)
        view = View(case, ts)
        sens = sensitive_of(view)
        both = combine(ts, {n: rk.suppress(t, RULE) for n, t in case.tables.items()})
        hidden = np.isnan(both.values[view.ids])
        view.check_release(rk.suppress(ts, RULE), sens)
        if not (hidden & sens).any():
            continue
        lo, hi = view.bounds(hidden, view.rows[hidden & sens])
        exact = hi - lo <= TOL
        a = rk.audit(both)
        np.testing.assert_array_equal(a["exact"].values[view.ids[hidden & sens]], exact)
        leaks += int(exact.any())
    assert leaks >= 3


# --- unions -------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(4))
def test_union_bounds_equal_lp_of_the_sum(seed):
    rng = np.random.default_rng([35, seed])
    done = 0
    while done < 3:
        case = ref_cs.random_linked_case(rng, rk, max_depth=2, max_grid=80) if done % 2 \
            else ref_cs.random_table_case(rng, rk, max_depth=2, max_grid=80)
        ts = protectable(case)
        view = View(case, ts)
        rel = rk.suppress(ts, RULE)
        hid = np.flatnonzero(np.isnan(rel.values[view.ids]))
        if hid.size < 2:
            continue
        groups = [sorted(rng.choice(hid, size=int(rng.integers(2, min(4, hid.size) + 1)),
                                    replace=False).tolist()) for _ in range(3)]
        unions = [[int(view.ids[k]) for k in g] for g in groups]
        a = rk.audit(rel, RULE, table=ts, unions=unions)
        Q = np.array([view.rows[g].sum(axis=0) for g in groups])
        lo, hi = view.bounds(np.isnan(rel.values[view.ids]), Q)
        np.testing.assert_allclose(a["union_lower"].values, lo, atol=TOL, rtol=0)
        np.testing.assert_allclose(a["union_upper"].values, hi, atol=TOL, rtol=0)
        np.testing.assert_array_equal(a["union_exact"].values, hi - lo <= 1e-4)
        np.testing.assert_array_equal(a["union_value"].values,
                                      [view.true[g].sum() for g in groups])
        # the cells' own bounds are those without unions
        b = rk.audit(rel)
        np.testing.assert_allclose(a["lower"].values, b["lower"].values, atol=TOL)
        np.testing.assert_allclose(a["upper"].values, b["upper"].values, atol=TOL)
        done += 1


def test_union_of_a_hidden_pair_in_one_line_is_exact():
    """By hand: A hides (N1, F) and (N2, F); their sum is the published F total (10)."""
    case = districts_and_regions()
    ts = rk.TableSet({"A": case.tables["A"]})
    rel = rk.suppress(case.tables["A"], RULE)
    s = rel.system
    pair = [s.find(geo="N1", sex="F"), s.find(geo="N2", sex="F")]
    a = rk.audit(rel, unions=[pair])
    assert a["union_lower"].values.tolist() == pytest.approx([10.0], abs=TOL)
    assert a["union_upper"].values.tolist() == pytest.approx([10.0], abs=TOL)
    assert a["union_exact"].values.tolist() == [True]
    assert not a["exact"].values[pair].any()
    with pytest.raises(ValueError, match="is not a suppressed cell"):
        rk.audit(rel, unions=[[pair[0], s.find(geo="N1", sex="M")]])
    assert ts.system.n_var == s.n_var
