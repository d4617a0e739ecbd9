"""The JJ reader and writer: round trips (example files, random problems), the relation
matrix, and one test per malformed-input rule (file, line and rule word)."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from riskengine._formats import jj as jjmod
from riskengine._formats._lines import FormatError
from riskengine._formats.jj import JJ, read_jj, write_jj

DATA = Path(__file__).resolve().parents[1] / "data" / "jj"
FILES = sorted(DATA.glob("*.jj"))


# --- example files ------------------------------------------------------------------------

def test_example_files_exist():
    assert {f.name for f in FILES} >= {"tauargus_clean.jj", "libtauargus_raw.jj",
                                       "sdctable_style.jj"}


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_example_round_trip_text_identical(path, tmp_path):
    text = path.read_text()
    jj = read_jj(path)
    assert write_jj(jj) == text
    out = tmp_path / "out.jj"
    assert write_jj(jj, out) == text
    assert out.read_text() == text


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_example_relations_hold(path):
    jj = read_jj(path)
    assert jj.n_cells == 9 and len(jj.relations) == 6
    m = jj.to_matrix()
    assert m.shape == (6, 9)
    np.testing.assert_allclose(m @ jj.value, jj.rhs, atol=1e-9)
    # every relation: the aggregate with -1, its parts with +1 (as libtauargus writes)
    for _, idx, sgn in jj.relations:
        assert sgn[0] == -1 and (sgn[1:] == 1).all()


def test_tauargus_clean_fields():
    jj = read_jj(DATA / "tauargus_clean.jj")
    assert jj.status.tolist() == ["s", "s", "m", "z", "u", "u", "s", "s", "m"]
    assert jj.cost.tolist() == [4, 3, 2, 1, 1, 1, 3, 2, 2]
    assert jj.upper[0] == 200 and jj.lower_pl[4] == 1 and jj.upper_pl[5] == 1
    assert not jj.style.trailing_space and jj.style.term_space
    # the z line keeps libtauargus's decimals, the others tauargus's
    assert jj.style.decimals[3].tolist()[2:4] == [0, 0]
    assert jj.style.decimals[0].tolist()[2:4] == [1, 1]


def test_libtauargus_trailing_space_and_sdctable_style():
    assert read_jj(DATA / "libtauargus_raw.jj").style.trailing_space
    jj = read_jj(DATA / "sdctable_style.jj")
    assert not jj.style.term_space
    assert jj.value[3] == 1e5 and jj.upper[0] == 1e6
    assert "x" in jj.status.tolist()


def test_modified_value_reformatted():
    jj = read_jj(DATA / "sdctable_style.jj")
    jj.value[3] = 99999.5           # the raw "1e+05" no longer reads as the value
    jj.value[0] = 120001            # a plain token keeps its decimals
    text = write_jj(jj)
    assert "\n3 99999.5 1e+05 s" in text and "\n0 120001 120000 s" in text


def test_to_matrix_and_rhs():
    jj = JJ(value=[5, 2, 3, 1], cost=[1] * 4, status=["s", "u", "s", "z"],
            lower=[0] * 4, upper=[9] * 4, lower_pl=[0] * 4, upper_pl=[0] * 4,
            sliding_pl=[0] * 4, relations=[(0, [0, 1, 2], [-1, 1, 1]), (1, [3], [1])])
    m = jj.to_matrix()
    assert m.toarray().tolist() == [[-1, 1, 1, 0], [0, 0, 0, 1]]
    assert jj.rhs.tolist() == [0.0, 1.0]
    assert read_jj(write_jj(jj)).to_matrix().toarray().tolist() == m.toarray().tolist()


def test_constructor_rules():
    base = {"value": [1.0], "cost": [1], "status": ["s"], "lower": [0], "upper": [2],
            "lower_pl": [0], "upper_pl": [0], "sliding_pl": [0]}
    with pytest.raises(ValueError, match="status"):
        JJ(**{**base, "status": ["q"]})
    with pytest.raises(ValueError, match="outside"):
        JJ(**{**base, "value": [3.0]})
    with pytest.raises(ValueError, match="sign"):
        JJ(**base, relations=[(0, [0], [2])])
    with pytest.raises(ValueError, match="range"):
        JJ(**base, relations=[(0, [1], [1])])
    with pytest.raises(ValueError, match="entries"):
        JJ(**{**base, "cost": [1, 2]})


# --- random round trips -------------------------------------------------------------------

def _num(draw, lo, hi):
    """A number token in one of the dialects' notations, and its value."""
    kind = draw(st.sampled_from(["int", "fixed", "r"]))
    x = draw(st.integers(lo, hi))
    if kind == "int":
        return str(x), float(x)
    if kind == "fixed":
        d = draw(st.integers(1, 4))
        tok = f"{x / 10 ** d:.{d}f}"
        return tok, float(tok)
    tok = f"{float(x):.3g}".replace("e+0", "e+")     # R-like, e.g. 1.2e+05
    return tok, float(tok)


