"""cell_system against the independent builder of tests/reference/cell_system.py.

Random publications (seeded): one table with random hierarchies (depth 1-3, fan-out 1-3,
single children included) on 2-3 dims, flat dims and alternative hierarchies, random
margins; and 2-3 linked tables over shared variables, some lacking a dim, a variable
under a coarser cut of its hierarchy in some tables (their leaves are internal codes of
the full one).  For each: the published cells and their finest member sets equal the
reference's, ``M`` is the reference membership, no two variables hold the same records,
``A`` holds every additive table and nothing else (rank ``n_var - n_interior``, null
space ``{M f}``), ``vector``, ``find``, ``labels``, ``cells`` and ``TableSet.values`` agree.
Then hand-made cases and every error the builder raises.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

import riskengine as rk
from riskengine.cell_system import cell_system
from tests.reference import cell_system as ref_cs

# --- the structural check -----------------------------------------------------------------


def check_system(case, rng) -> None:
    s = cell_system(case.tables)
    ref = ref_cs.reference_cells(case.tables)
    n_fin, n_var = s.n_interior, s.n_var
    # the finest table
    assert s.dims == ref.dims
    assert {d: set(s.coords[d]) for d in s.dims} == ref.finest
    assert all(len(s.coords[d]) == len(set(s.coords[d])) for d in s.dims)
    assert s.shape == tuple(len(s.coords[d]) for d in s.dims)
    assert n_fin == int(np.prod(s.shape))
    # every published cell of every table, and nothing else, maps to one variable
    for name, (tdims, codes, ids) in s.grids.items():
        assert tdims == case.tables[name].dims
        assert ids.shape == tuple(len(c) for c in codes)
    pub = ref_cs.published_ids(s)
    assert set(pub) == set(ref.cells)
    M = s.M.toarray()
    assert M.shape == (n_var, n_fin) and set(np.unique(M)) <= {0.0, 1.0}
    np.testing.assert_array_equal(M[:n_fin], np.eye(n_fin))
    keys = list(ref.cells)
    rows = ref_cs.membership_rows(ref, s, keys)
    np.testing.assert_array_equal(M[[pub[k] for k in keys]], rows)
    # one variable per set of records, every variable past the finest is published
    assert len({r.tobytes() for r in M}) == n_var
    idx = ref_cs.finest_index(s)
    inv = {v: k for k, v in idx.items()}
    lib_sets = {frozenset(ref_cs.reorder_key(inv[f], s.dims, ref.dims)
                          for f in np.flatnonzero(M[j])) for j in set(pub.values())}
    assert lib_sets == set(ref.cells.values())
    published = np.zeros(n_var, bool)
    published[list(pub.values())] = True
    assert published[n_fin:].all()
    # the cells frame
    cells = s.cells
    assert len(cells) == n_var
    np.testing.assert_array_equal(cells["published"].to_numpy(bool), published)
    np.testing.assert_array_equal(s.published, published)
    np.testing.assert_array_equal(cells["finest"].to_numpy(bool), np.arange(n_var) < n_fin)
    want_tables = [set() for _ in range(n_var)]
    for (name, _), j in pub.items():
        want_tables[j].add(name)
    assert [set(t) for t in cells["tables"]] == want_tables
    totals = {d: set() for d in s.dims}
    for name, tot in s.totals.items():
        for d, t in tot.items():
            totals[d].add(t)
    for k, d in enumerate(s.dims):
        for j in range(n_var):
            code = cells[d].iloc[j]
            on_d = M[j].reshape(s.shape).any(axis=tuple(i for i in range(len(s.dims))
                                                        if i != k))
            have = {s.coords[d][i] for i in np.flatnonzero(on_d)}
            want = ref.finest[d] if code in totals[d] else ref.code_sets[d][code]
            assert have == set(want), (d, j, code)
    # vector: the sums of the finest cells; A holds every additive table
    A = s.A.toarray()
    assert A.shape[1] == n_var
    v = rng.integers(0, 50, size=s.shape)
    x = s.vector(v)
    assert x.dtype == np.int64
    np.testing.assert_array_equal(x, (M @ v.reshape(-1)).astype(np.int64))
    for key, j in pub.items():
        assert x[j] == sum(v.reshape(-1)[idx[ref_cs.reorder_key(f, ref.dims, s.dims)]]
                           for f in ref.cells[key])
    assert not (s.A @ x).any()
    np.testing.assert_array_equal(A @ M, 0)
    # ... and nothing else: rank n_var - n_interior, null(A) = {M f}.  With A M = 0 both
    # hold iff the aggregates' columns of A are independent (for x in null(A),
    # x - M x[:n_fin] is in null(A) and zero on the finest cells): the eigenvalues of
    # their Gram matrix, all clearly positive.  The null space itself on the smaller
    # systems.
    agg_cols = A[:, n_fin:]
    ev = np.linalg.eigvalsh(agg_cols.T @ agg_cols)
    assert ev.min(initial=np.inf) > 1e-6
    if n_var <= 150:
        # A has many more rows than columns: the null space of A'A is that of A
        ev, vec = np.linalg.eigh(A.T @ A)
        null = ev <= 1e-9 * ev.max(initial=1.0)
        assert null.sum() == n_fin and ev[~null].min(initial=np.inf) > 1e-6
        N = vec[:, null]
        np.testing.assert_allclose(M @ N[:n_fin], N, atol=1e-9)
    # the equations: entries +-1 (no explicit zeros), exactly one +1 per row: the
    # aggregate
    assert s.A.nnz == np.count_nonzero(A)
    assert set(np.unique(A)) <= {-1.0, 0.0, 1.0}
    assert ((A == 1).sum(axis=1) == 1).all() and ((A == -1).sum(axis=1) >= 1).all()
    agg = np.argmax(A == 1, axis=1)
    assert (M[agg].sum(axis=1) > 1).all()                 # an aggregate is no finest cell
    # find and labels
    labels = s.labels()
    assert len(labels) == n_var == len(set(labels))
    shown = [set() for _ in range(n_var)]
    for (name, codes), j in pub.items():
        tdims = s.grids[name][0]
        assert s.find(table=name, **{d: c for d, c in zip(tdims, codes)
                                     if c is not None}) == j
        txt = [s.totals[name][d] if c is None else c for d, c in zip(tdims, codes)]
        shown[j].add(f"{name}(" + ", ".join(map(str, txt)) + ")")
    for j in np.flatnonzero(published):
        assert labels[j] in shown[j]          # a table's name and codes (any, if several)
    for j in np.flatnonzero(~published):
        key = np.unravel_index(j, s.shape)
        assert labels[j] == "finest(" + ", ".join(str(s.coords[d][i])
                                                  for d, i in zip(s.dims, key)) + ")"


def check_values(case) -> None:
    """TableSet.values: every published cell its true value (from the master truth); with
    ``finest=`` every cell."""
    ts = rk.TableSet(case.tables)
    s = ts.system
    fin = case.finest_values(s)
    full = s.vector(fin).astype(float)
    pub = s.published
    np.testing.assert_array_equal(ts.values[pub], full[pub])
    assert np.isnan(ts.values[~pub]).all()
    ts2 = rk.TableSet(case.tables, finest=fin)
    np.testing.assert_array_equal(ts2.values, full)
    ref = ref_cs.reference_cells(case.tables)
    idx = ref_cs.finest_index(s)
    flat = fin.reshape(-1)
    for key, j in ref_cs.published_ids(s).items():
        assert ts.values[j] == sum(flat[idx[ref_cs.reorder_key(f, ref.dims, s.dims)]]
                                   for f in ref.cells[key])


@pytest.mark.parametrize("seed", range(10))
def test_single_tables_match_independent_build(seed):
    rng = np.random.default_rng([2024, seed])
    for _ in range(5):
        case = ref_cs.random_table_case(rng, rk)
        check_system(case, rng)
        t = case.tables["T"]
        s1, s2 = t.system(), cell_system(case.tables)
        assert (s1.A != s2.A).nnz == 0 and (s1.M != s2.M).nnz == 0
        check_values(case)


@pytest.mark.parametrize("seed", range(10))
def test_linked_sets_match_independent_build(seed):
    rng = np.random.default_rng([2025, seed])
    for _ in range(5):
        case = ref_cs.random_linked_case(rng, rk)
        check_system(case, rng)
        check_values(case)


def test_random_cases_cover_the_structures():
    """The generators of the tests above reach every structure the issue names (the same
    seeds): single children, depth 3, three dims, alternative hierarchies, flat dims,
    tables lacking a dim, coarser cuts, margins subsets, cells shared by two tables."""
    seen = set()
    for gen, base in ((ref_cs.random_table_case, 2024), (ref_cs.random_linked_case, 2025)):
        for seed in range(10):
            rng = np.random.default_rng([base, seed])
            for _ in range(5):
                case = gen(rng, rk)
                names = list(case.tables)
                for t in case.tables.values():
                    if len(t.dims) < len(case.dims):
                        seen.add("lacks a dim")
                    if len(t.dims) == 3:
                        seen.add("3 dims")
                    if len(t.margins) < len(rk.Table(np.zeros([1] * len(t.dims)),
                                                     dims=t.dims).margins):
                        seen.add("margins subset")
                    for d in t.dims:
                        hs = t.hierarchies.get(d, ())
                        if not hs:
                            seen.add("flat")
                        if len(hs) > 1:
                            seen.add("alternatives")
                        for h in hs:
                            if len(h.levels) == 4:
                                seen.add("depth 3")
                            if any(len(h.children(c)) == 1 for c in h.internal):
                                seen.add("single child")
                            if set(h.leaves) - set(ref_cs.tree_leaves(case.trees[d])):
                                seen.add("coarser cut")
                if len(names) > 1:
                    s = cell_system(case.tables)
                    if (s.cells["tables"].map(len) > 1).any():
                        seen.add("shared cells")
    assert seen == {"lacks a dim", "3 dims", "margins subset", "flat", "alternatives",
                    "depth 3", "single child", "coarser cut", "shared cells"}


# --- hand-made cases -------------------------------------------------------------------------

GEO = rk.Hierarchy({"North": ["N1", "N2"], "South": ["S1", "S2"]})
REGIONS = rk.Hierarchy({"North": {}, "South": {}})
SEX = ["F", "M"]
# finest values, geo x sex; written out by hand
FINEST = np.array([[1, 2], [3, 4], [5, 6], [7, 8]])


def districts_and_regions():
    """Table A: districts (with regions) x sex; table B: sex x regions only."""
    a = rk.Table(FINEST, dims=("geo", "sex"), coords={"sex": SEX},
                 hierarchies={"geo": GEO}, name="A")
    b = rk.Table(np.array([[1 + 3, 5 + 7], [2 + 4, 6 + 8]]), dims=("sex", "geo"),
                 coords={"sex": SEX}, hierarchies={"geo": REGIONS}, name="B")
    return a, b


def test_districts_and_regions_by_hand():
    a, b = districts_and_regions()
    ts = rk.TableSet({"A": a, "B": b})
    s = ts.system
    assert s.dims == ("geo", "sex") and s.shape == (4, 2)
    assert s.coords == {"geo": ["N1", "N2", "S1", "S2"], "sex": ["F", "M"]}
    # A: 4 districts + 2 regions + total = 7 codes, x (2 sexes + total) = 21 cells, all
    # distinct sets; B's 3 x 3 = 9 cells are all among them
    assert s.n_var == 21
    shared = s.find(table="B", geo="North", sex="F")
    assert shared == s.find(table="A", geo="North", sex="F")
    assert s.cells["tables"][shared] == ("A", "B")
    assert ts.values[shared] == 4
    assert ts.values[s.find(table="B")] == 36
    assert ts.values[s.find(table="A", geo="S2")] == 15
    assert s.labels()[shared] == "A(North, F)"
    # find without a table: the first table with every named dim
    assert s.find(geo="N2", sex="M") == 3


def test_single_child_is_one_variable():
    """A node with one child holds the child's records: one variable, found under either
    code; the finest cells count once."""
    h = rk.Hierarchy({"A": {"B": ["b1", "b2"]}, "c": {}})
    t = rk.Table(np.array([3, 4, 5]), dims=("g",), hierarchies={"g": h})
    s = t.system()
    assert s.n_interior == 3 and s.n_var == 5              # b1 b2 c, Total, A (= B)
    assert s.find(g="A") == s.find(g="B")
    x = s.vector(t.values)
    assert x[s.find(g="A")] == 7 and x[s.find()] == 12
    assert t.cells["value"].tolist() == [3, 4, 5, 12, 7]


def test_single_child_makes_no_empty_equation():
    """'node = its single child' is one variable: no equation (once an all-zero row of A
    with explicit zeros stored)."""
    h = rk.Hierarchy({"A": {"B": ["b1", "b2"]}, "c": {}})
    s = rk.Table(np.array([3, 4, 5]), dims=("g",), hierarchies={"g": h}).system()
    A = s.A.toarray()
    assert ((A == 1).sum(axis=1) == 1).all()
    assert s.A.nnz == np.count_nonzero(A)


def test_table_cells_frame():
    a, _ = districts_and_regions()
    c = a.cells
    assert list(c.columns) == ["geo", "sex", "value", "level"]
    assert len(c) == 21
    row = c[(c["geo"] == "South") & (c["sex"] == "Total")].iloc[0]
    assert row["value"] == 5 + 6 + 7 + 8 and row["level"] == 2
    assert c[c["level"] == 0]["value"].tolist() == FINEST.reshape(-1).tolist()


def test_from_pandas_counts_records():
    """Microdata -> the tables and the finest cells (region x sex x age); a hierarchy on
    region; values against a hand count."""
    people = pd.DataFrame({"geo": ["N1", "N1", "N2", "S1", "S1", "S2", "S2", "S2"],
                           "sex": list("FMFFMMMF"),
                           "age": ["y", "o", "o", "y", "y", "o", "y", "y"]})
    ts = rk.TableSet.from_pandas(people, {"A": ["geo", "sex"], "B": ["geo", "age"]},
                                 hierarchies={"geo": GEO})
    s = ts.system
    assert s.dims == ("geo", "sex", "age") and s.shape == (4, 2, 2)
    assert not np.isnan(ts.values).any()
    for key in itertools.product(*[s.coords[d] for d in s.dims]):
        want = int(((people["geo"] == key[0]) & (people["sex"] == key[1]) &
                    (people["age"] == key[2])).sum())
        assert ts.values[ref_cs.finest_index(s)[key]] == want
    assert ts.values[s.find(table="B", geo="South", age="y")] == 4
    assert ts.values[s.find(table="A", geo="North", sex="F")] == 2
    assert ts.values[s.find(table="A")] == 8
    assert ts.values[s.find(table="A")] == ts.values[s.find(table="B")]


def test_from_pandas_equals_reference_values(rng):
    """Random microdata on a random linked case whose tables use the full hierarchies or
    flat leaves: every cell's value is the reference member sum of the records."""
    for _ in range(5):
        case = ref_cs.random_linked_case(rng, rk, max_grid=200)
        dims = case.dims
        leaves = {d: ref_cs.tree_leaves(case.trees[d]) for d in dims}
        recs = []
        for pos in itertools.product(*[range(len(leaves[d])) for d in dims]):
            recs += [tuple(leaves[d][i] for d, i in zip(dims, pos))] * int(case.truth[pos])
        df = pd.DataFrame(recs, columns=list(dims))
        hier = {d: rk.Hierarchy(case.trees[d]) for d in dims}
        tables = {n: list(t.dims) for n, t in case.tables.items()}
        ts = rk.TableSet.from_pandas(df, tables, hierarchies=hier)
        s = ts.system
        assert not np.isnan(ts.values).any()
        ref = ref_cs.reference_cells(ts.tables)
        pid = ref_cs.published_ids(s)
        for key, mem in ref.cells.items():
            assert ts.values[pid[key]] == sum(case.value_of(dict(zip(ref.dims, f)))
                                              for f in mem)


