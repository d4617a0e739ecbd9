"""Posterior over integer completions of a suppressed count release, against brute force
(tests/reference/completions.py: every assignment of the suppressed cells, kept when every
published sum holds).  Tolerance 1e-9 on every cell probability, exact counts."""

import numpy as np
import pytest

import riskengine as rk
from riskengine.tabular import tabular_system
from tests.reference import tables as tab
from tests.reference.completions import completions
from tests.reference.intervals import sums_2d, sums_3d, sums_groups


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
    (rk.priors.Uniform(), tab.uniform_cell_log_weights),
    (rk.priors.Poisson(2.0), tab.poisson_cell_log_weights(2.0)),
]


def check(x, supp, sums, rel, prior, logw):
    n, ref = completions(x, supp, sums, logw)
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
