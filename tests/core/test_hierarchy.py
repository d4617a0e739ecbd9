"""Hierarchy: constructors on hand-worked examples, round trips on random trees,
aggregation() against a parent-pointer walk, .hrc rules, and every error message."""

from __future__ import annotations

import itertools
import os
import re

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from riskengine.hierarchy import Hierarchy

# The region tree of the class docstring; the expectations below are written out by hand.
REGION = {"North": ["N1", "N2"], "South": {"S1": {}, "S2": None, "S3": {}}}
REGION_CODES = ("Total", "North", "N1", "N2", "South", "S1", "S2", "S3")
REGION_PARENTS = {"Total": None, "North": "Total", "N1": "North", "N2": "North",
                  "South": "Total", "S1": "South", "S2": "South", "S3": "South"}
REGION_HRC = "North\n@N1\n@N2\nSouth\n@S1\n@S2\n@S3\n"

# tauargus data/region2.hrc (sdcTools/tauargus @ 52aa410128adc704f59150d26f439889057b710d),
# byte for byte: fixed-width codes with a leading space, "Os " with a trailing space, and
# no newline after the last line.
REGION2_HRC = ("Nr\n@ 1\n@ 2\n@ 3\nOs \n@ 4\n@ 5\n@ 6\n@ 7\nWs\n@ 8\n@ 9\n@10\n"
               "Zd\n@11\n@12")


def check_structure(h: Hierarchy, codes, parents: dict) -> None:
    """Everything derived from (codes in preorder, parent of each) agrees with h."""
    assert h.codes == tuple(codes) and list(h) == list(codes) and len(h) == len(codes)
    for c in codes:
        assert h.parent(c) == parents[c]
        assert h.children(c) == tuple(k for k in codes if parents[k] == c and k is not c)
    assert h.leaves == tuple(c for c in codes if not h.children(c))
    assert h.internal == tuple(c for c in codes if h.children(c))


# --- the dict constructor --------------------------------------------------------------

def test_region_tree_by_hand():
    h = Hierarchy(REGION)
    check_structure(h, REGION_CODES, REGION_PARENTS)
    assert h.total == "Total" and h.name is None
    assert h.leaves == ("N1", "N2", "S1", "S2", "S3")
    assert h.internal == ("Total", "North", "South")
    assert h.levels == (("Total",), ("North", "South"), ("N1", "N2", "S1", "S2", "S3"))
    assert h.n_levels == 3
    assert [h.depth(c) for c in REGION_CODES] == [0, 1, 2, 2, 1, 2, 2, 2]
    assert h.members("Total") == ("N1", "N2", "S1", "S2", "S3")
    assert h.members("North") == ("N1", "N2") and h.members("S2") == ("S2",)
    assert h.children("S1") == () and h.is_leaf("S1") and not h.is_leaf("Total")
    assert "S3" in h and "Total" in h and "West" not in h and ["x"] not in h
    assert repr(h) == "Hierarchy('Total': 2 levels below the total, 5 leaves, 8 codes)"
    assert h.to_dict() == {"North": {"N1": {}, "N2": {}},
                           "South": {"S1": {}, "S2": {}, "S3": {}}}


def test_int_codes_are_kept_and_name_is_shown():
    h = Hierarchy({1: [11, 12], 2: None}, total=0, name="region")
    assert h.codes == (0, 1, 11, 12, 2)
    assert all(type(c) is int for c in h.codes)
    assert h.levels == ((0,), (1, 2), (11, 12))
    assert repr(h) == "Hierarchy(0, name='region': 2 levels below the total, 3 leaves, 5 codes)"


def test_single_child_and_flat_and_deep_trees():
    h = Hierarchy({"A": ["a"], "B": None})
    assert h.members("A") == ("a",) and h.leaves == ("a", "B")
    assert repr(Hierarchy(["x"])) == ("Hierarchy('Total': 1 level below the total, 1 leaf, "
                                      "2 codes)")
    tree = {}
    node = tree
    for i in range(3000):                        # no recursion anywhere
        node[f"d{i}"] = {}
        node = node[f"d{i}"]
    deep = Hierarchy(tree)
    assert deep.n_levels == 3001 and deep.members("d0") == ("d2999",)
    assert deep.depth("d2999") == 3000 and Hierarchy(deep.to_dict()) == deep
    assert Hierarchy.from_hrc(deep.to_hrc()) == deep