def test_hierarchy_constructors_give_one_system():
    """The region tree as digit groups (from_digits) in one table and as .hrc text in
    another: one code, one variable; the same system as with the dict."""
    digits = rk.Hierarchy.from_digits(["11", "12", "21", "22"], levels=(1, 1))
    hrc = rk.Hierarchy.from_hrc("1\n@11\n@12\n2\n@21\n@22\n")
    levels = rk.Hierarchy.from_levels([("@", "Total"), ("@@", "1"), ("@@@", "11"),
                                       ("@@@", "12"), ("@@", "2"), ("@@@", "21"),
                                       ("@@@", "22")])
    assert digits == hrc == levels
    a = rk.Table(FINEST, dims=("geo", "sex"), coords={"sex": SEX},
                 hierarchies={"geo": digits}, name="A")
    b = rk.Table(FINEST.sum(axis=1), dims=("geo",), hierarchies={"geo": hrc}, name="B")
    s = cell_system({"A": a, "B": b})
    assert s.n_var == 21                                    # B's 7 cells are A's
    assert s.find(table="B", geo="2") == s.find(table="A", geo="2")
    assert s.vector(FINEST)[s.find(table="B", geo="2")] == 5 + 6 + 7 + 8
    one = cell_system({"A": a})
    assert (one.M != s.M).nnz == 0                          # B adds no cell ...
    rows = {r.tobytes() for r in s.A.toarray()}             # ... and no new equation
    assert rows == {r.tobytes() for r in one.A.toarray()}


