"""rk.reconstruct: exact integer bounds, certainty and posteriors of the finest cells of
a table set, against brute force (tests/reference/reconstruction.py) on small random
populations, by construction at realistic counts, and through the unit runner (files,
resume, local processes)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import riskengine as rk
from riskengine.inference.certify import NoTable
from tests.reference.reconstruction import consistent_tables, table_cells

CATS = {"g": ["g1", "g2", "g3"], "s": ["F", "M"], "a": ["y", "m", "o"]}


def _population(rng, n, dims):
    return pd.DataFrame({d: rng.choice(CATS[d][: k], size=n) for d, k in dims.items()})


def _random_set(seed):
    """A small population and 1-3 tables of it (some with a hierarchy on ``g``)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 7))
    dims = {"g": int(rng.integers(2, 4)), "s": 2, "a": int(rng.integers(2, 3))}
    df = _population(rng, n, dims)
    # make every category appear (the finest cells are the categories seen)
    names = list(dims)
    shapes = [["g", "s"], ["g", "a"], ["s", "a"], ["g"], ["g", "s", "a"]]
    pick = rng.choice(len(shapes) - 1, size=int(rng.integers(1, 3)), replace=False)
    tables = {f"T{i}": shapes[k] for i, k in enumerate(pick)}
    if rng.random() < 0.15:
        tables["F"] = shapes[-1]
    hier = None
    seen_g = sorted(df["g"].unique())
    if len(seen_g) == 3 and rng.random() < 0.5:
        hier = {"g": rk.Hierarchy({"G12": ["g1", "g2"], "G3": ["g3"]}, total="Total")}
    del names
    return df, tables, hier


def _brute(ts, window=0, published=None):
    truth = np.rint(ts.values[: ts.system.n_interior]).reshape(ts.shape).astype(int)
    if published is None:
        published = {name: table_cells(ts, name, truth) for name in ts.tables}
    N = int(truth.sum())
    X = consistent_tables(ts, published, N, window)
    assert len(X) >= 1 and any((x == truth).all() for x in X)
    return X, truth


@pytest.mark.parametrize("seed", range(40))
def test_bounds_and_certainty_equal_brute_force(seed):
    df, tables, hier = _random_set(seed)
    ts = rk.TableSet.from_pandas(df, tables, hierarchies=hier)
    X, truth = _brute(ts)
    ds = rk.reconstruct(ts)
    assert (ds["lower"].values == X.min(axis=0)).all()
    assert (ds["upper"].values == X.max(axis=0)).all()
    assert (ds["certain"].values == (X.min(axis=0) == X.max(axis=0))).all()
    assert ds["exact"].values.all()
    assert ds.attrs["persons"] == truth.sum()
    assert ds.attrs["persons_certain"] == X.min(axis=0).sum()


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("bounds", ["lp", "none"])
def test_cheaper_bounds_are_outer_and_certainty_unchanged(seed, bounds):
    df, tables, hier = _random_set(300 + seed)
    ts = rk.TableSet.from_pandas(df, tables, hierarchies=hier)
    X, _truth = _brute(ts)
    ds = rk.reconstruct(ts, bounds=bounds)
    lo, hi = X.min(axis=0), X.max(axis=0)
    assert (ds["certain"].values == (lo == hi)).all()
    assert (ds["lower"].values <= lo).all() and (ds["upper"].values >= hi).all()
    ex = ds["exact"].values
    assert (ds["lower"].values[ex] == lo[ex]).all() and (ds["upper"].values[ex] == hi[ex]).all()
    # a claim "at least k" is only ever made where k <= the true least value
    assert (ds["record_k"].values <= lo.reshape(-1)[ds["record_cell"].values]).all()


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("prior", [rk.priors.Uniform(), rk.priors.Poisson(1.5)],
                         ids=["uniform", "poisson"])
