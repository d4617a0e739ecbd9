"""Controlled rounding of hierarchical tables and table sets
(riskengine/mechanisms/_rounding_sets.py) against brute force: on random small
hierarchical tables and linked sets (tests/reference/cell_system.py), every up / down
direction of the finest cells that are not multiples is tried; a controlled rounding
exists exactly when the MILP finds one, and the MILP's total absolute distortion of the
finest cells is the least.  The posterior of a rounded hierarchical table (its published
cells each within B - 1 of their values, feasible likelihood) equals the enumeration of
every finest table."""

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
    for prior, logw in ((rk.priors.Uniform(), np.zeros(len(cands))),
                        (rk.priors.Poisson(3.0),
                         (cands * np.log(3.0)).sum(1)
                         - np.array([sum(np.log(np.arange(1, k + 1)).sum() for k in c)
                                     for c in cands]))):
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
