"""The intruder's posterior under targeted record swapping and the cell key method with
secret parameters, by simulation (riskengine/_census_posterior.py; issue 31, item 3).

References:
* the cell key method alone has an exact per-cell posterior: a cell's key is uniform
  whatever the other cells hold, so Pr(published y | original x) is the p-table's row
  (``PTable.prob``, itself tested against the tau-Argus lookup), and the prior of a cell of
  a kind is the distribution of the originals of that kind's simulated cells; the route's
  estimates agree with that Bayes posterior within 4 of their standard errors;
* over 500 freshly simulated publications (TRS + CKM, the setting drawn from the
  intruder's prior each time), the claimed Pr(original = published) of published 1s and
  2s is calibrated: |z| <= 3 overall and in every bin (riskengine._simulate.calibration,
  the cluster-robust statistic with publications as the clusters).
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

import riskengine as rk
from riskengine._census_posterior import Setting, intruder_posterior, simulate_cells
from riskengine._publication import protect_publication
from riskengine._simulate import calibration

POP = rk.census.CensusPopulation(districts=2, areas=3, households=(5, 20))
GEO = ["region", "district", "area"]


def _trs(rate):
    return rk.TargetedSwapping(GEO, ["sex", "age"], [["hhsize"]], swaprate=rate,
                               k_anonymity=3)


def test_cell_key_alone_equals_the_exact_per_cell_bayes_posterior():
    ck = rk.CellKey(D=2, V=1.0)
    rng = np.random.default_rng(11)
    sim = simulate_cells(POP, POP.tables(), [Setting(cell_key=ck)], 150, rng)
    pub = protect_publication(POP.generate(rng), POP.tables(), POP.hierarchies(), None, ck,
                              rng)
    post = intruder_posterior(pub, POP, [Setting(cell_key=ck)], simulated=sim, min_cells=50)
    assert post.attrs["approximate"] == 1 and "not on every other" in \
        post.attrs["approximation"]
    checked = 0
    for kind, by_kind in sim.groupby("kind"):
        xs, prior = np.unique(by_kind["original"], return_counts=True)
        for y, grp in by_kind.groupby("published"):
            if len(grp) < 200:
                continue
            like = ck.ptable.prob(np.full(xs.size, y), xs)
            w = prior * like
            exact = float(w[xs == y].sum() / w.sum())
            got = float((grp["original"] == y).mean())
            # the route's own estimate and its standard error for this (kind, y)
            sel = (post.cells["kind"] == kind) & (post.cells["published"] == y)
            if bool(sel.any()):
                est = float(post.cells["prob_exact"].where(sel, drop=True)[0])
                se = float(post.cells["prob_exact_se"].where(sel, drop=True)[0])
                assert est == pytest.approx(got)
                assert abs(est - exact) <= 4 * se + 1e-9, (kind, y, est, exact, se)
                if y == 1:          # no swapping: a published 1 of original 1 is real
                    one = float(post.cells["prob_real_one"].where(sel, drop=True)[0])
                    assert one == pytest.approx(est)
                checked += 1
    assert checked >= 5


def test_every_published_cell_is_answered_or_said_to_lack_simulations():
    ck = rk.CellKey(D=2, V=1.0)
    rng = np.random.default_rng(3)
    pub = protect_publication(POP.generate(rng), POP.tables(), POP.hierarchies(), _trs(0.1),
                              ck, rng)
    settings = [Setting(_trs(0.05), ck, 1.0), Setting(_trs(0.1), ck, 2.0)]
    post = intruder_posterior(pub, POP, settings, sims=40, rng=np.random.default_rng(4),
                              min_cells=20)
    c = post.cells
    assert c.sizes["cell"] == int(pub.release.system.published.sum())
    ok = np.isfinite(c["prob_exact"].values)
    assert ok.any()
    assert (c["n_similar"].values[~ok] < 20).all()          # NaN only where too few
    assert post.attrs["cells_without_estimate"] == int((~ok).sum())
    pe = c["prob_exact"].values[ok]
    assert ((pe >= 0) & (pe <= 1)).all()
    one = c["prob_real_one"].values
    ones = (c["published"].values == 1) & np.isfinite(one)
    assert (one[ones] <= c["prob_exact"].values[ones] + 1e-12).all()   # real => original 1
    assert np.isnan(one[c["published"].values != 1]).all()
    assert "TRS swaprate 0.05" in post.attrs["settings"]
    table = post.risk_table()
    assert set(table["published"]) <= {1, 2}


def test_bad_settings_are_refused():
    ck = rk.CellKey(D=2, V=1.0)
    rng = np.random.default_rng(0)
    pub = protect_publication(POP.generate(rng), POP.tables(), POP.hierarchies(), None, ck,
                              rng)
    with pytest.raises(TypeError, match="Setting"):
        intruder_posterior(pub, POP, [ck], sims=2, rng=rng)
    with pytest.raises(ValueError, match="weight"):
        intruder_posterior(pub, POP, [Setting(cell_key=ck, weight=0.0)], sims=2, rng=rng)
    with pytest.raises(ValueError, match="rng is required"):
        intruder_posterior(pub, POP, [Setting(cell_key=ck)], sims=2)


@pytest.mark.slow
def test_the_claimed_probabilities_are_calibrated_over_500_publications():
    ck = rk.CellKey(D=2, V=1.0)
    settings = [Setting(_trs(0.05), ck, 1.0), Setting(_trs(0.15), ck, 1.0),
                Setting(None, ck, 1.0)]
    rng = np.random.default_rng(2026)
    sim = simulate_cells(POP, POP.tables(), settings, 300, rng)
    test = simulate_cells(POP, POP.tables(), settings, 500, np.random.default_rng(7))
    # the route's estimates per (kind, published), applied to the test publications' cells
    key = ["kind", "published"]
    hits = sim.assign(hit=sim["original"] == sim["published"]).groupby(key)["hit"]
    est = hits.mean().where(hits.size() >= 30)
    small = test[test["published"].isin([1, 2])]
    claimed = est.reindex(small.set_index(key).index).to_numpy()
    small = small.assign(claimed=claimed, hit=(small["original"] == small["published"]))
    small = small[np.isfinite(small["claimed"])]
    width = int(small.groupby("sim").size().max())
    P = np.full((500, width), np.nan)
    H = np.full((500, width), np.nan)
    for s, g in small.groupby("sim"):
        P[s, :len(g)] = g["claimed"].to_numpy()
        H[s, :len(g)] = g["hit"].to_numpy(float)
    cal = calibration(xr.Dataset({"map_prob": (("table", "c"), P),
                                  "map_hit": (("table", "c"), H)}), bins=5)
    assert cal.attrs["n_cells"] > 5000
    assert abs(cal.attrs["overall_z"]) <= 3, cal.attrs
    z = cal["z"].values[cal["n"].values > 0]
    assert np.all(np.abs(z) <= 3), cal


def test_expected_disclosures_per_table_by_hand():
    ck = rk.CellKey(D=2, V=1.0)
    rng = np.random.default_rng(4)
    pub = protect_publication(POP.generate(rng), POP.tables(), POP.hierarchies(), _trs(0.1),
                              ck, rng)
    post = intruder_posterior(pub, POP, [Setting(_trs(0.1), ck)], sims=30, rng=rng,
                              min_cells=5)
    e = post.expected_disclosures((1, 2))
    c = post.cells.to_dataframe()
    c["table"] = [lab.split("(")[0] for lab in c["label"]]
    small = c[c.published.isin([1, 2])]
    assert e.table.tolist() == sorted(small.table.unique()) + ["all"]
    for _, r in e.iterrows():
        g = small if r.table == "all" else small[small.table == r.table]
        assert r.cells == len(g)
        np.testing.assert_allclose(r.expected_exact, g.prob_exact.sum(skipna=False))
        np.testing.assert_allclose(r.expected_exact_se, g.prob_exact_se.sum(skipna=False))
        ones = g[g.published == 1]
        np.testing.assert_allclose(r.expected_real_ones, ones.prob_real_one.sum(skipna=False))
    assert e.expected_exact.iloc[-1] == pytest.approx(e.expected_exact.iloc[:-1].sum())