def test_equality_and_hash():
    a = Hierarchy({"A": ["a", "b"]})
    assert a == Hierarchy({"A": {"a": None, "b": {}}}) == Hierarchy({"A": ("a", "b")})
    assert a == Hierarchy({"A": ["a", "b"]}, name="other")      # the name is not the tree
    assert hash(a) == hash(Hierarchy({"A": {"a": {}, "b": {}}}))
    assert a != Hierarchy({"A": ["b", "a"]})                     # child order counts
    assert a != Hierarchy({"A": ["a", "b"]}, total="All")
    assert a != Hierarchy({"A": ["a"], "b": None})
    assert a != "Total" and len({a, Hierarchy({"A": ["a", "b"]}), Hierarchy(["x"])}) == 2


@pytest.mark.parametrize("tree,match", [
    ({"A": ["x"], "B": {"x": {}}}, r"duplicate code 'x': child of 'A' and of 'B'"),
    ({"A": ["x", "x"]}, r"duplicate code 'x': child of 'A' and of 'A'"),
    ({"A": {"B": ["A"]}}, r"duplicate code 'A': child of 'Total' and of 'B'"),
    ({"A": ["Total"]}, r"code 'Total' \(child of 'A'\) equals the total 'Total'"),
    ({}, r"hierarchy 'Total' has no codes below the total"),
    ({"A": [None]}, r"a code may not be None or NaN, got None \(child of 'A'\)"),
    ({"A": [float("nan")]}, r"a code may not be None or NaN, got nan"),
])
def test_dict_errors(tree, match):
    with pytest.raises(ValueError, match=match):
        Hierarchy(tree)


def test_dict_type_errors():
    with pytest.raises(TypeError, match=r"children of 'A' must be a dict.*got str: 'a1'"):
        Hierarchy({"A": "a1"})
    with pytest.raises(TypeError, match=r"codes must be hashable, got \['a'\]"):
        Hierarchy({"A": [["a"]]})
    with pytest.raises(TypeError, match="name must be a str or None, got int"):
        Hierarchy(REGION, name=3)
    with pytest.raises(TypeError, match="total must be a hashable code other than None"):
        Hierarchy(REGION, total=None)


def test_unknown_code_is_a_key_error_naming_it():
    h = Hierarchy(REGION)
    for method in (h.parent, h.children, h.depth, h.members, h.is_leaf):
        with pytest.raises(KeyError, match="unknown code 'West' in hierarchy 'Total'"):
            method("West")


# --- from_parents ------------------------------------------------------------------------

def test_from_parents_by_hand():
    # appearance order, not preorder; None, NaN and the total all mean "top level"
    codes = ["N1", "North", "S1", "South", "N2", "S2"]
    parents = ["North", None, "South", np.nan, "North", "South"]
    h = Hierarchy.from_parents(codes, parents)
    check_structure(h, ("Total", "North", "N1", "N2", "South", "S1", "S2"),
                    {"Total": None, "North": "Total", "N1": "North", "N2": "North",
                     "South": "Total", "S1": "South", "S2": "South"})
    assert Hierarchy.from_parents(codes, ["North", "Total", "South", "Total", "North",
                                          "South"]) == h
    frame = pd.DataFrame({"code": codes, "parent": parents})
    assert Hierarchy.from_parents(frame) == h
    assert Hierarchy.from_parents(np.array(codes), pd.Series(parents)) == h


@pytest.mark.parametrize("codes,parents,match", [
    (["a", "b"], [None, "z"], r"unknown parent 'z' of code 'b'"),
    (["a", "b", "c"], [None, "c", "b"], r"cycle .*'b' -> 'c' -> 'b'"),
    (["a", "b"], [None, "b"], r"cycle .*'b' -> 'b'"),
    (["a", "b", "a"], [None, "a", "b"], r"duplicate code 'a': child of 'Total' and of 'b'"),
    (["Total", "b"], [None, "Total"], r"code 'Total' \(child of 'Total'\) equals the total"),
    (["a", "b"], [None], r"same length, got 2 and 1"),
])
def test_from_parents_errors(codes, parents, match):
    with pytest.raises(ValueError, match=match):
        Hierarchy.from_parents(codes, parents)


