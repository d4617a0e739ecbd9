"""riskengine.census_blocks.BlockPopulation: a seeded synthetic 2010-style block population.

The default design draws about 19,000 persons in 532 blocks of 20 tracts (seed 2010,
``layout_seed=0``); its TableSet takes about 10 s to build, so the table checks use a
two-tract design.  The seeds are fixed, so the statistical checks are deterministic.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy.stats import chi2_contingency

import riskengine as rk
from riskengine.census_blocks import AGE_BANDS, RACES, BlockPopulation

SMALL = {"tracts": 2, "blocks": (3, 5), "persons": (5, 40)}
COLUMNS = ["pid", "county", "tract", "block", "sex", "age", "voting_age", "race",
           "hispanic"]


@pytest.fixture(scope="module")
def default_pop():
    pop = BlockPopulation()
    return pop, pop.generate(np.random.default_rng(2010))


@pytest.fixture(scope="module")
def small_pop():
    pop = BlockPopulation(**SMALL)
    return pop, pop.generate(np.random.default_rng(7))


# --- shape and codes ------------------------------------------------------------------

def test_columns_and_categories(default_pop):
    pop, df = default_pop
    assert list(df.columns) == COLUMNS
    assert df["pid"].tolist() == list(range(1, len(df) + 1))
    assert set(df["sex"]) == {"F", "M"}
    assert set(df["age"]) == set(AGE_BANDS) and len(AGE_BANDS) == 23
    assert set(df["race"]) == set(RACES) == {"White", "Black", "AIAN", "Asian", "NHPI",
                                             "Other"}
    assert set(df["hispanic"]) == {"H", "N"}
    assert set(df["voting_age"]) == {"18+", "<18"}
    assert df["county"].nunique() == 1 and df["tract"].nunique() == pop.n_tracts == 20
    assert df["block"].nunique() == pop.n_blocks == sum(pop.blocks_per_tract)
    assert all(10 <= b <= 40 for b in pop.blocks_per_tract)
    assert 12_000 < len(df) < 26_000


def test_every_block_has_persons_within_bounds_in_code_order(default_pop):
    pop, df = default_pop
    sizes = df.groupby("block", sort=False).size()
    assert list(sizes.index) == pop.block_codes()          # every block, in code order
    assert sizes.min() >= 5 and sizes.max() <= 120
    assert df["block"].is_monotonic_increasing
    # log-uniform: many small blocks
    assert (sizes <= 15).mean() > 0.25 and sizes.max() > 8 * sizes.min()


def test_codes_nest_and_match_the_hierarchy(small_pop):
    pop, df = small_pop
    assert df["block"].str.fullmatch(r"C1T\dB\d").all()
    assert (df["block"].str[:4] == df["tract"]).all()
    assert (df["tract"].str[:2] == df["county"]).all()
    h = pop.hierarchy()
    assert isinstance(h, rk.Hierarchy) and h.total == "Total"
    assert list(h.leaves) == pop.block_codes() == sorted(df["block"].unique())
    pairs = df[["block", "tract", "county"]].drop_duplicates()
    for block, tract, county in pairs.itertuples(index=False):
        assert h.parent(block) == tract and h.parent(tract) == county
    assert pop.hierarchy("tract").leaves == ("C1T1", "C1T2")
    assert pop.hierarchy("county", total="US").leaves == ("C1",)
    with pytest.raises(ValueError, match="unknown level 'state'"):
        pop.hierarchy("state")


def test_codes_are_zero_padded_to_the_widest():
    pop = BlockPopulation(counties=10, tracts=12, blocks=3, persons=1)
    codes = pop.block_codes()
    assert codes[0] == "C01T01B1" and codes[-1] == "C10T12B3" and len(codes) == 360
    df = pop.generate(0)
    assert len(df) == 360 and df["block"].tolist() == codes


def test_the_layout_is_the_designs(small_pop):
    _, df = small_pop
    again = BlockPopulation(**SMALL).generate(8)
    assert list(again["block"].unique()) == list(df["block"].unique())
    layouts = {BlockPopulation(tracts=5, blocks=(1, 30), layout_seed=s).blocks_per_tract
               for s in range(4)}
    assert len(layouts) == 4


# --- the person variables -------------------------------------------------------------

def test_voting_age_follows_age(default_pop):
    _, df = default_pop
    minor = df["age"].isin(["0-4", "5-9", "10-14", "15-17"])
    assert (df["voting_age"] == np.where(minor, "<18", "18+")).all()
    assert 0.21 < minor.mean() < 0.27


def test_shares_are_plausible(default_pop):
    _, df = default_pop
    assert 0.49 < (df["sex"] == "F").mean() < 0.53
    old = df["age"].isin(["80-84", "85+"])
    assert (df.loc[old, "sex"] == "F").mean() > 0.56
    ages = df["age"].value_counts(normalize=True)
    assert ages.between(0.008, 0.09).all(), ages
    race = df["race"].value_counts(normalize=True)
    assert race["White"] > 0.5 and race["NHPI"] < race["AIAN"] < race["Asian"]
    assert 0.05 < (df["hispanic"] == "H").mean() < 0.35


def test_race_and_hispanic_shares_differ_between_tracts(default_pop):
    _, df = default_pop
    _, p, _, _ = chi2_contingency(pd.crosstab(df["tract"], df["race"]))
    assert p < 1e-20
    _, p, _, _ = chi2_contingency(pd.crosstab(df["tract"], df["hispanic"]))
    assert p < 1e-20
    white = df.groupby("tract")["race"].apply(lambda r: (r == "White").mean())
    assert white.max() - white.min() > 0.3
    # with a huge concentration every tract is close to the mean shares
    flat = BlockPopulation(concentration=1e7).generate(np.random.default_rng(2010))
    _, p, _, _ = chi2_contingency(pd.crosstab(flat["tract"], flat["race"]))
    assert p > 1e-3


def test_a_race_with_share_zero_never_appears():
    shares = (0.5, 0.3, 0.0, 0.2, 0.0, 0.0)
    df = BlockPopulation(tracts=5, race_shares=shares, concentration=0.5).generate(3)
    assert set(df["race"]) == {"White", "Black", "Asian"}


# --- reproducibility -----------------------------------------------------------------

def test_same_seed_same_frame_different_seeds_differ():
    pop = BlockPopulation(**SMALL)
    a = pop.generate(np.random.default_rng(11))
    pd.testing.assert_frame_equal(a, pop.generate(np.random.default_rng(11)))
    pd.testing.assert_frame_equal(a, pop.generate(11))    # an int is a seed
    c = pop.generate(np.random.default_rng(12))
    assert len(c) != len(a) or not a.equals(c)


def test_the_callers_generator_advances_the_same_for_every_design():
    after = []
    for pop in (BlockPopulation(**SMALL), BlockPopulation(counties=2, tracts=30)):
        rng = np.random.default_rng(5)
        pop.generate(rng)
        after.append(rng.random())
    rng = np.random.default_rng(5)
    rng.integers(0, 2 ** 63, size=2, dtype=np.int64)      # the documented consumption
    assert after[0] == after[1] == rng.random()


def test_the_concentration_does_not_move_sizes_ages_and_sexes():
    a = BlockPopulation(**SMALL).generate(4)
    b = BlockPopulation(**SMALL, concentration=2.0, hispanic_share=0.5).generate(4)
    cols = ["pid", "block", "sex", "age", "voting_age"]
    pd.testing.assert_frame_equal(a[cols], b[cols])
    assert not a["hispanic"].equals(b["hispanic"])


def test_to_dict_round_trips():
    pop = BlockPopulation(counties=2, tracts=3, blocks=(2, 6), persons=(3, 30),
                          hispanic_share=0.3, concentration=4, layout_seed=9)
    d = json.loads(json.dumps(pop.to_dict()))
    assert d.pop("name") == "census_blocks"
    again = BlockPopulation(**d)
    assert again.to_dict() == pop.to_dict()
    assert again.blocks_per_tract == pop.blocks_per_tract
    pd.testing.assert_frame_equal(pop.generate(1), again.generate(1))
    assert repr(pop) == ("BlockPopulation(counties=2, tracts=3, blocks=(2, 6), "
                         "persons=(3, 30))")


# --- tables ---------------------------------------------------------------------------

def _frame(t) -> pd.Series:
    """A table's interior cells as a Series indexed by its codes."""
    idx = pd.MultiIndex.from_product([t.coords[d] for d in t.dims], names=t.dims)
    return pd.Series(np.asarray(t.values).ravel(), index=idx)