def test_posterior_and_ranked_records_equal_brute_force(seed, prior):
    df, tables, hier = _random_set(100 + seed)
    ts = rk.TableSet.from_pandas(df, tables, hierarchies=hier)
    X, _truth = _brute(ts)
    if isinstance(prior, rk.priors.Poisson):
        from scipy.special import gammaln
        lw = (X * np.log(1.5) - gammaln(X + 1)).reshape(len(X), -1).sum(axis=1)
    else:
        lw = np.zeros(len(X))
    w = np.exp(lw - lw.max())
    w /= w.sum()
    ds = rk.reconstruct(ts, prior=prior)
    mean = np.tensordot(w, X, axes=1)
    np.testing.assert_allclose(ds["mean"].values, mean, atol=1e-9)
    flat = X.reshape(len(X), -1)
    for j in range(flat.shape[1]):
        pm = np.bincount(flat[:, j], weights=w)
        assert ds["prob_mode"].values.reshape(-1)[j] == pytest.approx(pm.max(), abs=1e-9)
    # every record's confidence: Pr(cell >= k)
    for c, k, p in zip(ds["record_cell"].values, ds["record_k"].values,
                       ds["confidence"].values):
        assert p == pytest.approx(float(w[flat[:, c] >= k].sum()), abs=1e-9)
    conf = ds["confidence"].values
    assert (np.diff(conf) <= 1e-12).all()           # ranked
    assert ds.attrs["approximate"] == 0
    assert ds.attrs["posterior"] == "exact in 1 of 1 units"


@pytest.mark.parametrize("seed", range(12))
def test_random_rounding_release_equals_brute_force(seed):
    df, tables, hier = _random_set(200 + seed)
    ts = rk.TableSet.from_pandas(df, tables, hierarchies=hier)
    rel = rk.RandomRounding(2).protect(ts, np.random.default_rng(seed))
    s = ts.system
    truth = np.rint(ts.values[: s.n_interior]).reshape(ts.shape).astype(int)
    published = _published(ts, rel, truth)
    N_lo = max(0, int(truth.sum()) - 1)
    X = np.concatenate([consistent_tables(ts, published, N, window=1)
                        for N in range(N_lo, int(truth.sum()) + 2)
                        if len(consistent_tables(ts, published, N, window=1))])
    ds = rk.reconstruct(rel)
    assert (ds["lower"].values == X.min(axis=0)).all()
    assert (ds["upper"].values == X.max(axis=0)).all()
    assert (ds["certain"].values == (X.min(axis=0) == X.max(axis=0))).all()
    assert ds.attrs["mechanism"] == "random_rounding"


def _published(ts, rel, truth):
    """The published value of every cell of every table, read from the release by
    label."""
    s = ts.system
    published = {}
    for name in ts.tables:
        cells = table_cells(ts, name, truth)
        da = rel.table(name)
        pub = {}
        for key in cells:
            sel = {d: (s.totals_of(name)[d] if c == "__total__" else c)
                   for d, c in zip(ts.tables[name].dims, key)}
            pub[key] = int(da.sel(sel))
        published[name] = pub
    return published


def _noise_half_width(distribution, scale, per):
    """The least w with Pr(|noise| > w) <= per, from the pmf summed directly (the
    definition: geometric pmf proportional to q^|k|, q = exp(-1/scale); discrete
    Gaussian proportional to exp(-k^2 / (2 scale^2)))."""
    k = np.arange(-400, 401)
    lw = -np.abs(k) / scale if distribution == "geometric" else -k ** 2 / (2 * scale ** 2)
    p = np.exp(lw - lw.max())
    p /= p.sum()
    for w in range(400):
        if p[np.abs(k) > w].sum() <= per:
            return w
    raise AssertionError("no window")