def test_from_parents_frame_needs_the_columns():
    with pytest.raises(TypeError, match="columns 'code' and 'parent'"):
        Hierarchy.from_parents(pd.DataFrame({"code": ["a"]}))


# --- from_digits -------------------------------------------------------------------------

def test_from_digits_one_digit_per_level():
    h = Hierarchy.from_digits(["111", "112", "121", "211"], levels=(1, 1, 1))
    check_structure(h, ("Total", "1", "11", "111", "112", "12", "121", "2", "21", "211"),
                    {"Total": None, "1": "Total", "11": "1", "111": "11", "112": "11",
                     "12": "1", "121": "12", "2": "Total", "21": "2", "211": "21"})
    assert h.levels == (("Total",), ("1", "2"), ("11", "12", "21"),
                        ("111", "112", "121", "211"))
    assert h.members("1") == ("111", "112", "121") and h.members("2") == ("211",)


def test_from_digits_two_plus_one_and_a_data_column():
    # a data column: codes repeat and come in any order; children keep first appearance
    column = ["021", "011", "101", "012", "011", "021"]
    h = Hierarchy.from_digits(column, levels=[2, 1], total="T")
    check_structure(h, ("T", "02", "021", "01", "011", "012", "10", "101"),
                    {"T": None, "02": "T", "021": "02", "01": "T", "011": "01", "012": "01",
                     "10": "T", "101": "10"})
    assert Hierarchy.from_digits(sorted(column), (2, 1), total="T").codes == (
        "T", "01", "011", "012", "02", "021", "10", "101")     # tau-Argus's sorted order


def test_from_digits_tau_argus_hierlevels():
    # Tau_TestW.rda: IndustryCode, 5 characters, <HIERLEVELS> 3 1 1 0 0
    h = Hierarchy.from_digits(["12345", "12346", "12355"], levels=(3, 1, 1, 0, 0))
    assert h.levels == (("Total",), ("123",), ("1234", "1235"), ("12345", "12346", "12355"))
    flat = Hierarchy.from_digits(["ab", "cd"], levels=(2,))
    assert flat.levels == (("Total",), ("ab", "cd"))


@pytest.mark.parametrize("levels", [(1, 0, 1), (0, 0), (), (1, -1), (1.5, 1), (True, 1)])
def test_from_digits_bad_levels(levels):
    with pytest.raises(ValueError, match=r"levels must be positive ints"):
        Hierarchy.from_digits(["11"], levels=levels)


def test_from_digits_wrong_length_and_type():
    with pytest.raises(ValueError, match=r"code '1234' has 4 characters; with levels "
                                         r"\(2, 1\) every code must have 3"):
        Hierarchy.from_digits(["123", "1234"], levels=(2, 1))
    with pytest.raises(TypeError, match="digit codes must be str, got 123"):
        Hierarchy.from_digits([123], levels=(2, 1))


# --- .hrc ---------------------------------------------------------------------------------

def test_region2_hrc_keeps_leading_spaces_and_trims_trailing_ones():
    h = Hierarchy.from_hrc(REGION2_HRC, total="")
    assert h.levels[1] == ("Nr", "Os", "Ws", "Zd")          # "Os " right-trimmed
    assert h.members("Nr") == (" 1", " 2", " 3")            # "@ 1" is the code " 1"
    assert h.members("Ws") == (" 8", " 9", "10")
    assert h.members("Zd") == ("11", "12") and h.parent(" 4") == "Os"
    assert len(h.leaves) == 12 and h.total == ""


def test_hrc_from_file_path_and_lines(tmp_path):
    path = tmp_path / "region.hrc"
    path.write_bytes(b"North  \r\n@N1\t\r\n\r\n   \r\n@N2\r\nSouth\r\n@S1\r\n@S2\r\n@S3")
    for source in (path, str(path), REGION_HRC.splitlines(), REGION_HRC.splitlines(True),
                   REGION_HRC, REGION_HRC.replace("\n", "\r\n")):
        assert Hierarchy.from_hrc(source) == Hierarchy(REGION), source
    latin = tmp_path / "latin.hrc"
    latin.write_bytes("Zürich\n@Z1\n".encode("latin-1"))
    assert Hierarchy.from_hrc(latin, encoding="latin-1").codes == ("Total", "Zürich", "Z1")
    assert Hierarchy.from_hrc("A\n**a\n****x\n", lead="**").members("A") == ("x",)


