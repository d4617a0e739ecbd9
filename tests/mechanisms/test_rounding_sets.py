"""Controlled rounding of hierarchical tables and table sets
(riskengine/mechanisms/_rounding_sets.py) against brute force: on random small
hierarchical tables and linked sets (tests/reference/cell_system.py), every up / down
direction of the finest cells that are not multiples is tried; a controlled rounding
exists exactly when the MILP finds one, and the MILP's total absolute distortion of the
finest cells is the least.  The posterior of a rounded hierarchical table (its published
cells each within B - 1 of their values, feasible likelihood) equals the enumeration of
every finest table.  Sets whose finest cells no table publishes (a x b and a x c): every
direction of the published cells is tried, a rounding counting when each table adds up
(a table of counts under it then exists: per a, a b x c table with equal-sum margins);
existence and the least distortion of the published cells equal the MILP's, and the
posterior over the hidden cells equals the enumeration."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import riskengine as rk
from riskengine.mechanisms._rounding_sets import (
    is_controlled_rounding_system,
    milp_rounding_system,
)
from tests.reference import cell_system as ref_cs


def _brute(s, vals, B):
    """(least distortion, whether any exists) over every direction vector."""
    n_fin = s.n_interior
    x = np.rint(vals[:n_fin]).astype(np.int64)
    floor = B * (x // B)
    nm = np.flatnonzero(x % B)
    M = s.M.tocsr()
    best = None
    for z in itertools.product((0, 1), repeat=nm.size):
        r = floor.copy()
        r[nm] += B * np.array(z, np.int64)
        full = np.asarray(M @ r).ravel()
        if is_controlled_rounding_system(s, vals, full, B):
            d = int(np.abs(r - x).sum())
            best = d if best is None else min(best, d)
    return best


def _cases(rng, n):
    out = []
    while len(out) < n:
        linked = len(out) % 2 == 1
        case = ref_cs.random_linked_case(rng, rk, max_depth=2, max_grid=12, rate=(1, 5)) \
            if linked else \
            ref_cs.random_table_case(rng, rk, max_depth=2, max_grid=12, rate=(1, 5), ndims=2)
        ts = rk.TableSet(case.tables)
        ts = rk.TableSet(case.tables, finest=case.finest_values(ts.system))
        s = ts.system
        if not s.published[: s.n_interior].all():
            continue
        B = int(rng.integers(2, 5))
        x = np.rint(ts.values[: s.n_interior]).astype(np.int64)
        if np.count_nonzero(x % B) > 12:
            continue
        out.append((ts, B))
    return out


def test_existence_and_least_distortion_equal_brute_force():
    rng = np.random.default_rng(2026)
    n_none = n_some = n_linked = 0
    for ts, B in _cases(rng, 60):
        s = ts.system
        vals = np.asarray(ts.values, float)
        best = _brute(s, vals, B)
        r = milp_rounding_system(s, vals, B)
        if best is None:
            assert r is None
            n_none += 1
            with pytest.raises(ValueError, match=f"no controlled rounding to base {B} exists"):
                rk.ControlledRounding(B, method="optimal").protect(ts)
            continue
        n_some += 1
        assert r is not None and is_controlled_rounding_system(s, vals, r, B)
        x = np.rint(vals[: s.n_interior]).astype(np.int64)
        assert int(np.abs(r[: s.n_interior] - x).sum()) == best
        rel = rk.ControlledRounding(B, method="optimal").protect(ts)
        pub = s.published
        np.testing.assert_array_equal(rel.values[pub], r[pub])
        n_linked += len(s.grids) > 1
    assert n_some >= 20 and n_linked >= 5


def test_a_3d_set_without_a_controlled_rounding_is_refused():
    # a 2 x 2 x 2 table with every 2-way margin as a table set: base 2 has no controlled
    # rounding (the brute force over its 2^k directions and the 3-D MILP of
    # _rounding3d, an independent formulation, agree); random 3-D sets against both
    from riskengine.mechanisms._rounding3d import milp_rounding
    x = np.array([[[3, 3], [1, 5]], [[4, 3], [5, 4]]])
    ts = rk.TableSet(rk.Table(x, dims=("a", "b", "c")))
    vals = np.asarray(ts.values, float)
    assert _brute(ts.system, vals, 2) is None and milp_rounding(x, 2) is None
    with pytest.raises(ValueError, match="no controlled rounding to base 2 exists"):
        rk.ControlledRounding(2, method="optimal").protect(ts)
    rng = np.random.default_rng(7)
    n_none = 0
    for _ in range(30):
        x = rng.integers(0, 6, size=(2, 2, 3))
        B = int(rng.integers(2, 4))
        ts = rk.TableSet(rk.Table(x, dims=("a", "b", "c")))
        vals = np.asarray(ts.values, float)
        best = _brute(ts.system, vals, B)
        r = milp_rounding_system(ts.system, vals, B)
        assert (best is None) == (r is None) == (milp_rounding(x, B) is None)
        if r is not None:
            assert int(np.abs(r[:12] - x.ravel()).sum()) == best
        n_none += best is None
    assert 3 <= n_none <= 27


def test_posterior_of_a_rounded_hierarchy_equals_the_enumeration():
    geo = rk.Hierarchy({"N": ["N1", "N2"], "S": ["S1", "S2"]})
    t = rk.Table(np.array([[3, 4], [5, 1], [2, 2], [6, 0]]), dims=("geo", "sex"),
                 coords={"geo": list(geo.leaves), "sex": ["F", "M"]},
                 hierarchies={"geo": geo})
    B = 3
    rel = rk.ControlledRounding(B, method="optimal").protect(t)
    s = rel.system
    pub = np.flatnonzero(s.published)
    M = s.M.tocsr()
    v = rel.values
    fin = v[: s.n_interior].astype(np.int64)
    # every published value is a multiple: a cell within B - 1 of it that is a multiple
    # is that value (zero-restricted), so the windows say everything
    windows = [range(max(0, a - B + 1), a + B) for a in fin]
    cands = []
    for f in itertools.product(*windows):
        full = np.asarray(M @ np.array(f)).ravel()
        if (np.abs(full[pub] - v[pub]) < B).all():
            cands.append(f)
    cands = np.array(cands)
    assert len(cands) > 1
    for prior, logw in ((rk.priors.Uniform(), ref_cs.log_prior("uniform", cands)),
                        (rk.priors.Poisson(3.0), ref_cs.log_prior(("poisson", 3.0), cands))):
        w = np.exp(logw - logw.max())
        w /= w.sum()
        post = rk.posterior(rel, prior)
        da = post.pmf
        values = da["value"].values
        got = da.values.reshape(s.n_interior, -1)
        for j in range(s.n_interior):
            want = np.array([w[cands[:, j] == val].sum() for val in values])
            np.testing.assert_allclose(got[j], want, atol=1e-12)
        assert not post.attrs["approximate"]


def test_sets_refuse_what_does_not_apply():
    geo = rk.Hierarchy({"N": ["N1", "N2"]})
    t = rk.Table(np.array([[3, 4], [5, 1]]), dims=("geo", "sex"),
                 coords={"geo": ["N1", "N2"], "sex": ["F", "M"]}, hierarchies={"geo": geo})
    with pytest.raises(ValueError, match="method='optimal'"):
        rk.ControlledRounding(3).protect(t)
    with pytest.raises(ValueError, match="likelihood='feasible'"):
        rk.ControlledRounding(3, method="optimal", likelihood="unbiased").protect(t)


def _two_margins(rng, dims_c=2, n=None):
    """Two tables a x b and a x c of random records: the finest a x b x c is published by
    no table."""
    import pandas as pd
    n = int(rng.integers(4, 16)) if n is None else n
    df = pd.DataFrame({"a": rng.choice(["x", "y"], n), "b": rng.choice(["p", "q"], n),
                       "c": rng.choice(["u", "v", "w"][:dims_c], n)})
    df = pd.concat([df, pd.DataFrame({"a": ["x", "y"] * 3, "b": ["p", "q", "q"] * 2,
                                      "c": ["u", "v", "w"][:dims_c] * (6 // dims_c)})])
    return rk.TableSet.from_pandas(df, {"ab": ["a", "b"], "ac": ["a", "c"]})


def _brute_published(ts, B):
    """(least total distortion of the published cells, its rounding) over every direction
    of the published cells that are not multiples: a rounding is controlled when each
    table adds up (its cells to its margins, the margins to the total; the a-margin and
    the total are one cell of both tables), and then a table of counts under it exists
    (for each a, a b x c table of counts with the rounded margins: equal sums suffice)."""
    s = ts.system
    v = np.rint(ts.values).astype(np.int64)
    pub = np.flatnonzero(s.published)
    A, Bd, C = list(s.coords["a"]), list(s.coords["b"]), list(s.coords["c"])

    def ix(table, **codes):
        return s.find(table=table, **codes)

    nm = [c for c in pub if v[c] % B]
    floor = B * (v // B)
    best = None
    for z in itertools.product((0, 1), repeat=len(nm)):
        r = floor.copy()
        r[nm] += B * np.array(z, np.int64)
        ok = True
        for t, other, codes in (("ab", "b", Bd), ("ac", "c", C)):
            def at(a, k, t=t, other=other, r=r):
                return r[ix(t, a=a, **{other: k})]
            for a in [*A, "Total"]:
                ok &= sum(at(a, k) for k in codes) == at(a, "Total")
            for k in codes:
                ok &= sum(at(a, k) for a in A) == at("Total", k)
        if ok:
            d = int(np.abs(r[pub] - v[pub]).sum())
            if best is None or d < best[0]:
                best = (d, r)
    return best


def test_unpublished_finest_cells_existence_and_least_distortion_equal_brute_force():
    from riskengine.mechanisms._rounding_sets import (
        is_controlled_rounding_published,
        milp_rounding_published,
    )
    rng = np.random.default_rng(31)
    n_some = n_none = 0
    for k in range(40):
        ts = _two_margins(rng, dims_c=2 + k % 2)
        s = ts.system
        assert not s.published[: s.n_interior].any()
        B = int(rng.integers(2, 5))
        best = _brute_published(ts, B)
        found = milp_rounding_published(s, ts.values, B)
        if best is None:
            assert found is None
            n_none += 1
            with pytest.raises(ValueError, match=f"no controlled rounding to base {B} exists"):
                rk.ControlledRounding(B, method="optimal").protect(ts)
            continue
        n_some += 1
        assert found is not None and is_controlled_rounding_published(s, ts.values, *found, B)
        pub = s.published
        v = np.rint(ts.values).astype(np.int64)
        assert int(np.abs(found[0][pub] - v[pub]).sum()) == best[0]
        rel = rk.ControlledRounding(B, method="optimal").protect(ts)
        np.testing.assert_array_equal(rel.values[pub], found[0][pub])
        assert np.isnan(rel.values[~pub]).all()
    assert n_some >= 20, (n_some, n_none)


def test_posterior_of_a_rounded_set_with_hidden_finest_cells_equals_the_enumeration():
    rng = np.random.default_rng(5)
    ts = _two_margins(rng, dims_c=2, n=0)         # the six fixed records: counts 0-2
    s = ts.system
    B = 2
    rel = rk.ControlledRounding(B, method="optimal").protect(ts)
    pub = np.flatnonzero(s.published)
    M = s.M.tocsr()
    r = rel.values
    grids = np.array(list(itertools.product(range(6), repeat=s.n_interior)))
    full = np.asarray(M[pub] @ grids.T).T
    cands = grids[(np.abs(full - r[pub]) < B).all(axis=1)]
    assert len(cands) > 1 and cands.max() < 5      # the box holds every candidate
    for prior, logw in ((rk.priors.Uniform(), ref_cs.log_prior("uniform", cands)),
                        (rk.priors.Poisson(1.5), ref_cs.log_prior(("poisson", 1.5), cands))):
        w = np.exp(logw - logw.max())
        w /= w.sum()
        post = rk.posterior(rel, prior)
        assert not post.attrs["approximate"], post.attrs["route"]
        values = post.pmf["value"].values
        got = post.pmf.values.reshape(s.n_interior, -1)
        for j in range(s.n_interior):
            want = np.array([w[cands[:, j] == val].sum() for val in values])
            np.testing.assert_allclose(got[j], want, atol=1e-12)
