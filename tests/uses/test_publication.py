"""A census publication protected by targeted record swapping then the cell key method
(riskengine/_publication.py), and its measures -- each checked against a computation from
the records written here (pandas group-bys, plain loops)."""

import numpy as np
import pandas as pd
import pytest

import riskengine as rk
from riskengine._publication import (
    additive_relations,
    differencing_measures,
    protect_publication,
    publication_measures,
)

GEO = ["region", "district", "area"]


@pytest.fixture(scope="module")
def census():
    pop = rk.census.CensusPopulation(districts=3, areas=4, households=(8, 60))
    people = pop.generate(np.random.default_rng(11))
    return pop, people


def _trs(rate=0.05, k=3):
    return rk.TargetedSwapping(GEO, ["sex", "age"], [["hhsize"]], swaprate=rate,
                               k_anonymity=k)


def _cell_counts(df, dims):
    return df.groupby(dims, observed=True).size()


def test_unprotected_publication_is_the_original(census):
    pop, people = census
    pub = protect_publication(people, pop.tables(), pop.hierarchies())
    s = pub.original.system
    np.testing.assert_array_equal(pub.release.values[s.published],
                                  pub.original.values[s.published])
    m = publication_measures(pub)
    assert (m.share_equal.values == 1).all() and (m.mean_abs_dev.values == 0).all()
    assert np.nanmin(m.exact_ones.values) == 1.0


def test_swapping_then_exact_tables_equal_the_swapped_records(census):
    pop, people = census
    pub = protect_publication(people, pop.tables(), pop.hierarchies(), _trs(), None,
                              np.random.default_rng(5))
    again = _trs().protect(people, np.random.default_rng(5))
    pd.testing.assert_frame_equal(pub.swapped, again)
    s = pub.original.system
    vals = pub.release.values
    for (area, sex, age), n in _cell_counts(pub.swapped, ["area", "sex", "age"]).items():
        j = s.find(table="area_sex_age", area=area, sex=sex, age=age)
        assert vals[j] == n
    assert "swapping" in pub.secret and pub.public["tables"] == pop.tables()
    people_before = people.copy()
    protect_publication(people, pop.tables(), pop.hierarchies(), _trs(), None,
                        np.random.default_rng(5))
    pd.testing.assert_frame_equal(people, people_before)


def test_cell_keys_are_sums_of_record_keys(census):
    """Every finest cell's key is the fractional part of its records' keys, so a cell is
    perturbed the same in every table; checked by recomputing the release by hand."""
    pop, people = census
    ck = rk.CellKey(D=2, V=1.0)
    pub = protect_publication(people, pop.tables(), pop.hierarchies(), None, ck,
                              np.random.default_rng(8))
    recs = pub.swapped
    s = pub.release.system
    x = pub.original.values
    # one table's cells by hand: the key of (area, sex, age) = frac(sum of record keys)
    for (area, sex, age), grp in recs.groupby(["area", "sex", "age"], observed=True):
        key = float(np.modf(grp["record_key"].to_numpy(np.float64).sum())[0])
        j = s.find(table="area_sex_age", area=area, sex=sex, age=age)
        want = ck.ptable.perturb(np.array([int(x[j])]), np.array([key]))[0]
        assert pub.release.values[j] == pytest.approx(want, abs=0), (area, sex, age)
    assert "ptable" in pub.secret and "ptable" not in pub.public
    pub2 = protect_publication(people, pop.tables(), pop.hierarchies(), None, ck,
                               np.random.default_rng(8), publish_ptable=True)
    assert "ptable" in pub2.public


def test_measures_against_a_hand_computation(census):
    pop, people = census
    pub = protect_publication(people, pop.tables(), pop.hierarchies(), _trs(0.1),
                              rk.CellKey(D=2, V=1.0), np.random.default_rng(3))
    m = publication_measures(pub).sel(table="area_sex_age")
    s = pub.original.system
    orig = _cell_counts(people, ["area", "sex", "age"])
    new_people = pub.swapped
    ids = []
    for (area, sex, age) in orig.index:
        ids.append(s.find(table="area_sex_age", area=area, sex=sex, age=age))
    # every published cell of the table (totals too): original and published values
    _, _, grid = s.grids["area_sex_age"]
    cells = np.unique(grid[grid >= 0])
    a, b = pub.original.values[cells], pub.release.values[cells]
    assert m.share_equal == pytest.approx(np.mean(a == b))
    assert m.mean_abs_dev == pytest.approx(np.mean(np.abs(a - b)))
    one = a == 1
    assert m.ones_kept == pytest.approx(np.mean(b[one] == 1))
    if (b == 1).any():
        assert m.prob_equal_small_1 == pytest.approx(np.mean(a[b == 1] == 1))
    # exact ones by persons: an original 1-cell (area, sex, age) published 1 whose person
    # is still in that cell after swapping
    real = n1 = 0
    for (area, sex, age), n in orig.items():
        if n != 1:
            continue
        n1 += 1
        j = s.find(table="area_sex_age", area=area, sex=sex, age=age)
        pid = people[(people.area == area) & (people.sex == sex) & (people.age == age)].pid
        now = new_people[new_people.pid == pid.iloc[0]]
        if pub.release.values[j] == 1 and now.area.iloc[0] == area:
            real += 1
    # the table's 1-cells also include totals with one person (none here at area level)
    ones_cells = int(one.sum())
    assert m.exact_ones == pytest.approx(real / ones_cells)
    assert n1 <= ones_cells


