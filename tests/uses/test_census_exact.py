"""The exact posterior of a tiny census publication under TRS + CKM with secret parameters
(riskengine._census_exact) against brute force from the definitions
(tests/reference/census_exact.py: the reference swapping run over every path of its
random choices, the cell key likelihood with every record's key its own)."""

import warnings

import numpy as np
import pandas as pd
import pytest

import riskengine as rk
from riskengine._census_exact import _swapped, exact_intruder_posterior, swap_law
from riskengine._census_posterior import Setting
from riskengine._publication import protect_publication
from tests.reference.agreement import gof_pvalue
from tests.reference.census_exact import brute_posterior, swap_outcomes

HIER = ["district", "area"]
TABLES = {"t1": ["district", "sex"], "t2": ["area"]}
# p-tables on small grids (the second unbiased, the first the example, biased)
PT1 = {0: {0: 1}, 1: {0: .5, 2: .5}, 2: {2: .8, 3: .2}, 3: {2: .3, 3: .4, 4: .3}}
PT2 = {0: {0: 1}, 1: {0: .25, 1: .5, 2: .25}, 2: {1: .25, 2: .5, 3: .25}}


def cell_key(pt):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)     # PT1 is biased, on purpose
        return rk.CellKey(ptable=pt)


def population(rng, nh, sizes=(1, 2)):
    """``nh`` households over areas a, b (district D1) and c (D2), every code present."""
    geo = [("D1", "a"), ("D1", "b"), ("D2", "c")]
    rows = []
    for h in range(1, nh + 1):
        d, a = geo[h - 1] if h <= 3 else geo[rng.integers(3)]
        size = int(rng.integers(sizes[0], sizes[1] + 1))
        own = "yn"[rng.integers(2)]
        for i in range(size):
            sex = "FM"[(h + i) % 2] if h <= 2 else "FM"[rng.integers(2)]
            rows.append({"hid": h, "district": d, "area": a, "sex": sex, "size": size,
                         "own": own})
    return pd.DataFrame(rows)


def swap_kwargs(trs):
    return {"hierarchy": trs.hierarchy, "risk_variables": trs.risk_variables,
            "similar": trs.similar, "swaprate": trs.swaprate, "k_anonymity": trs.k_anonymity}


def lib_outcomes(trs, df):
    out = {}
    for p, src in swap_law(trs, df):
        geo = tuple(tuple(r) for r in _swapped(trs, df, src)[HIER].itertuples(index=False))
        out[geo] = out.get(geo, 0.0) + p
    return out


@pytest.mark.parametrize("seed", range(40))
def test_swap_law_equals_every_path_of_the_reference(seed):
    rng = np.random.default_rng(seed)
    nh = int(rng.integers(2, 5))
    df = population(rng, nh)
    similar = [["size"]] if seed % 2 else [["size", "own"], ["size"]]
    trs = rk.TargetedSwapping(HIER, ["sex"], similar, swaprate=[0.0, 0.3, 0.5, 1.0][seed % 4],
                              k_anonymity=int(rng.integers(1, 4)))
    lib = lib_outcomes(trs, df)
    ref = swap_outcomes(df.to_dict("records"), swap_kwargs(trs))
    assert abs(sum(lib.values()) - 1) < 1e-12
    for geo in set(lib) | set(ref):
        assert lib.get(geo, 0.0) == pytest.approx(ref.get(geo, 0.0), abs=1e-10), geo


def test_swap_law_equals_the_frequencies_of_protect():
    rng = np.random.default_rng(0)
    df = population(rng, 5)
    trs = rk.TargetedSwapping(HIER, ["sex"], [["size"]], swaprate=0.5, k_anonymity=1)
    law = lib_outcomes(trs, df)
    assert len(law) == 7
    drawn = [tuple(tuple(r) for r in trs.protect(df, rng)[HIER].itertuples(index=False))
             for _ in range(3000)]
    assert gof_pvalue(drawn, law) > 1e-3


