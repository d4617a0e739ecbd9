"""Risk and utility measures against hand-computed values and independent formulas."""

import itertools

import numpy as np
import pytest
from scipy import stats

import riskengine as rk
from riskengine import measures as M
from tests.reference.measures import chi_square_mutual_independence


def _post(start, probs, published=None):
    start = np.asarray(start)
    return rk.Posterior(start=start, probs=probs, dims=("a", "b"),
                        coords={"a": list(range(start.shape[0])),
                                "b": list(range(start.shape[1]))},
                        published=published)


# a 1 x 2 posterior, by hand:
#   cell (0,0): values 1, 2, 3 with probabilities 0.2, 0.5, 0.3
#   cell (0,1): values 0, 1, 2 with probabilities 0.9, 0.1, 0.0
HAND = _post([[1, 0]], [[[0.2, 0.5, 0.3], [0.9, 0.1, 0.0]]], published=np.array([[3, 1]]))


def test_risk_hand_computed():
    ds = M.risk(HAND, np.array([[2, 0]]))
    # prob_exact: truth (2, 0) -> 0.5, 0.9
    assert ds["prob_exact"].values.tolist() == [[0.5, 0.9]]
    # mass at the published value (3, 1) -> 0.3, 0.1
    assert np.allclose(ds["prob_published"].values, [[0.3, 0.1]], rtol=0, atol=1e-15)
    assert np.allclose(ds["max_prob"].values, [[0.5, 0.9]], rtol=0, atol=1e-15)
    # 95 % equal-tailed: cell 0 cdf 0.2, 0.7, 1.0 -> [1, 3]; cell 1 cdf 0.9, 1.0 -> [0, 1]
    assert ds["interval_width"].values.tolist() == [[2, 1]]
    # Pr(value in {1, 2}): 0.2 + 0.5, 0.1 + 0.0
    assert np.allclose(ds["prob_small"].values, [[0.7, 0.1]], rtol=0, atol=1e-15)
    assert ds.attrs["expected_exact"] == pytest.approx(1.4, abs=1e-15)
    assert M.expected_exact(HAND, [[2, 0]]) == pytest.approx(1.4, abs=1e-15)
    for v in ds.data_vars:
        assert ds[v].attrs["definition"] == M.DEFINITIONS[v]
    # a 50 % interval: cell 0 quantiles 0.25 -> 2, 0.75 -> 3; cell 1: 0, 0
    assert M.interval_width(HAND, 0.5).values.tolist() == [[1, 0]]


def test_risk_on_real_posterior_matches_posterior_methods():
    t = rk.Table(np.array([[3, 1, 2], [2, 4, 1], [1, 2, 5]]))
    rel = rk.CyclicPerturbation(rk.cycles.diagonal(3), alpha=0.3, beta=0.3).protect(
        t, np.random.default_rng(5))
    post = rk.posterior(rel, rk.priors.Poisson(2.5))
    ds = M.risk(post, t)
    assert np.array_equal(ds["prob_exact"].values, post.prob_exact(t).values)
    iv = post.interval(0.95)
    assert np.array_equal(ds["interval_width"].values, (iv["upper"] - iv["lower"]).values)
    # brute force from the dense pmf
    pmf = post.pmf
    vals = pmf["value"].values
    for i, j in itertools.product(range(3), range(3)):
        p = pmf.values[i, j]
        assert ds["prob_exact"].values[i, j] == pytest.approx(p[vals == t.values[i, j]].sum())
        assert ds["prob_small"].values[i, j] == pytest.approx(p[(vals == 1) | (vals == 2)].sum())
        assert ds["max_prob"].values[i, j] == pytest.approx(p.max())


def test_chi_square_and_cramers_v_against_scipy():
    rng = np.random.default_rng(3)
    for _ in range(20):
        a = rng.integers(0, 30, size=tuple(rng.integers(2, 5, size=2)))
        a[0, 0] += 1
        if (a.sum(0) == 0).any() or (a.sum(1) == 0).any():
            continue
        ref = stats.chi2_contingency(a, correction=False).statistic
        assert M.chi_square(a) == pytest.approx(ref, rel=1e-12)
        n, k = a.sum(), min(a.shape)
        assert M.cramers_v(a) == pytest.approx(np.sqrt(ref / (n * (k - 1))), rel=1e-12)
        assert M.cramers_v(a) == pytest.approx(
            stats.contingency.association(a, method="cramer"), rel=1e-12)
    # hand: [[10, 20], [30, 40]]: e = [[12, 18], [28, 42]], X^2 = 4/12 + 4/18 + 4/28 + 4/42
    assert M.chi_square([[10, 20], [30, 40]]) == pytest.approx(
        4 / 12 + 4 / 18 + 4 / 28 + 4 / 42, rel=1e-14)


def test_chi_square_three_way_brute_force():
    a = np.random.default_rng(1).integers(0, 9, size=(2, 3, 4))
    ref = chi_square_mutual_independence(a)
    assert M.chi_square(a) == pytest.approx(ref, rel=1e-12)


def test_chi_square_degenerate():
    assert np.isnan(M.chi_square([[0, 0], [0, 0]]))
    assert np.isnan(M.cramers_v([[3, 4]]))            # a single row
    assert M.chi_square([[0, 0], [3, 4]]) == 0.0       # an empty row is skipped