# --- errors ----------------------------------------------------------------------------------


def test_error_hierarchy_leaves_differ_from_categories():
    with pytest.raises(ValueError, match=r"categories that are no leaf of it: \['X'\]; "
                                         r"leaves that are no category: \['S1', 'S2'\]"):
        rk.Table(np.zeros((3, 2)), dims=("geo", "sex"), coords={"geo": ["N1", "N2", "X"]},
                 hierarchies={"geo": GEO})


def test_error_two_tables_split_a_code_differently():
    a, _ = districts_and_regions()
    other = rk.Hierarchy({"North": ["N1", "S1"], "South": ["N2", "S2"]})
    b = rk.Table(np.zeros((4,), int), dims=("geo",), coords={"geo": list(other.leaves)},
                 hierarchies={"geo": other}, name="B")
    with pytest.raises(ValueError, match=r"code 'North' of dim 'geo' is split into "
                                         r"\['N1', 'N2'\] in table 'A'"):
        cell_system({"A": a, "B": b})


def test_error_overlapping_categories():
    a, _ = districts_and_regions()
    f = rk.Table(np.zeros((2, 2), int), dims=("geo", "sex"), coords={"geo": ["North", "N1"]},
                 name="F")
    with pytest.raises(ValueError, match=r"categories 'North' and 'N1' of dim 'geo' in table "
                                         r"'F' overlap \(both hold 'N1'\)"):
        rk.TableSet({"A": a, "F": f})


def test_error_conflicting_values_of_a_shared_cell():
    a, b = districts_and_regions()
    b2 = rk.Table(b.values + np.array([[0, 0], [1, 0]]), dims=("sex", "geo"),
                  coords={"sex": SEX}, hierarchies={"geo": REGIONS}, name="B")
    with pytest.raises(ValueError, match=r"cell A\(North, M\) holds the same records in "
                                         r"tables 'A' and 'B', but they give 6 and 7"):
        rk.TableSet({"A": a, "B": b2})


def test_error_find_unknown_code():
    a, b = districts_and_regions()
    s = rk.TableSet({"A": a, "B": b}).system
    with pytest.raises(KeyError, match="no code 'Nowhere' in dim 'geo'"):
        s.find(geo="Nowhere")
    with pytest.raises(KeyError, match="table 'B' has no code 'N1' in dim 'geo'"):
        s.find(table="B", geo="N1")
    with pytest.raises(KeyError, match=r"no table publishes a cell \{'age': 'y'\}"):
        s.find(age="y")