def test_bad_inputs(census):
    pop, people = census
    with pytest.raises(TypeError, match="DataFrame"):
        protect_publication(people.to_dict(), pop.tables())
    with pytest.raises(ValueError, match="rng is required"):
        protect_publication(people, pop.tables(), pop.hierarchies(), _trs())


def test_cramers_v_change_by_hand(census):
    pop, people = census
    pub = protect_publication(people, pop.tables(), pop.hierarchies(), _trs(0.1),
                              rk.CellKey(D=2, V=1.0), np.random.default_rng(4))
    m = publication_measures(pub)
    s = pub.original.system
    orig = pd.crosstab(people.area, people.sex)              # area x sex from the records
    pubv = np.array([[pub.release.values[s.find(table="area_sex_age", area=a, sex=x,
                                                 age="Total")] for x in orig.columns]
                     for a in orig.index])
    want = abs(rk.measures.cramers_v(pubv) - rk.measures.cramers_v(orig.to_numpy()))
    assert float(m.cramers_v_change.sel(table="area_sex_age")) == pytest.approx(want)
    assert np.isnan(float(m.cramers_v_change.sel(table="all")))


def _relation_ok(s, p, kids):
    """Children disjoint, covering the parent, each differing from it in one dim only."""
    M = s.M.tocsr()
    fin = {c: set(M.indices[M.indptr[c]:M.indptr[c + 1]].tolist()) for c in [p, *kids]}
    union = set().union(*(fin[k] for k in kids))
    disjoint = sum(len(fin[k]) for k in kids) == len(union)
    cells = s.cells
    diff = {d for k in kids for d in s.dims if cells[d].iloc[k] != cells[d].iloc[p]}
    return (union == fin[p] and disjoint and len(diff) == 1 and s.published[p]
            and s.published[list(kids)].all())


def test_additive_relations_of_a_two_way_table_and_a_hierarchy():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"r": rng.choice(list("abc"), 200), "c": rng.choice(list("wxyz"), 200)})
    pub = protect_publication(df, {"t": ["r", "c"]})
    rels = additive_relations(pub.release.system)
    assert len(rels) == 3 + 4 + 2                # each row, each column, the total twice
    assert all(_relation_ok(pub.release.system, p, k) for p, k in rels)
    # 2 regions of 2 districts x sex: along geo Total -> regions, region -> districts per
    # sex code (3 x 3); along sex one per geo code (7)
    geo = pd.DataFrame({"district": rng.choice(["N1", "N2", "S1", "S2"], 100),
                        "sex": rng.choice(["F", "M"], 100)})
    hier = {"district": rk.Hierarchy({"N": ["N1", "N2"], "S": ["S1", "S2"]})}
    pub = protect_publication(geo, {"t": ["district", "sex"]}, hier)
    rels = additive_relations(pub.release.system)
    assert len(rels) == 9 + 7
    assert all(_relation_ok(pub.release.system, p, k) for p, k in rels)


def test_additive_relations_across_linked_tables(census):
    pop, people = census
    pub = protect_publication(people, pop.tables(), pop.hierarchies())
    s = pub.release.system
    rels = additive_relations(s)
    assert all(_relation_ok(s, p, k) for p, k in rels)
    assert len({(p, tuple(k)) for p, k in rels}) == len(rels)
    tables = s.cells["tables"]
    # relations that link tables: the parent is a cell several tables publish (one cell of
    # the set), the children come from only some of them
    across = [(p, k) for p, k in rels if len(tables.iloc[p]) >= 2
              and set().union(*(set(tables.iloc[c]) for c in k)) < set(tables.iloc[p])]
    assert len(across) >= 10


def test_differencing_measures(census):
    pop, people = census
    exact = differencing_measures(protect_publication(people, pop.tables(),
                                                      pop.hierarchies()))
    assert exact["derived_equal"] == exact["published_equal"] == 1.0
    assert exact["prob_small"] == exact["prob_small_derived"] == 1.0
    swapped = differencing_measures(protect_publication(
        people, pop.tables(), pop.hierarchies(), _trs(0.1), None, np.random.default_rng(2)))
    assert swapped["derived_equal"] == swapped["published_equal"] < 1.0
    pub = protect_publication(people, pop.tables(), pop.hierarchies(), None,
                              rk.CellKey(D=2, V=0.5), np.random.default_rng(3))
    m = differencing_measures(pub)
    y, x0 = pub.release.values, pub.original.values
    derived, equal = [], []
    for p, kids in additive_relations(pub.release.system):     # by hand
        for c in kids:
            d = y[p] - sum(y[o] for o in kids if o != c)
            derived.append((c, d))
            equal.append(d == x0[c])
    assert m["derived"] == len(derived) and m["derived_equal"] == pytest.approx(np.mean(equal))
    ones = [c for c, d in derived if d == 1]
    assert m["prob_small_derived"] == pytest.approx(np.mean([x0[c] == 1 for c in ones]))
    conf = {c for c, d in derived if d == 1 and y[c] == 1}
    assert m["confirmed"] == len(conf)
    assert m["prob_small_confirmed"] == pytest.approx(np.mean([x0[c] == 1 for c in conf]))
