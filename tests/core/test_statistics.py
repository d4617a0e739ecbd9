"""Table statistics (riskengine.statistics) against independent references.

References: scipy.stats.chi2_contingency (Pearson and log-likelihood, no continuity
correction) and scipy.stats.contingency.association (Cramér's V); log odds ratios by
hand; log-linear coefficients against a Poisson regression fitted by scipy.optimize on
the design matrix (effect coding), which shares nothing with the closed form / IPF.
Tolerances: 1e-10 relative for closed forms, 1e-6 for the optimiser's fit.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import optimize
from scipy import stats as st
from scipy.stats import contingency

from riskengine import statistics as S


def _tables(rng, n=40):
    for _ in range(n):
        r, c = rng.integers(2, 5, size=2)
        t = rng.poisson(rng.uniform(0.5, 20), size=(r, c))
        t[t.sum(1) == 0, 0] = 1          # scipy refuses empty rows / columns
        t[0, t.sum(0) == 0] = 1
        yield t


def test_chi2_g2_cramers_v_match_scipy(rng):
    for t in _tables(rng):
        dims = ("a", "b")
        chi, p, _, _ = st.chi2_contingency(t, correction=False)
        g, gp, _, _ = st.chi2_contingency(t, correction=False, lambda_="log-likelihood")
        assert S.get("chi2").values(t, dims, {}) == pytest.approx(chi, rel=1e-10, abs=1e-12)
        assert S.get("chi2_pvalue").values(t, dims, {}) == pytest.approx(p, rel=1e-9)
        assert S.get("g2").values(t, dims, {}) == pytest.approx(g, rel=1e-10, abs=1e-12)
        assert S.get("g2_pvalue").values(t, dims, {}) == pytest.approx(gp, rel=1e-9)
        v = contingency.association(t, method="cramer", correction=False)
        assert S.get("cramers_v").values(t, dims, {}) == pytest.approx(v, rel=1e-10)


def test_statistics_are_vectorised_over_leading_dims(rng):
    t = rng.poisson(5, size=(3, 4, 2, 3))           # chains x draws x table
    for name in ("chi2", "chi2_pvalue", "g2", "cramers_v", "loglinear", "row_proportions"):
        s = S.get(name)
        coords = {"a": ["x", "y"], "b": ["p", "q", "r"]}
        batch = s.values(t + 1, ("a", "b"), coords)
        one = np.stack([s.values(t[i, j] + 1, ("a", "b"), coords)
                        for i in range(3) for j in range(4)])
        np.testing.assert_allclose(batch.reshape(one.shape), one, rtol=1e-10)


def test_degrees_of_freedom_drop_empty_levels():
    t = np.array([[5, 0, 3], [2, 0, 7]])           # an empty column: df 1, not 2
    _, p, df, _ = st.chi2_contingency(t[:, [0, 2]], correction=False)
    assert df == 1
    assert S.get("chi2_pvalue").values(t, ("a", "b"), {}) == pytest.approx(p, rel=1e-9)
    # no nonempty second level: 0 df, p-value 1 and X^2 0
    t1 = np.array([[5, 3], [0, 0]])
    assert S.get("chi2").values(t1, ("a", "b"), {}) == 0.0
    assert S.get("chi2_pvalue").values(t1, ("a", "b"), {}) == 1.0


def test_three_way_chi2_is_mutual_independence(rng):
    t = rng.poisson(6, size=(2, 3, 2)) + 1
    n = t.sum()
    e = np.einsum("i,j,k->ijk", t.sum((1, 2)), t.sum((0, 2)), t.sum((0, 1))) / n ** 2
    ref = ((t - e) ** 2 / e).sum()
    assert S.get("chi2").values(t, ("a", "b", "c"), {}) == pytest.approx(ref, rel=1e-12)
    df = 12 - 1 - (1 + 2 + 1)
    assert S.get("chi2_pvalue").values(t, ("a", "b", "c"), {}) == pytest.approx(
        st.chi2.sf(ref, df), rel=1e-9)


def test_log_odds_ratio_by_labels_and_summed_dims():
    t = np.array([[[3, 1], [4, 0]], [[2, 2], [5, 6]], [[0, 1], [1, 1]]])   # a x b x c
    coords = {"a": ["u", "v", "w"], "b": ["no", "yes"], "c": ["m", "f"]}
    s = S.parse("oddsratio:c=f,m;a=w,u")           # dims named in the other order
    y = t.sum(axis=1)                               # b summed out: a x c
    # rows of the 2 x 2: c = f, m; columns: a = w, u
    q = np.array([[y[2, 1], y[0, 1]], [y[2, 0], y[0, 0]]]) + 0.5
    ref = np.log(q[0, 0] * q[1, 1] / (q[0, 1] * q[1, 0]))
    assert s.values(t, ("a", "b", "c"), coords) == pytest.approx(ref, rel=1e-12)
    raw = S.LogOddsRatio({"a": ["u", "v"], "c": ["m", "f"]}, add=0)
    yy = y[[0, 1]][:, [0, 1]]
    assert raw.values(t, ("a", "b", "c"), coords) == pytest.approx(
        np.log(yy[0, 0] * yy[1, 1] / (yy[0, 1] * yy[1, 0])), rel=1e-12)


def test_proportions_and_their_refusal_of_empty_rows():
    t = np.array([[1, 3], [0, 0]])
    with pytest.raises(ValueError, match=r"row_proportions: a 'y' has total 0"):
        S.get("row_proportions").values(t, ("a", "b"), {"a": ["x", "y"], "b": [0, 1]})
    cp = S.get("col_proportions").values(t, ("a", "b"), {})
    np.testing.assert_allclose(cp, [[1, 1], [0, 0]])


def _effect_design(shape, two_way: bool):
    """Design matrix of the log-linear model in effect coding: intercept, main effects
    (levels 0..l-2 free, the last = minus their sum) and, when ``two_way``, the two-way
    interactions (products of the main-effect columns)."""
    def main(k):
        lev = shape[k]
        cols = []
        for j in range(lev - 1):
            col = np.array([1.0 if idx[k] == j else (-1.0 if idx[k] == lev - 1 else 0.0)
                            for idx in np.ndindex(*shape)])
            cols.append(col)
        return cols
    mains = [main(k) for k in range(len(shape))]
    X = [np.ones(int(np.prod(shape)))] + [c for m in mains for c in m]
    if two_way:
        for a, b in itertools.combinations(range(len(shape)), 2):
            X += [ca * cb for ca in mains[a] for cb in mains[b]]
    return np.column_stack(X)


def _poisson_fit(y, X):
    """Maximum-likelihood Poisson regression by BFGS on the log likelihood."""
    def nll(beta):
        eta = X @ beta
        return float(np.exp(eta).sum() - y @ eta)

    def grad(beta):
        return X.T @ (np.exp(X @ beta) - y)
    b0 = np.zeros(X.shape[1])
    b0[0] = np.log(y.mean())
    res = optimize.minimize(nll, b0, jac=grad, method="BFGS", options={"gtol": 1e-10,
                                                                        "maxiter": 10_000})
    return np.exp(X @ res.x)


@pytest.mark.parametrize("shape", [(2, 3), (3, 4), (2, 2, 3), (3, 2, 2)])
def test_loglinear_fitted_values_and_effect_coding_match_a_poisson_regression(rng, shape):
    t = rng.poisson(8, size=shape)
    s = S.LogLinear()
    dims = tuple("abc"[: len(shape)])
    coords = {d: list(range(n)) for d, n in zip(dims, shape)}
    y = (t + 0.5).ravel().astype(float)
    fit = _poisson_fit(y, _effect_design(shape, len(shape) == 3)).reshape(shape)
    np.testing.assert_allclose(s.fitted(t + 0.5, len(shape)), fit, rtol=1e-6)
    coef = s.values(t, dims, coords)
    labels = s.out_dims(dims, coords)[1]["coefficient"]
    assert len(coef) == len(labels) and labels[0] == "intercept"
    logm = np.log(fit)
    assert coef[0] == pytest.approx(logm.mean(), rel=1e-6)
    # the coefficients rebuild the fitted values: log m = u + sum of the terms
    rebuilt = np.full(shape, coef[0])
    pos = 1
    for k, n in enumerate(shape):
        rebuilt += coef[pos:pos + n].reshape([n if i == k else 1 for i in range(len(shape))])
        pos += n
    if len(shape) == 3:
        for a, b in itertools.combinations(range(3), 2):
            n = shape[a] * shape[b]
            term = coef[pos:pos + n].reshape(shape[a], shape[b])
            rebuilt += np.expand_dims(term, axis=3 - a - b)
            pos += n
    np.testing.assert_allclose(rebuilt, logm, rtol=1e-6, atol=1e-6)
    # effect coding: every main effect sums to 0
    pos = 1
    for n in shape:
        assert abs(coef[pos:pos + n].sum()) < 1e-9
        pos += n


def test_user_statistics_and_bad_names():
    def top_left(x):
        """the first cell"""
        return x[0, 0]
    s = S.get(top_left)
    draws = np.arange(8).reshape(2, 2, 2)            # two 2 x 2 tables
    np.testing.assert_array_equal(s.values(draws, ("a", "b"), {}), [0, 4])
    assert s.name == "top_left" and s.description == "the first cell"
    with pytest.raises(ValueError, match="unknown statistic 'chi3'.*known: chi2"):
        S.parse("chi3")
    with pytest.raises(ValueError, match="DIM=A,B;DIM=C,D"):
        S.parse("log_odds_ratio:a=1,2")
    with pytest.raises(ValueError, match="label 'z' is not in dim 'a'"):
        S.parse("log_odds_ratio:a=x,z;b=p,q").check(("a", "b"), {"a": ["x", "y"],
                                                              "b": ["p", "q"]})
    with pytest.raises(ValueError, match="needs a table of 2 or more dims"):
        S.get("chi2").check(("a",), {})