@st.composite
def jj_texts(draw):
    n = draw(st.integers(1, 12))
    space = draw(st.booleans())
    trailing = draw(st.booleans())
    lines = ["0", str(n)]
    for i in range(n):
        vtok, _ = _num(draw, 0, 10 ** 6)
        ctok, _ = _num(draw, 0, 1000)
        lo_tok, _ = draw(st.sampled_from([("0", 0.0), ("0.0", 0.0), ("-5", -5.0)]))
        ub_tok, _ = _num(draw, 10 ** 11, 10 ** 12)
        pls = [_num(draw, 0, 50) for _ in range(3)]
        status = draw(st.sampled_from(jjmod.JJ_STATUSES))
        lines.append(" ".join([str(i), vtok, ctok, status, lo_tok, ub_tok]
                              + [t for t, _ in pls]))
    r = draw(st.integers(0, 5))
    lines.append(str(r))
    for _ in range(r):
        cells = draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=n, unique=True))
        signs = draw(st.lists(st.sampled_from(["1", "-1"]), min_size=len(cells),
                              max_size=len(cells)))
        rhs = draw(st.sampled_from(["0", "0.0", "1.5", "2"]))
        terms = " ".join(f"{c}{' ' if space else ''}({s})" for c, s in zip(cells, signs))
        lines.append(f"{rhs} {len(cells)} : {terms}" + (" " if trailing else ""))
    return "\n".join(lines) + "\n"


@settings(max_examples=150, deadline=None)
@given(jj_texts())
def test_random_text_round_trip(text):
    jj = read_jj(text)
    assert write_jj(jj) == text
    again = read_jj(write_jj(jj))
    for nm in jjmod._NUMERIC:
        np.testing.assert_array_equal(getattr(again, nm), getattr(jj, nm))


@st.composite
def jj_objects(draw):
    n = draw(st.integers(1, 10))
    fl = st.floats(-1e9, 1e9, allow_nan=False, allow_infinity=False)
    value = np.array(draw(st.lists(fl, min_size=n, max_size=n)))
    lower = value - np.array(draw(st.lists(st.floats(0, 1e6), min_size=n, max_size=n)))
    upper = value + np.array(draw(st.lists(st.floats(0, 1e6), min_size=n, max_size=n)))
    pl = st.lists(st.floats(0, 1e3), min_size=n, max_size=n)
    rels = []
    for _ in range(draw(st.integers(0, 4))):
        cells = draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=n, unique=True))
        rels.append((draw(fl), cells, [draw(st.sampled_from([-1, 1])) for _ in cells]))
    return JJ(value=value, cost=draw(st.lists(st.integers(0, 10 ** 6), min_size=n,
                                              max_size=n)),
              status=draw(st.lists(st.sampled_from(jjmod.JJ_STATUSES), min_size=n,
                                   max_size=n)),
              lower=lower, upper=upper, lower_pl=draw(pl), upper_pl=draw(pl),
              sliding_pl=draw(pl), relations=rels)


@settings(max_examples=150, deadline=None)
@given(jj_objects())
def test_random_object_round_trip(jj):
    text = write_jj(jj)
    back = read_jj(text)
    for nm in jjmod._NUMERIC:
        np.testing.assert_array_equal(getattr(back, nm), getattr(jj, nm))
    assert back.status.tolist() == jj.status.tolist()
    assert (back.to_matrix() != jj.to_matrix()).nnz == 0
    np.testing.assert_array_equal(back.rhs, jj.rhs)
    assert write_jj(back) == text


# --- malformed input ----------------------------------------------------------------------

GOOD = ["0", "3", "0 3 1 s 0 30 0 0 0", "1 1 1 u 0 10 1 1 0", "2 2 1 s 0 20 0 0 0", "1",
        "0 3 : 0 (-1) 1 (1) 2 (1)"]


def _text(replace=None, drop=None, extra=None):
    lines = list(GOOD)
    for k, v in (replace or {}).items():
        lines[k - 1] = v                   # 1-based line numbers
    if drop:
        del lines[drop - 1]
    lines += extra or []
    return "\n".join(lines) + "\n"