@pytest.mark.parametrize("seed", range(12))
def test_noisy_release_windows_of_a_coverage_equal_brute_force(seed):
    """Unbounded noise with coverage=: the windows' half-width is the least w with
    Pr(|noise| > w) <= (1 - coverage) / n (computed here from the pmf), and the bounds
    and certainty equal every table within the windows, enumerated."""
    df, tables, hier = _random_set(400 + seed)
    ts = rk.TableSet.from_pandas(df, tables, hierarchies=hier)
    rng = np.random.default_rng(seed)
    dist = ["geometric", "discrete_gaussian"][seed % 2]
    scale = float(rng.choice([0.2, 0.3, 0.4]))
    clip = bool(seed % 3)
    rel = rk.NoisyCounts(dist, scale, clip=clip).protect(ts, np.random.default_rng(seed))
    s = ts.system
    truth = np.rint(ts.values[: s.n_interior]).reshape(ts.shape).astype(int)
    n_pub = int(s.published.sum())
    coverage = 0.9
    w = _noise_half_width(dist, scale, (1 - coverage) / n_pub)
    published = _published(ts, rel, truth)
    # every consistent table's size lies within w of a published grand total
    name = next(iter(ts.tables))
    held = table_cells(ts, name, np.ones_like(truth))
    T = next(published[name][k] for k, v in held.items() if v == truth.size)
    X = [consistent_tables(ts, published, n, window=w)
         for n in range(max(0, T - w), T + w + 1)]
    X = [x for x in X if len(x)]
    try:
        ds = rk.reconstruct(rel, coverage=coverage)
    except NoTable:
        assert not X                     # the windows hold no table (prob. <= 0.1)
        return
    X = np.concatenate(X)
    assert f"within {w} of its original" in ds.attrs["what"]
    assert ds.attrs["coverage"] == coverage
    assert ds.attrs["certainty"] == "with probability >= 0.9 over the noise"
    assert (ds["lower"].values == X.min(axis=0)).all()
    assert (ds["upper"].values == X.max(axis=0)).all()
    assert (ds["certain"].values == (X.min(axis=0) == X.max(axis=0))).all()


def test_noisy_release_coverage_holds_over_the_noise():
    """The guarantee itself: over 300 releases of one set, the truth lies within the
    bounds of every cell in at least a share ``coverage`` of them (here 0.8; the union
    bound is loose, so nearly all)."""
    df = pd.DataFrame({"g": list("aabbbc"), "s": list("FMFFMM")})
    ts = rk.TableSet.from_pandas(df, {"A": ["g", "s"], "B": ["g"]})
    truth = np.rint(ts.values[: ts.system.n_interior]).astype(int)
    mech = rk.NoisyCounts("geometric", 0.5, clip=True)
    held = 0
    for seed in range(300):
        rel = mech.protect(ts, np.random.default_rng(seed))
        try:
            ds = rk.reconstruct(rel, coverage=0.8, bounds="none")
        except NoTable:
            continue
        lo, hi = ds["lower"].values.ravel(), ds["upper"].values.ravel()
        held += bool(((lo <= truth) & (truth <= hi)).all())
    assert held >= 0.8 * 300


def _census(districts=2, areas=3, seed=5):
    from riskengine.census import CensusPopulation
    pop = CensusPopulation(regions=1, districts=districts, areas=areas, households=(10, 25))
    df = pop.generate(np.random.default_rng(seed))
    return df, rk.TableSet.from_pandas(df, pop.tables(), hierarchies=pop.hierarchies())


