"""The sums route (posteriors of suppressed hierarchical tables and linked sets) against
enumeration in tests/reference/cell_system.py.

Random small releases (seeded; hierarchical 2-D tables and linked sets, counts Poisson
with a rate in 1..4, ``rk.suppress`` with ``Frequency(3)`` and a few forced cells): every
finest cell's posterior pmf, ``n_candidates`` and the log evidence equal the brute force
over the whole product of the finest cells' windows (independent of the route: the
reference's membership rows of the published cells, checked against every row) under
``Uniform()``, ``Poisson(2.5)`` and ``Flat(0, 8)``; ``rk.count_candidates`` equals the
brute-force count; 4000 whole-table draws match the pmfs.  A table with counts in the
hundreds (Poisson(150), districts in two regions x 3 columns) against exact rational
elimination.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import riskengine as rk
from tests.reference import cell_system as ref_cs

RULE = rk.sensitivity.Frequency(3)
PRIORS = {"uniform": rk.priors.Uniform(), ("poisson", 2.5): rk.priors.Poisson(2.5),
          ("flat", 0, 8): rk.priors.Flat(0, 8)}


class Release:
    """A suppressed release and the reference's view of it: the membership row and true
    value of every published variable, which are hidden."""

    def __init__(self, case, rel):
        s = rel.system
        ref = ref_cs.reference_cells(case.tables)
        pid = ref_cs.published_ids(s)
        by_var = {}
        for key, j in pid.items():
            by_var.setdefault(j, key)
        self.ids = np.array(sorted(by_var))
        self.rows = ref_cs.membership_rows(ref, s, [by_var[j] for j in self.ids])
        self.finest = case.finest_values(s).reshape(-1)
        self.true = self.rows @ self.finest
        self.hidden = np.isnan(rel.values[self.ids])
        np.testing.assert_array_equal(rel.values[self.ids][~self.hidden],
                                      self.true[~self.hidden])
        self.rel, self.system = rel, s
        self.E = self.rows[~self.hidden]
        self.b = self.true[~self.hidden]

    def candidates(self, bound=None):
        return ref_cs.brute_completions(self.E, self.b, self.system.n_interior, bound=bound,
                                        limit=150_000)

    def meets_every_sum(self, f) -> bool:
        return bool(np.all(f.reshape(len(f), -1) @ self.E.T == self.b))


def random_releases(rng, n):
    """``n`` releases whose brute force is small: hidden cells, every finest cell in a
    published sum, at most 150,000 assignments in the product of the windows."""
    out = []
    while len(out) < n:
        linked = len(out) % 2 == 1
        case = ref_cs.random_linked_case(rng, rk, max_depth=2, max_grid=40, rate=(1, 4)) \
            if linked else \
            ref_cs.random_table_case(rng, rk, max_depth=2, max_grid=30, rate=(1, 4), ndims=2)
        ts = rk.TableSet(case.tables)
        ts = rk.TableSet(case.tables, finest=case.finest_values(ts.system))
        s = ts.system
        forced = np.zeros(s.n_var, bool)
        forced[rng.choice(np.flatnonzero(s.published), size=int(rng.integers(0, 3)))] = True
        try:
            rel = rk.suppress(ts, RULE, forced=forced)
        except ValueError:
            continue
        r = Release(case, rel)
        if not r.hidden.any():
            continue
        try:
            f = r.candidates()
        except ValueError:                      # unbounded or too many: not this case
            continue
        out.append((r, f))
    return out


def check_posterior(r, f_all, prior_key):
    """The route's posterior under one prior equals the brute force over ``f_all`` (every
    candidate under the widest windows; ``Flat`` keeps those inside its range)."""
    s = r.system
    prior = PRIORS[prior_key]
    logw = ref_cs.log_prior(prior_key, f_all)
    count, log_z, pmf = ref_cs.posterior_from(f_all, logw)
    if count == 0:
        with pytest.raises(ValueError, match="no original table is consistent"):
            rk.posterior(r.rel, prior)
        return None
    post = rk.posterior(r.rel, prior)
    assert post.attrs["route"] == "sums"
    assert post.n_candidates == count
    assert post.log_evidence == pytest.approx(log_z, rel=1e-9, abs=1e-9)
    da = post.pmf
    assert da.dims == (*s.dims, "value")
    values = da["value"].values
    got = da.values.reshape(s.n_interior, len(values))
    want = np.zeros_like(got)
    for (j, v), p in pmf.items():
        assert values[0] <= v <= values[-1]
        want[j, v - values[0]] = p
    np.testing.assert_allclose(got, want, atol=1e-10, rtol=0)
    return post, pmf


def test_random_releases_equal_brute_force(rng):
    """>= 40 releases, three priors each."""
    cases = random_releases(rng, 44)
    n_linked = n_multi = 0
    for r, f in cases:
        for key in ("uniform", ("poisson", 2.5)):
            check_posterior(r, f, key)
        f8 = f[np.all(f <= 8, axis=1)]
        check_posterior(r, f8, ("flat", 0, 8))
        assert rk.count_candidates(r.rel) == len(f)
        if len(f8):
            assert rk.count_candidates(r.rel, rk.priors.Flat(0, 8)) == len(f8)
        else:                       # as for flat releases: no candidate is an error
            with pytest.raises(ValueError):
                rk.count_candidates(r.rel, rk.priors.Flat(0, 8))
        n_linked += len(r.rel.system.grids) > 1
        n_multi += len(f) > 1
    assert n_linked >= 15 and n_multi >= 20


def test_reference_enumerations_agree(rng):
    """The reference's two enumerations (the product of the windows; rational elimination)
    give the same candidates."""
    for r, f in random_releases(rng, 12):
        g = ref_cs.param_completions(r.E, r.b, r.system.n_interior)
        assert sorted(map(tuple, f)) == sorted(map(tuple, g))


def test_draws_match_the_pmf():
    rng = np.random.default_rng(7)
    m = 4000
    checked = 0
    for r, f in random_releases(np.random.default_rng(11), 8):
        if len(f) < 3:
            continue
        post, pmf = check_posterior(r, f, ("poisson", 2.5))
        draws = post.sample(m, rng)
        assert draws.dims == ("draw", *r.system.dims)
        d = draws.values.reshape(m, -1)
        assert r.meets_every_sum(d)
        for j in range(d.shape[1]):
            vals, counts = np.unique(d[:, j], return_counts=True)
            freq = dict(zip(vals.tolist(), (counts / m).tolist()))
            for v in set(freq) | {v for (jj, v) in pmf if jj == j}:
                p = pmf.get((j, v), 0.0)
                se = math.sqrt(p * (1 - p) / m)
                assert abs(freq.get(v, 0.0) - p) <= 4 * se + 1e-12, (j, v, p, freq.get(v))
        checked += 1
    assert checked >= 4


def test_unbounded_finest_cell_is_refused():
    """Everything hidden: a finest cell in no published sum is unbounded under a prior
    without an upper bound; knowledge ``at_most`` bounds it (all 4 x 4 candidates)."""
    h = rk.Hierarchy({"N": ["N1", "N2"]})
    ts = rk.TableSet(rk.Table(np.array([1, 2]), dims=("geo",), hierarchies={"geo": h}))
    rel = rk.TableSetRelease(ts, np.full(ts.system.n_var, np.nan), rk.CellSuppression())
    with pytest.raises(ValueError, match=r"finest cell table\(N1\) is in no published sum"):
        rk.posterior(rel, rk.priors.Uniform())
    post = rk.posterior(rel, rk.priors.Uniform().at_most(np.ones(2, bool), 3))
    assert post.n_candidates == 16
    np.testing.assert_allclose(post.pmf.values, np.full((2, 4), 0.25), atol=1e-12)


def test_flat_prior_bounds_a_cell_in_no_published_sum():
    h = rk.Hierarchy({"N": ["N1", "N2"]})
    ts = rk.TableSet(rk.Table(np.array([1, 2]), dims=("geo",), hierarchies={"geo": h}))
    rel = rk.TableSetRelease(ts, np.full(ts.system.n_var, np.nan), rk.CellSuppression())
    post = rk.posterior(rel, rk.priors.Flat(0, 3))
    assert post.n_candidates == 16


# --- counts in the hundreds -------------------------------------------------------------------

GEO = rk.Hierarchy({"R1": ["L1", "L2"], "R2": ["L3", "L4"]})
COLS = ["c1", "c2", "c3"]


class _Case:
    def __init__(self, table, finest):
        self.tables = {"T": table}
        self._finest = finest

    def finest_values(self, s):
        assert s.coords == {"geo": ["L1", "L2", "L3", "L4"], "col": COLS}
        return self._finest


# the suppressed cells of each pattern, by (geo, col) codes (None: the total)
PATTERNS = {
    # a 2 x 2 block inside region R1: one free dimension
    "block": [("L1", "c1"), ("L1", "c2"), ("L2", "c1"), ("L2", "c2")],
    # two districts' cells in c1 and their row totals: aggregates hidden too
    "with totals": [("L1", "c1"), ("L2", "c1"), ("L1", None), ("L2", None)],
    # R1's districts in every column: two free dimensions
    "two free": [("L1", "c1"), ("L1", "c2"), ("L1", "c3"), ("L2", "c1"), ("L2", "c2"),
                 ("L2", "c3")],
}


def big_release(pattern):
    finest = np.random.default_rng(150).poisson(150, size=(4, 3))
    t = rk.Table(finest, dims=("geo", "col"), coords={"col": COLS}, hierarchies={"geo": GEO},
                 name="T")
    ts = rk.TableSet(t)
    s = ts.system
    vals = ts.values.copy()
    for geo, col in PATTERNS[pattern]:
        codes = {k: v for k, v in (("geo", geo), ("col", col)) if v is not None}
        vals[s.find(table="T", **codes)] = np.nan
    rel = rk.TableSetRelease(ts, vals, rk.CellSuppression())
    return Release(_Case(t, finest), rel), finest


@pytest.mark.parametrize("pattern", list(PATTERNS))
@pytest.mark.parametrize("prior_key", ["uniform", ("poisson", 150.0), ("poisson", 2.5)])
def test_counts_in_the_hundreds_equal_elimination(pattern, prior_key):
    r, finest = big_release(pattern)
    f = ref_cs.param_completions(r.E, r.b, r.system.n_interior)
    assert len(f) > 100
    assert any(np.array_equal(c, finest.reshape(-1)) for c in f)   # the truth is one
    assert r.meets_every_sum(f)
    prior = rk.priors.Poisson(prior_key[1]) if prior_key != "uniform" else rk.priors.Uniform()
    logw = ref_cs.log_prior(prior_key, f)
    count, log_z, pmf = ref_cs.posterior_from(f, logw)
    post = rk.posterior(r.rel, prior)
    assert post.n_candidates == count
    assert post.log_evidence == pytest.approx(log_z, rel=1e-9)
    da = post.pmf
    values = da["value"].values
    got = da.values.reshape(12, len(values))
    want = np.zeros_like(got)
    for (j, v), p in pmf.items():
        want[j, v - values[0]] = p
    np.testing.assert_allclose(got, want, atol=1e-9, rtol=0)
    if prior_key == "uniform":
        assert rk.count_candidates(r.rel) == count
        assert post.log_evidence == pytest.approx(math.log(count), rel=1e-12)


def test_counts_in_the_hundreds_draws():
    r, _ = big_release("block")
    f = ref_cs.param_completions(r.E, r.b, r.system.n_interior)
    _, _, pmf = ref_cs.posterior_from(f, ref_cs.log_prior(("poisson", 150.0), f))
    post = rk.posterior(r.rel, rk.priors.Poisson(150))
    m = 4000
    d = post.sample(m, np.random.default_rng(3)).values.reshape(m, -1)
    assert r.meets_every_sum(d)
    for j in (0, 1, 3, 4):                      # the hidden block: L1, L2 x c1, c2
        vals, counts = np.unique(d[:, j], return_counts=True)
        for v, c in zip(vals.tolist(), counts.tolist()):
            p = pmf.get((j, v), 0.0)
            assert abs(c / m - p) <= 4 * math.sqrt(p * (1 - p) / m) + 1e-12
        mean = sum(p * v for (jj, v), p in pmf.items() if jj == j)
        sd = math.sqrt(sum(p * (v - mean) ** 2 for (jj, v), p in pmf.items() if jj == j))
        assert abs(d[:, j].mean() - mean) <= 4 * sd / math.sqrt(m)
