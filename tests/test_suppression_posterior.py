"""Posterior over integer completions of a suppressed count release, against brute force
(every assignment of the suppressed cells, kept when every published sum holds)."""

import itertools

import numpy as np
import pytest

import riskengine as rk
from riskengine.tabular import tabular_system
from tests.reference.intervals import sums_2d, sums_3d, sums_groups


def brute(x, supp, sums, logw):
    """All completions: count, and per-cell pmf (values 0..V-1) under log-weights
    ``logw(value array) -> per-cell log weight array``."""
    cells = list(zip(*np.nonzero(supp)))
    V = int(max(t for _, t in sums)) + 1
    cap = [min(int(t) for m, t in sums if m[c]) for c in cells]  # a cell <= each sum holding it
    hist = np.zeros(x.shape + (V,))
    n, z = 0, 0.0
    for vals in itertools.product(*(range(k + 1) for k in cap)):
        y = x.copy()
        for c, v in zip(cells, vals):
            y[c] = v
        if all(y[m].sum() == t for m, t in sums):
            n += 1
            w = np.exp(logw(y).sum())
            z += w
            for idx in np.ndindex(*x.shape):
                hist[idx + (y[idx],)] += w
    return n, hist / z if z else hist


def release(x, supp, dims, groups=None):
    t = rk.Table(x, dims=dims)
    sub = None
    if groups:
        s = tabular_system(dims, x.shape, t.margins, groups)
        full = s.vector(x)
        sub = {b.keep: full[b.slice].reshape(b.shape) for b in s.blocks if b.grouped}
    return rk.Release(np.where(supp, np.nan, x), margins=t.totals(),
                      mechanism=rk.CellSuppression(), dims=dims, kind="count",
                      groups=groups, subtotals=sub)


def dense(post, V):
    out = np.zeros(post.shape + (V,))
    for idx in np.ndindex(*post.shape):
        s = post.start[idx]
        for k, p in enumerate(post.probs[idx]):
            if p > 0:
                out[idx + (s + k,)] = p
    return out


PRIORS = [
    (rk.priors.Uniform(), lambda y: np.zeros(y.shape)),
    (rk.priors.Poisson(2.0), lambda y: y * np.log(2.0) - np.array(
        [np.sum(np.log(np.arange(1, v + 1))) for v in y.ravel()]).reshape(y.shape)),
]


def check(x, supp, sums, rel, prior, logw):
    n, ref = brute(x, supp, sums, logw)
    post = rk.posterior(rel, prior)
    assert post.n_candidates == n
    assert rk.count_candidates(rel, prior) == n
    got = dense(post, ref.shape[-1])
    np.testing.assert_allclose(got, ref, atol=1e-9)
    assert x.tolist() == x.tolist()
    return post


@pytest.mark.parametrize("k", [0, 1])
@pytest.mark.parametrize("case", range(6))
def test_2d_matches_brute_force(case, k):
    rng = np.random.default_rng(case)
    shape = tuple(rng.integers(2, 4, 2))
    x = rng.integers(0, 4, shape)
    supp = rng.random(shape) < 0.5
    supp.ravel()[:1] = True
    if supp.sum() > 4:
        supp.ravel()[np.flatnonzero(supp.ravel())[4:]] = False
    prior, logw = PRIORS[k]
    post = check(x, supp, sums_2d(x), release(x, supp, ("r", "c")), prior, logw)
    # published cells are known exactly; the truth is always a candidate
    assert (post.prob_exact(x).values[~supp] == 1).all()
    assert (post.prob_exact(x).values > 0).all()


@pytest.mark.parametrize("case", range(3))
def test_3d_matches_brute_force(case):
    rng = np.random.default_rng(50 + case)
    x = rng.integers(0, 4, (2, 2, 2 + case % 2))
    supp = rng.random(x.shape) < 0.6
    supp.ravel()[0] = True
    if supp.sum() > 5:
        supp.ravel()[np.flatnonzero(supp.ravel())[5:]] = False
    check(x, supp, sums_3d(x), release(x, supp, ("a", "b", "c")), *PRIORS[case % 2])


@pytest.mark.parametrize("case", range(4))
def test_subtotals_match_brute_force(case):
    rng = np.random.default_rng(80 + case)
    dim = "v" if case % 2 == 0 else "w"
    x = rng.integers(0, 3, (4, 3) if dim == "v" else (3, 4))
    parts = [[0, 1], [2, 3]]
    supp = rng.random(x.shape) < 0.5
    if supp.sum() > 5:
        supp.ravel()[np.flatnonzero(supp.ravel())[5:]] = False
    supp.ravel()[0] = True
    sums = sums_groups(x, parts) if dim == "v" else [
        (m.T, t) for m, t in sums_groups(x.T, parts)]
    check(x, supp, sums, release(x, supp, ("v", "w"), groups={dim: parts}), *PRIORS[case // 2])


SEED003 = np.array([[15, 1, 3, 1], [20, 10, 10, 15], [3, 10, 10, 2], [12, 14, 7, 2]])
SEED003_SUPP = np.array([[0, 1, 1, 1], [0, 0, 0, 0], [0, 0, 1, 1], [0, 1, 0, 1]], bool)


def test_seed003_three_possible_tables():
    # seed 003, slide "Suppress Primary Cells + Complementary Cells": the 4x4 table with
    # s entries at (1,2) (1,3) (1,4) (3,3) (3,4) (4,2) (4,4); "only three possible original
    # tables".  Exact count.  Reproduced when the intruder knows that no cell is zero
    # (Flat(low=1): the table has no zeros, a suppressed count is a respondent count);
    # with cells >= 0 there are 15 completions (hand derivation: two free cells a = x12,
    # b = x13 with a >= 0, b >= 1, a + b <= 5).
    rel = release(SEED003, SEED003_SUPP, ("v", "w"))
    assert rk.count_candidates(rel, rk.priors.Flat(low=1)) == 3
    assert rk.count_candidates(rel) == 15
    post = rk.posterior(rel, rk.priors.Flat(low=1))
    assert post.n_candidates == 3
    assert float(post.prob_exact(SEED003).values.min()) > 0
    # the three tables, by hand: (a, b) in {(1, 2), (1, 3), (2, 2)}; x12 = a
    assert post.pmf.sel(v=0, w=1, value=[1, 2]).values.round(12).tolist() == [
        round(2 / 3, 12), round(1 / 3, 12)]


def test_magnitude_release_has_no_integer_posterior():
    x = np.array([[1.5, 2.0], [3.0, 4.25]])
    rel = rk.Release(np.where(np.eye(2, dtype=bool), np.nan, x), margins=rk.Table(x).totals(),
                     mechanism=rk.CellSuppression(), dims=("dim_0", "dim_1"))
    with pytest.raises(ValueError, match="count release"):
        rk.posterior(rel)


def test_unsupported_structure_is_a_clear_error():
    x = np.arange(16).reshape(2, 2, 2, 2)
    rel = rk.Release(np.where(x == 3, np.nan, x), margins=rk.Table(x).totals(),
                     mechanism=rk.CellSuppression(), kind="count")
    with pytest.raises(ValueError, match="2-D tables"):
        rk.posterior(rel)