def test_table_set_links_tract_and_block_tables(small_pop):
    pop, df = small_pop
    tables = pop.tables()
    assert set(tables) == {"P1_block_total", "P12_block_sex_age",
                           "P11_block_votingage_race_hisp", "P12_tract_sex_age_race",
                           "P12_tract_sex_age_hisp"}
    ts = rk.TableSet.from_pandas(df, tables, hierarchies=pop.hierarchies())
    assert ts.dims == ("block", "sex", "age", "race", "hispanic")
    assert ts.shape[0] == pop.n_blocks
    for name, t in ts.tables.items():
        assert t.dims == tuple(tables[name])
        assert int(t.values.sum()) == len(df)
        leaves = pop.hierarchy("tract" if "_tract_" in name else "block").leaves
        assert list(t.coords["block"]) == list(leaves)
    # a tract table's cells are the sums of the block table's cells of its blocks
    tract = _frame(ts.tables["P12_tract_sex_age_race"]).groupby(
        level=["block", "sex", "age"]).sum()
    blocks = _frame(ts.tables["P12_block_sex_age"])
    by_tract = blocks.groupby([blocks.index.get_level_values("block").str[:4],
                               blocks.index.get_level_values("sex"),
                               blocks.index.get_level_values("age")]).sum()
    pd.testing.assert_series_equal(tract.sort_index(), by_tract.sort_index(),
                                   check_names=False)
    # and the counts of the records
    counts = df.groupby(["tract", "sex", "age", "race"]).size()
    got = _frame(ts.tables["P12_tract_sex_age_race"])
    for (tr, s, a, r), n in counts.items():
        assert got[(tr, s, a, r)] == n
    # a tract total is one cell of the set, published by every table
    s = ts.system
    j = s.find(table="P12_tract_sex_age_hisp", block="C1T2")
    assert j == s.find(table="P1_block_total", block="C1T2") == \
        s.find(table="P11_block_votingage_race_hisp", block="C1T2")
    assert ts.values[j] == (df["tract"] == "C1T2").sum()