def _case(seed):
    rng = np.random.default_rng(100 + seed)
    truth = population(rng, 3)
    trs_a = rk.TargetedSwapping(HIER, ["sex"], [["size"]], swaprate=0.5, k_anonymity=2)
    trs_b = rk.TargetedSwapping(HIER, ["sex"], [["size"]], swaprate=0.0, k_anonymity=3)
    ck1, ck2 = cell_key(PT1), cell_key(PT2)
    true_setting = [(trs_a, ck2), (trs_b, ck1), (None, ck2)][seed % 3]
    pub = protect_publication(truth, TABLES, None, *true_setting, rng)
    cands = [truth]
    for _ in range(3):                       # one person's sex, or a household's area
        c = truth.copy()
        i = int(rng.integers(len(c)))
        if rng.random() < 0.5:
            c.loc[i, "sex"] = "M" if c.loc[i, "sex"] == "F" else "F"
        else:
            h = c.loc[i, "hid"]
            c.loc[c.hid == h, "area"] = "b" if c.loc[i, "area"] == "a" else "a"
            c.loc[c.hid == h, "district"] = "D1"
        cands.append(c)
    # the truth with two households' geography exchanged (what a swap would publish)
    hh = truth.drop_duplicates("hid").set_index("hid")
    pairs = [(a, b) for a in hh.index for b in hh.index
             if a < b and hh.area[a] != hh.area[b]]
    a, b = pairs[int(rng.integers(len(pairs)))]
    c = truth.copy()
    for h, o in ((a, b), (b, a)):
        c.loc[truth.hid == h, HIER] = hh.loc[o, HIER].tolist()
    cands.append(c)
    settings = [Setting(trs_a, ck2, 1.0), Setting(trs_b, ck1, 2.0), Setting(None, ck2, 1.0),
                Setting(trs_a, None, 0.5)]
    prior = rng.uniform(0.5, 2.0, len(cands))
    return pub, cands, settings, prior, [PT2, PT1, PT2, None]


@pytest.mark.parametrize("seed", range(6))
def test_posterior_equals_brute_force(seed):
    pub, cands, settings, prior, ptabs = _case(seed)
    try:
        post = exact_intruder_posterior(pub.release, cands, settings, prior=prior)
    except ValueError as exc:
        pytest.fail(str(exc))
    s = pub.release.system
    rows = np.flatnonzero(s.published)
    cells = [{d: s.cells[d].iloc[r] for d in s.dims} for r in rows]
    y = np.rint(pub.release.values[rows]).astype(int).tolist()
    ref = brute_posterior([c.to_dict("records") for c in cands], prior.tolist(),
                          [(None if st.swapping is None else swap_kwargs(st.swapping), pt,
                            st.weight) for st, pt in zip(settings, ptabs)], cells, y)
    assert post.attrs["exact"] == 1 and post.attrs["route"] == "census-exact"
    np.testing.assert_allclose(post.candidates.values, ref["candidates"], atol=1e-9)
    np.testing.assert_allclose(post.settings.values, ref["settings"], atol=1e-9)
    for c in range(len(cells)):
        pmf = post.pmf["prob"].values[c]
        want = np.zeros(pmf.size)
        for v, p in ref["pmf"][c].items():
            want[v] += p
        np.testing.assert_allclose(pmf, want, atol=1e-9)
        assert post.cells["prob_exact"].values[c] == pytest.approx(
            ref["pmf"][c].get(y[c], 0.0), abs=1e-9)
        assert post.cells["mean"].values[c] == pytest.approx(
            sum(v * p for v, p in ref["pmf"][c].items()), abs=1e-9)
        if y[c] == 1:
            assert post.cells["prob_real_one"].values[c] == pytest.approx(
                ref["real_one"][c], abs=1e-9)
        else:
            assert np.isnan(post.cells["prob_real_one"].values[c])


def test_known_parameters_one_setting():
    """Known parameters: one setting (the true one); the posterior over candidates equals
    the brute force and the setting's posterior is 1."""
    pub, cands, settings, prior, ptabs = _case(1)
    post = exact_intruder_posterior(pub.release, cands, [settings[1]], prior=prior)
    s = pub.release.system
    rows = np.flatnonzero(s.published)
    cells = [{d: s.cells[d].iloc[r] for d in s.dims} for r in rows]
    y = np.rint(pub.release.values[rows]).astype(int).tolist()
    ref = brute_posterior([c.to_dict("records") for c in cands], prior.tolist(),
                          [(swap_kwargs(settings[1].swapping), ptabs[1], 1.0)], cells, y)
    np.testing.assert_allclose(post.candidates.values, ref["candidates"], atol=1e-9)
    assert post.settings.values.tolist() == [1.0]


