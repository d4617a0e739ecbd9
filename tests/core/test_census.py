"""riskengine.census.CensusPopulation: a seeded synthetic census of persons in households.

Tolerances of the share checks: the default design draws about 7,000 households /
17,000 persons, so a share's standard error is below 0.006 (households) and 0.0013
(the rare characteristic); the bounds below are 4-5 standard errors wide, and the seeds
are fixed, so the checks are deterministic.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import riskengine as rk
from riskengine.census import CensusPopulation

SMALL = {"regions": 2, "districts": 2, "areas": 3, "households": (5, 30)}


@pytest.fixture(scope="module")
def default_pop():
    pop = CensusPopulation()
    return pop, pop.generate(np.random.default_rng(2024))


@pytest.fixture(scope="module")
def small_pop():
    pop = CensusPopulation(**SMALL)
    return pop, pop.generate(np.random.default_rng(7))


# --- shape and codes ------------------------------------------------------------------

def test_columns_types_and_sizes(default_pop):
    pop, df = default_pop
    assert list(df.columns) == ["pid", "hid", "region", "district", "area", "sex", "age",
                                "hhsize", "rare"]
    assert df["pid"].tolist() == list(range(1, len(df) + 1))
    assert df["hid"].is_monotonic_increasing and df["hid"].iloc[0] == 1
    assert set(df["hid"]) == set(range(1, df["hid"].max() + 1))
    assert set(df["sex"]) == {"F", "M"}
    assert set(df["age"]) == set(CensusPopulation.age_bands)
    assert set(df["rare"]) == {0, 1}
    assert set(df["hhsize"]) == {1, 2, 3, 4, 5, 6}
    # 1 region x 10 districts x 10 areas, each between 15 and 200 households
    assert df["area"].nunique() == pop.n_areas == 100
    assert df["district"].nunique() == 10 and df["region"].nunique() == 1
    per_area = df.groupby("area")["hid"].nunique()
    assert per_area.min() >= 15 and per_area.max() <= 200
    # varying populations: more than a fivefold spread, some areas small
    sizes = df.groupby("area").size()
    assert sizes.max() > 5 * sizes.min()
    assert (per_area < 25).sum() >= 3


def test_codes_nest_and_match_the_hierarchy(small_pop):
    pop, df = small_pop
    assert df["area"].str.fullmatch(r"R\dD\dA\d").all()
    assert (df.apply(lambda r: r["area"].startswith(r["district"])
                     and r["district"].startswith(r["region"]), axis=1)).all()
    h = pop.hierarchy()
    assert isinstance(h, rk.Hierarchy) and h.total == "Total"
    assert list(h.leaves) == pop.area_codes() == sorted(df["area"].unique())
    assert h.levels[1] == ("R1", "R2")
    pairs = df[["area", "district", "region"]].drop_duplicates()
    for area, district, region in pairs.itertuples(index=False):
        assert h.parent(area) == district and h.parent(district) == region
    assert pop.hierarchy("district").leaves == ("R1D1", "R1D2", "R2D1", "R2D2")
    assert pop.hierarchy("region").leaves == ("R1", "R2")
    with pytest.raises(ValueError, match="unknown level 'county'"):
        pop.hierarchy("county")


def test_codes_are_zero_padded_to_the_widest():
    pop = CensusPopulation(regions=1, districts=12, areas=3, households=2)
    codes = pop.area_codes()
    assert codes[0] == "R1D01A1" and codes[-1] == "R1D12A3" and len(codes) == 36
    df = pop.generate(0)
    assert set(df["district"]) == {f"R1D{d:02d}" for d in range(1, 13)}
    assert (df.groupby("area")["hid"].nunique() == 2).all()


# --- households ----------------------------------------------------------------------

def test_household_size_is_the_number_of_members(default_pop):
    _, df = default_pop
    g = df.groupby("hid")
    assert (g.size() == g["hhsize"].first()).all()
    assert (g["hhsize"].nunique() == 1).all()
    assert (g["area"].nunique() == 1).all()       # a household lives in one area


def test_children_live_with_adults(default_pop):
    _, df = default_pop
    g = df.assign(child=df["age"] == "0-14",
                  parent=df["age"].isin(["15-29", "30-44", "45-64"])).groupby("hid")
    with_children = g["child"].any()
    assert with_children.sum() > 1000
    assert g["parent"].any()[with_children].all()
    # the reference person (first member) is never a child
    assert (g["age"].first() != "0-14").all()
    # one-person households are adults
    assert (df.loc[df["hhsize"] == 1, "age"] != "0-14").all()


def test_shares_roughly_as_configured(default_pop):
    pop, df = default_pop
    hh = df.groupby("hid")["hhsize"].first()
    got = hh.value_counts(normalize=True).sort_index().to_numpy()
    # household sizes within 0.025 of the configured shares
    np.testing.assert_allclose(got, pop.household_sizes, atol=0.025)
    # the rare characteristic: 2.5 % within 0.5 points, rising with age
    assert abs(df["rare"].mean() - 0.025) < 0.005
    by_age = df.groupby("age")["rare"].mean()
    assert by_age["65+"] > 2 * by_age["0-14"]
    assert by_age["45-64"] > by_age["15-29"]
    # sex about even, every age band between 12 % and 30 %
    assert 0.48 < (df["sex"] == "F").mean() < 0.56
    ages = df["age"].value_counts(normalize=True)
    assert ages.between(0.12, 0.30).all(), ages


def test_configured_shares_are_followed():
    pop = CensusPopulation(districts=4, areas=5, households=(100, 100),
                           household_sizes=(0.5, 0.0, 0.5), rare_share=0.1,
                           rare_age_ratio=(1, 1, 1, 1, 1))
    df = pop.generate(3)
    hh = df.groupby("hid")["hhsize"].first()
    assert set(hh) == {1, 3} and len(hh) == 2000
    assert abs((hh == 1).mean() - 0.5) < 0.04
    assert abs(df["rare"].mean() - 0.1) < 0.015
    # flat ratios: the rare rate is the same in every age band (within noise)
    by_age = df.groupby("age")["rare"].mean()
    assert by_age.max() - by_age.min() < 0.06


def test_small_areas_hold_uniques(default_pop):
    _, df = default_pop
    cells = df.groupby(["area", "sex", "age"]).size()
    with_unique = (cells == 1).groupby(level="area").any()
    unique_areas = with_unique[with_unique].index
    assert len(unique_areas) >= 3
    # they are among the smaller areas
    sizes = df.groupby("area").size()
    assert (sizes[unique_areas] < sizes.median()).all()


# --- reproducibility -----------------------------------------------------------------

def test_same_seed_same_frame():
    pop = CensusPopulation(**SMALL)
    a = pop.generate(np.random.default_rng(11))
    b = pop.generate(np.random.default_rng(11))
    pd.testing.assert_frame_equal(a, b)
    pd.testing.assert_frame_equal(a, pop.generate(11))    # an int is a seed
    c = pop.generate(np.random.default_rng(12))
    assert len(c) != len(a) or not a.equals(c)


def test_the_callers_generator_advances_the_same_for_every_design():
    after = []
    for pop in (CensusPopulation(**SMALL), CensusPopulation(districts=20, areas=20)):
        rng = np.random.default_rng(5)
        pop.generate(rng)
        after.append(rng.random())
    rng = np.random.default_rng(5)
    rng.integers(0, 2 ** 63, size=2, dtype=np.int64)      # the documented consumption
    assert after[0] == after[1] == rng.random()


def test_the_rare_share_does_not_move_the_households():
    a = CensusPopulation(**SMALL).generate(4)
    b = CensusPopulation(**SMALL, rare_share=0.2).generate(4)
    cols = ["pid", "hid", "area", "sex", "age", "hhsize"]
    pd.testing.assert_frame_equal(a[cols], b[cols])
    assert b["rare"].sum() > a["rare"].sum()


def test_to_dict_round_trips():
    pop = CensusPopulation(regions=3, districts=2, areas=4, households=(8, 40),
                           rare_share=0.03)
    d = json.loads(json.dumps(pop.to_dict()))
    assert d.pop("name") == "census"
    again = CensusPopulation(**d)
    assert again.to_dict() == pop.to_dict()
    pd.testing.assert_frame_equal(pop.generate(1), again.generate(1))
    assert repr(pop) == ("CensusPopulation(regions=3, districts=2, areas=4, "
                         "households=(8, 40))")


# --- tables ---------------------------------------------------------------------------

def _records_in(df, cell, dims):
    m = np.ones(len(df), dtype=bool)
    for d in dims:
        v = cell[d]
        if isinstance(v, str) and v == "Total":
            continue
        m &= df[d].str.startswith(v).to_numpy() if d == "area" else \
            (df[d] == v).to_numpy()
    return int(m.sum())


def test_table_set_from_the_generators_tables(small_pop):
    pop, df = small_pop
    tables = pop.tables()
    assert set(tables) == {"area_sex_age", "area_hhsize", "district_rare_age"}
    ts = rk.TableSet.from_pandas(df, tables, hierarchies=pop.hierarchies())
    for name, t in ts.tables.items():
        assert t.dims == tuple(tables[name])
        assert int(t.values.sum()) == len(df)
    assert ts.tables["district_rare_age"].coords["area"] == ["R1D1", "R1D2", "R2D1", "R2D2"]
    assert ts.tables["area_sex_age"].coords["area"] == pop.area_codes()
    # every published cell of every table is the count of its records
    s = ts.system
    pub = s.cells[s.published]
    assert len(pub) > 100
    for j, cell in pub.iterrows():
        dims = list(s.dims)
        assert ts.values[j] == _records_in(df, cell, dims), cell
    # a district total is one cell of the set, published by all three tables
    j = s.find(table="district_rare_age", area="R2D1")
    assert j == s.find(table="area_sex_age", area="R2D1") == s.find(table="area_hhsize",
                                                                    area="R2D1")
    assert set(s.cells["tables"].iloc[j]) == set(tables)
    assert ts.values[j] == (df["district"] == "R2D1").sum()


def test_a_district_column_table_works_too(small_pop):
    """The brief's form: a table on the ``district`` column, the hierarchy on ``area``."""
    pop, df = small_pop
    tables = {"area_sex_age": ["area", "sex", "age"],
              "district_rare_age": ["district", "rare", "age"]}
    ts = rk.TableSet.from_pandas(df, tables, hierarchies={"area": pop.hierarchy()})
    assert all(int(t.values.sum()) == len(df) for t in ts.tables.values())
    t = ts.tables["district_rare_age"]
    counts = df.groupby(["district", "rare", "age"]).size()
    for (d, r, a), n in counts.items():
        i = (t.coords["district"].index(d), t.coords["rare"].index(r),
             t.coords["age"].index(a))
        assert t.values[i] == n