def test_l1_and_hellinger_by_hand():
    assert M.l1([[1, 2], [3, 4]], [[2, 2], [3, 1]]) == 4.0
    # x = (1, 3) -> (1/4, 3/4); y = (2, 2) -> (1/2, 1/2)
    ref = np.sqrt(0.5 * ((0.5 - np.sqrt(0.5)) ** 2 + (np.sqrt(0.75) - np.sqrt(0.5)) ** 2))
    assert M.hellinger([1, 3], [2, 2]) == pytest.approx(ref, rel=1e-14)
    assert M.hellinger([1, 3], [2, 6]) == pytest.approx(0.0, abs=1e-15)   # same proportions
    assert M.hellinger([1, 0], [0, 1]) == pytest.approx(1.0, rel=1e-14)
    assert np.isnan(M.hellinger([0, 0], [1, 1]))
    assert np.isnan(M.l1([1, 2], [1, np.nan]))
    with pytest.raises(ValueError, match="shape"):
        M.l1([1, 2], [1, 2, 3])


def test_hellinger_of_unclipped_noisy_counts_reads_negatives_as_zero():
    """Noisy counts published without clipping hold negative values: the distance is that
    of the released table's nonnegative part (a finite number, never NaN), computed here by
    hand from the definition; the original must be nonnegative."""
    x, y = [4, 1, 0, 3], [5, -2, 1, 2]
    # y read as (5, 0, 1, 2) / 8; x as (4, 1, 0, 3) / 8
    ref = np.sqrt(0.5 * sum((np.sqrt(a / 8) - np.sqrt(b / 8)) ** 2
                            for a, b in zip([4, 1, 0, 3], [5, 0, 1, 2])))
    assert M.hellinger(x, y) == pytest.approx(ref, rel=1e-14)
    assert 0 < M.hellinger(x, y) < 1
    assert np.isnan(M.hellinger([1, 2], [-1, -3]))       # no positive released cell
    with pytest.raises(ValueError, match="original must be a nonnegative table, got -1"):
        M.hellinger([-1, 2], [1, 2])
    assert "read as 0" in M.DEFINITIONS["hellinger"]
    # through rk.measures.utility on a NoisyCounts release without clipping
    t = rk.Table(np.array([[0, 1, 0], [1, 0, 2]]), dims=("a", "b"))
    mech = rk.NoisyCounts(scale=1.5, clip=False)
    rel = next(r for r in (mech.protect(t, np.random.default_rng(s)) for s in range(200))
               if (np.asarray(r.published) < 0).any())
    post = rk.posterior(rel, rk.priors.Poisson(1.0))
    u = M.utility(post, t, rel)
    y = np.clip(np.asarray(rel.published, float), 0, None)
    xs = t.values / t.values.sum()
    ref = (np.sqrt(0.5 * ((np.sqrt(xs) - np.sqrt(y / y.sum())) ** 2).sum()) if y.sum() > 0
           else np.nan)
    np.testing.assert_allclose(float(u["hellinger"]), ref, rtol=1e-14)


def test_released_values_fill_and_margins_only():
    t = rk.Table(np.array([[1, 2], [3, 4]]), dims=("a", "b"))
    rel = rk.MarginsOnly().protect(t)
    assert np.isnan(M.released_values(rel)).all()
    post = rk.posterior(rel, rk.priors.Uniform())
    y = M.released_values(rel, fill=post)
    assert np.allclose(y, post.mean().values)
    # uniform over the 4 tables [[a, 3-a], [4-a, 3+a]], a = 0..3: E[a] = 1.5
    assert np.allclose(y, [[1.5, 1.5], [2.5, 4.5]], rtol=0, atol=1e-12)
    u = M.utility(post, t, rel)
    assert u["l1"] == pytest.approx(0.5 + 0.5 + 0.5 + 0.5)
    assert float(u["interval_width"]) == 3.0      # every cell ranges over 4 values
    assert float(u["utility"]) == pytest.approx(1 / 4)
    for v in u.data_vars:
        assert "definition" in u[v].attrs


def test_utility_of_an_exact_release():
    t = rk.Table(np.array([[3, 1, 2], [2, 4, 1], [1, 2, 5]]))
    mech = rk.CyclicPerturbation(rk.cycles.diagonal(3), alpha=0.0, beta=0.0)
    rel = mech.protect(t, np.random.default_rng(0))
    post = rk.posterior(rel, rk.priors.Poisson(2.0))
    u = M.utility(post, t, rel)
    assert float(u["utility"]) == 1.0
    assert float(u["l1"]) == 0.0 and float(u["hellinger"]) == 0.0
    assert float(u["chi_square_change"]) == 0.0 and float(u["cramers_v_change"]) == 0.0
    assert float(M.risk(post, t)["prob_exact"].min()) == 1.0


def test_bad_input():
    with pytest.raises(TypeError, match="rk.Posterior"):
        M.risk(np.zeros((2, 2)), [[1, 1], [1, 1]])
    with pytest.raises(ValueError, match="shape"):
        M.risk(HAND, [[1, 2, 3]])
    with pytest.raises(ValueError, match="nonnegative"):
        M.expected_exact(HAND, [[-1, 0]])
    with pytest.raises(TypeError, match="rk.Release"):
        M.released_values(np.zeros(3))
    with pytest.raises(ValueError, match=">= 0"):
        M.utility_score(-1.0)