def test_never_certain_when_a_second_table_exists_at_realistic_counts():
    """By construction: the truth moved along a 2 x 2 swap of the finest cells that keeps
    every published cell (hhsize x age inside one area, sex and rare fixed: no table
    crosses hhsize with age) is a second consistent table; its cells are never certain
    and both values lie within the bounds."""
    _df, ts = _census()
    ds = rk.reconstruct(ts, unit="area", level=2)
    truth = ds["value"]
    assert (ds["lower"] <= truth).all() and (truth <= ds["upper"]).all()
    assert (ds["lower"].where(ds["certain"]) == truth.where(ds["certain"])).where(
        ds["certain"], True).all()
    x = truth.values
    rng = np.random.default_rng(0)
    dims = list(ds["value"].dims)
    ia, ih, ig = dims.index("area"), dims.index("hhsize"), dims.index("age")
    found = 0
    for _ in range(2000):
        idx = [int(rng.integers(n)) for n in x.shape]
        h2, g2 = int(rng.integers(x.shape[ih])), int(rng.integers(x.shape[ig]))
        if h2 == idx[ih] or g2 == idx[ig]:
            continue
        z = np.zeros_like(x)

        def at(h, g, idx=idx):
            j = list(idx)
            j[ih], j[ig] = h, g
            return tuple(j)
        z[at(idx[ih], idx[ig])] += 1
        z[at(h2, g2)] += 1
        z[at(idx[ih], g2)] -= 1
        z[at(h2, idx[ig])] -= 1
        if (x + z < 0).any():
            continue
        y = x + z
        assert (ts.system.vector(y)[ts.system.published] ==
                ts.system.vector(x)[ts.system.published]).all()
        moved = z != 0
        assert not ds["certain"].values[moved].any()
        assert (ds["lower"].values <= y).all() and (y <= ds["upper"].values).all()
        found += 1
    assert found > 20
    del ia


def test_units_are_a_sound_relaxation_of_the_whole_set():
    _df, ts = _census(districts=2, areas=2, seed=7)
    whole = rk.reconstruct(ts)
    split = rk.reconstruct(ts, unit="area", level=2)
    assert whole.attrs["units"] == 1 and whole.attrs["dropped_cells"] == 0
    assert split.attrs["units"] == 2
    # the region's cells span both districts, and each is the sum of published district
    # cells: implied, so nothing is dropped and the bounds are the whole set's
    assert split.attrs["dropped_cells"] == 0 and split.attrs["implied_cells"] > 0
    assert "loses nothing" in split.attrs["implied_note"]
    assert (split["certain"] == whole["certain"]).all()
    assert (split["lower"] == whole["lower"]).all()
    assert (split["upper"] == whole["upper"]).all()
    per_area = split.attrs["areas_certain"]
    assert 0 <= per_area <= split.attrs["areas"] == ts.shape[0]


def test_implied_cells_keep_unit_posteriors_exact():
    """Tract units of a block publication: the county's cells are sums of tract cells
    (implied), so each tract's posterior is the whole set's: exact, equal to the run
    without units."""
    from riskengine.census_blocks import BlockPopulation
    pop = BlockPopulation(tracts=2, blocks=(2, 3), persons=(3, 8))
    df = pop.generate(np.random.default_rng(3))
    ts = rk.TableSet.from_pandas(df, pop.tables(), hierarchies=pop.hierarchies())
    split = rk.reconstruct(ts, rk.priors.Poisson(1.0), unit="block", level=2)
    whole = rk.reconstruct(ts, rk.priors.Poisson(1.0))
    assert split.attrs["implied_cells"] > 0 and split.attrs["dropped_cells"] == 0
    assert split.attrs["posterior"] == "exact in 2 of 2 units"
    assert split.attrs["approximate"] == 0
    np.testing.assert_allclose(split["mean"].values, whole["mean"].values, atol=1e-9)
    np.testing.assert_allclose(split["prob_mode"].values, whole["prob_mode"].values,
                               atol=1e-9)


