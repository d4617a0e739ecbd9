"""The cell key method with published totals that share cells (rows, columns and the
grand total of a 2-D table; nested totals; 3-D margins): route ``keys-crossing``, the
likelihood integrated over the record keys for every candidate table.

References: tests/reference/cell_key.py's ``posterior(..., keys=True, crossing=True)``
(every table of the candidate box, each weighed by ``crossing_likelihood``: the grid
segments of the keys counted one by one and the carries' law from qhull volumes made
exact rationals -- no lattice counts, no Fourier; tolerance 1e-9 on every probability
and on the log evidence, the count exact) and ``rk.CellKey.protect`` (keys drawn per
cell: frequencies of published outcomes within 4.5 binomial standard errors).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import riskengine as rk
from tests.reference import cell_key as ref
from tests.reference.agreement import check_against_reference
from tests.reference.priors import random_prior

HANDBOOK = {0: {0: 1.0}, 1: {0: 0.5, 2: 0.5}, 2: {2: 0.8, 3: 0.2}, 3: {2: 0.3, 3: 0.4, 4: 0.3}}
pytestmark = pytest.mark.filterwarnings("ignore:the p-table .* is biased:UserWarning")


def _grid_ptable(rng, grid, D):
    """A random p-table {i: {j: p}}, probabilities multiples of 1/grid, |j - i| <= D."""
    top = int(rng.integers(1, 4))
    rows = {0: {0: 1.0}}
    for i in range(1, top + 1):
        cand = np.arange(max(i - D, 0), i + D + 1)
        js = rng.choice(cand, size=int(rng.integers(1, min(cand.size, grid) + 1)), replace=False)
        p = (1 + rng.multinomial(grid - js.size, np.ones(js.size) / js.size)) / grid
        rows[i] = dict(zip(js.tolist(), p.tolist()))
    return rows


#: (shape, dims, published margins, largest perturbation)
CASES = [((2, 2), ("v", "w"), [("v",), ("w",), ()], 2),
         ((2, 3), ("v", "w"), [("v",), ("w",), ()], 1),
         ((2, 2), ("v", "w"), [("v",), ("w",)], 2),
         ((3, 2), ("v", "w"), [("v",), ()], 1),
         ((2, 2, 2), ("v", "w", "z"), [("v", "w"), ("v", "z")], 1)]


@pytest.mark.parametrize("seed", [s if s < 2 else pytest.param(s, marks=pytest.mark.slow)
                                  for s in range(8)])
def test_random_releases_equal_the_integral_over_the_keys(seed):
    """200 random small releases (25 a seed): 2 x 2 and 2 x 3 tables with every row,
    column and grand total, rows and columns without the grand total, rows nested in the
    grand total, a 2 x 2 x 2 table with two crossing 2-way margins (and no others); zeros; p-tables on
    grids of 4, 5 and 10 and the handbook's; every prior kind.  Every cell's and total's
    posterior, the evidence and the count equal the reference; the answer is exact."""
    rng = np.random.default_rng(3100 + seed)
    for i in range(25):
        shape, dims, margins, D = CASES[i % len(CASES)]
        d = (HANDBOOK if D == 2 and rng.random() < 0.2 else
             _grid_ptable(rng, int(rng.choice([4, 5, 10])), D))
        ck = rk.CellKey.from_matrix(d)
        T = rng.poisson(rng.uniform(0.5, 4), size=shape)
        T[rng.random(shape) < 0.25] = 0
        rel = ck.protect(rk.Table(T, dims=dims, margins=margins), rng)
        if len(shape) == 3:                   # the two 2-way margins only
            rel = rk.Release(rel.published, margins={k: rel.margins[k] for k in margins},
                             mechanism=ck, dims=dims)
        prior, spec = random_prior(rng, shape, rel.published)
        res = ref.posterior(d, rel.published, dict(rel.margins), dims, spec, keys=True,
                            crossing=True)
        assert res["keys"]
        note = f"{d} {T.tolist()} -> {rel.published.tolist()} {dict(rel.margins)} {spec}"
        post = check_against_reference(rel, prior, res, note)
        if post is not None:
            assert post.attrs["route"] == "keys-crossing", (note, post.attrs["route_reason"])
            assert "approximation" not in post.attrs and post.exact


def test_one_nonempty_cell_ties_its_row_column_and_total():
    """A 2 x 2 table whose only nonempty cell is (0, 0): its row, its column and the grand
    total hold its records, hence its key and (same count) its published value; a release
    where they differ has no such original (issue 26: the product gave it weight)."""
    ck = rk.CellKey.from_matrix(HANDBOOK)
    published = np.array([[2, 0], [0, 0]])
    margins = {("v",): np.array([3, 0]), ("w",): np.array([2, 0]), (): np.array(2)}
    rel = rk.Release(published, margins=margins, mechanism=ck, dims=("v", "w"))
    prior = rk.priors.Flat(0, 6)
    exact = rk.posterior(rel, prior)
    assert exact.attrs["route"] == "keys-crossing"
    # (2, 0 / 0, 0) would publish its row as the cell (2), not 3: impossible
    assert exact.prob(np.array([[2, 0], [0, 0]])).values[0, 0] < 1.0
    res = ref.posterior(HANDBOOK, published, margins, ("v", "w"), {"kind": "flat", "low": 0,
                                                                  "high": 6},
                        keys=True, crossing=True)
    check_against_reference(rel, prior, res, "one nonempty cell")
    product = rk.posterior(rel, prior, route="dp")
    assert "approximation" in product.attrs


def test_realistic_counts():
    """Cells in the hundreds (2 x 2 with every total on grids of 10 and 100, 2 x 3 on a
    grid of 10; perturbations up to 2): equal to the reference within 1e-9 under Uniform
    and Poisson priors."""
    rng = np.random.default_rng(17)
    for T, grid in [(np.array([[310, 95], [260, 401]]), 10),
                    (np.array([[310, 95], [260, 401]]), 100),
                    (np.array([[310, 95, 120], [260, 401, 77]]), 10)]:
        d = _grid_ptable(rng, grid, 2)
        ck = rk.CellKey.from_matrix(d)
        rel = ck.protect(rk.Table(T, dims=("v", "w"), margins=[("v",), ("w",), ()]), rng)
        for prior, spec in [(rk.priors.Uniform(), {"kind": "uniform"}),
                            (rk.priors.Poisson(250.0), {"kind": "poisson", "rate": 250.0})]:
            res = ref.posterior(d, rel.published, dict(rel.margins), ("v", "w"), spec,
                                keys=True, crossing=True)
            post = check_against_reference(rel, prior, res, f"{T.tolist()} {grid} {spec}")
            assert post.attrs["route"] == "keys-crossing" and post.exact


def test_likelihood_equals_the_frequency_of_the_published_outcome():
    """Pr(published | original) = exp(log evidence) under a prior that knows the 2 x 3
    table, against 30,000 protections of it: within 4.5 binomial standard errors for the
    most frequent outcome and two others."""
    ck = rk.CellKey.from_matrix(HANDBOOK)
    T = np.array([[1, 3, 0], [2, 1, 4]])
    rng = np.random.default_rng(5)
    tab = rk.Table(T, dims=("v", "w"), margins=[("v",), ("w",), ()])
    n = 30_000
    outs: dict = {}
    keys = [("v",), ("w",), ()]
    for _ in range(n):
        rel = ck.protect(tab, rng)
        key = (rel.published.tobytes(),) + tuple(np.asarray(rel.margins[k]).tobytes()
                                                 for k in keys)
        outs[key] = outs.get(key, 0) + 1
    ranked = sorted(outs.items(), key=lambda kv: -kv[1])
    known = rk.priors.Uniform().known([(i, j) for i in range(2) for j in range(3)],
                                      T.ravel().tolist())
    for key, k in [ranked[0], ranked[1], ranked[len(ranked) // 4]]:
        pub = np.frombuffer(key[0], dtype=np.int64).reshape(2, 3)
        margins = {kk: np.frombuffer(b, dtype=np.int64).reshape(-1 if kk else ())
                   for kk, b in zip(keys, key[1:])}
        rel = rk.Release(pub, margins=margins, mechanism=ck, dims=("v", "w"))
        post = rk.posterior(rel, known)
        assert post.attrs["route"] == "keys-crossing"
        p = math.exp(post.log_evidence)
        se = math.sqrt(p * (1 - p) / n)
        assert abs(k / n - p) <= 4.5 * se, (k / n, p)


def test_every_margin_of_a_3d_table_is_refused_and_labelled():
    """A 2 x 2 x 2 table with every margin (15 totals over 8 cells): the carries' chain
    passes its limit; ``auto`` says so and answers with the labelled product."""
    ck = rk.CellKey.from_matrix(HANDBOOK)
    rng = np.random.default_rng(3)
    rel = ck.protect(rk.Table(rng.integers(1, 5, size=(2, 2, 2)), dims=("a", "b", "c")), rng)
    post = rk.posterior(rel, rk.priors.Flat(0, 10))
    assert post.attrs["route"] != "keys-crossing" and "approximation" in post.attrs
    assert "keys-crossing: a table's likelihood: the carries' chain" in \
        post.attrs["route_reason"]


def test_past_its_limits_auto_moves_on_and_says_why():
    """A 3 x 3 table with every total on a grid of 20 at counts near 30: more tables than
    ``auto`` waits for -- the answer is the labelled product and the reason names the
    estimate; the limit of listed tables refuses by name."""
    rng = np.random.default_rng(7)
    d = _grid_ptable(rng, 20, 2)
    ck = rk.CellKey.from_matrix(d)
    T = np.array([[31, 9, 12], [26, 40, 7], [5, 9, 11]])
    rel = ck.protect(rk.Table(T, dims=("v", "w"), margins=[("v",), ("w",), ()]), rng)
    post = rk.posterior(rel, time=2.0)
    assert post.attrs["route"] != "keys-crossing"
    assert "keys-crossing: " in post.attrs["route_reason"]
    assert "approximation" in post.attrs


# --- sets of tables of the same records ------------------------------------------------


def _records(rng, T, labels):
    """Microdata of table ``T`` (rows r, columns c), one record key each."""
    rows = [(labels["r"][i], labels["c"][j]) for i, j in np.ndindex(*T.shape)
            for _ in range(int(T[i, j]))]
    return {"r": [a for a, _ in rows], "c": [b for _, b in rows],
            "record_key": rk.CellKey.record_keys(len(rows), rng)}


def _set_reference(d, rset, spec, hi):
    """The exact posterior of the finest table by enumeration of the box 0..hi per cell:
    the prior times ``ref.crossing_likelihood`` of every published entry of every release
    (entries holding the same finest cells once: the releases agree there)."""
    from tests.reference.numerics import log_prior

    shape = tuple(rset.shape)
    n = int(np.prod(shape))
    grid = np.array(np.meshgrid(*[np.arange(hi + 1)] * n, indexing="ij")).reshape(n, -1).T
    entries, seen = [], set()
    for e in rset.entries:
        held = frozenset(int(c) for c in e.cells)
        if held not in seen:
            seen.add(held)
            entries.append((held, int(e.value)))
    ok = np.ones(grid.shape[0], bool)                    # every entry possible on its own
    for held, y in entries:
        s = grid[:, sorted(held)].sum(axis=1)
        ok &= np.array([ref.prob(d, int(v), y) > 0 for v in s])
    grid = grid[ok]
    lp = log_prior(spec, grid.reshape((-1,) + shape))
    ll = np.array([ref.crossing_likelihood(d, [(frozenset(h), y) for h, y in entries],
                                           lambda h, x=x: int(sum(x[c] for c in h)))
                   for x in grid])
    with np.errstate(divide="ignore"):
        logw = lp + np.log(ll)
    fin = np.isfinite(logw)
    grid, logw = grid[fin], logw[fin]
    top = logw.max()
    w = np.exp(logw - top)
    Z = w.sum()
    cells = {c: {} for c in range(n)}
    for x, p in zip(grid, w / Z):
        for c in range(n):
            cells[c][int(x[c])] = cells[c].get(int(x[c]), 0.0) + p
    return cells, float(top + np.log(Z)), grid.shape[0]


@pytest.mark.parametrize("seed", [0, 1, pytest.param(2, marks=pytest.mark.slow),
                                  pytest.param(3, marks=pytest.mark.slow)])
def test_sets_of_tables_equal_the_integral_over_the_keys(seed):
    """40 random sets (10 a seed) from microdata with one record key per record: a 3 x 2
    table of regions r0, r1, r2 and another of (G = r0 + r1, r2), each with random totals
    (sometimes a 1-D table of the regions too): the finest cells' posterior, the evidence
    and the count equal the enumeration with the exact likelihood of every entry."""
    rng = np.random.default_rng(4100 + seed)
    labels = {"r": ["r0", "r1", "r2"], "c": ["c0", "c1"]}
    for _ in range(10):
        d = _grid_ptable(rng, int(rng.choice([4, 5, 10])), 1)
        ck = rk.CellKey.from_matrix(d)
        T = rng.poisson(1.2, size=(3, 2))
        recs = _records(rng, T, labels)
        grouped = dict(recs, r=["G" if r in ("r0", "r1") else r for r in recs["r"]])
        options = [("r",), ("c",), ()]
        rels = [ck.protect_records(recs, ("r", "c"), categories=labels,
                                   margins=[k for k in options if rng.random() < 0.6]),
                ck.protect_records(grouped, ("r", "c"),
                                   categories={"r": ["G", "r2"], "c": labels["c"]},
                                   margins=[k for k in options if rng.random() < 0.6])]
        if rng.random() < 0.3:
            rels.append(ck.protect_records(recs, ("r",), categories={"r": labels["r"]}))
        rset = rk.ReleaseSet(rels, groups={"r": {"G": ["r0", "r1"]}})
        hi = int(max(np.max(r.published) for r in rels)) + 1
        prior, spec = ((rk.priors.Flat(0, hi), {"kind": "flat", "low": 0, "high": hi})
                       if rng.random() < 0.5 else
                       (rk.priors.Poisson(1.5), {"kind": "poisson", "rate": 1.5}))
        cells, log_z, count = _set_reference(d, rset, spec, hi)
        post = rk.posterior(rset, prior)
        note = f"{d} {T.tolist()} {[r.published.tolist() for r in rels]}"
        assert post.attrs["route"] == "keys-crossing" and post.exact, note
        assert "approximation" not in post.attrs
        start = post.start.reshape(-1)
        probs = post.probs.reshape(start.size, -1)
        for c, pmf in cells.items():
            for v, p in pmf.items():
                w = v - int(start[c])
                got = probs[c, w] if 0 <= w < probs.shape[1] else 0.0
                assert got == pytest.approx(p, abs=1e-9), (note, c, v)
        assert probs.sum() == pytest.approx(start.size)
        assert post.log_evidence == pytest.approx(log_z, rel=1e-9, abs=1e-9), note
        assert post.n_candidates == count == rk.count_candidates(rset, prior), note
        for part in post.releases:                # each release's cells given the set
            np.testing.assert_allclose(part.probs.sum(-1), 1.0, atol=1e-12)
