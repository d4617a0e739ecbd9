"""rk.compare: schema, determinism, reference recomputation, deterministic mechanisms, CLI."""

import subprocess
import sys

import numpy as np
import pytest
import xarray as xr

import riskengine as rk
from riskengine._io import atomic_write_netcdf
from riskengine._seeding import derived_rng
from riskengine.cli import main

T3 = rk.Table(np.array([[3, 1, 2], [2, 4, 1], [1, 2, 5]]), dims=("v", "w"),
              coords={"v": ["a", "b", "c"], "w": ["x", "y", "z"]})


def _mechs():
    c = rk.cycles.diagonal(3)
    return {"cyclic 0.1": rk.CyclicPerturbation(c, alpha=0.1, beta=0.1),
            "cyclic 0.4": rk.CyclicPerturbation(c, alpha=0.4, beta=0.4),
            "bootstrap": rk.Bootstrap(M=3, S=2.0),
            "margins": rk.MarginsOnly()}


def _run(mechs=None, seed=1, draws=4, **kw):
    kw.setdefault("intruder", rk.priors.Uniform())
    kw.setdefault("user", rk.priors.Poisson(2.5))
    return rk.compare(T3, mechs or _mechs(), draws=draws, rng=np.random.default_rng(seed), **kw)


@pytest.fixture(scope="module")
def ds():
    return _run()


@pytest.mark.slow
def test_schema(ds):
    assert list(ds["mechanism"].values) == ["cyclic 0.1", "cyclic 0.4", "bootstrap", "margins"]
    assert ds["draw"].values.tolist() == [0, 1, 2, 3]
    assert ds["v"].values.tolist() == ["a", "b", "c"]
    assert ds["risk"].dims == ("mechanism",) and ds["utility"].dims == ("mechanism",)
    for v in ("risk_draw", "utility_draw", "expected_exact", "max_prob_mean", "interval_width",
              "l1", "hellinger", "cramers_v_change", "chi_square_change", "prob_small_mean",
              "prob_published_mean"):
        assert ds[v].dims == ("mechanism", "draw"), v
    assert ds["prob_exact"].dims == ("mechanism", "draw", "v", "w")
    assert ds["published"].dims == ("mechanism", "draw", "v", "w")
    assert ds["true"].dims == ("v", "w") and np.array_equal(ds["true"].values, T3.values)
    for v in ds.data_vars:
        assert ds[v].attrs["definition"], v
    assert ds.attrs["riskengine_kind"] == "compare" and ds.attrs["draws"] == 4
    assert ds.attrs["intruder"] == "Uniform()" and ds.attrs["user"] == "Poisson(rate=2.5)"
    assert ds["description"].sel(mechanism="bootstrap").item().startswith("Bootstrap(")
    # summaries are what their definitions say
    assert np.allclose(ds["risk"], ds["risk_draw"].mean("draw"))
    assert np.allclose(ds["utility"], ds["utility_draw"].mean("draw"))
    assert np.allclose(ds["risk_draw"], ds["prob_exact"].mean(("v", "w")))
    assert np.allclose(ds["expected_exact"], ds["prob_exact"].sum(("v", "w")))
    assert np.allclose(ds["utility_draw"], 1 / (1 + ds["interval_width"]))
    assert ((ds["risk"] > 0) & (ds["risk"] <= 1)).all()


def test_reference_recomputation(ds):
    """Each draw equals a direct protect + posterior with the documented seeding."""
    ent = int(ds.attrs["seed_entropy"])
    mech = _mechs()["cyclic 0.4"]
    for d in range(4):
        rel = mech.protect(T3, derived_rng(ent, d))
        post = rk.posterior(rel, rk.priors.Uniform())
        upost = rk.posterior(rel, rk.priors.Poisson(2.5))
        sel = ds.sel(mechanism="cyclic 0.4", draw=d)
        assert np.array_equal(sel["published"].values, rel.published)
        assert np.allclose(sel["prob_exact"].values, post.prob_exact(T3).values, rtol=0,
                           atol=1e-15)
        assert float(sel["l1"]) == np.abs(rel.published - T3.values).sum()
        iw = (upost.interval(0.95)["upper"] - upost.interval(0.95)["lower"]).values.mean()
        assert float(sel["interval_width"]) == pytest.approx(iw, abs=1e-15)