@pytest.mark.parametrize("seed", range(8))
def test_cells_spanning_units_not_implied_are_dropped_soundly(seed):
    """A sex x age table across areas, with areas x sex and areas x age by area: its cells
    are no sums of published area cells, so the split drops them -- a relaxation: certain
    under it is certain in every table (brute force), its bounds are outer, and a
    posterior under it says it is approximate."""
    rng = np.random.default_rng(500 + seed)
    n = int(rng.integers(3, 7))
    df = pd.DataFrame({"g": rng.choice(["g1", "g2"], n), "s": rng.choice(["F", "M"], n),
                       "a": rng.choice(["y", "o"], n)})
    df.loc[0, ["g", "s", "a"]] = ["g1", "F", "y"]
    df.loc[1, ["g", "s", "a"]] = ["g2", "M", "o"]
    tables = {"GS": ["g", "s"], "GA": ["g", "a"], "SA": ["s", "a"]}
    ts = rk.TableSet.from_pandas(df, tables)
    X, _ = _brute(ts)
    lo, hi = X.min(axis=0), X.max(axis=0)
    split = rk.reconstruct(ts, unit="g", level={"g1": "U1", "g2": "U2"})
    assert split.attrs["dropped_cells"] > 0 and "dropped" in split.attrs["dropped_note"]
    sv = split[["lower", "upper", "certain"]].transpose(*ts.dims)
    assert not (sv["certain"].values & (lo != hi)).any()
    assert (sv["lower"].values <= lo).all() and (sv["upper"].values >= hi).all()
    post = rk.reconstruct(ts, rk.priors.Uniform(), unit="g", level={"g1": "U1",
                                                                      "g2": "U2"})
    assert post.attrs["approximate"] == 1


def test_a_cell_spanning_units_that_contradicts_them_is_refused():
    """The region's total published one more than the sum of its districts' totals: the
    unit split used to drop it silently; now no table is consistent, by name."""
    from riskengine.table_set import TableSetRelease
    _df, ts = _census(districts=2, areas=2, seed=7)
    s = ts.system
    vals = np.array(ts.values, float)
    vals[: s.n_interior] = np.nan
    whole = int(np.argmax(np.asarray(s.M.sum(axis=1)).ravel()))   # the grand total
    vals[whole] += 1
    bad = TableSetRelease(ts, vals, rk.CellSuppression())
    with pytest.raises(NoTable, match="not the sum of the published cells of the units"):
        rk.reconstruct(bad, unit="area", level=2)


def test_suppressed_release_agrees_with_the_sums_route():
    rng = np.random.default_rng(3)
    df = _population(rng, 9, {"g": 3, "s": 2, "a": 3})
    ts = rk.TableSet.from_pandas(df, {"A": ["g", "s"], "B": ["g", "a"]})
    rel = rk.suppress(ts, rk.sensitivity.Frequency(3))
    assert rel.hidden.any()
    post = rk.posterior(rel, rk.priors.Uniform())
    ds = rk.reconstruct(rel, prior=rk.priors.Uniform())
    np.testing.assert_allclose(ds["mean"].values, post.mean().values, atol=1e-9)
    assert ds.attrs["mechanism"] == "cell_suppression"


def test_results_are_written_per_unit_and_a_rerun_resumes(tmp_path):
    _df, ts = _census(districts=3, areas=2, seed=11)
    full = rk.reconstruct(ts, unit="area", level=2, prior=rk.priors.Uniform(),
                          max_candidates=1e4, monte_carlo=False)
    calls = []

    def stop_after_two(done, total):
        calls.append(done)
        if done == 2:
            raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        rk.reconstruct(ts, unit="area", level=2, prior=rk.priors.Uniform(),
                       max_candidates=1e4, monte_carlo=False, out=tmp_path,
                       progress=stop_after_two)
    files = sorted((tmp_path / "units").glob("*.nc"))
    assert len(files) == 2
    assert (tmp_path / "summary.csv").read_text().count("\n") == 3
    again = rk.reconstruct(ts, unit="area", level=2, prior=rk.priors.Uniform(),
                           max_candidates=1e4, monte_carlo=False, out=tmp_path)
    assert again.attrs["units_resumed"] == 2
    for v in ("lower", "upper", "certain", "mean", "prob_mode", "confidence"):
        np.testing.assert_array_equal(again[v].values, full[v].values)
    # a third run reads every unit back; changed settings are recomputed
    third = rk.reconstruct(ts, unit="area", level=2, prior=rk.priors.Uniform(),
                           max_candidates=1e4, monte_carlo=False, out=tmp_path)
    assert third.attrs["units_resumed"] == 3
    other = rk.reconstruct(ts, unit="area", level=2, out=tmp_path)
    assert other.attrs["units_resumed"] == 0