@pytest.mark.parametrize("text,match", [
    ("A\n@a\n@@@x\n", (r"<text>, line 3: '@@@x': depth 3 follows depth 1; the depth may "
                      r"rise by at most 1 per line")),
    ("\n@a\n", r"<text>, line 2: '@a': the first line must have depth 0, got 1"),
    ("A\n@a\n@\n", r"<text>, line 3: '@': empty code"),
    ("A\n@a\nB\n@a\n", (r"<text>, line 4: '@a': duplicate code 'a', first at <text>, line 2 "
                       r"\(parents 'A' and 'B'\)")),
    ("A\n@Total\n", r"<text>, line 2: '@Total': code 'Total' equals the total 'Total'"),
    ("\n \n", r"hierarchy 'Total' has no codes below the total"),
])
def test_hrc_errors(text, match):
    with pytest.raises(ValueError, match=match):
        Hierarchy.from_hrc(text)


def test_hrc_errors_name_the_file(tmp_path):
    path = tmp_path / "bad.hrc"
    path.write_text("A\n@a\n@@@b\n")
    with pytest.raises(ValueError, match=rf"{path}, line 3: '@@@b'"):
        Hierarchy.from_hrc(path)
    with pytest.raises(FileNotFoundError, match="no .hrc file"):
        Hierarchy.from_hrc(str(tmp_path / "missing.hrc"))
    with pytest.raises(TypeError, match="got int"):
        Hierarchy.from_hrc(3)
    with pytest.raises(ValueError, match="lead must be a non-empty str"):
        Hierarchy.from_hrc(REGION_HRC, lead="")


def test_to_hrc_text_and_atomic_write(tmp_path):
    h = Hierarchy(REGION)
    assert h.to_hrc() == REGION_HRC
    assert h.to_hrc(lead="$$") == REGION_HRC.replace("@", "$$")
    target = tmp_path / "out.hrc"
    target.write_text("old\n")
    assert h.to_hrc(target) == REGION_HRC
    assert target.read_bytes() == REGION_HRC.encode()
    assert os.listdir(tmp_path) == ["out.hrc"]               # no temporary file left
    assert Hierarchy.from_hrc(target) == h
    region2 = Hierarchy.from_hrc(REGION2_HRC)
    assert Hierarchy.from_hrc(region2.to_hrc()) == region2


def test_to_hrc_failed_write_leaves_the_target(tmp_path, monkeypatch):
    target = tmp_path / "out.hrc"
    target.write_text("old\n")

    def broken(*args):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken)
    with pytest.raises(OSError, match="disk full"):
        Hierarchy(REGION).to_hrc(target)
    assert target.read_text() == "old\n" and os.listdir(tmp_path) == ["out.hrc"]


@pytest.mark.parametrize("code", ["@x", "x ", "a\nb", ""])
def test_to_hrc_refuses_codes_it_cannot_write(code):
    with pytest.raises(ValueError, match=re.escape(f"code {code!r} cannot be written to .hrc")):
        Hierarchy({"A": [code]}).to_hrc()


# --- level frames ---------------------------------------------------------------------------

def test_levels_frame_by_hand():
    frame = pd.DataFrame({"level": ["@", "@@", "@@@", "@@@", "@@", "@@@", "@@@", "@@@"],
                          "name": ["Total", "North", "N1", "N2", "South", "S1", "S2", "S3"]})
    h = Hierarchy.from_levels(frame)
    assert h == Hierarchy(REGION)
    pd.testing.assert_frame_equal(h.to_levels(), frame.astype({"name": object}))
    renamed = Hierarchy.from_levels(list(zip(frame["level"], frame["name"])), total="All")
    assert renamed.total == "All" and renamed.codes[1:] == REGION_CODES[1:]
    ints = Hierarchy({1: [11, 12]}, total=0)
    assert ints.to_levels()["name"].tolist() == [0, 1, 11, 12]
    assert Hierarchy.from_levels(ints.to_levels()) == ints