def test_deterministic_mechanism(ds):
    m = ds.sel(mechanism="margins")
    assert np.isnan(m["published"].values).all()
    for v in ("risk_draw", "utility_draw", "l1", "hellinger"):
        assert np.all(m[v].values == m[v].values[0]), v
    assert np.isfinite(m["l1"]).all()     # read through the user's posterior mean
    assert np.isnan(m["prob_published_mean"]).all()
    # a less informative release cannot beat a lightly perturbed one on risk here
    assert float(ds["risk"].sel(mechanism="margins")) < float(ds["risk"].sel(
        mechanism="cyclic 0.1"))


@pytest.mark.slow
def test_same_seed_identical_and_order_independent(ds):
    xr.testing.assert_identical(ds, _run())
    rev = dict(reversed(list(_mechs().items())))
    other = _run(rev)
    xr.testing.assert_identical(ds.sel(mechanism="cyclic 0.4"),
                                other.sel(mechanism="cyclic 0.4"))
    # a different seed gives different releases
    assert not np.array_equal(_run(seed=2)["published"].sel(mechanism="cyclic 0.4").values,
                              ds["published"].sel(mechanism="cyclic 0.4").values)


def test_exact_release_has_risk_and_utility_one():
    mech = {"none": rk.CyclicPerturbation(rk.cycles.diagonal(3), alpha=0.0, beta=0.0)}
    out = _run(mech, draws=2)
    assert float(out["risk"][0]) == 1.0 and float(out["utility"][0]) == 1.0
    assert float(out["l1"].max()) == 0.0 and float(out["hellinger"].max()) == 0.0


class _Wrapped:
    """A duck-typed mechanism: not an rk.Mechanism, only protect(table, rng)."""

    def __init__(self, inner):
        self.inner = inner

    def protect(self, table, rng):
        return self.inner.protect(table, rng)


def test_duck_typed_mechanism_and_progress():
    calls = []
    inner = rk.CyclicPerturbation(rk.cycles.diagonal(3), alpha=0.2, beta=0.2)
    out = _run({"w": _Wrapped(inner), "plain": inner}, draws=3,
               progress=lambda d, t: calls.append((d, t)))
    assert calls[-1] == (6, 6)
    xr.testing.assert_equal(out["prob_exact"].sel(mechanism="w", drop=True),
                            out["prob_exact"].sel(mechanism="plain", drop=True))
    assert "_Wrapped" in out["description"].sel(mechanism="w").item()


def test_netcdf_round_trip(ds, tmp_path):
    atomic_write_netcdf(ds, tmp_path / "c.nc")
    back = xr.open_dataset(tmp_path / "c.nc")
    try:
        assert set(back.data_vars) == set(ds.data_vars)
        assert list(back["mechanism"].values) == list(ds["mechanism"].values)
        assert np.allclose(back["risk"], ds["risk"])
        assert np.array_equal(np.isnan(back["published"]), np.isnan(ds["published"]))
    finally:
        back.close()


def test_bad_input():
    with pytest.raises(TypeError, match="non-empty dict"):
        rk.compare(T3, {}, rng=np.random.default_rng(0))
    with pytest.raises(TypeError, match="no protect"):
        rk.compare(T3, {"x": 3}, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="draws must be >= 1"):
        rk.compare(T3, _mechs(), draws=0, rng=np.random.default_rng(0))
    with pytest.raises(TypeError, match="rng"):
        rk.compare(T3, _mechs())
    with pytest.raises(TypeError, match="prior"):
        rk.compare(T3, _mechs(), intruder="uniform", rng=np.random.default_rng(0))


@pytest.mark.slow
def test_cli_bundled_example(tmp_path, capsys):
    assert main(["compare", "--out", str(tmp_path), "--draws", "1"]) == 0
    out = capsys.readouterr().out
    assert "cyclic alpha=0.05 beta=0.05" in out and "rounding base=5" in out
    ds = xr.open_dataset(tmp_path / "compare.nc")
    try:
        assert ds.sizes["mechanism"] == 8 and ds.sizes["draw"] == 1
        assert ds.attrs["seed"] == 2006
    finally:
        ds.close()