def test_local_processes_give_the_serial_result():
    _df, ts = _census(districts=2, areas=2, seed=13)
    a = rk.reconstruct(ts, unit="area", level=2)
    b = rk.reconstruct(ts, unit="area", level=2, workers=2)
    for v in ("lower", "upper", "certain"):
        np.testing.assert_array_equal(a[v].values, b[v].values)


def test_sf1_publication_pins_at_least_what_the_basic_one_does():
    """Every basic table is a sum of "sf1" cells (the tract P12A-F and P12H of the block
    ones, P11 is in both), so the sf1 publication's consistent tables are a subset: its
    bounds lie inside the basic ones and every basic certainty stays; both hold the truth
    (the internal check raises otherwise)."""
    from riskengine.census_blocks import BlockPopulation
    pop = BlockPopulation(tracts=2, blocks=(3, 5), persons=(5, 40))
    df = pop.generate(np.random.default_rng(11))
    res = {}
    for p in ("basic", "sf1"):
        ts = rk.TableSet.from_pandas(df, pop.tables(p), hierarchies=pop.hierarchies(
            publication=p))
        ds = rk.reconstruct(ts, unit="block", level=2)
        res[p] = ds[["lower", "upper", "certain"]].transpose(*ts.dims).assign_attrs(ds.attrs)
    b, f = res["basic"], res["sf1"]
    assert (f["lower"] >= b["lower"]).all() and (f["upper"] <= b["upper"]).all()
    assert (f["certain"] | ~b["certain"]).all()
    assert f.attrs["persons_certain"] >= b.attrs["persons_certain"]
    assert f.attrs["persons_certain"] > b.attrs["persons_certain"]   # strictly, here


def test_bad_inputs_are_refused_by_name():
    df = pd.DataFrame({"g": ["a", "b"], "s": ["F", "M"]})
    ts = rk.TableSet.from_pandas(df, {"A": ["g", "s"]})
    with pytest.raises(ValueError, match="unit='x' is no dim"):
        rk.reconstruct(ts, unit="x")
    with pytest.raises(ValueError, match="level= as a depth needs a hierarchy"):
        rk.reconstruct(ts, unit="g", level=1)
    with pytest.raises(ValueError, match="threshold"):
        rk.reconstruct(ts, threshold=1.5)
    with pytest.raises(TypeError, match="reconstruct takes"):
        rk.reconstruct(np.ones((2, 2)))
    mag = rk.TableSet.from_pandas(df.assign(v=[1.5, 2.0]), {"A": ["g", "s"]}, value="v")
    with pytest.raises(ValueError, match="magnitudes"):
        rk.reconstruct(mag)
    rel = rk.NoisyCounts("geometric", 1.0).protect(ts, np.random.default_rng(0))
    with pytest.raises(ValueError, match="no hard window.*coverage="):
        rk.reconstruct(rel)
    for bad_cov in (0.0, 1.0, 1.5):
        with pytest.raises(ValueError, match="coverage"):
            rk.reconstruct(rel, coverage=bad_cov)
    with pytest.raises(ValueError, match="coverage= is for releases with unbounded noise"):
        rk.reconstruct(ts, coverage=0.9)
    with pytest.raises(ValueError, match="coverage= is for releases with unbounded noise"):
        rk.reconstruct(rk.RandomRounding(2).protect(ts, np.random.default_rng(0)),
                       coverage=0.9)
    # an inconsistent publication: no table at all
    from riskengine.table_set import TableSetRelease
    vals = np.array(ts.values)
    vals[: ts.system.n_interior] = np.nan
    j = ts.system.find(table="A", g="a")
    vals[j] += 5
    bad = TableSetRelease(ts, vals, rk.CellSuppression())
    with pytest.raises(NoTable):
        rk.reconstruct(bad)


