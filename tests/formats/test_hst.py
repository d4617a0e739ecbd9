"""tau-Argus a-priori ``.hst`` files (riskengine/_formats/hst.py), per
APriori.processAprioryFile (sdcTools/tauargus @ 52aa410)."""

import math

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from riskengine._formats.hst import ACTIONS, read_hst, write_hst

EXAMPLE = """// a-priori information for a 2-dimensional table
Total;" 1";s
" 2";Total;U
" 2";Nr;P
" 4";Os;M
" 4";" 5";ml
" 5";" 6";C;10
" 5";" 7";W;0.5
" 6";Ws;AB;100;2000.5
" 6";" 8";PL;15;20
"""


def test_every_action():
    frame = read_hst(EXAMPLE)
    assert list(frame.columns) == ["line", "codes", "action", "cost", "lower", "upper"]
    assert frame["action"].tolist() == ["S", "U", "P", "M", "ML", "C", "W", "AB", "PL"]
    assert frame["line"].tolist() == list(range(2, 11))
    assert frame.loc[0, "codes"] == ("Total", " 1")
    assert frame.loc[5, "cost"] == 10 and frame.loc[6, "cost"] == 0.5
    assert (frame.loc[7, "lower"], frame.loc[7, "upper"]) == (100, 2000.5)
    assert (frame.loc[8, "lower"], frame.loc[8, "upper"]) == (15, 20)
    assert frame[["cost", "lower", "upper"]].iloc[:5].isna().all().all()
    assert math.isnan(frame.loc[5, "lower"]) and math.isnan(frame.loc[8, "cost"])


def test_n_dims_given_or_inferred():
    assert read_hst("1;2;3;S\n", n_dims=3).loc[0, "codes"] == ("1", "2", "3")
    assert read_hst("1;2;3;S\n").loc[0, "codes"] == ("1", "2", "3")
    assert read_hst("1;2;C;4\n").loc[0, "codes"] == ("1", "2")


def test_separator_detected_or_given():
    assert read_hst("a,b,U\n").loc[0, "codes"] == ("a", "b")
    assert read_hst("a|b|U\n", separator="|").loc[0, "action"] == "U"
    assert read_hst("a\tb\tPL\t1\t2\n").loc[0, "upper"] == 2


def test_round_trip(tmp_path):
    frame = read_hst(EXAMPLE)
    text = write_hst(frame, tmp_path / "a.hst")
    assert (tmp_path / "a.hst").read_text() == text
    back = read_hst(tmp_path / "a.hst")
    pd.testing.assert_frame_equal(back.drop(columns="line"), frame.drop(columns="line"))
    assert write_hst(back) == text
    assert text.splitlines()[0] == 'Total;" 1";S'
    assert write_hst(frame, separator=",").splitlines()[7] == '" 6",Ws,AB,100,2000.5'


def test_empty_file():
    frame = read_hst("// nothing\n")
    assert len(frame) == 0 and list(frame.columns)[:3] == ["line", "codes", "action"]


_code = st.text(alphabet=" abc0123", min_size=1, max_size=4).filter(lambda s: s.strip())


@st.composite
def rows(draw):
    n = draw(st.integers(1, 4))
    out = []
    for _ in range(draw(st.integers(1, 10))):
        action = draw(st.sampled_from(sorted(ACTIONS)))
        row = {"codes": tuple(draw(st.lists(_code, min_size=n, max_size=n))),
               "action": action, "cost": np.nan, "lower": np.nan, "upper": np.nan}
        nums = st.one_of(st.integers(0, 10**6).map(float),
                         st.floats(0, 1e6, allow_nan=False, allow_infinity=False))
        if action in ("C", "W"):
            row["cost"] = draw(nums)
        elif action in ("AB", "PL"):
            a, b = sorted([draw(nums), draw(nums)])
            row["lower"], row["upper"] = a, b
        out.append(row)
    return n, pd.DataFrame(out)


@settings(max_examples=100, deadline=None)
@given(rows(), st.sampled_from([";", ",", "|"]))
def test_random_round_trip(data, sep):
    n, frame = data
    text = write_hst(frame, separator=sep)
    back = read_hst(text, n_dims=n, separator=sep)
    assert back["codes"].tolist() == frame["codes"].tolist()
    assert back["action"].tolist() == frame["action"].tolist()
    for col in ("cost", "lower", "upper"):
        np.testing.assert_array_equal(back[col], frame[col])
    assert write_hst(back, separator=sep) == text
