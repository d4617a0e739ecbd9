"""SSBtools to-from hierarchies, sdcHierarchies' positional codes and sdcTable status
tables; the trees of `tofrom_hierarchies` checked against a brute-force resolution."""

from __future__ import annotations

import inspect
import itertools
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from riskengine._formats import sdc
from riskengine._formats._lines import FormatError
from riskengine._formats.sdc import (
    hierarchies_to_tofrom,
    hierarchy_from_len,
    read_sdc_status,
    read_tofrom,
    tofrom_hierarchies,
    write_sdc_status,
)
from riskengine._formats.status import from_letters
from riskengine.hierarchy import Hierarchy

DATA = Path(__file__).resolve().parents[1] / "data" / "sdc"
FIFA = DATA / "fifa2018abcd.csv"


# --- brute force --------------------------------------------------------------------------

def brute_compositions(frame: pd.DataFrame) -> dict:
    """Every code's leaf coefficients by solving (I - M) C = L with numpy (M: code x code
    signed adjacency, L: the leaves' unit rows): independent of the module's recursion."""
    codes = list(dict.fromkeys(list(frame.mapsTo) + list(frame.mapsFrom)))
    leaves = [c for c in codes if c not in set(frame.mapsTo)]
    ix = {c: i for i, c in enumerate(codes)}
    m = np.zeros((len(codes), len(codes)))
    for a, b, s in zip(frame.mapsFrom, frame.mapsTo, frame.sign):
        m[ix[b], ix[a]] += float(s)
    rhs = np.zeros((len(codes), len(leaves)))
    for j, lf in enumerate(leaves):
        rhs[ix[lf], j] = 1
    sol = np.linalg.solve(np.eye(len(codes)) - m, rhs)
    out = {}
    for c in codes:
        row = np.rint(sol[ix[c]]).astype(int)
        out[c] = {lf: int(k) for lf, k in zip(leaves, row) if k}
    return out


def brute_chromatic(sets: list) -> int:
    """The least number of laminar families the sets split into (exhaustive)."""
    n = len(sets)
    bad = [(i, j) for i, j in itertools.combinations(range(n), 2)
           if sets[i] & sets[j] and not (sets[i] <= sets[j] or sets[j] <= sets[i])]
    if not bad:
        return 1
    for k in range(2, n + 1):
        for col in itertools.product(range(k), repeat=n):
            if all(col[i] != col[j] for i, j in bad):
                return k
    return n


# --- FIFA2018ABCD (SSBtools) --------------------------------------------------------------

def test_fifa_compositions():
    comp = read_tofrom(FIFA)
    assert comp["EU"] == {"Croatia": 1, "Denmark": 1, "France": 1, "Portugal": 1, "Spain": 1}
    assert comp["Schengen"] == {"Denmark": 1, "France": 1, "Iceland": 1, "Portugal": 1,
                                "Spain": 1}
    assert comp["Oceania"] == {"Australia": 1} and comp["Iran"] == {"Iran": 1}
    frame = pd.read_csv(FIFA, dtype=str, keep_default_na=False)
    assert comp == brute_compositions(frame.assign(sign=frame.sign.astype(int)))


def test_fifa_hierarchies():
    trees = tofrom_hierarchies(FIFA)
    assert len(trees) == 2                      # EU/nonEU and Schengen/nonSchengen
    assert all(t.total == "Total" for t in trees)
    assert all(set(t.leaves) == set(trees[0].leaves) for t in trees)
    assert len(trees[0].leaves) == 16
    by = {frozenset(t.codes): t for t in trees}
    eu = next(t for t in trees if "EU" in t)
    sch = next(t for t in trees if "Schengen" in t)
    assert "nonEU" in eu and "Schengen" not in eu and "nonSchengen" not in eu
    assert "nonSchengen" in sch and "EU" not in sch
    assert set(eu.children("Europe")) == {"EU", "nonEU"}
    assert set(sch.children("Europe")) == {"Schengen", "nonSchengen"}
    assert eu.children("Oceania") == ("Australia",)       # a one-leaf code
    assert len(by) == 2
    comp = read_tofrom(FIFA)
    for t in trees:
        for c in t.internal[1:]:
            assert set(t.members(c)) == set(comp[c])


