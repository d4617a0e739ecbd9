"""rk.simulate: schema, index-based seeding, calibration (acceptance), CLI.

Calibration test statistic (see ``riskengine._simulate.calibration``): for the
cells whose ``map_prob`` falls in a bin, z = (mean map_hit - mean map_prob) / se
with the cluster-robust se = sqrt(sum_t D_t^2) / n_bin, D_t = sum over the bin's
cells of table t of (map_hit - map_prob) (tables independent, cells within a
table not).  With the intruder's model right, E[map_hit - map_prob | release] = 0
for every cell, so z is approximately standard normal.  "Calibrated" means
|z| <= 4 overall and in every bin with at least 30 cells.
"""

import sys

import numpy as np
import pytest
import xarray as xr

import riskengine as rk
from riskengine._seeding import derived_rng
from riskengine._simulate import calibration
from riskengine.cli import main

GEN = rk.generators.Poisson(3.0, shape=(3, 3), dims=("v", "w"))
TRUE_MECH = rk.CyclicPerturbation(rk.cycles.diagonal(3), alpha=0.4, beta=0.4)
WRONG_MECH = rk.CyclicPerturbation(rk.cycles.diagonal(3), alpha=0.05, beta=0.05)
PRIOR = rk.priors.Poisson(3.0)


def _sim(n, seed=11, **kw):
    return rk.simulate(GEN, TRUE_MECH, PRIOR, n_tables=n, rng=np.random.default_rng(seed), **kw)


def _calibrated(cal, min_cells=30, limit=4.0) -> bool:
    ok = abs(cal.attrs["overall_z"]) <= limit
    big = cal["n"] >= min_cells
    return bool(ok and (np.abs(cal["z"].where(big, 0.0)) <= limit).all())


@pytest.fixture(scope="module")
def small():
    return _sim(8)


def test_schema_and_reference(small):
    ds = small
    assert ds["true"].dims == ("table", "v", "w") and ds.sizes["table"] == 8
    for v in ("published", "map_value", "map_prob", "map_hit", "prob_exact"):
        assert ds[v].dims == ("table", "v", "w"), v
        assert ds[v].attrs["definition"]
    assert ds["n_candidates"].dims == ("table",) and ds["log_evidence"].dims == ("table",)
    assert ds.attrs["riskengine_kind"] == "simulate" and ds.attrs["prior"] == "Poisson(rate=3.0)"
    assert ds.attrs["mechanism"] == ds.attrs["intruder_mechanism"]
    assert bool(((ds["map_value"] == ds["true"]) == ds["map_hit"]).all())
    ent = int(ds.attrs["seed_entropy"])
    for i in range(8):
        # the documented seeding, recomputed by hand
        t = GEN.draw(derived_rng(ent, i, 0))
        rel = TRUE_MECH.protect(t, derived_rng(ent, i, 1))
        post = rk.posterior(rel, PRIOR)
        row = ds.isel(table=i)
        assert np.array_equal(row["true"].values, t.values)
        assert np.array_equal(row["published"].values, rel.published)
        assert np.array_equal(row["map_value"].values, post.mode().values)
        assert np.array_equal(row["map_prob"].values, post.max_prob().values)
        assert np.array_equal(row["prob_exact"].values, post.prob_exact(t).values)
        assert float(row["n_candidates"]) == rk.count_candidates(rel, PRIOR)


def test_index_seeding_prefix_and_chunks(small):
    # table i depends on the seed and i only: a shorter run is a prefix of a longer one
    xr.testing.assert_identical(_sim(5), small.isel(table=slice(0, 5)).assign_attrs(n_tables=5))
    xr.testing.assert_identical(_sim(8, chunk=3), small)
    calls = []
    _sim(3, progress=lambda d, t: calls.append((d, t)))
    assert calls == [(1, 3), (2, 3), (3, 3)]


@pytest.mark.slow
def test_calibration_right_model_passes_wrong_likelihood_fails():
    """Acceptance: prior = generator and the true mechanism -> calibrated; the intruder
    analysing with alpha = beta = 0.05 when the release used 0.4 -> not calibrated."""
    right = calibration(_sim(250), bins=10)
    assert right.attrs["n_tables"] == 250
    assert _calibrated(right), right.to_dataframe()
    assert int((right["n"] >= 30).sum()) >= 3          # several bins actually checked
    wrong = calibration(_sim(150, assumed=WRONG_MECH), bins=10)
    assert not _calibrated(wrong)
    # overconfident: claims far more than it gets, in every well-filled bin
    assert wrong.attrs["overall_z"] < -4
    assert wrong.attrs["overall_claimed"] - wrong.attrs["overall_observed"] > 0.2
    big = wrong["n"] >= 30
    assert bool((wrong["z"].where(big) < -4).sum() >= 2)