@pytest.mark.slow
def test_cli_inline_config_and_errors(tmp_path, capsys):
    cfg = tmp_path / "c.toml"
    cfg.write_text("""seed = 3
draws = 2
[table]
values = [[3, 1, 2], [2, 4, 1], [1, 2, 5]]
dims = ["v", "w"]
[priors]
intruder = "poisson:2"
[[mechanisms]]
label = "cyc"
type = "cyclic"
design = "staircase"
sweep = { alpha = [0.1, 0.3], beta = [0.1, 0.3] }
[[mechanisms]]
type = "margins_only"
""")
    assert main(["compare", str(cfg), "--out", str(tmp_path / "o")]) == 0
    ds = xr.open_dataset(tmp_path / "o" / "compare.nc")
    try:
        assert list(ds["mechanism"].values) == ["cyc alpha=0.1 beta=0.1",
                                                "cyc alpha=0.3 beta=0.3", "margins_only"]
        assert ds.attrs["intruder"] == "Poisson(rate=2.0)" and ds.attrs["user"] == "Uniform()"
    finally:
        ds.close()
    capsys.readouterr()
    bad = [(("seed = 1\n[table]\nvalues = [[1, 2], [3, 4]]\n[[mechanisms]]\n"
             "type = \"nope\"\n"), "unknown mechanism 'nope'"),
           ("colour = 3\n", "unknown key 'colour'"),
           (("[table]\nvalues = [[1, 2], [3, 4]]\n[[mechanisms]]\ntype = \"cyclic\"\n"
             "design = \"diagonal\"\nsweep = { alpha = [0.1], beta = [0.1, 0.2] }\n"),
            "one common length"),
           (("[table]\nvalues = [[1, 2], [3, 4]]\n[[mechanisms]]\ntype = \"bootstrap\"\n"
             "M = 3\nQ = 2\n"),
            "unknown parameter 'Q' for mechanism 'bootstrap'; valid: M, S, max_regenerations"),
           ("[table\n", "not valid TOML")]
    for text, msg in bad:
        cfg.write_text(text)
        assert main(["compare", str(cfg), "--out", str(tmp_path / "bad")]) == 2, text
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and msg in err, err
    assert not (tmp_path / "bad").exists()
    # the same through the installed entry point: exit code 2, one line on stderr
    r = subprocess.run([sys.executable, "-m", "riskengine.cli", "compare", str(cfg)],
                       capture_output=True, text=True, check=False)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert r.stderr.startswith("riskengine: error:") and "not valid TOML" in r.stderr


def test_statistic_based_utility_is_the_users_hdi_of_cramers_v():
    """cramers_v_hdi_width / cramers_v_covered: rk.analyze of each release under the user's
    prior with the draw's own generator (spawn key (d, 1)), recomputed here."""
    from riskengine._seeding import derived_rng
    t = rk.Table(np.array([[9, 3, 5], [2, 8, 4], [3, 2, 7]]), dims=("v", "w"))
    mechs = {"rounding 3": rk.ControlledRounding(3),
             "cyclic": rk.CyclicPerturbation(rk.cycles.diagonal(3), alpha=0.2, beta=0.2)}
    user = rk.priors.Poisson(5.0)
    ds = rk.compare(t, mechs, intruder=rk.priors.Uniform(), user=user, draws=2,
                    rng=np.random.default_rng(5))
    entropy = int(ds.attrs["seed_entropy"])
    for name, mech in mechs.items():
        for d in range(2):
            rel = mech.protect(t, derived_rng(entropy, d))
            res = rk.analyze(rel, user, "cramers_v", draws=1000, rng=derived_rng(entropy, d, 1),
                             truth=t, level=0.94)["cramers_v"]
            got = ds.sel(mechanism=name, draw=d)
            assert float(got["cramers_v_hdi_width"]) == pytest.approx(
                float(res["hdi_upper"] - res["hdi_lower"]), rel=1e-12)
            assert float(got["cramers_v_covered"]) == float(bool(res["covered"]))
    assert "HDI" in ds["cramers_v_hdi_width"].attrs["definition"]