def test_fifa_round_trip_through_tofrom():
    trees = tofrom_hierarchies(FIFA)
    back = hierarchies_to_tofrom(trees)
    assert list(back.columns) == ["mapsFrom", "mapsTo", "sign", "level"]
    assert (back.sign == 1).all()
    again = tofrom_hierarchies(back, total="Total")
    members = lambda ts: {c: frozenset(t.members(c)) for t in ts for c in t.internal}
    assert members(again) == members(trees)
    assert len(again) == len(trees)
    # Europe defined once (by the first tree)
    assert (back.mapsTo == "Europe").sum() == 2
    lv = dict(zip(back.mapsTo, back.level))
    assert lv["EU"] == 1 and lv["Europe"] == 2 and lv["Total"] == 3


def test_single_tree_and_total_from_table():
    h = pd.DataFrame({"mapsFrom": ["a", "b", "c", "A", "c2"], "mapsTo": ["A", "A", "c2", "T", "T"],
                      "sign": [1, 1, 1, 1, 1]})
    (t,) = tofrom_hierarchies(h)
    assert t.total == "T" and t.to_dict() == {"A": {"a": {}, "b": {}}, "c2": {"c": {}}}
    tf = hierarchies_to_tofrom(t)
    assert list(zip(tf.mapsFrom, tf.mapsTo, tf.level)) == [("A", "T", 2), ("a", "A", 1),
                                                           ("b", "A", 1), ("c2", "T", 2),
                                                           ("c", "c2", 1)]


def test_hierarchies_to_tofrom_rejects_mismatch():
    a = Hierarchy({"A": ["a", "b"], "c": {}})
    with pytest.raises(ValueError, match="totals"):
        hierarchies_to_tofrom([a, Hierarchy({"A": ["a", "b"], "c": {}}, total="X")])
    with pytest.raises(ValueError, match="leaves"):
        hierarchies_to_tofrom([a, Hierarchy({"A": ["a", "b"]})])
    with pytest.raises(ValueError, match="different leaves"):
        hierarchies_to_tofrom([a, Hierarchy({"A": ["a", "c"], "b": {}})])


# --- random to-from tables ----------------------------------------------------------------

@st.composite
def tofrom_tables(draw):
    """A random to-from table: codes defined from leaves, as sums of disjoint codes, or as
    differences Y - Z with Z inside Y; no two codes with the same leaves."""
    n_leaves = draw(st.integers(2, 7))
    leaves = [f"l{i}" for i in range(n_leaves)]
    sets, rows = {}, []
    for k in range(draw(st.integers(1, 7))):
        name = f"C{k}"
        mode = draw(st.sampled_from(["leaves", "sum", "diff"]))
        existing = list(sets)
        if mode == "sum" and len(existing) >= 2:
            y, z = draw(st.sampled_from(list(itertools.permutations(existing, 2))))
            if sets[y] & sets[z]:
                continue
            new, terms = sets[y] | sets[z], [(y, 1), (z, 1)]
        elif mode == "diff" and len(existing) >= 2:
            y, z = draw(st.sampled_from(list(itertools.permutations(existing, 2))))
            if not sets[z] < sets[y]:
                continue
            new, terms = sets[y] - sets[z], [(y, 1), (z, -1)]
        else:
            new = frozenset(draw(st.lists(st.sampled_from(leaves), min_size=1, unique=True)))
            terms = [(lf, 1) for lf in sorted(new)]
        if new in sets.values() or new == frozenset(leaves):
            continue
        sets[name] = new
        rows += [(a, name, s) for a, s in terms]
    used = set().union(*sets.values()) if sets else set()
    rows += [(lf, "Top", 1) for lf in leaves if lf not in used]   # every leaf in the table
    if not rows:
        rows = [(lf, "Top", 1) for lf in leaves]
    return pd.DataFrame(rows, columns=["mapsFrom", "mapsTo", "sign"]), sets


@settings(max_examples=200, deadline=None)
@given(tofrom_tables())
def test_random_tofrom_matches_brute_force(case):
    frame, _ = case
    comp = read_tofrom(frame)
    assert comp == brute_compositions(frame)
    try:
        trees = tofrom_hierarchies(frame, total="ALL")
    except FormatError as e:
        # only an alias (Top equal to a code, a code holding every leaf) may be refused
        assert "aliases" in e.rule or "every leaf" in e.rule, str(e)
        return
    leafset = {c for c in comp if c not in set(frame.mapsTo)}
    seen = set()
    for t in trees:
        assert t.total == "ALL" and set(t.leaves) == leafset
        for c in t.internal[1:]:
            assert set(t.members(c)) == set(comp[c]), c
            assert all(k == 1 for k in comp[c].values())
            seen.add(c)
    assert seen == set(frame.mapsTo)
    aggregates = [frozenset(comp[c]) for c in dict.fromkeys(frame.mapsTo)]
    if len(aggregates) <= 7:
        assert len(trees) == brute_chromatic(aggregates)