@pytest.mark.slow
def test_calibration_margins_only_exact_route():
    """A second exact route (the table DP of margins-only releases), prior = generator."""
    ds = rk.simulate(rk.generators.Poisson(2.0, shape=(3, 3)), rk.MarginsOnly(),
                     rk.priors.Poisson(2.0), n_tables=150, rng=np.random.default_rng(3))
    cal = calibration(ds, bins=10)
    assert _calibrated(cal), cal.to_dataframe()
    assert int((cal["n"] >= 30).sum()) >= 3


def test_calibration_function_by_hand():
    # two tables, two cells each; bin width 0.5
    ds = xr.Dataset({"map_prob": (("table", "c"), [[0.25, 0.75], [0.25, 0.75]]),
                     "map_hit": (("table", "c"), [[False, True], [True, True]])})
    cal = calibration(ds, bins=2)
    assert cal["n"].values.tolist() == [2, 2]
    assert cal["claimed"].values.tolist() == [0.25, 0.75]
    assert cal["observed"].values.tolist() == [0.5, 1.0]
    # bin 0: D = (-0.25, 0.75): se = sqrt(0.0625 + 0.5625) / 2, diff = 0.25
    assert float(cal["se"][0]) == pytest.approx(np.sqrt(0.625) / 2, rel=1e-14)
    assert float(cal["z"][0]) == pytest.approx(0.25 / (np.sqrt(0.625) / 2), rel=1e-14)
    assert cal.attrs["overall_observed"] == 0.75 and cal.attrs["overall_claimed"] == 0.5
    with pytest.raises(ValueError, match="map_prob"):
        calibration(xr.Dataset({"x": ("table", [1])}))


@pytest.mark.slow
def test_other_generators_and_mechanisms():
    t = rk.read_table("riskengine/data/seed003_original.csv")
    ds = rk.simulate(rk.generators.Resample(t), rk.Bootstrap(M=3, S=2.0), rk.priors.Uniform(),
                     n_tables=3, rng=np.random.default_rng(0))
    assert ds["true"].dims == ("table", "v", "w")
    assert list(ds["v"].values) == list(t.coords["v"])
    assert np.all(ds["true"].sum(("v", "w")) == t.values.sum())
    ds = rk.simulate(rk.generators.Multinomial(12, np.full((2, 3), 1 / 6)), rk.MarginsOnly(),
                     rk.priors.Uniform(), n_tables=3, rng=np.random.default_rng(0))
    assert np.isnan(ds["published"]).all()
    assert (ds["n_candidates"] >= 1).all()


def test_bad_input(monkeypatch):
    with pytest.raises(TypeError, match="draw"):
        rk.simulate(3, TRUE_MECH, PRIOR, n_tables=2, rng=np.random.default_rng(0))
    with pytest.raises(TypeError, match="protect"):
        rk.simulate(GEN, "cyclic", PRIOR, n_tables=2, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="n_tables must be >= 1"):
        _sim(0)
    with pytest.raises(ValueError, match="unknown scheduler 'threads'"):
        _sim(2, scheduler="threads")
    with pytest.raises(TypeError, match="scheduler"):
        _sim(2, scheduler=3)
    with pytest.raises(TypeError, match="rng"):
        rk.simulate(GEN, TRUE_MECH, PRIOR, n_tables=2)
    monkeypatch.setitem(sys.modules, "distributed", None)    # as if not installed
    with pytest.raises(ImportError, match=r'pip install "riskengine\[dask\]"'):
        _sim(2, scheduler="dask")