def test_sf1_publication_counts_the_records(small_pop):
    """The "sf1" publication: 10 definitions for 21 SF1 tables; every cell of every table
    equals the count of its records (block tables by block, PCT12 by tract, P10/P11 by
    voting age), read by label."""
    from riskengine.census_blocks import SF1_TABLES
    pop, df = small_pop
    tables = pop.tables("sf1")
    assert len(tables) == 10 and set(tables) == set(SF1_TABLES)
    assert sum(len(v) for v in SF1_TABLES.values()) == 21
    ts = rk.TableSet.from_pandas(df, tables, hierarchies=pop.hierarchies(publication="sf1"))
    geo = {"block": "block", "tract": "tract"}
    for name, cols in tables.items():
        t = ts.tables[name]
        assert t.dims == tuple(cols)
        by = [geo["tract" if "_tract_" in name else "block"]] + [
            ("voting_age" if (c == "age" and name.startswith(("P10", "P11"))) else c)
            for c in cols[1:]]
        counts = df.groupby(by).size()
        got = _frame(t)
        assert int(got.sum()) == len(df)
        for key, n in counts.items():
            assert got[key if isinstance(key, tuple) else (key,)] == n, (name, key)
        assert int(got.sum()) == int(counts.sum())
    with pytest.raises(ValueError, match="publication"):
        pop.tables("sf2")


def test_voting_age_cells_below_18_are_structural_zeros(small_pop):
    _, df = small_pop
    minor = df["age"].isin(AGE_BANDS[:4])
    assert not ((df["voting_age"] == "18+") & minor).any()
    assert not ((df["voting_age"] == "<18") & ~minor).any()


# --- bad parameters -------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, err, match", [
    ({"counties": 0}, ValueError, "counties must be >= 1"),
    ({"tracts": 2.5}, TypeError, "tracts must be an integer"),
    ({"tracts": True}, TypeError, "tracts must be an integer"),
    ({"blocks": (40, 10)}, ValueError, r"blocks=\(low, high\) needs low <= high"),
    ({"blocks": (0, 10)}, ValueError, "blocks low bound must be >= 1"),
    ({"blocks": "many"}, ValueError, r"blocks must be an int or a pair \(low, high\)"),
    ({"persons": (1, 2, 3)}, ValueError, r"persons must be an int or a pair"),
    ({"persons": (5, 0)}, ValueError, "persons high bound must be >= 1"),
    ({"race_shares": (0.5, 0.5)}, ValueError, "race_shares must have 6 entries"),
    ({"race_shares": (0.5,) * 6}, ValueError, "race_shares must sum to 1"),
    ({"race_shares": (1.2, -0.2, 0, 0, 0, 0)}, ValueError, "finite and >= 0"),
    ({"race_shares": "abcdef"}, TypeError, "race_shares must be a sequence of numbers"),
    ({"hispanic_share": 0}, ValueError, "hispanic_share must be finite and > 0"),
    ({"hispanic_share": 1.0}, ValueError, r"hispanic_share must be in \(0, 1\)"),
    ({"hispanic_share": "0.2"}, TypeError, "hispanic_share must be a real number"),
    ({"concentration": -1}, ValueError, "concentration must be finite and > 0"),
    ({"concentration": np.inf}, ValueError, "concentration must be finite and > 0"),
    ({"layout_seed": -1}, ValueError, "layout_seed must be >= 0"),
    ({"layout_seed": False}, TypeError, "layout_seed must be an integer"),
    ({"blocks": (True, 3)}, TypeError, "blocks low bound must be an integer"),
])
def test_bad_parameters_are_named(kwargs, err, match):
    with pytest.raises(err, match=match):
        BlockPopulation(**kwargs)


@pytest.mark.parametrize("rng", ["seed", 1.5, None, np.random.RandomState(0)])
def test_generate_needs_a_generator_or_a_seed(rng):
    with pytest.raises(TypeError, match="numpy.random.Generator"):
        BlockPopulation(**SMALL).generate(rng)


def test_blocks_and_persons_may_be_one_number():
    pop = BlockPopulation(tracts=3, blocks=4, persons=7)
    assert pop.blocks == (4, 4) and pop.persons == (7, 7)
    assert pop.blocks_per_tract == (4, 4, 4)
    df = pop.generate(0)
    assert (df.groupby("block").size() == 7).all() and len(df) == 84