def _mc_case():
    from riskengine.census_blocks import BlockPopulation
    pop = BlockPopulation(tracts=1, blocks=(3, 4), persons=(10, 30), layout_seed=2)
    df = pop.generate(np.random.default_rng(2))
    return rk.TableSet.from_pandas(df, pop.tables("basic"),
                                   hierarchies=pop.hierarchies(publication="basic"))


def test_monte_carlo_units_agree_with_the_exact_posterior(tmp_path):
    # one tract of 3 blocks, 81 persons, the basic publication: 34 uncertain cells and
    # 15 consistent tables (exact); max_candidates=3 sends it to the block redraws
    ts = _mc_case()
    ex = rk.reconstruct(ts, rk.priors.Uniform(), unit="block", level=2)
    assert ex.attrs["posterior"] == "exact in 1 of 1 units"
    mc = rk.reconstruct(ts, rk.priors.Uniform(), unit="block", level=2, max_candidates=3,
                        draws=2000, seed=4, out=tmp_path)
    a = mc.attrs
    assert a["posterior"] == "exact in 0 of 1 units; Monte Carlo in 1 (converged in 1)"
    assert a["approximate"] == 1 and "Monte Carlo" in a["approximation"]
    assert a["converged"] == 1 and "R-hat" in a["diagnostics"]
    # bounds and certainty do not depend on the posterior
    for v in ("lower", "upper", "certain"):
        np.testing.assert_array_equal(mc[v].values, ex[v].values)
    unsure = ~ex["certain"].values
    # each uncertain cell's mean within 5 standard errors at its ESS
    ess = mc["ess"].values[unsure]
    assert (ess >= 400).all() and np.isnan(mc["ess"].values[~unsure]).all()
    err = np.abs(mc["mean"].values - ex["mean"].values)[unsure]
    half = (ex["upper"].values - ex["lower"].values)[unsure] / 2    # sd <= half the range
    assert (err <= 5 * half / np.sqrt(ess)).all()
    assert err.max() > 0                               # sampled, not the exact numbers
    # records past the certain ones in a Monte Carlo unit are flagged
    rc = mc["record_confidence_exact"].values
    np.testing.assert_array_equal(rc, mc["record_certain"].values)
    assert a["persons_certain"] == ex.attrs["persons_certain"]
    # the unit's file holds the Monte Carlo result; a rerun reads it back unchanged
    again = rk.reconstruct(ts, rk.priors.Uniform(), unit="block", level=2,
                           max_candidates=3, draws=2000, seed=4, out=tmp_path)
    assert again.attrs["units_resumed"] == 1
    for v in ("mean", "prob_mode", "rhat", "ess", "confidence"):
        np.testing.assert_array_equal(again[v].values, mc[v].values)
    assert again.attrs["diagnostics"] == a["diagnostics"]
    # another seed is another run, not the stored one
    other = rk.reconstruct(ts, rk.priors.Uniform(), unit="block", level=2,
                           max_candidates=3, draws=2000, seed=5, out=tmp_path)
    assert other.attrs["units_resumed"] == 0
    # without Monte Carlo: no posterior past max_candidates, as before
    off = rk.reconstruct(ts, rk.priors.Uniform(), unit="block", level=2, max_candidates=3,
                         monte_carlo=False)
    assert "none in 1 (more than 3 candidate" in off.attrs["posterior"]
    assert "rhat" not in off and off.attrs["approximate"] == 0


def test_monte_carlo_settings_are_checked_by_name():
    ts = _mc_case()
    with pytest.raises(ValueError, match="draws must be >= 10"):
        rk.reconstruct(ts, rk.priors.Uniform(), draws=5)
    with pytest.raises(ValueError, match="chains must be >= 2"):
        rk.reconstruct(ts, rk.priors.Uniform(), chains=1)
    with pytest.raises(TypeError, match="seed must be an integer"):
        rk.reconstruct(ts, rk.priors.Uniform(), seed=1.5)