# --- bad parameters -------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, err, match", [
    ({"regions": 0}, ValueError, "regions must be >= 1"),
    ({"districts": 2.5}, TypeError, "districts must be an integer"),
    ({"areas": -1}, ValueError, "areas must be >= 1"),
    ({"households": (50, 10)}, ValueError, r"low <= high"),
    ({"households": (0, 10)}, ValueError, "households low bound must be >= 1"),
    ({"households": (1, 2, 3)}, ValueError, r"pair \(low, high\)"),
    ({"households": "many"}, ValueError, r"pair \(low, high\)"),
    ({"household_sizes": (0.5, 0.4)}, ValueError, "household_sizes must sum to 1"),
    ({"household_sizes": (1.2, -0.2)}, ValueError, "finite and >= 0"),
    ({"household_sizes": ()}, ValueError, "non-empty"),
    ({"rare_share": 0}, ValueError, r"rare_share must be in \(0, 0.5\]"),
    ({"rare_share": 0.8}, ValueError, r"rare_share must be in \(0, 0.5\]"),
    ({"rare_share": True}, TypeError, "rare_share must be a real number"),
    ({"rare_age_ratio": (1, 2)}, ValueError, "must have 5 entries"),
    ({"rare_age_ratio": (0, 0, 0, 0, 0)}, ValueError, "> 0 in at least one"),
    ({"rare_age_ratio": (1, 1, np.nan, 1, 1)}, ValueError, "finite and >= 0"),
])
def test_bad_parameters_are_named(kwargs, err, match):
    with pytest.raises(err, match=match):
        CensusPopulation(**kwargs)


@pytest.mark.parametrize("rng", ["seed", 1.5, None, np.random.RandomState(0)])
def test_generate_needs_a_generator_or_a_seed(rng):
    with pytest.raises(TypeError, match="numpy.random.Generator"):
        CensusPopulation(**SMALL).generate(rng)


def test_households_may_be_one_number():
    pop = CensusPopulation(districts=2, areas=2, households=7)
    assert pop.households == (7, 7)
    df = pop.generate(0)
    assert (df.groupby("area")["hid"].nunique() == 7).all()
