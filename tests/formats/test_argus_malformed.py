"""Malformed tau-Argus files (.rda, .tab, .hst, .asc): each is one FormatError whose
one-line message names the file, the line and the rule."""

import re

import pytest

from riskengine._formats._lines import FormatError
from riskengine._formats.asc import read_asc
from riskengine._formats.hst import read_hst
from riskengine._formats.rda import read_rda
from riskengine._formats.tab import read_tab

TABLE_RDA = ('<SEPARATOR> ";"\nA\n <RECODEABLE>\n <TOTCODE> "Total"\n'
             'B\n <RECODEABLE>\n <TOTCODE> "Total"\nX\n <NUMERIC>\nF\n <FREQUENCY>\n'
             'ST\n <STATUS>\n')
FIXED_RDA = 'R 1 2 "99"\n <RECODEABLE>\nX 3 4 "9999"\n <NUMERIC>\n'
SEP_RDA = '<SEPARATOR> ";"\nR 2\n <RECODEABLE>\nX 4\n <NUMERIC>\n'

# (id, format, file text, line or None, words of the rule, extra keyword arguments)
CASES = [
    # ---- .rda
    ("rda-unknown-keyword", "rda", 'A 1 1\n <RECODEABLE>\n <FOO>\n', 3,
     r"unknown keyword <FOO>.*known.*<RECODEABLE>", {}),
    ("rda-property-first", "rda", '// c\n <RECODEABLE>\nA 1 1\n', 2,
     r"before any variable", {}),
    ("rda-missing-width", "rda", 'A 1 1\n <RECODEABLE>\nB 3\n', 3, r"missing width", {}),
    ("rda-start-not-int", "rda", 'A x 1\n <RECODEABLE>\n', 1,
     r"start 'x' is not an integer", {}),
    ("rda-width-zero", "rda", 'A 1 0\n <RECODEABLE>\n', 1, r"width 0 is below 1", {}),
    ("rda-decimals-not-int", "rda", ('A 1 1\n <RECODEABLE>\nX 2 3\n <NUMERIC>\n'
     ' <DECIMALS> two\n'), 5, r"'two' is not an integer", {}),
    ("rda-hierlevels-not-int", "rda", ('A 1 3\n <RECODEABLE>\n <HIERARCHICAL>\n'
     ' <HIERLEVELS> 1 x\n'), 4, r"HIERLEVELS.*'x' is not an integer", {}),
    ("rda-duplicate-name", "rda", 'Age 1 1\n <RECODEABLE>\nAGE 2 1\n', 3,
     r"declared twice \(first on line 1", {}),
    ("rda-two-roles", "rda", 'A 1 1\n <RECODEABLE>\nW 2 3\n <NUMERIC>\n <WEIGHT>\n', 5,
     r"already numeric.*cannot also be weight", {}),
    ("rda-hierarchical-alone", "rda", 'A 1 1\n <RECODEABLE>\n <HIERARCHICAL>\nB 2 1\n',
     3, r"without <HIERLEVELS> or <HIERCODELIST>", {}),
    ("rda-hierarchical-both", "rda", ('A 1 2\n <RECODEABLE>\n <HIERARCHICAL>\n'
     ' <HIERLEVELS> 1 1\n <HIERCODELIST> "a.hrc"\n'), 5,
     r"both <HIERLEVELS> and <HIERCODELIST>", {}),
    ("rda-hierlevels-sum", "rda", ('A 1 5\n <RECODEABLE>\n <HIERARCHICAL>\n'
     ' <HIERLEVELS> 3 1 3\n'), 4, r"add up to 7, not to the width 5", {}),
    ("rda-two-weights", "rda", ('A 1 1\n <RECODEABLE>\nW 2 1\n <WEIGHT>\nV 3 1\n'
     ' <WEIGHT>\n'), 6, r"second weight variable", {}),
    ("rda-two-frequencies", "rda", TABLE_RDA + 'G\n <FREQUENCY>\n', 15,
     r"second frequency variable", {}),
    ("rda-unterminated-quote", "rda", 'A 1 2 "99\n <RECODEABLE>\n', 1,
     r"unterminated quoted string", {}),
    ("rda-extra-argument", "rda", 'A 1 1\n <RECODEABLE> yes\n', 2,
     r"<RECODEABLE> takes 0 arguments, got 1: yes", {}),
    ("rda-missing-argument", "rda", 'A 1 1\n <RECODEABLE>\n <TOTCODE>\n', 3,
     r"<TOTCODE> takes 1 argument, got 0", {}),
    ("rda-three-missings", "rda", 'A 1 1 "8" "9" "7"\n <RECODEABLE>\n', 1,
     r"at most 2", {}),
    ("rda-missing-too-long", "rda", 'A 1 1 "99"\n <RECODEABLE>\n', 1,
     r"missing code '99' is longer than the width 1", {}),
    ("rda-table-no-totcode", "rda", ('<SEPARATOR> ";"\nA\n <RECODEABLE>\nX\n'
     ' <FREQUENCY>\n'), 2, r"no <TOTCODE>", {}),
    ("rda-numeric-qualifier", "rda", ('<SEPARATOR> ";"\nA\n <RECODEABLE>\n'
     ' <TOTCODE> "T"\nX\n <NUMERIC> <SHADOWS>\n'), 6, r"only words allowed", {}),
    ("rda-ckm-not-numeric", "rda", '<SEPARATOR> ";"\nA 1\n <RECODEABLE>\n <CKM> T(2)\n',
     4, r"only allowed after <NUMERIC>", {}),
    ("rda-scaling-count", "rda", ('<SEPARATOR> ";"\nA 1\n <RECODEABLE>\nX 4\n <NUMERIC>\n'
     ' <CKM> T(3)\n <SCALING> F(0.03,0.3,1000,3)\n'), 7,
     r"takes 6 numbers, got 4", {}),
    ("rda-recordkey-no-pfile", "rda", ('<SEPARATOR> ";"\nA 1\n <RECODEABLE>\nK 10\n'
     ' <RECORDKEY>\n'), 5, r"no <PFILE>", {}),
    ("rda-table-keyword-in-micro", "rda", 'A 1 1\n <RECODEABLE>\n <SAFE> "S"\n', 3,
     r"unknown keyword <SAFE> \(it is a keyword of tabular metadata\)",
     {"kind": "micro"}),
    ("rda-mixed-kinds", "rda", ('<SEPARATOR> ";"\nA 1\n <RECODEABLE>\nW 1\n <WEIGHT>\n'
     'F 1\n <FREQUENCY>\n'), 7, r"cannot be in the same file as <WEIGHT>", {}),
    ("rda-global-twice", "rda", ('<SEPARATOR> ";"\n<SEPARATOR> ","\nA 1\n'
     ' <RECODEABLE>\n'), 2, r"<SEPARATOR> given twice \(first on line 1\)", {}),
    ("rda-property-twice", "rda", ('A 1 1\n <RECODEABLE>\n <TOTCODE> "T"\n'
     ' <TOTCODE> "U"\n'), 4, r"given twice for variable 'A' \(first on line 3\)", {}),
    ("rda-no-explanatory", "rda", 'X 1 1\n <NUMERIC>\n', None,
     r"no explanatory variables", {}),
    ("rda-hiercodelist-alone", "rda", 'A 1 1\n <RECODEABLE>\n <HIERCODELIST> "a.hrc"\n',
     3, r"without <HIERARCHICAL>", {}),
    # ---- .tab
    ("tab-field-count", "tab", '"Total";"Total";1;1;S\n1;1;2;1\n', 2,
     r"4 fields, but .* declares 5 variables", {}),
    ("tab-not-a-number", "tab", '"Total";"Total";1;1;S\n1;2;1O;1;S\n', 2,
     r"X '1O' is not a number", {}),
    ("tab-bad-status", "tab", '"Total";"Total";1;1;S\n1;1;1;1;X\n', 2,
     r"status 'X' of 'ST' is not one of E, M, P, S, U", {}),
    ("tab-duplicate-cell", "tab", '1;1;1;1;S\n2;1;1;1;S\n"1";"1";2;2;S\n', 3,
     r"duplicate cell \('1', '1'\): the same codes as line 1", {}),
    ("tab-empty-code", "tab", '"";1;1;1;S\n', 1, r"empty code for 'A'", {}),
    ("tab-frequency-fraction", "tab", '1;1;1;1.5;S\n', 1,
     r"frequency '1.5' of 'F' is not an integer", {}),
    ("tab-mixed-decimals", "tab", '1;1;1,5;1;S\n2;1;2.5;1;S\n', 2,
     r"with ',' .* and with '\.'.*give decimal=", {}),
    ("tab-unbalanced-quote", "tab", '"1;1;1;1;S\n', 1, r"unbalanced quote", {}),
    ("tab-dot-with-comma", "tab", '1;1;2.5;1;S\n', 1,
     r"has a '\.' but the decimal mark is ','", {"decimal": ","}),
    # ---- .hst
    ("hst-unknown-action", "hst", 'a;b;S\na;b;X\n', 2, r"unknown action 'X'.*known", {}),
    ("hst-argument-count", "hst", 'a;b;S\na;b;C\n', 2,
     r"action C takes 1 number \(cost\), got 0", {"n_dims": 2}),
    ("hst-not-a-number", "hst", 'a;b;PL;1;x\n', 1,
     r"upper 'x' of action PL is not a number", {"n_dims": 2}),
    ("hst-negative-cost", "hst", 'a;b;S\na;b;W;-3\n', 2, r"cost -3 is negative", {}),
    ("hst-lower-above-upper", "hst", 'a;b;AB;10;5\n', 1,
     r"lower bound exceeds the upper bound", {}),
    ("hst-negative-pl", "hst", 'a;b;PL;-1;5\n', 1, r"may not be negative", {}),
    ("hst-codes-given-n", "hst", 'a;b;S\n', 1, r"3 codes and an action expected",
     {"n_dims": 3}),
    ("hst-codes-inferred", "hst", 'a;b;S\na;b;c;U\n', 2,
     r"3 codes before the action 'U', but the first line \(line 1\) has 2", {}),
    ("hst-no-separator", "hst", 'a b S\n', 1, r"no separator", {}),
    ("hst-empty-code", "hst", 'a;;S\n', 1, r"empty code in dimension 2", {}),
    # ---- .asc
    ("asc-too-short", "asc", ' 1  12\n 2  1\n', 2,
     r"record of 5 characters is too short for 'X' \(columns 3-6\)", {}),
    ("asc-not-a-number", "asc", ' 1  12\n 2 1x3\n', 2, r"X ' 1x3' is not a number", {}),
    ("asc-field-count", "asc-sep", '1;2\n1;2;3\n', 2,
     r"3 fields, but .* declares 2 variables", {}),
    ("asc-code-too-long", "asc-sep", '1;2\n123;2\n', 2,
     r"R '123' is longer than its width 2", {}),
    ("asc-sep-not-a-number", "asc-sep", '1;2\n1;two\n', 2, r"is not a number", {}),
]