@pytest.mark.parametrize("rows,match", [
    ([("@@", "A")], r"the first row must be the total, with level '@', got \('@@', 'A'\)"),
    ([], r"the first row must be the total.*no rows"),
    ([("@", "T"), ("@@", "A"), ("@@@@", "x")], (r"row 2: \('@@@@', 'x'\): level '@@@@' "
                                                r"follows level '@@'")),
    ([("@", "T"), ("@@@", "A")], r"row 1: \('@@@', 'A'\): the first row must have level '@@'"),
    ([("@", "T"), ("@@", "A"), ("@", "B")], r"row 2: \('@', 'B'\): only the total"),
    ([("@", "T"), ("@#", "A")], r"row 1: \('@#', 'A'\): level must be a string of '@'"),
    ([("@", "T"), ("@@", "A"), ("@@", "A")], r"row 2: .*duplicate code 'A', first at row 1"),
    ([("@", "T"), ("@@", None)], r"row 1: \('@@', None\): empty code"),
])
def test_levels_errors(rows, match):
    with pytest.raises(ValueError, match=match):
        Hierarchy.from_levels(rows)


def test_levels_frame_needs_the_columns():
    with pytest.raises(ValueError, match=r"columns 'level' and 'name', got \['levels'"):
        Hierarchy.from_levels(pd.DataFrame({"levels": ["@"], "codes": ["T"]}))


# --- random trees: every constructor agrees ---------------------------------------------------

def random_tree(rng: np.random.Generator):
    """A nested dict of depth exactly 1-5 and fan-out 1-4, leaves as {}, None or a list;
    codes in a few styles (leading spaces, digits, non-ASCII) that .hrc can hold."""
    depth, serial = int(rng.integers(1, 6)), itertools.count()
    styles = [lambda i: f"c{i}", lambda i: f" {i}", lambda i: f"{i:04d}", lambda i: f"Zü {i}"]

    def grow(level: int):
        codes = [styles[rng.integers(len(styles))](next(serial))
                 for _ in range(int(rng.integers(1, 5)))]
        if level == depth:
            return codes if rng.random() < 0.5 else {c: rng.choice([None, {}]) for c in codes}
        # the first child always grows (the tree reaches `depth`), the others mostly
        return {c: grow(level + 1) if i == 0 or rng.random() < 0.6 else {}
                for i, c in enumerate(codes)}

    return grow(1)


def reference_aggregation(h: Hierarchy) -> np.ndarray:
    """Walk parent pointers up from every leaf (independent of members/aggregation)."""
    row = {c: i for i, c in enumerate(h.codes)}
    A = np.zeros((len(h.codes), len(h.leaves)), dtype=np.int64)
    for j, leaf in enumerate(h.leaves):
        c = leaf
        while c is not None:
            A[row[c], j] = 1
            c = h.parent(c)
    return A


def test_random_trees_round_trip_through_every_form(rng):
    for _ in range(300):
        tree = random_tree(rng)
        h = Hierarchy(tree)
        parents = [h.parent(c) for c in h.codes[1:]]
        by_depth = sorted(h.codes[1:], key=h.depth)              # siblings keep their order
        forms = [Hierarchy(h.to_dict()), Hierarchy.from_hrc(h.to_hrc()),
                 Hierarchy.from_hrc(h.to_hrc(lead="+-"), lead="+-"),
                 Hierarchy.from_levels(h.to_levels()),
                 Hierarchy.from_parents(list(h.codes[1:]), parents),
                 Hierarchy.from_parents(by_depth, [h.parent(c) for c in by_depth])]
        for other in forms:
            assert other == h and hash(other) == hash(h)
            assert other.levels == h.levels and other.members("Total") == h.leaves
        A = h.aggregation()
        assert isinstance(A, sp.csr_array) and A.has_canonical_format
        assert A.shape == (len(h.codes), len(h.leaves)) and A.dtype == np.int64
        assert np.array_equal(A.toarray(), reference_aggregation(h))
        for i, c in enumerate(h.codes):                          # rows agree with members
            assert tuple(h.leaves[j] for j in A[[i]].indices) == h.members(c)
        assert h.levels[0] == ("Total",) and sum(map(len, h.levels)) == len(h)


def test_aggregation_by_hand():
    A = Hierarchy(REGION).aggregation().toarray()
    assert A.tolist() == [[1, 1, 1, 1, 1],    # Total
                          [1, 1, 0, 0, 0],    # North
                          [1, 0, 0, 0, 0],    # N1
                          [0, 1, 0, 0, 0],    # N2
                          [0, 0, 1, 1, 1],    # South
                          [0, 0, 1, 0, 0],    # S1
                          [0, 0, 0, 1, 0],    # S2
                          [0, 0, 0, 0, 1]]    # S3