@settings(max_examples=100, deadline=None)
@given(tofrom_tables())
def test_random_round_trip(case):
    frame, _ = case
    try:
        trees = tofrom_hierarchies(frame, total="ALL")
    except FormatError:
        return
    back = tofrom_hierarchies(hierarchies_to_tofrom(trees), total="ALL")
    members = lambda ts: {c: frozenset(t.members(c)) for t in ts for c in t.internal}
    assert members(back) == members(trees)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 8).flatmap(lambda n: st.tuples(
    st.just(n), st.lists(st.booleans(), min_size=n * (n - 1) // 2,
                         max_size=n * (n - 1) // 2))))
def test_colouring_is_minimal(case):
    n, bits = case
    pairs = [p for p, b in zip(itertools.combinations(range(n), 2), bits) if b]
    conflict = [[] for _ in range(n)]
    for i, j in pairs:
        conflict[i].append(j)
        conflict[j].append(i)
    colour = sdc._chromatic_colouring(n, conflict)
    assert all(colour[i] != colour[j] for i, j in pairs)
    best = next(k for k in range(1, n + 1) if any(
        all(c[i] != c[j] for i, j in pairs) for c in itertools.product(range(k), repeat=n)))
    assert max(colour) + 1 == best


# --- refusals -----------------------------------------------------------------------------

def _csv(tmp_path, rows, header="mapsFrom,mapsTo,sign,level"):
    p = tmp_path / "h.csv"
    p.write_text(header + "\n" + "\n".join(rows) + "\n")
    return p


def test_not_a_set_names_code_and_leaf(tmp_path):
    # nonEU is not inside Europe: Europe - nonEU leaves Russia at -1
    p = _csv(tmp_path, ["Spain,Europe,1,1", "France,Europe,1,1", "Russia,nonEU,1,1",
                        "Europe,X,1,2", "nonEU,X,-1,2"])
    with pytest.raises(FormatError) as e:
        tofrom_hierarchies(p)
    assert e.value.file == str(p) and e.value.line == 5
    assert "'X'" in e.value.rule and "'Russia'" in e.value.rule and "-1" in e.value.rule


def test_twice_a_leaf_refused():
    h = pd.DataFrame({"mapsFrom": ["a", "b", "A", "a"], "mapsTo": ["A", "A", "B", "B"],
                      "sign": [1, 1, 1, 1]})
    with pytest.raises(FormatError, match=r"'B'.*'a'.*coefficient 2"):
        tofrom_hierarchies(h)
    assert read_tofrom(h)["B"] == {"a": 2, "b": 1}


def test_empty_code_refused():
    h = pd.DataFrame({"mapsFrom": ["a", "b", "A", "a", "b"], "mapsTo": ["A", "A", "Z", "Z", "Z"],
                      "sign": [1, 1, 1, -1, -1]})
    with pytest.raises(FormatError, match="holds no leaf"):
        tofrom_hierarchies(h)


def test_aliases(tmp_path):
    rows = ["a,A,1,1", "b,A,1,1", "a,B,1,1", "b,B,1,1", "c,T,1,1", "A,T,1,2"]
    p = _csv(tmp_path, rows)
    with pytest.raises(FormatError) as e:
        tofrom_hierarchies(p)
    assert "'A', 'B'" in e.value.rule and "aliases" in e.value.rule and e.value.line == 4
    (t,) = tofrom_hierarchies(p, aliases="nest")
    assert t.children("A") == ("B",) and t.children("B") == ("a", "b")
    with pytest.raises(ValueError, match="aliases"):
        tofrom_hierarchies(p, aliases="merge")


def test_full_code_is_the_total_or_an_alias():
    h = pd.DataFrame({"mapsFrom": ["a", "b"], "mapsTo": ["E", "E"], "sign": [1, 1]})
    assert tofrom_hierarchies(h)[0].total == "E"
    with pytest.raises(FormatError, match="aliases"):
        tofrom_hierarchies(h, total="Total")
    (t,) = tofrom_hierarchies(h, total="Total", aliases="nest")
    assert t.children("Total") == ("E",)


BAD_ROWS = [
    ("empty-code", ["a,,1,1"], 2, "empty mapsTo"),
    ("sign", ["a,A,2,1"], 2, "sign"),
    ("level", ["a,A,1,x"], 2, "level"),
    ("self", ["a,a,1,1"], 2, "itself"),
    ("duplicate", ["a,A,1,1", "b,A,1,1", "a,A,1,1"], 4, "duplicate row"),
    ("cycle", ["a,A,1,1", "A,B,1,2", "B,A,1,3"], 3, "cycle"),
]


@pytest.mark.parametrize("rows,line,word", [b[1:] for b in BAD_ROWS], ids=[b[0] for b in BAD_ROWS])
def test_malformed_tofrom(tmp_path, rows, line, word):
    p = _csv(tmp_path, rows)
    with pytest.raises(FormatError) as e:
        read_tofrom(p)
    assert e.value.file == str(p) and e.value.line == line and word in e.value.rule, str(e.value)


def test_malformed_tofrom_frame_names_row():
    h = pd.DataFrame({"mapsFrom": ["a", "b"], "mapsTo": ["A", "A"], "sign": [1, 0]})
    with pytest.raises(FormatError) as e:
        read_tofrom(h)
    assert e.value.file == "<frame>" and e.value.line is None and "row 1" in e.value.rule


def test_missing_columns(tmp_path):
    p = _csv(tmp_path, ["a,A"], header="from,to")
    with pytest.raises(FormatError, match="missing column"):
        read_tofrom(p)


def test_signs_as_text_and_no_sign_column():
    h = pd.DataFrame({"mapsFrom": ["a", "b", "A", "b"], "mapsTo": ["A", "A", "B", "B"],
                      "sign": ["+", "+", "+", "-"]})
    assert read_tofrom(h)["B"] == {"a": 1}
    assert read_tofrom(h.drop(columns="sign"))["B"] == {"a": 1, "b": 2}


# --- sdcHierarchies "len" -----------------------------------------------------------------

GEO_M = ["01051", "01053", "01054", "01055", "01056", "01057", "01058", "01059", "01060",
         "01061", "01062", "02000", "03151", "03152", "03153", "03154", "03155", "03156",
         "03157", "03158", "03251", "03252", "03254", "03255", "03256", "03257", "03351",
         "03352", "03353", "03354", "03355", "03356", "03357", "03358", "03359", "03360",
         "03361", "03451", "03452", "03453", "03454", "03455", "03456", "10155"]
YAE_H = ["1.1.1.", "1.1.2.", "1.2.1.", "1.2.2.", "1.2.3.", "1.2.4.", "1.2.5.", "1.3.1.",
         "1.3.2.", "1.3.3.", "1.3.4.", "1.3.5.", "1.4.1.", "1.4.2.", "1.4.3.", "1.4.4.",
         "1.4.5.", "1.5.", "1.6.", "1.7.", "1.8.", "1.9.", "2.", "3."]


def test_len_equals_endpos_and_digits():
    # the examples of sdcHierarchies' hier_compute (R/hier_compute.R)
    a = hierarchy_from_len(GEO_M, [2, 3, 5], total="Tot", method="endpos")
    b = hierarchy_from_len(GEO_M, [2, 1, 2], total="Tot")
    assert a == b
    assert b == Hierarchy.from_digits(sorted(GEO_M), (2, 1, 2), total="Tot")
    c = hierarchy_from_len(["Tot" + g for g in GEO_M] + ["Tot"], [3, 2, 1, 2])
    assert c == b
    assert c.children("03") == ("031", "032", "033", "034")


def test_len_unequal_lengths():
    a = hierarchy_from_len(YAE_H, [2, 4, 6], total="Tot", method="endpos")
    assert a == hierarchy_from_len(YAE_H, [2, 2, 2], total="Tot")
    assert a.children("Tot") == ("1.", "2.", "3.")
    assert a.is_leaf("2.") and a.members("1.1.") == ("1.1.1.", "1.1.2.")
    assert hierarchy_from_len(["Tot" + y for y in YAE_H], [3, 2, 2, 2]) == a
    # a subtotal's own code among the codes is that subtotal
    assert hierarchy_from_len(YAE_H + ["1.", "1.1."], [2, 2, 2], total="Tot") == a


@pytest.mark.parametrize("codes,spec,kw,word", [
    (["Tot01", "Xyz02"], [3, 2], {}, "first 3 characters"),
    (["0101", "0102", "0101"], [2, 2], {"total": "T"}, "duplicated"),
    (["01011"], [2, 2], {"total": "T"}, "at most 4"),
    (["010"], [2, 2], {"total": "T"}, "inside a group"),
    (["01"], [2, 0], {"total": "T"}, "<= 0"),
    (["01"], [2.0], {"total": "T"}, "ints"),
])
def test_len_errors(codes, spec, kw, word):
    with pytest.raises(ValueError, match=re.escape(word)):
        hierarchy_from_len(codes, spec, **kw)


# --- sdcTable status ----------------------------------------------------------------------

RESULT = DATA / "sdctable_result.csv"


def test_read_sdc_status_file():
    df = read_sdc_status(RESULT, ["region", "gender"])
    assert list(df.columns) == ["region", "gender", "freq", "val", "sdcStatus"]
    assert df.sdcStatus.tolist() == ["s", "s", "s", "s", "u", "x", "z", "x", "u"]
    assert df.freq.dtype.kind == "i" and df.val.dtype.kind == "f"
    assert from_letters(df.sdcStatus, "sdctable")[4:7] == ["primary", "secondary",
                                                          "forced_safe"]


def test_write_read_sdc_status_round_trip(tmp_path):
    df = read_sdc_status(RESULT, ["region", "gender"])
    cells = df.drop(columns="sdcStatus")
    names = from_letters(df.sdcStatus, "sdctable")
    out = tmp_path / "res.csv"
    text = write_sdc_status(cells, names, out)
    assert text == out.read_text()
    assert text.splitlines()[0] == RESULT.read_text().splitlines()[0]
    assert write_sdc_status(cells, df.sdcStatus.tolist()) == text      # letters as well
    back = read_sdc_status(out, ["region", "gender"])
    pd.testing.assert_frame_equal(back, df)


def test_write_sdc_status_errors():
    cells = pd.DataFrame({"r": ["a", "b"], "freq": [1, 2]})
    with pytest.raises(ValueError, match="row 1.*'bogus'"):
        write_sdc_status(cells, ["safe", "bogus"])
    with pytest.raises(ValueError, match="2 cells"):
        write_sdc_status(cells, ["safe"])
    with pytest.raises(ValueError, match="already"):
        write_sdc_status(cells.assign(sdcStatus="s"), ["s", "s"])
    assert "\nb,2,z\n" in write_sdc_status(cells, ["s", "empty"])


@pytest.mark.parametrize("line_text,line,word", [
    ("B,female,17,320.5,w", 10, "unknown sdcStatus"),
    ("B,female,17,320.5,S", 10, "unknown sdcStatus"),
    ("A,male,17,320.5,s", 10, "duplicate cell"),
    (",female,17,320.5,s", 10, "empty code"),
])
def test_read_sdc_status_errors(tmp_path, line_text, line, word):
    lines = RESULT.read_text().splitlines()
    lines[line - 1] = line_text
    p = tmp_path / "bad.csv"
    p.write_text("\n".join(lines) + "\n")
    with pytest.raises(FormatError) as e:
        read_sdc_status(p, ["region", "gender"])
    assert e.value.file == str(p) and e.value.line == line and word in e.value.rule


def test_read_sdc_status_frame_and_missing_column():
    df = pd.DataFrame({"r": ["a", "b"], "sdcStatus": ["s", "q"]})
    with pytest.raises(FormatError) as e:
        read_sdc_status(df, "r")
    assert e.value.file == "<frame>" and "row 1" in e.value.rule and "'q'" in e.value.rule
    with pytest.raises(FormatError, match="missing column"):
        read_sdc_status(df, ["region"])


# --- docstrings ---------------------------------------------------------------------------

def _has(doc, section):
    return bool(re.search(rf"^{section}\n-{{3,}}\s*$", inspect.cleandoc(doc or ""), re.MULTILINE))


@pytest.mark.parametrize("name", sdc.__all__)
def test_numpydoc_sections(name):
    doc = inspect.getdoc(getattr(sdc, name))
    assert _has(doc, "Parameters") and _has(doc, "Returns")