def _read(fmt, path, kwargs):
    if fmt == "rda":
        return read_rda(path, **kwargs)
    if fmt == "tab":
        return read_tab(path, read_rda(TABLE_RDA.replace("F\n <FREQUENCY>\n", "F\n"
                                                          " <FREQUENCY>\n")), **kwargs)
    if fmt == "hst":
        return read_hst(path, **kwargs)
    if fmt == "asc":
        return read_asc(path, read_rda(FIXED_RDA), **kwargs)
    return read_asc(path, read_rda(SEP_RDA), **kwargs)


def test_at_least_thirty_cases():
    assert len(CASES) >= 30
    assert len({c[0] for c in CASES}) == len(CASES)
    assert {c[1].split("-")[0] for c in CASES} == {"rda", "tab", "hst", "asc"}


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_malformed(case, tmp_path):
    _, fmt, text, line, rule, kwargs = case
    path = tmp_path / f"bad.{fmt.split('-')[0]}"
    path.write_text(text, encoding="latin-1")
    where = re.escape(str(path)) + (f", line {line}" if line is not None else "")
    with pytest.raises(FormatError, match=f"^{where}: .*{rule}") as info:
        _read(fmt, path, kwargs)
    err = info.value
    assert err.file == str(path) and err.line == line
    assert "\n" not in str(err)


def test_text_sources_are_named_text():
    with pytest.raises(FormatError, match=r"^<text>, line 2: unknown keyword") as info:
        read_rda("A 1 1\n <BAR>\n")
    assert info.value.line == 2