def test_cli_bundled_example_and_assumed(tmp_path, capsys):
    assert main(["simulate", "--out", str(tmp_path), "--n-tables", "20"]) == 0
    out = capsys.readouterr().out
    assert "MAP hit rate" in out and "claimed" in out
    ds = xr.open_dataset(tmp_path / "simulate.nc")
    try:
        assert ds.sizes["table"] == 20 and ds.attrs["seed"] == 7
        assert ds["map_hit"].dims == ("table", "v", "w")
    finally:
        ds.close()
    cfg = tmp_path / "s.toml"
    cfg.write_text("""seed = 1
n_tables = 4
[generator]
type = "multinomial"
n = 10
probs = [[0.25, 0.25], [0.25, 0.25]]
[mechanism]
type = "cyclic"
cycles = [[[1, -1], [-1, 1]]]
alpha = 0.4
beta = 0.4
[intruder]
prior = "uniform"
assumed = { type = "cyclic", cycles = [[[1, -1], [-1, 1]]], alpha = 0.05, beta = 0.05 }
""")
    assert main(["simulate", str(cfg), "--out", str(tmp_path / "o")]) == 0
    ds = xr.open_dataset(tmp_path / "o" / "simulate.nc")
    try:
        assert "alpha=0.05" in ds.attrs["intruder_mechanism"]
        assert "alpha=0.4" in ds.attrs["mechanism"]
    finally:
        ds.close()
    capsys.readouterr()
    cfg.write_text("[generator]\ntype = \"gamma\"\n")
    assert main(["simulate", str(cfg)]) == 2
    assert "unknown generator type 'gamma'" in capsys.readouterr().err


def test_releases_a_misstated_model_cannot_explain_are_recorded_not_fatal(tmp_path):
    """Published under a wide p-table, read with a narrow one: some releases are impossible
    under the intruder's model.  They are marked ``refuted`` (no posterior numbers), the
    rest analysed, calibration leaves them out; the true model refutes nothing."""
    gen = rk.generators.Poisson(3.0, shape=(2, 3), dims=("v", "w"))
    true = rk.CellKey(D=3, V=1.5, js=1)
    ds = rk.simulate(gen, true, rk.priors.Poisson(3.0), n_tables=20,
                     rng=np.random.default_rng(0), assumed=rk.CellKey(D=1, V=0.5))
    ref = ds["refuted"].values
    assert 0 < ref.sum() < 20 and ds.attrs["n_refuted"] == int(ref.sum())
    assert np.isnan(ds["map_prob"].values[ref]).all()
    assert (ds["map_value"].values[ref] == -1).all()
    assert np.isfinite(ds["map_prob"].values[~ref]).all()
    cal = calibration(ds)
    assert int(cal["n"].sum()) == int((~ref).sum()) * 6
    from riskengine.report import write_report
    assert "n_refuted" in write_report(ds, tmp_path).read_text()
    ok = rk.simulate(gen, true, rk.priors.Poisson(3.0), n_tables=5, rng=np.random.default_rng(0))
    assert ok.attrs["n_refuted"] == 0 and not ok["refuted"].values.any()


def test_route_and_monte_carlo_settings_reach_every_table():
    """``route=`` and ``mcmc=`` go to every table's posterior; a Monte Carlo posterior that
    fails the usual rules is counted per table (``not_converged``) and said in the
    report.  The cell key method with its totals and a designed p-table: the key chains
    by default (2 x 30 draws cannot pass ESS >= 400), the product when asked for."""
    from riskengine.inference.gibbs import ConvergenceWarning
    from riskengine.report import render_report
    gen = rk.generators.Poisson(3.0, shape=(2, 2), dims=("v", "w"))
    ck = rk.CellKey(D=2, V=1.0)
    with pytest.warns(ConvergenceWarning):
        mc = rk.simulate(gen, ck, PRIOR, n_tables=2, rng=np.random.default_rng(0),
                         mcmc=rk.MonteCarlo(chains=2, warmup=10, draws=30))
    assert mc.attrs["routes"] == "keys_mcmc"
    assert mc["not_converged"].values.tolist() == [1, 1] and mc.attrs["n_not_converged"] == 2
    assert mc.attrs["n_approximate"] == 2
    assert "NOT CONVERGED: 2 of 2 Monte Carlo posteriors" in render_report(mc)[0]
    dp = rk.simulate(gen, ck, PRIOR, n_tables=2, rng=np.random.default_rng(0), route="dp")
    assert dp.attrs["routes"] == "dp" and dp.attrs["n_not_converged"] == 0
    np.testing.assert_array_equal(dp["true"].values, mc["true"].values)    # same tables
    exact = _sim(2)
    assert exact["not_converged"].values.tolist() == [0, 0]
    with pytest.raises(ValueError, match="no_such_route"):
        rk.simulate(gen, ck, PRIOR, n_tables=1, rng=np.random.default_rng(0),
                    route="no_such_route")
