"""Counts by sequential importance sampling against exact counts.

References: every table with the margins listed by brute force (small cases), the exact
table DP / half-split counts (larger ones), De Loera & Sturmfels' published count
(1,225,914,276,768,514), and n! for the margins of an n x n permutation matrix.
The proposal is checked exactly (its probabilities sum to 1 over the brute-force
candidate set, so the estimator is unbiased and supported on the candidates); the
estimates within 5 of their own standard errors on fixed seeds.
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest

import riskengine as rk
from kernels import sis as ksis
from riskengine.data import seeds
from riskengine.inference.gibbs import ConvergenceWarning


def _release(R, C):
    return rk.Release(None, margins={("v",): list(R), ("w",): list(C), (): int(sum(R))},
                      mechanism=rk.MarginsOnly(), dims=("v", "w"))


def _tables(R, C):
    """Every nonnegative integer table with row sums R and column sums C: rows chosen one
    at a time among the compositions of their sum that fit the column sums left."""
    R, C = [int(x) for x in R], [int(x) for x in C]

    def rows_from(i, left):
        if i == len(R) - 1:
            if sum(left) == R[i]:
                yield [tuple(left)]
            return
        for x in itertools.product(*(range(min(R[i], c) + 1) for c in left)):
            if sum(x) == R[i]:
                for rest in rows_from(i + 1, [c - v for c, v in zip(left, x)]):
                    yield [x, *rest]
    for rows in rows_from(0, C):
        yield np.array(rows, np.int64)


def _random_margins(rng):
    while True:                                 # at most a few thousand tables to list
        r, m = int(rng.integers(2, 5)), int(rng.integers(2, 5))
        T = rng.poisson(rng.uniform(0.3, 2.5), size=(r, m))
        if rng.random() < 0.3:
            T[int(rng.integers(r))] = 0                  # an empty row
        if T.sum() <= 18 + 6 * (min(r, m) == 2):
            return T.sum(1), T.sum(0)


@pytest.mark.parametrize("uniform", [False, True], ids=["cells", "columns"])
@pytest.mark.parametrize("seed", range(40))
def test_the_proposal_is_a_distribution_on_exactly_the_candidates(seed, uniform):
    rng = np.random.default_rng(seed)
    R, C = _random_margins(rng)
    tabs = list(_tables(R, C))
    logq = np.array([ksis.log_proposal(R, C, T, uniform) for T in tabs])
    assert np.isfinite(logq).all()
    assert math.fsum(np.exp(logq)) == pytest.approx(1.0, abs=1e-12)
    bad = tabs[0].copy()
    bad[0, 0] += 1
    assert ksis.log_proposal(R, C, bad, uniform) == -np.inf
    if uniform:          # every column's compositions equally likely: q of a table is the
        for T in tabs[:20]:   # product over the first m - 1 columns of 1 / their count
            rr, want = np.array(R), 0.0
            for j in range(len(C) - 1):
                n_col = sum(1 for x in itertools.product(*[range(v + 1) for v in rr])
                            if sum(x) == C[j])
                want -= math.log(n_col)
                rr = rr - T[:, j]
            assert ksis.log_proposal(R, C, T, True) == pytest.approx(want, abs=1e-9)
        bufs = ksis._buffers(R, C, True)          # the guarded (non-exact) path agrees
        guarded = [ksis._walk(R, C, np.zeros((0, 0)), T, False, True, False, *bufs)
                   for T in tabs]
        np.testing.assert_allclose(guarded, logq, rtol=0, atol=1e-12)
    assert len(tabs) == rk.count_candidates(_release(R, C))


@pytest.mark.parametrize("proposal", ["cells", "columns"])
@pytest.mark.parametrize("seed", [s if s in (1, 2, 3) else pytest.param(s, marks=pytest.mark.slow)
                                  for s in range(10)])
def test_estimates_agree_with_exact_counts(seed, proposal):
    rng = np.random.default_rng(100 + seed)
    shape = (int(rng.integers(3, 5)), int(rng.integers(3, 6)))   # exact counts: fast
    T = rng.poisson(rng.uniform(2, 15), size=shape)
    rel = rk.MarginsOnly().protect(rk.Table(T))
    exact = rk.count_candidates(rel)
    est = rk.estimate_count(rel, n=20000, rng=np.random.default_rng(seed), proposal=proposal)
    assert est.reliable
    assert abs(est.estimate - exact) <= 5 * est.se, (est, exact)
    lo, hi = est.interval(5)
    assert lo <= exact <= hi


@pytest.mark.parametrize("R, C, want", [
    # seed 003, slide "Releasing Only the Margins": 18,272,363,056 tables
    (seeds.S003.ORIGINAL_2D.sum(1), seeds.S003.ORIGINAL_2D.sum(0), seeds.S003.N_TABLES_MARGINS),
    # De Loera & Sturmfels' 4 x 4 (n = 592), the count quoted in issue 15
    pytest.param([220, 215, 93, 64], [108, 286, 71, 127], 1_225_914_276_768_514,
                 marks=pytest.mark.slow),
])
@pytest.mark.parametrize("proposal", ["cells", pytest.param("columns", marks=pytest.mark.slow)])
def test_published_counts(R, C, want, proposal):
    est = rk.estimate_count(_release(R, C), n=50000, rng=np.random.default_rng(1),
                            proposal=proposal)
    assert est.reliable and est.rel_se < 0.05
    assert abs(est.estimate - want) <= 5 * est.se
    assert rk.count_candidates(_release(R, C)) == want


def test_permutation_margins_are_the_known_failure_and_say_so():
    """The margins of a 20 x 20 permutation matrix (20! tables): the "cells" proposal is
    far from uniform, the weights heavy tailed; the estimate must call itself
    unreliable.  The default "columns" proposal is uniform there."""
    rel = _release([1] * 20, [1] * 20)
    with pytest.warns(ConvergenceWarning, match="SIS count estimate is unreliable"):
        est = rk.estimate_count(rel, n=5000, rng=np.random.default_rng(0), proposal="cells")
    assert not est.reliable and est.ess < 0.01 * est.n
    assert "UNRELIABLE" in str(est)
    small = rk.estimate_count(_release([1] * 8, [1] * 8), n=20000,
                              rng=np.random.default_rng(0), proposal="cells")
    assert abs(small.estimate - math.factorial(8)) <= 5 * small.se
    # the column-uniform proposal is uniform over the tables here: every weight is 20!
    cols = rk.estimate_count(rel, n=200, rng=np.random.default_rng(0))      # the default
    assert cols.rel_se == pytest.approx(0.0, abs=1e-12) and cols.ess == pytest.approx(200)
    assert cols.estimate == pytest.approx(math.factorial(20), rel=1e-12)
    with pytest.raises(ValueError, match="proposal"):
        rk.estimate_count(rel, proposal="poisson")


@pytest.mark.slow
def test_same_release_same_estimate_and_huge_counts_stay_in_logs():
    rng = np.random.default_rng(3)
    rel = rk.MarginsOnly().protect(rk.Table(rng.poisson(15, size=(8, 6))))
    a, b = rk.estimate_count(rel, n=3000), rk.estimate_count(rel, n=3000)
    assert a == b
    big = _release([4000] * 30, [3000] * 40)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est = rk.estimate_count(big, n=200, rng=np.random.default_rng(0))
    assert est.estimate == math.inf and est.log_estimate > 709
    assert str(est).startswith("approximately ~1e")


def test_single_row_and_bad_input():
    assert rk.estimate_count(_release([5], [2, 3])).estimate == 1.0
    t = rk.Table(np.array([[1, 2], [3, 4]]))
    with pytest.raises(ValueError, match="SIS counts cover margins-only releases.*"
                                         "controlled_rounding release"):
        rk.estimate_count(rk.ControlledRounding(3).protect(t, np.random.default_rng(0)))
    with pytest.raises(ValueError, match="n must be >= 2"):
        rk.estimate_count(rk.MarginsOnly().protect(t), n=1)
    with pytest.raises(TypeError, match="rng must be a numpy.random.Generator"):
        rk.estimate_count(rk.MarginsOnly().protect(t), rng=3)
    t3 = rk.Table(np.ones((2, 2, 2), int))
    with pytest.raises(ValueError, match="2-D count tables"):
        rk.estimate_count(rk.MarginsOnly().protect(t3))


@pytest.mark.slow
def test_cli_count_estimates_when_the_exact_count_does_not_fit(tmp_path, capsys):
    from riskengine.cli import main
    rng = np.random.default_rng(7)
    rel = rk.MarginsOnly().protect(rk.Table(rng.poisson(15, size=(8, 6))))
    path = tmp_path / "rel.json"
    rel.save(path)
    assert main(["count", str(path), "--memory", "50MB"]) == 0
    cap = capsys.readouterr()
    assert "no exact count within the memory budget" in cap.err
    assert cap.out.startswith("approximately ") and "ESS" in cap.out
    assert main(["count", str(path), "--sis", "2000"]) == 0
    assert "of 2,000 draws" in capsys.readouterr().out
    small = tmp_path / "small.json"
    rk.MarginsOnly().protect(rk.Table(np.array([[3, 1, 2], [2, 4, 1]]))).save(small)
    assert main(["count", str(small)]) == 0
    assert capsys.readouterr().out.strip() == "20"
    assert main(["count", str(small), "--sis", "100", "--prior", "flat:1"]) == 2
    assert "--sis estimates the number of tables" in capsys.readouterr().err