def test_refusals_name_the_cause():
    pub, cands, settings, _prior, _ = _case(0)
    with pytest.raises(ValueError, match="no candidate microdata under any setting"):
        other = [c.assign(sex="F") for c in cands]
        exact_intruder_posterior(pub.release, other, [Setting(None, None)])
    big = population(np.random.default_rng(3), 9)
    trs = rk.TargetedSwapping(HIER, ["sex"], [["size"]], swaprate=0.5, k_anonymity=1)
    with pytest.raises(ValueError, match=r"max_runs=200,000\) on these 9 households"):
        swap_law(trs, big)
    huge = population(np.random.default_rng(3), 40)          # refused before any list
    with pytest.raises(ValueError, match="on these 40 households"):
        swap_law(rk.TargetedSwapping(HIER, ["sex"], [["size"]], swaprate=0.0,
                                     k_anonymity=100), huge)  # all must: 40! orders
    with pytest.raises(ValueError, match="240 allocations of the swaps over the 3 areas"):
        swap_law(trs, huge, max_runs=100)
    with pytest.raises(ValueError, match=r"more than max_runs=10\)"):
        swap_law(settings[0].swapping, cands[0], max_runs=10)
    with pytest.raises(ValueError, match="prior must hold one weight"):
        exact_intruder_posterior(pub.release, cands, settings, prior=[1, 1])
    with pytest.raises(ValueError, match="prior must hold one weight"):
        exact_intruder_posterior(pub.release, cands, settings, prior=[0, 0, 0, 0])
    with pytest.raises(TypeError, match="Setting"):
        exact_intruder_posterior(pub.release, cands, [rk.CellKey(D=2, V=1.0)])
    with pytest.raises(TypeError, match="TableSetRelease"):
        exact_intruder_posterior(pub, cands, settings)
    off_grid = cell_key({0: {0: 1}, 1: {0: 1 / 3, 2: 2 / 3 - 1e-7, 1: 1e-7}})
    with pytest.raises(ValueError, match="grid"):
        exact_intruder_posterior(pub.release, cands, [Setting(None, off_grid)])
    bad = cands[0].assign(area=["q"] * len(cands[0]))
    with pytest.raises(ValueError, match="not among the set's codes"):
        exact_intruder_posterior(pub.release, [bad], [Setting(None, None)])


def test_expected_disclosures_of_the_exact_route():
    pub, cands, settings, prior, _ = _case(2)
    post = exact_intruder_posterior(pub.release, cands, settings, prior=prior)
    e = post.expected_disclosures((1,))
    y = post.cells["published"].values
    assert e.cells.iloc[-1] == (y == 1).sum()
    assert e.expected_exact.iloc[-1] == pytest.approx(
        post.cells["prob_exact"].values[y == 1].sum())
    assert e.expected_real_ones.iloc[-1] == pytest.approx(
        post.cells["prob_real_one"].values[y == 1].sum())
    assert (e.expected_exact_se == 0).all()
    rt = post.risk_table((1,))                    # kinds are the tables here
    assert rt.cells.sum() == (y == 1).sum() and set(rt.kind) <= {"t1", "t2"}


def test_a_census_structure_passes_the_key_integrations_limit_and_says_so():
    """Three tables over three geography levels: the keys' likelihood of every published
    cell at once is refused, by name, even for ten persons."""
    pop = rk.census.CensusPopulation(districts=2, areas=2, households=(1, 1))
    people = pop.generate(np.random.default_rng(2))
    ck = cell_key(PT2)
    pub = protect_publication(people, pop.tables(), pop.hierarchies(), None, ck,
                              np.random.default_rng(12))
    with pytest.raises(ValueError, match="the exact route is for publications of a few "
                                         "tables"):
        exact_intruder_posterior(pub.release, [people], [Setting(None, ck)])


def test_candidate_microdata_enumerates_the_unknown_values():
    from riskengine._census_exact import candidate_microdata
    people = population(np.random.default_rng(0), 3)
    paths = [("D1", "a"), ("D1", "b"), ("D2", "c")]
    cands = candidate_microdata(people, {("district", "area"): paths}, units=[2, 3],
                                household="hid")
    assert len(cands) == 9
    pd.testing.assert_frame_equal(cands[0], people)            # the original first
    seen = set()
    for c in cands:
        for h in (2, 3):
            geo = set(map(tuple, c.loc[c.hid == h, HIER].to_numpy().tolist()))
            assert len(geo) == 1 and geo <= set(paths)          # members move together
        pd.testing.assert_frame_equal(c.drop(columns=HIER), people.drop(columns=HIER))
        pd.testing.assert_frame_equal(c[c.hid == 1], people[people.hid == 1])
        seen.add(tuple(map(tuple, c[HIER].to_numpy().tolist())))
    assert len(seen) == 9
    per_person = candidate_microdata(people, {"sex": ["F", "M"]}, units=[0, 1])
    assert len(per_person) == 4
    assert {tuple(c.sex.iloc[:2]) for c in per_person} == {("F", "F"), ("F", "M"),
                                                            ("M", "F"), ("M", "M")}
    with pytest.raises(ValueError, match="more than max_candidates=5"):
        candidate_microdata(people, {"sex": ["F", "M"]}, max_candidates=5)
    with pytest.raises(KeyError, match="not in people"):
        candidate_microdata(people, {"age": [1, 2]})
    with pytest.raises(KeyError, match=r"units \[9\]"):
        candidate_microdata(people, {"sex": ["F"]}, units=[9], household="hid")
    # the exact route over them: the posterior puts its mass on candidates that can give
    # the publication, and adds up
    pub, _, settings, _, _ = _case(0)
    post = exact_intruder_posterior(pub.release, candidate_microdata(
        pub.people, {"sex": ["F", "M"]}, units=[0]), settings[:2])
    assert post.candidates.sum() == pytest.approx(1.0) and post.candidates.size == 2
