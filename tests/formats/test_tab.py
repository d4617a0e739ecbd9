"""tau-Argus ``.tab`` tabular input (riskengine/_formats/tab.py), against the peer's
pp.rda/pp.tab (sdcTools/tauargus @ 52aa410) and TableSet.buildCell."""

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from riskengine._formats._lines import FormatError
from riskengine._formats.rda import read_rda
from riskengine._formats.tab import read_tab, write_tab

DATA = Path(__file__).resolve().parents[1] / "data" / "argus"
META = read_rda(DATA / "pp.rda")


def test_pp_tab_reads():
    frame = read_tab(DATA / "pp.tab", META)
    assert list(frame.columns) == ["Size", "Region", "Var2", "FreqVar", "Var2_Shadow",
                                   "Var2_Cost", "Top1", "Top2", "StatusVar",
                                   "LowerProtLevel", "UpperProtLevel", "line"]
    assert len(frame) == 162 and frame["line"].tolist() == list(range(1, 163))
    first = frame.iloc[0]
    assert (first["Size"], first["Region"]) == ("Total", "Total")
    assert first["Var2"] == pytest.approx(16847646.84) and first["FreqVar"] == 42723
    assert frame.loc[2, "Region"] == " 1"               # quoted codes keep their spaces
    assert set(frame["StatusVar"]) == {"S", "U", "E"}
    assert frame["Var2"].dtype == float and frame["StatusVar"].dtype == object
    # the regions are those of region2.hrc (minus the lead string), plus Total and 99
    hrc = {line.lstrip("@").rstrip() for line in
           (DATA / "region2.hrc").read_text().splitlines() if line.strip()}
    assert set(frame["Region"]) == hrc | {"Total", "99"}


def test_pp_tab_round_trips_identically():
    frame = read_tab(DATA / "pp.tab", META)
    assert write_tab(frame, META, decimal=",") == (DATA / "pp.tab").read_text("latin-1")


def test_decimal_point_round_trip(tmp_path):
    frame = read_tab(DATA / "pp.tab", META)
    text = write_tab(frame, META, tmp_path / "pp.tab", decimal=".")
    assert "16847646.84" in text
    again = read_tab(tmp_path / "pp.tab", META)
    pd.testing.assert_frame_equal(again, frame)
    assert read_tab(text, META, decimal=".").equals(frame)


def test_unquoted_codes_are_stripped_and_quoting_keeps_spaces():
    text = write_tab(read_tab(DATA / "pp.tab", META), META, quote=False)
    assert text.splitlines()[2].startswith('Total;" 1";')
    assert read_tab(text, META).equals(read_tab(DATA / "pp.tab", META))
    line = ' 2 ;Total;1;1;1;1;1;1;S;0;0\n'
    assert read_tab(line, META).loc[0, "Size"] == "2"


def test_unknown_numbers_and_status_case():
    line = '"Total";"Total";-;;;;;;e;;\n'
    frame = read_tab(line, META)
    assert math.isnan(frame.loc[0, "Var2"]) and math.isnan(frame.loc[0, "FreqVar"])
    assert frame.loc[0, "StatusVar"] == "e"
    assert write_tab(frame, META) == '"Total";"Total";;;;;;;e;;\n'


def test_other_status_letters_from_the_rda():
    meta = read_rda('<SEPARATOR> ","\n<SAFE> "V"\nA\n <RECODEABLE>\n <TOTCODE> "T"\n'
                    'X\n <NUMERIC>\nS\n <STATUS>\n')
    frame = read_tab("T,1.5,V\n1,2,M\n", meta)
    assert frame["S"].tolist() == ["V", "M"]
    with pytest.raises(FormatError, match="status 'S'"):
        read_tab("T,1.5,S\n", meta)


def test_comments_and_blank_lines_are_skipped():
    frame = read_tab('// cells\n\n"Total";"Total";1;1;1;1;1;1;S;0;0\n', META)
    assert frame["line"].tolist() == [3]


# ------------------------------------------------------------------ random frames

SIMPLE = read_rda('<SEPARATOR> ";"\nA\n <RECODEABLE>\n <TOTCODE> "Total"\n'
                  'B\n <RECODEABLE>\n <TOTCODE> "Total"\nX\n <NUMERIC>\n <DECIMALS> 2\n'
                  'F\n <FREQUENCY>\nT1\n <MAXSCORE>\nST\n <STATUS>\n')

_codes = st.text(alphabet=" 0123456789ab", min_size=1, max_size=4).filter(
    lambda s: s.strip())


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(_codes, _codes,
                          st.one_of(st.none(), st.integers(-10**6, 10**6)),
                          st.one_of(st.none(), st.integers(0, 10**4)),
                          st.one_of(st.none(), st.integers(0, 10**8)),
                          st.sampled_from(["S", "U", "P", "E", "M", ""])),
                min_size=1, max_size=20, unique_by=lambda r: (r[0].strip(), r[1].strip())),
       st.sampled_from([".", ","]), st.booleans())
def test_random_frames_round_trip(rows, decimal, quote):
    frame = pd.DataFrame({
        "A": [r[0].strip() if not quote else r[0] for r in rows],
        "B": [r[1].strip() if not quote else r[1] for r in rows],
        "X": [np.nan if r[2] is None else r[2] / 100 for r in rows],
        "F": [np.nan if r[3] is None else float(r[3]) for r in rows],
        "T1": [np.nan if r[4] is None else r[4] / 100 for r in rows],  # 2 decimals, as X
        "ST": [r[5] for r in rows]})
    frame["A"] = frame["A"].astype(object)
    text = write_tab(frame, SIMPLE, decimal=decimal, quote=quote)
    back = read_tab(text, SIMPLE, decimal=decimal)
    assert back["A"].tolist() == frame["A"].tolist()
    assert back["B"].tolist() == frame["B"].tolist()
    np.testing.assert_allclose(back["X"], frame["X"])
    np.testing.assert_array_equal(back["F"], frame["F"])
    np.testing.assert_allclose(back["T1"], frame["T1"])
    assert back["ST"].tolist() == frame["ST"].tolist()
    assert write_tab(back, SIMPLE, decimal=decimal, quote=quote) == text
