"""Regression tests: each defect of "never silently wrong" (issue 14), with an independent
reference (log-space brute force from ``tests/reference/numerics.py``, or a hand
derivation stated in the test)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import xarray as xr

import riskengine as rk
from tests.reference import numerics as ref


def _brute_2xc(T, spec):
    cand = ref.tables_2xc(T.sum(1), T.sum(0))
    return ref.cell_posteriors(cand, ref.log_prior(spec, cand))


def _assert_matches(post, cells, logz=None, tol=1e-9):
    for idx, pmf in cells.items():
        j = np.array(list(pmf)) - post.start[idx]
        got = np.where((j >= 0) & (j < post.width),
                       post.probs[idx][np.clip(j, 0, post.width - 1)], 0.0)
        assert np.abs(got - np.array(list(pmf.values()))).max() <= tol, idx
    if logz is not None:
        assert post.log_evidence == pytest.approx(logz, rel=1e-9)


# --- 1. weights underflow in the table DP -------------------------------------------------------
@pytest.mark.parametrize("T, rate", [
    ([[110, 80, 95], [105, 90, 100]], 1.0),
    ([[110, 80, 95], [105, 90, 100]], 5.0),
    pytest.param([[310, 280, 295], [305, 290, 300]], 5.0, marks=pytest.mark.slow),
    ([[141, 35, 107], [210, 131, 193]],
     [[29.366, 12.842, 8.748], [0.823, 13.835, 23.051]]),
])
def test_margins_only_poisson_at_realistic_counts(T, rate):
    """Issue 14 item 1: these raised "no table is consistent" or gave a NaN pmf."""
    T = np.array(T)
    rel = rk.MarginsOnly().protect(rk.Table(T))
    post = rk.posterior(rel, rk.priors.Poisson(np.array(rate, dtype=float)))
    assert np.all(np.isfinite(post.probs))
    cells, logz, n = _brute_2xc(T, {"kind": "poisson", "rate": np.array(rate, dtype=float)})
    _assert_matches(post, cells, logz)
    assert post.n_candidates == n


def test_scalar_poisson_rate_cancels_with_fixed_margins():
    """With every margin fixed a scalar Poisson rate multiplies every table by the same
    rate^N: the posterior is the same for every rate (hand derivation)."""
    rel = rk.MarginsOnly().protect(rk.Table(np.array([[110, 80, 95], [105, 90, 100]])))
    p1 = rk.posterior(rel, rk.priors.Poisson(1.0)).probs
    for r in (1e-3, 5.0, 1e4):
        np.testing.assert_allclose(rk.posterior(rel, rk.priors.Poisson(r)).probs, p1,
                                   atol=1e-12)


# --- 2. bootstrap likelihood tails -----------------------------------------------------------
def test_bootstrap_likelihood_far_tail():
    """Pr(publish 750 | x = 742), M = 6, S = 3, n = 750: exp(-38.34) (issue 14, by the log-space
    reference), not 0; so 9 candidates, not 8."""
    mech = rk.Bootstrap(M=6, S=3)
    got = float(mech.log_likelihood_cells(750, 742, 750))
    want = ref.bootstrap_log_lik(750, 742, 750, 6, 3)
    assert got == pytest.approx(want, rel=1e-9) and got == pytest.approx(-38.34, abs=0.01)
    rel = rk.Release(np.array([[750]]), margins={(): 750}, mechanism=mech)
    assert rk.posterior(rel, route="cells").n_candidates == 9
    assert rk.count_candidates(rel, route="cells") == 9
    # the exact joint route knows the single cell is the published n
    assert rk.count_candidates(rel) == rk.posterior(rel).n_candidates == 1


def test_bootstrap_mode_of_a_large_cell():
    """3 x 1 table [[0], [861], [114]], M = 4, S = 5, Poisson(1.93): the per-cell route's
    exact mode 802 (log-space reference), not 815."""
    rel = rk.Release(np.array([[0], [861], [114]]), margins={(): 975},
                     mechanism=rk.Bootstrap(M=4, S=5))
    post = rk.posterior(rel, rk.priors.Poisson(1.93), route="cells")
    xs = np.arange(600, 1100)
    lw = np.array([ref.bootstrap_log_lik(861, int(x), 975, 4, 5) for x in xs])
    lw = lw + ref.cell_log_prior({"kind": "poisson", "rate": 1.93}, (1, 0), xs)
    assert int(post.mode().values[1, 0]) == int(xs[np.argmax(lw)]) == 802
    p = np.exp(lw - lw.max())
    p /= p.sum()
    _assert_matches(post, {(1, 0): dict(zip(xs.tolist(), p.tolist()))})


# --- 3. candidate counts of the per-cell route -----------------------------------------------
def test_cells_count_from_supports_not_floats():
    """A Poisson prior is positive everywhere: the count equals the Uniform one."""
    rel = rk.Release(np.array([[750, 3]]), margins={(): 753}, mechanism=rk.Bootstrap(M=6, S=3))
    n_uniform = rk.posterior(rel).n_candidates
    assert rk.posterior(rel, rk.priors.Poisson(0.01)).n_candidates == n_uniform
    assert rk.count_candidates(rel, rk.priors.Poisson(0.01)) == n_uniform


# --- 4. labelled inputs are aligned ------------------------------------------------------------
@pytest.fixture
def labelled():
    T = np.array([[5, 3, 2], [1, 4, 6]])
    t = rk.Table(T, dims=("region", "age"),
                 coords={"region": ["north", "south"], "age": ["0-17", "18-64", "65+"]})
    return t, rk.posterior(rk.MarginsOnly().protect(t), rk.priors.Poisson(3.0))


def test_truth_is_matched_by_labels(labelled):
    t, post = labelled
    want = post.prob_exact(t).values
    # the same table, dims and labels in another order (as a long CSV sorted by label)
    da = t.data.transpose("age", "region").isel(age=[2, 0, 1], region=[1, 0])
    np.testing.assert_array_equal(post.prob_exact(da).values, want)
    np.testing.assert_array_equal(post.prob_exact(rk.Table(da)).values, want)
    assert post.expected_exact_disclosures(da) == pytest.approx(want.sum())
    # a truth with other labels is refused
    other = rk.Table(t.values, dims=("region", "age"))
    with pytest.raises(ValueError, match="labels of 'region' differ"):
        post.prob_exact(other)
    with pytest.raises(ValueError, match="dims"):
        post.prob_exact(rk.Table(t.values, dims=("a", "b")))


def test_table_and_release_transpose_dataarrays_by_name():
    da = xr.DataArray([[1, 2, 3], [4, 5, 6]], dims=("j", "i"),
                      coords={"j": ["a", "b"], "i": [0, 1, 2]})
    t = rk.Table(da, dims=("i", "j"))
    assert t.values.tolist() == [[1, 4], [2, 5], [3, 6]] and t.coords["j"] == ["a", "b"]
    rel = rk.Release(da, dims=("i", "j"),
                     mechanism=rk.CyclicPerturbation([[[1, -1], [-1, 1], [0, 0]]], 0.2, 0.2))
    assert rel.published.tolist() == [[1, 4], [2, 5], [3, 6]]
    with pytest.raises(ValueError, match="matched by name"):
        rk.Table(da, dims=("x", "y"))


def test_margin_keyed_in_another_dim_order_is_transposed():
    T = np.arange(6).reshape(2, 3) + 1
    X = np.stack([T, 2 * T], axis=2)                        # dims (i, j, k)
    full = rk.MarginsOnly().protect(rk.Table(X, dims=("i", "j", "k")))
    margins = dict(full.margins)
    margins[("j", "i")] = margins.pop(("i", "j")).T        # keyed j, i with a plain array
    rel = rk.Release(None, margins=margins, mechanism=rk.MarginsOnly(), dims=("i", "j", "k"))
    np.testing.assert_array_equal(rel.margins[("i", "j")], X.sum(2))


def test_historical_prior_matched_by_labels(labelled):
    t, _ = labelled
    rel = rk.MarginsOnly().protect(t)
    hist = t.data.transpose("age", "region")
    a = rk.posterior(rel, rk.priors.Historical(t)).probs
    b = rk.posterior(rel, rk.priors.Historical(rk.Table(hist))).probs
    np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="labels"):
        rk.posterior(rel, rk.priors.Poisson(rk.Table(t.values + 1, dims=("region", "age"))))


def test_knowledge_by_labels_names_unknown_dims(labelled):
    t, _ = labelled
    rel = rk.MarginsOnly().protect(t)
    with pytest.raises(ValueError, match=r"dims \['sex'\] the table does not have"):
        rk.posterior(rel, rk.priors.Uniform().at_least({"region": "north", "age": "65+",
                                                         "sex": "f"}, 1))


# --- 5. every published number is used, or the release is refused ------------------------------
def _grouped_rounding_release():
    T = np.array([[4, 2, 1], [3, 5, 2], [1, 1, 6]])
    rel = rk.ControlledRounding(3, method="optimal").protect(rk.Table(T, dims=("v", "w")))
    P = rel.published
    return rk.Release(P, margins=rel.margins, mechanism=rel.mechanism, dims=("v", "w"),
                      groups={"v": [[0, 1], [2]]},
                      subtotals={("v", "w"): np.stack([P[:2].sum(0), P[2]]),
                                 ("v",): np.array([P[:2].sum(), P[2].sum()])})


def test_subtotals_are_used_or_refused():
    rel = _grouped_rounding_release()
    with pytest.raises(ValueError, match="does not use published subtotals"):
        rk.posterior(rel)
    # margins only with subtotals: the grouped route uses them (every candidate agrees)
    T = np.array([[4, 2, 1], [3, 5, 2], [1, 1, 6]])
    mo = rk.Release(None, margins={("v",): T.sum(1), ("w",): T.sum(0), (): T.sum()},
                    mechanism=rk.MarginsOnly(), dims=("v", "w"), groups={"v": [[0, 1], [2]]},
                    subtotals={("v", "w"): np.stack([T[:2].sum(0), T[2]]),
                               ("v",): np.array([T[:2].sum(), T[2].sum()])})
    post = rk.posterior(mo)
    assert post.attrs["route"] == "grouped-dp"
    np.testing.assert_allclose(post.probs[2].max(-1), 1.0)         # row 3 is its own group
    # candidates: rows 0-1 with their totals and the group's subtotals (row 2 is fixed by
    # the totals minus the subtotals): the brute force over 2 x 3 tables
    group = ref.tables_2xc(T[:2].sum(1), T[:2].sum(0))
    assert post.n_candidates == len(group)
    cells, _, _ = ref.cell_posteriors(group, np.zeros(len(group)))
    _assert_matches(post, cells)


def test_cyclic_cycles_must_keep_published_subtotals():
    T = np.array([[4, 2, 1], [3, 5, 2], [1, 1, 6]])
    groups = {"v": [[0, 1], [2]]}
    sub = {("v", "w"): np.stack([T[:2].sum(0), T[2]]), ("v",): np.array([T[:2].sum(),
                                                                         T[2].sum()])}
    bad = rk.CyclicPerturbation(rk.cycles.diagonal(3), 0.2, 0.2)
    with pytest.raises(ValueError, match="breaks the published subtotals"):
        rk.Release(T, mechanism=bad, dims=("v", "w"), groups=groups, subtotals=sub)
    keep = np.zeros((1, 3, 3), int)
    keep[0, 0, 0] = keep[0, 1, 1] = 1
    keep[0, 0, 1] = keep[0, 1, 0] = -1                         # a move inside group {0, 1}
    rel = rk.Release(T, mechanism=rk.CyclicPerturbation(keep, 0.2, 0.2), dims=("v", "w"),
                     groups=groups, subtotals=sub)
    assert rk.posterior(rel).n_candidates == 3


# --- 6. silent coercions ----------------------------------------------------------------------
def test_release_json_rejects_non_integers_and_keeps_big_counts_exact():
    rel = rk.MarginsOnly().protect(rk.Table(np.array([[3, 4], [5, 6]])))
    d = json.loads(rel.to_json())
    for bad in (3.5, "3", True):
        e = json.loads(json.dumps(d))
        e["margins"][0]["values"][0] = bad
        with pytest.raises((ValueError, TypeError), match="margin"):
            rk.Release.from_json(json.dumps(e))
    big = 2 ** 60 + 1                                     # not a float64 integer
    t = rk.Table(np.array([[big, 1]], dtype=np.int64))
    assert int(t.values[0, 0]) == big
    r2 = rk.MarginsOnly().protect(t)
    assert int(rk.Release.from_json(r2.to_json()).margins[()]) == big + 1
    e = json.loads(rel.to_json())
    e["shape"] = [3, 2]
    with pytest.raises(ValueError, match="says shape"):
        rk.Release.from_json(json.dumps(e))


# --- 7. the memory guard counts what is allocated -----------------------------------------------
def test_wide_rounding_windows_are_estimated_and_computed():
    """1 x 2 table rounded to base 1000: asked numpy for 59.5 GiB before; 2,997,001 candidates
    (hand count: each cell 1..1999 around its published 1000, totals within 999 of 2000 and
    of 1000: the totals only bind the grand total, |x + y - 2000| <= 999)."""
    rel = rk.ControlledRounding(1000, method="optimal").protect(rk.Table(np.array([[700, 900]])))
    xs = np.arange(1, 2000)
    n = int((np.abs(xs[:, None] + xs[None, :] - 2000) <= 999).sum())
    assert rk.count_candidates(rel) == n == 2997001
    with pytest.raises(ValueError, match=r"ControlledRounding base 1000 needs .* the memory "
                                         r"budget is 1000 B"):
        rk.posterior(rel, memory="1kB")


# --- 8. protection is never silently incomplete --------------------------------------------------
def test_cta_refuses_interior_only_sensitivity_when_totals_are_sensitive():
    c = rk.contributions({"r": ["a"] * 3 + ["b"] * 3 + ["c"] * 2,
                          "s": ["x", "y", "x", "y", "x", "y", "x", "y"],
                          "v": [90.0, 5, 5, 40, 30, 30, 50, 20]}, dims=["r", "s"], value="v")
    sens = rk.sensitivity.assess(c, rk.sensitivity.Dominance(1, 60))
    n_tot = sum(int(sens[v].values.sum()) for v in sens if v.startswith("sensitive_total"))
    assert n_tot >= 1
    with pytest.raises(ValueError, match="covers the interior cells only"):
        rk.cta(c, sens.sensitive, sens.protection, capacity=c.table.values)
    with pytest.raises(ValueError, match="covers the interior cells only"):
        rk.suppress(c, sens.sensitive, sens.protection, suppress_totals=True)


# --- 9. the smaller ones --------------------------------------------------------------------------
def test_interval_of_level_one_starts_where_the_mass_is():
    post = rk.Posterior(start=np.array([0]), probs=np.array([[0.0, 0.0, 1.0]]), dims=("c",),
                        coords={"c": [0]})
    iv = post.interval(1.0)
    assert (int(iv["lower"][0]), int(iv["upper"][0])) == (2, 2)


def test_cyclic_likelihood_of_an_unreachable_original_is_zero():
    mech = rk.CyclicPerturbation(rk.cycles.diagonal(3), 0.25, 0.25)
    rel = rk.Release(np.array([[3, 1, 2], [2, 4, 1], [1, 2, 5]]), mechanism=mech)
    assert mech.likelihood(rel, np.array([[9, 1, 2], [2, 4, 1], [1, 2, 5]])) == 0.0
    assert mech.likelihood(rel, rel.published) > 0.0


@pytest.mark.parametrize("make", [
    lambda: (rk.MarginsOnly().protect(rk.Table(np.array([[3, 4], [5, 6]]))),
             rk.priors.Flat(low=7)),
    lambda: (rk.Release(np.array([[3, 1, 2], [2, 4, 1], [1, 2, 5]]),
                        mechanism=rk.CyclicPerturbation(rk.cycles.diagonal(3), 0.25, 0.25)),
             rk.priors.Flat(low=9)),
    lambda: (rk.Release(np.array([[5, 3]]), margins={(): 8}, mechanism=rk.Bootstrap(2, 2.0)),
             rk.priors.Flat(low=0, high=1)),
])
def test_impossible_prior_is_one_clear_error(make):
    rel, prior = make()
    for call in (rk.posterior, rk.count_candidates):
        with pytest.raises(ValueError, match="no original"):
            call(rel, prior)


def test_count_release_with_a_suppressed_total_stays_a_count_release():
    rel = rk.Release(np.array([[np.nan, np.nan, 3], [np.nan, np.nan, 4]]),
                     margins={("v",): [6, np.nan], ("w",): [5, 3, 7], (): 15},
                     mechanism=rk.CellSuppression(suppress_totals=True), dims=("v", "w"))
    assert rel.kind == "count"


def test_resampling_releases_need_their_published_totals():
    with pytest.raises(ValueError, match=r"must publish the original totals \[\('v',\)\]"):
        rk.Release(np.array([[3, 4], [5, 6]]), margins={(): 18},
                   mechanism=rk.BinomialPerturbation(2.0, preserve="rows"), dims=("v", "w"))
    with pytest.raises(ValueError, match="original grand total n"):
        rk.Release(np.array([[3, 4], [5, 6]]), mechanism=rk.Bootstrap(2, 2.0))
    with pytest.raises(ValueError, match="inference would not use"):
        rk.Release(np.array([[3, 4], [5, 6]]), margins={(): 18, ("v",): [7, 11]},
                   mechanism=rk.Bootstrap(2, 2.0), dims=("v", "w"))


def test_quality_bound_validation():
    with pytest.raises(ValueError, match="finite number > 0"):
        rk.Bootstrap(2, math.inf)
    assert rk.Bootstrap(2, np.int64(2)).S == 2.0
    assert rk.BinomialPerturbation(np.float32(1.5)).S == 1.5


def test_two_way_margins_must_agree_with_each_other():
    X = np.arange(8).reshape(2, 2, 2) + 1
    m = dict(rk.MarginsOnly().protect(rk.Table(X, dims=("i", "j", "k"))).margins)
    m = {k: v for k, v in m.items() if len(k) == 2}
    bad = dict(m)
    bad[("i", "k")] = m[("i", "k")] + np.array([[1, 0], [-1, 0]])   # same k-sums, other i-sums
    with pytest.raises(ValueError, match=r"margin \('i', 'j'\) summed to \('i',\)"):
        rk.Release(None, margins=bad, mechanism=rk.MarginsOnly(), dims=("i", "j", "k"))


def test_unpublished_totals_get_posteriors():
    """Resampling: the totals the release does not publish (rows, columns) are given, as the
    sum of the independent cells (the route's approximation); cyclic with row totals only:
    the column totals, against the brute force over sign vectors."""
    t = rk.Table(np.array([[4, 6, 3], [7, 2, 5]]), dims=("v", "w"))
    rel = rk.Bootstrap(2, 3.0).protect(t, np.random.default_rng(0))
    post = rk.posterior(rel)
    assert set(post.totals) == {("v",), ("w",)}
    for keep, axis in ((("v",), 1), (("w",), 0)):
        np.testing.assert_allclose(post.totals[keep].mean().values,
                                   post.mean().values.sum(axis), rtol=1e-12)
    C = np.zeros((2, 3, 3), int)
    C[0, 0, 0], C[0, 0, 1], C[1, 1, 1], C[1, 1, 2] = 1, -1, 1, -1
    T = np.array([[5, 3, 2], [1, 4, 6], [2, 2, 2]])
    rel = rk.Release(T, margins={("v",): T.sum(1), (): T.sum()},
                     mechanism=rk.CyclicPerturbation(C, 0.3, 0.2), dims=("v", "w"))
    post = rk.posterior(rel)
    lik = ref.cyclic_log_likelihoods(T, C, 0.3, 0.2, "negative")
    tabs = np.array([x for x, _ in lik.values()])
    lw = np.array([ll for _, ll in lik.values()])
    p = np.exp(lw - lw.max())
    p /= p.sum()
    cols = tabs.sum(1)
    for j in range(3):
        tp = post.totals[("w",)]
        for v in np.unique(cols[:, j]):
            assert tp.probs[j][v - tp.start[j]] == pytest.approx(p[cols[:, j] == v].sum(),
                                                                 abs=1e-12)


def test_extreme_per_cell_rates_reanchor_without_warnings_and_draws_follow():
    """Rates exp(15 z): the first solve leaves the floats' range and is re-anchored; no
    RuntimeWarning on the way (the suite turns warnings into errors), and the posterior and
    the draws match the brute force over the one free cell (2 x 2, margins fixed;
    scipy.stats.poisson.logpmf, tolerance 1e-9 on the pmf, 5 binomial s.e. on draws)."""
    from scipy import stats
    T = np.array([[1053, 979], [1045, 968]])
    rates = np.exp(15 * np.array([[1.141, 0.478], [0.708, -0.169]]))
    rel = rk.MarginsOnly().protect(rk.Table(T, dims=("v", "w")))
    post = rk.posterior(rel, rk.priors.Poisson(rates), route="dp")
    R, C = T.sum(1), T.sum(0)
    x = np.arange(0, min(R[0], C[0]) + 1)
    tabs = np.stack([x, R[0] - x, C[0] - x, R[1] - C[0] + x], axis=1)
    ok = (tabs >= 0).all(axis=1)
    lw = stats.poisson.logpmf(tabs[ok], rates.ravel()).sum(axis=1)
    p = np.exp(lw - lw.max())
    p /= p.sum()
    ref = np.zeros(int(x.max()) + 1)
    ref[x[ok]] = p
    cell00 = np.array([post._prob_at(np.array([[v, 0], [0, 0]]))[0, 0] for v in x])
    np.testing.assert_allclose(cell00, ref, atol=1e-9)
    d = post.sample(4000, np.random.default_rng(3)).values[:, 0, 0]
    mode = int(x[np.argmax(ref)])
    emp = (d == mode).mean()
    assert abs(emp - ref[mode]) <= 5 * np.sqrt(ref[mode] * (1 - ref[mode]) / 4000) + 1e-12
