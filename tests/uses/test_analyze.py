"""rk.analyze: posteriors of statistics of the original table, against brute force.

The reference enumerates every candidate table (tests/reference/tables.py), weights it by
prior x likelihood and takes the exact posterior expectation of the statistic, computed
with SciPy (chi2_contingency, contingency.association), not riskengine.statistics.  The
analysis' Monte Carlo mean must be within 5 Monte Carlo standard errors of it (false
alarm about 6e-7 per comparison for independent draws).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats as st

import riskengine as rk
from riskengine.cli import main
from tests.reference.tables import posterior_weights, tables_with_windows


def _candidates_margins(R, C):
    r, c = len(R), len(C)
    lo = np.zeros((r, c), np.int64)
    hi = np.minimum.outer(R, C)
    return list(tables_with_windows(lo, hi, [(x, x) for x in R], [(x, x) for x in C],
                                    (int(sum(R)), int(sum(R)))))


def _poisson_lw(rate):
    return lambda T: float(np.sum(st.poisson.logpmf(T, rate)))


def _chi2(T):
    T = np.asarray(T)
    keep_r, keep_c = T.sum(1) > 0, T.sum(0) > 0
    T = T[keep_r][:, keep_c]
    if min(T.shape) < 2:
        return 0.0
    return st.chi2_contingency(T, correction=False)[0]


def _cramer(T):
    T = np.asarray(T)
    n, k = T.sum(), min(T.shape)
    return float(np.sqrt(_chi2(T) / (n * (k - 1))))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_statistic_means_match_the_brute_force_expectation(seed):
    rng = np.random.default_rng(seed)
    T = rng.poisson(3.0, size=(2, 3))
    t = rk.Table(T, dims=("a", "b"))
    rel = rk.MarginsOnly().protect(t)
    prior = rk.priors.Poisson(3.0)
    cands = _candidates_margins(T.sum(1), T.sum(0))
    w = posterior_weights(cands, _poisson_lw(3.0))
    res = rk.analyze(rel, prior, ["chi2", "cramers_v", lambda x: x[0, 0] * x[1, 2]],
                     draws=20000, rng=np.random.default_rng(seed + 10))
    refs = {"chi2": sum(wi * _chi2(c) for wi, c in zip(w, cands)),
            "cramers_v": sum(wi * _cramer(c) for wi, c in zip(w, cands)),
            "user_statistic": sum(wi * c[0, 0] * c[1, 2] for wi, c in zip(w, cands))}
    for name, ref in refs.items():
        ds = res[name]
        se = float(ds["mcse_mean"])
        assert abs(float(ds["mean"]) - ref) <= 5 * se + 1e-12, (name, float(ds["mean"]), ref)


def test_linear_statistics_are_exact_where_the_release_fixes_them(rng):
    T = rng.poisson(4.0, size=(3, 3))
    t = rk.Table(T, dims=("a", "b"), coords={"a": ["x", "y", "z"], "b": ["p", "q", "r"]})
    rel = rk.ControlledRounding(3).protect(t, rng)
    post = rk.posterior(rel, rk.priors.Poisson(4.0))

    def row_x(x):
        return x[0].sum()

    def lin(x):
        return x[0, 0] + 2 * x[1, 2]
    res = rk.analyze(rel, None, [row_x, lin], draws=5000, rng=rng, post=post)
    # E[linear statistic] = the linear statistic of the exact posterior means
    exact = float(post.mean().values[0, 0] + 2 * post.mean().values[1, 2])
    assert abs(float(res["lin"]["mean"]) - exact) <= 5 * float(res["lin"]["mcse_mean"])
    # a row total of a margins-only release is fixed: every draw gives it exactly
    mo = rk.MarginsOnly().protect(t)
    fixed = rk.analyze(mo, None, row_x, draws=200, rng=rng)["row_x"]
    assert float(fixed["sd"]) == 0.0 and float(fixed["mean"]) == T[0].sum()


def test_truth_plugin_and_labels(rng):
    T = np.array([[12, 3, 7], [4, 9, 6]])
    t = rk.Table(T, dims=("sex", "grade"), coords={"sex": ["F", "M"], "grade": ["a", "b", "c"]})
    rel = rk.ControlledRounding(3).protect(t, rng)
    res = rk.analyze(rel, rk.priors.Poisson(6.0),
                     ["cramers_v", "log_odds_ratio:sex=F,M;grade=a,c", "row_proportions"],
                     draws=3000, rng=rng, truth=t.data.transpose("grade", "sex"),
                     level=0.9)
    v = res["cramers_v"]
    assert float(v["true"]) == pytest.approx(_cramer(T), rel=1e-12)
    assert float(v["plugin"]) == pytest.approx(_cramer(np.asarray(rel.published)), rel=1e-12)
    draws = res.values["cramers_v"].values
    t0 = float(v["true"])
    q = (draws < t0).mean() + 0.5 * (draws == t0).mean()
    assert float(v["true_quantile"]) == pytest.approx(q)
    assert bool(v["covered"]) == (float(v["hdi_lower"]) <= t0 <= float(v["hdi_upper"]))
    inside = ((draws >= float(v["hdi_lower"])) & (draws <= float(v["hdi_upper"]))).mean()
    assert inside >= 0.9
    rp = res["row_proportions"]
    assert rp["mean"].dims == ("sex", "grade")
    assert list(rp["mean"].coords["grade"].values) == ["a", "b", "c"]
    np.testing.assert_allclose(rp["true"].values, T / T.sum(1, keepdims=True))
    lor = res["log_odds_ratio:sex=F,M;grade=a,c"]
    assert float(lor["true"]) == pytest.approx(np.log(12.5 * 6.5 / (7.5 * 4.5)))
    tab = res.table()
    assert list(tab["statistic"][:2]) == ["cramers_v", "log_odds_ratio:sex=F,M;grade=a,c"]
    assert len(tab) == 2 + 6


def test_margins_only_has_no_plugin_and_says_why(rng):
    t = rk.Table(rng.poisson(4.0, size=(2, 3)), dims=("a", "b"))
    res = rk.analyze(rk.MarginsOnly().protect(t), None, "chi2", draws=100, rng=rng)
    assert np.isnan(float(res["chi2"]["plugin"]))
    assert "publishes no interior cells" in res["chi2"].attrs["plugin_note"]


def test_draws_are_reproducible_and_bad_input_is_refused(rng):
    t = rk.Table(np.array([[5, 2], [1, 6]]), dims=("a", "b"))
    rel = rk.MarginsOnly().protect(t)
    a = rk.analyze(rel, None, "chi2", draws=300, rng=np.random.default_rng(4))
    b = rk.analyze(rel, None, "chi2", draws=300, rng=np.random.default_rng(4))
    np.testing.assert_array_equal(a.values["chi2"].values, b.values["chi2"].values)
    with pytest.raises(ValueError, match="label 'z' is not in dim 'a'"):
        rk.analyze(rel, None, "log_odds_ratio:a=0,z;b=0,1", draws=10, rng=rng)
    with pytest.raises(ValueError, match="unknown statistic"):
        rk.analyze(rel, None, "kappa", draws=10, rng=rng)
    with pytest.raises(ValueError, match="level must be in"):
        rk.analyze(rel, None, "chi2", draws=10, rng=rng, level=1.5)


def test_to_arviz_gives_arvizs_summaries(rng):
    az = pytest.importorskip("arviz")
    t = rk.Table(np.array([[5, 2, 4], [1, 6, 3]]), dims=("a", "b"))
    rel = rk.ControlledRounding(3).protect(t, rng)
    res = rk.analyze(rel, rk.priors.Poisson(4.0), ["cramers_v", "row_proportions"],
                     draws=2000, rng=rng)
    idata = res.to_arviz()
    post = idata.posterior
    assert set(post.data_vars) >= {"table", "cramers_v", "row_proportions"}
    assert post["table"].dims == ("chain", "draw", "a", "b")
    hdi = az.hdi(idata, var_names=["cramers_v"], hdi_prob=0.94)["cramers_v"].values
    np.testing.assert_allclose(hdi, [float(res["cramers_v"]["hdi_lower"]),
                                     float(res["cramers_v"]["hdi_upper"])])
    summ = az.summary(idata, var_names=["cramers_v"], kind="stats")
    assert summ.loc["cramers_v", "mean"] == pytest.approx(float(res["cramers_v"]["mean"]),
                                                          abs=1e-3)


@pytest.mark.slow
def test_hdi_covers_the_truth_at_its_level_when_the_prior_generates_the_tables():
    """Calibration: tables drawn from the user's prior (i.i.d. Poisson(5) cells), each
    protected by controlled rounding to base 3 and analysed with that prior; the 90% HDI
    of Cramér's V must cover the true value in 90% of the tables, within 3.5 binomial
    standard errors (0.9 +- 0.045 for 400 tables)."""
    rng = np.random.default_rng(2026)
    n_tables, level = 400, 0.9
    hits = 0
    prior = rk.priors.Poisson(5.0)
    for _ in range(n_tables):
        t = rk.Table(rng.poisson(5.0, size=(2, 3)), dims=("a", "b"))
        rel = rk.ControlledRounding(3).protect(t, rng)
        res = rk.analyze(rel, prior, "cramers_v", draws=400, rng=rng, truth=t, level=level)
        hits += bool(res["cramers_v"]["covered"])
    se = np.sqrt(level * (1 - level) / n_tables)
    assert abs(hits / n_tables - level) <= 3.5 * se, hits / n_tables


def test_cli_analyze_writes_results_and_report(tmp_path, capsys):
    t = rk.Table(np.array([[12, 3, 7], [4, 9, 6]]), dims=("sex", "grade"),
                 coords={"sex": ["F", "M"], "grade": ["a", "b", "c"]})
    rel = rk.ControlledRounding(3).protect(t, np.random.default_rng(0))
    path = tmp_path / "rel.json"
    rel.save(path)
    out = tmp_path / "out"
    rc = main(["analyze", str(path), "--statistic", "cramers_v", "--statistic",
               "oddsratio:sex=F,M;grade=a,b", "--draws", "500", "--seed", "3",
               "--out", str(out)])
    assert rc == 0
    text = capsys.readouterr().out
    assert "cramers_v" in text and "log_odds_ratio:sex=F,M;grade=a,b" in text
    import xarray as xr
    with xr.open_dataset(out / "analysis.nc") as ds:
        assert ds.attrs["riskengine_kind"] == "analyze"
        assert ds["stat1_summary"].attrs["statistic"] == "log_odds_ratio:sex=F,M;grade=a,b"
    html = (out / "analyze.html").read_text()
    assert "Posterior of the statistics" in html and "statistic_1.png" in \
        " ".join(p.name for p in out.iterdir())
    # the same seed gives the same numbers
    rc = main(["analyze", str(path), "--statistic", "cramers_v", "--draws", "500", "--seed",
               "3", "--out", str(tmp_path / "o2"), "--no-report"])
    assert rc == 0
    assert not (tmp_path / "o2" / "analyze.html").exists()
    rc = main(["analyze", str(path), "--statistic", "nonsense", "--out", str(tmp_path / "o3")])
    assert rc == 2
    err = capsys.readouterr().err
    assert "unknown statistic 'nonsense'" in err and len(err.strip().splitlines()) == 1
    assert json.loads(path.read_text())         # the input is untouched and still valid
