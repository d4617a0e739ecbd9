"""The closed-form route of 3 x 3 margins-only tables under a uniform prior
(riskengine/inference/three_by_three.py) against brute force and the half-split route.

References: every 3 x 3 nonnegative table with the margins listed from the definition
(four nested loops over the free cells, the rest from the totals) on 80 random small
tables, exact integer counts per cell value and in total; at counts of hundreds, the
exact half-split route (an independent meet-in-the-middle count) within 1e-12 per value;
draws against the exact pmf (tests.reference.agreement.gof_pvalue, p > 1e-4)."""

from __future__ import annotations

import numpy as np
import pytest

import riskengine as rk
import riskengine.inference.three_by_three as m
from riskengine.inference.three_by_three import cell_counts
from tests.reference.agreement import gof_pvalue

DIMS = ("v", "w")


def _brute(r, c):
    res = [[{} for _ in range(3)] for _ in range(3)]
    tot = 0
    for a in range(min(r[0], c[0]) + 1):
        for b in range(min(r[0] - a, c[1]) + 1):
            x02 = r[0] - a - b
            if x02 > c[2]:
                continue
            for u in range(min(r[1], c[0] - a) + 1):
                for v in range(min(r[1] - u, c[1] - b) + 1):
                    x12 = r[1] - u - v
                    t = np.array([[a, b, x02], [u, v, x12],
                                  [c[0] - a - u, c[1] - b - v, c[2] - x02 - x12]])
                    if (t < 0).any():
                        continue
                    tot += 1
                    for (i, j), x in np.ndenumerate(t):
                        res[i][j][int(x)] = res[i][j].get(int(x), 0) + 1
    return res, tot


@pytest.mark.parametrize("python_ints", [False, True])
def test_counts_equal_the_brute_force(python_ints, monkeypatch):
    if python_ints:          # the Python-integer path, forced on small margins
        monkeypatch.setattr(m, "_INT64_MARGIN", 3)
    rng = np.random.default_rng(31 + python_ints)
    for _ in range(40):
        T = rng.integers(0, rng.integers(1, 9), size=(3, 3))
        r, c = [int(v) for v in T.sum(1)], [int(v) for v in T.sum(0)]
        want, tot = _brute(r, c)
        counts, total = cell_counts(r, c)
        assert total == tot
        for i in range(3):
            for j in range(3):
                assert {v: int(x) for v, x in enumerate(counts[i][j]) if x} == want[i][j]


def test_the_posterior_equals_the_half_split_route_at_counts_of_hundreds():
    T = np.array([[310, 120, 205], [90, 260, 150], [175, 140, 330]])
    rel = rk.MarginsOnly().protect(rk.Table(T, dims=DIMS))
    post = rk.posterior(rel, rk.priors.Uniform())
    assert post.attrs["route"] == "three-by-three" and post.exact
    ref = rk.posterior(rel, rk.priors.Uniform(), route="halves")
    W = max(post.probs.shape[-1], ref.probs.shape[-1])
    for (i, j) in np.ndindex(3, 3):
        a = np.zeros(W + 1000)
        b = np.zeros(W + 1000)
        a[post.start[i, j]:post.start[i, j] + post.probs.shape[-1]] = post.probs[i, j]
        b[ref.start[i, j]:ref.start[i, j] + ref.probs.shape[-1]] = ref.probs[i, j]
        np.testing.assert_allclose(a, b, atol=1e-12, rtol=1e-9)
    assert post.n_candidates == ref.n_candidates
    assert post.log_evidence == pytest.approx(ref.log_evidence, rel=1e-12)


def test_draws_follow_the_exact_pmf():
    T = np.array([[31, 12, 20], [9, 26, 15], [17, 14, 33]])
    rel = rk.MarginsOnly().protect(rk.Table(T, dims=DIMS))
    post = rk.posterior(rel, rk.priors.Uniform(), route="three-by-three")
    n = 4000
    d = post.sample(n, np.random.default_rng(8)).values
    np.testing.assert_array_equal(d.sum(2), np.broadcast_to(T.sum(1), (n, 3)))
    np.testing.assert_array_equal(d.sum(1), np.broadcast_to(T.sum(0), (n, 3)))
    assert (d >= 0).all()
    for (i, j) in [(0, 0), (1, 1), (2, 0), (0, 2)]:
        pmf = {v: float(q) for v, q in enumerate(post.probs[i, j])}
        assert gof_pvalue(d[:, i, j].tolist(), pmf) > 1e-4, (i, j)


def test_1e5_under_uniform_is_exact_and_other_cases_are_passed_on():
    rng = np.random.default_rng(0)
    T = np.rint(1e5 * rng.uniform(0.9, 1.1, size=(3, 3))).astype(np.int64)
    rel = rk.MarginsOnly().protect(rk.Table(T, dims=DIMS))
    post = rk.posterior(rel, rk.priors.Uniform())
    assert post.attrs["route"] == "three-by-three" and post.exact
    assert post.n_candidates > 10 ** 19                 # exact, beyond int64
    np.testing.assert_allclose(post.probs.sum(-1), 1.0, rtol=1e-12)
    # the mean of a cell under the uniform prior: sum v p(v) against the draws' mean
    d = post.sample(300, np.random.default_rng(1)).values
    mean = (post.probs[0, 0] * np.arange(post.probs.shape[-1])).sum()
    assert abs(d[:, 0, 0].mean() - mean) < 5 * d[:, 0, 0].std() / np.sqrt(300)
    # a negative binomial prior, bounds from the prior, another shape: other routes
    nb = rk.posterior(rel, rk.priors.NegativeBinomial(1e5, 50.0))
    assert nb.attrs["route"] != "three-by-three"
    small = rk.MarginsOnly().protect(rk.Table(np.array([[3, 1, 2], [2, 4, 1], [1, 2, 5]]),
                                              dims=DIMS))
    bounded = rk.priors.Flat(low=0, high=3)
    p = rk.posterior(small, bounded)
    assert p.attrs["route"] != "three-by-three"
    with pytest.raises(ValueError, match="no bounds from the prior"):
        rk.posterior(small, bounded, route="three-by-three")