BAD = [
    # (id, text, line, rule word)
    ("first-line", _text({1: "1"}), 1, "constant 0"),
    ("count-not-int", _text({2: "three"}), 2, "not a count"),
    ("fields", _text({3: "0 3 1 s 0 30 0 0"}), 3, "9 fields"),
    ("n-too-large", _text({2: "4"}), 6, "declares 4 cells"),
    ("n-too-small", _text({2: "2"}), 5, "number of relations"),
    ("index-order", _text({4: "2 1 1 u 0 10 1 1 0"}), 4, "out of order"),
    ("index-not-int", _text({4: "a 1 1 u 0 10 1 1 0"}), 4, "index"),
    ("status", _text({4: "1 1 1 q 0 10 1 1 0"}), 4, "unknown status"),
    ("bounds", _text({4: "1 1 1 u 20 10 1 1 0"}), 4, "lb <= ub"),
    ("value-bounds", _text({4: "1 11 1 u 0 10 1 1 0"}), 4, "outside its bounds"),
    ("negative-pl", _text({4: "1 1 1 u 0 10 -1 1 0"}), 4, "negative"),
    ("not-number", _text({5: "2 two 1 s 0 20 0 0 0"}), 5, "not a number"),
    ("nan", _text({5: "2 nan 1 s 0 20 0 0 0"}), 5, "not a number"),
    ("rel-count", _text({7: "0 4 : 0 (-1) 1 (1) 2 (1)"}), 7, "count must equal"),
    ("rel-range", _text({7: "0 3 : 0 (-1) 1 (1) 3 (1)"}), 7, "out of range"),
    ("rel-sign", _text({7: "0 3 : 0 (-1) 1 (2) 2 (1)"}), 7, "+1 or -1"),
    ("rel-twice", _text({7: "0 3 : 0 (-1) 1 (1) 1 (1)"}), 7, "twice"),
    ("rel-term", _text({7: "0 3 : 0 (-1) 1 (1) 2"}), 7, "a term is"),
    ("rel-colon", _text({7: "0 3 0 (-1) 1 (1) 2 (1)"}), 7, "rhs n :"),
    ("rel-empty", _text({7: "0 0 :"}), 7, "at least one term"),
    ("rel-missing", _text(drop=7), 7, "file ends"),
    ("rel-n", _text({6: "2"}), 8, "file ends"),
    ("junk", _text(extra=["0 1 : 0 (1)"]), 8, "trailing junk"),
    ("empty-line", _text({4: ""}), 4, "empty line"),
    ("rhs", _text({7: "zero 3 : 0 (-1) 1 (1) 2 (1)"}), 7, "right-hand side"),
]


@pytest.mark.parametrize("text,line,word", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_malformed_text(text, line, word):
    with pytest.raises(FormatError) as e:
        read_jj(text)
    assert e.value.file == "<text>"
    assert e.value.line == line, str(e.value)
    assert word in e.value.rule, str(e.value)
    assert "\n" not in str(e.value)
    assert str(e.value).startswith(f"<text>, line {line}: ")


@pytest.mark.parametrize("text,line,word", [b[1:] for b in BAD[:16]], ids=[b[0] for b in BAD[:16]])
def test_malformed_file_names_the_file(text, line, word, tmp_path):
    p = tmp_path / "bad.jj"
    p.write_text(text)
    with pytest.raises(FormatError) as e:
        read_jj(p)
    assert e.value.file == str(p) and e.value.line == line and word in e.value.rule


def test_missing_file_and_crlf(tmp_path):
    with pytest.raises(FormatError, match="no such file"):
        read_jj("nowhere.jj")
    p = tmp_path / "crlf.jj"
    p.write_bytes(_text().replace("\n", "\r\n").encode())
    assert write_jj(read_jj(p)) == _text()       # CRLF normalised to LF


def test_trailing_blank_lines_tolerated():
    assert write_jj(read_jj(_text() + "\n\n")) == _text()


# --- docstrings ---------------------------------------------------------------------------

def _has(doc, section):
    return bool(re.search(rf"^{section}\n-{{3,}}\s*$", inspect.cleandoc(doc or ""), re.MULTILINE))


@pytest.mark.parametrize("obj", [read_jj, write_jj, JJ.to_matrix, JJ])
def test_numpydoc_sections(obj):
    doc = inspect.getdoc(obj)
    assert _has(doc, "Parameters") or not list(inspect.signature(obj).parameters)[1:]
    if obj is not JJ:
        assert _has(doc, "Returns")
