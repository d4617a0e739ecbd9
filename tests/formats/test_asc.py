"""tau-Argus microdata (riskengine/_formats/asc.py): fixed width and separated, as
libtauargus reads them (sdcTools/libtauargus TauArgus.cpp DoMicroRecord,
Variable.cpp NormaliseCode)."""

import math
from pathlib import Path

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from riskengine._formats.asc import read_asc, write_asc
from riskengine._formats.rda import Metadata, Variable, read_rda

DATA = Path(__file__).resolve().parents[1] / "data" / "argus"
TESTW = read_rda(DATA / "Tau_TestW.rda")

# Three records in the layout of Tau_TestW.rda (99 columns; the file itself is not in
# the snapshot).  Columns: Year 1-2, IndustryCode 4-8, Size 9-10, Region 12-13,
# Wgt 15-18, Var1 19-27, Var2 28-37, Var3..Var8 38-97, Request 99.
def _record(year, ind, size, region, wgt, var1, var2, rest, request):
    line = [" "] * 99
    for start, text in ((1, year), (4, ind), (9, size), (12, region), (15, wgt),
                        (19, var1), (28, var2), (99, request)):
        line[start - 1:start - 1 + len(text)] = text
    for i, text in enumerate(rest):
        line[37 + 10 * i:47 + 10 * i] = text
    return "".join(line)


TESTW_ASC = "\n".join([
    _record("96", "15110", " 2", " 1", "10.5", "      123", "   1234.56", ["        10"] * 6, "1"),
    _record("97", "99999", "10", "12", "9999", "999999999", "9999999999", ["         0"] * 6, " "),
    _record("96", "  001", " 1", " 9", " 1.0", "       -5", "          ", ["      -1.5"] * 6, "2"),
]) + "\n"


def test_fixed_width_codes_and_numbers():
    frame = read_asc(TESTW_ASC, TESTW)
    assert list(frame.columns) == [v.name for v in TESTW.variables] + ["line"]
    assert frame["Size"].tolist() == [" 2", "10", " 1"]       # verbatim, right-aligned
    assert frame["IndustryCode"].tolist() == ["15110", "99999", "  001"]
    assert frame["Region"].tolist() == [" 1", "12", " 9"]
    assert frame["Wgt"].tolist()[0] == 10.5 and math.isnan(frame["Wgt"][1])
    assert math.isnan(frame["Var1"][1]) and math.isnan(frame["Var2"][1])   # missing codes
    assert frame["Var2"].tolist()[0] == 1234.56
    assert frame["Var2"].tolist()[2] == 0.0                   # blank: strtod gives 0
    assert frame["Var1"].tolist()[2] == -5
    assert frame["Request"].tolist() == ["1", " ", "2"]
    assert frame["Year"].dtype == object and frame["Var8"].dtype == float


def test_fixed_width_round_trip():
    frame = read_asc(TESTW_ASC, TESTW)
    text = write_asc(frame, TESTW)
    back = read_asc(text, TESTW)
    pd.testing.assert_frame_equal(back, frame)
    assert write_asc(back, TESTW) == text
    assert all(len(line) == 99 for line in text.splitlines())


def test_separated_peer_file():
    meta = read_rda(DATA / "microdata.rda")
    frame = read_asc(DATA / "microdata.csv", meta)
    assert len(frame) == 300 and frame["line"].tolist() == list(range(1, 301))
    assert frame.loc[0, ["Sex", "Age"]].tolist() == ["2", "3"]
    assert frame.loc[0, "Savings"] == 12 and frame.loc[0, "Key"] == 0.08301544
    text = write_asc(frame, meta)
    original = (DATA / "microdata.csv").read_text()
    # normalisation: Key written with its 8 decimals (0.5840659 -> 0.58406590)
    for mine, theirs in zip(text.splitlines(), original.splitlines()):
        a, b = mine.split(";"), theirs.split(";")
        assert a[:5] == b[:5] and a[5] == b[5].ljust(10, "0")
    back = read_asc(text, meta)
    pd.testing.assert_frame_equal(back, frame)
    assert write_asc(back, meta) == text


def test_separated_codes_are_padded_to_the_width():
    meta = read_rda('<SEPARATOR> ";"\nRegion 2 "99"\n <RECODEABLE>\nX 6 "-"\n'
                    ' <NUMERIC>\n')
    frame = read_asc('1;5\n"12"; 7.5 \n 99;-\n', meta)
    assert frame["Region"].tolist() == [" 1", "12", "99"]
    assert frame["X"].tolist()[:2] == [5, 7.5] and math.isnan(frame["X"][2])
    assert write_asc(frame, meta) == "1;5\n12;7.5\n99;-\n"


def test_empty_lines_are_skipped():
    meta = read_rda('A 1 1\n <RECODEABLE>\n')
    assert read_asc("1\n\n2\n", meta)["line"].tolist() == [1, 3]


@st.composite
def micro(draw):
    sep = draw(st.sampled_from([None, ";", ","]))
    n = draw(st.integers(1, 4))
    variables, start = [], 1
    for i in range(n):
        width = draw(st.integers(1, 6))
        numeric = i > 0 and draw(st.booleans())
        kw = {"name": f"v{i}", "width": width,
                  "roles": frozenset({"numeric"} if numeric else {"recodeable"}),
                  "missing": ("9" * width,) if numeric and draw(st.booleans()) else (),
                  "decimals": draw(st.integers(0, 2)) if numeric and width > 3 else 0}
        if sep is None:
            kw["start"] = start + draw(st.integers(0, 2))
            start = kw["start"] + width
        variables.append(Variable(**kw))
    meta = Metadata(variables=tuple(variables), separator=sep, kind="micro")
    rows = []
    for _ in range(draw(st.integers(1, 8))):
        row = {}
        for v in variables:
            if v.is_explanatory:
                code = draw(st.text(alphabet="0123456789AB", min_size=1,
                                    max_size=v.width))
                row[v.name] = code.rjust(v.width)
            else:
                digits = v.width - (v.decimals + 1 if v.decimals else 0)
                top = 10 ** max(digits - 1, 0) - 1 if v.missing else 10 ** digits - 1
                value = draw(st.integers(0, top)) / 10 ** v.decimals
                if v.missing and draw(st.booleans()):
                    value = np.nan
                row[v.name] = value
        rows.append(row)
    return meta, pd.DataFrame(rows, columns=[v.name for v in variables])


@settings(max_examples=100, deadline=None)
@given(micro())
def test_random_round_trip(data):
    meta, frame = data
    text = write_asc(frame, meta)
    back = read_asc(text, meta)
    for v in meta.variables:
        if v.is_explanatory:
            assert back[v.name].tolist() == frame[v.name].tolist()
        else:
            np.testing.assert_allclose(back[v.name].astype(float),
                                       frame[v.name].astype(float))
    assert write_asc(back, meta) == text
