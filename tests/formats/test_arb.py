"""tau-Argus batch files (riskengine/_formats/arb.py): every command's arguments as
tau-Argus's batch interpreter reads them (tauargus.model.batch, sdcTools/tauargus @ 52aa410),
the order of commands, round trips, and a one-line error for each malformed line."""

from pathlib import Path

import pytest

from riskengine._formats._lines import FormatError
from riskengine._formats.arb import read_arb, write_arb

DATA = Path(__file__).resolve().parents[1] / "data" / "argus"

HEAD = '<OPENTABLEDATA> "t.tab"\n<OPENMETADATA> "t.rda"\n'
TABLE = HEAD + '<SPECIFYTABLE> "Size""Region"|"Var2"||\n<SAFETYRULE> P(15)\n<READTABLE> 1\n'


def test_the_peers_example_files_read_and_round_trip():
    for f in ("TestTable.arb", "TestRecode.arb"):
        b = read_arb(DATA / f)
        text = write_arb(b)
        again = read_arb(text)
        assert [(c.keyword, c.args) for c in again.commands] == \
            [(c.keyword, c.args) for c in b.commands]
        assert write_arb(again) == text
    b = read_arb(DATA / "TestTable.arb")
    spec = b.commands[2].args
    assert spec == {"explanatory": ["Size", "Region"], "response": "Var2",
                    "frequency_table": False, "shadow": "Var2_Shadow", "cost": "Var2",
                    "lambda": None}
    assert b.commands[3].args == {"additivity": 1, "keep_status": True}
    assert b.directory == DATA and b.resolve("pp.tab") == DATA / "pp.tab"
    r = read_arb(DATA / "TestRecode.arb")
    assert r.commands[3].args["rules"] == [("NK", (2.0, 75.0)), ("NK", (0.0, 0.0))]


def test_every_command_parses():
    text = (TABLE + '<APRIORI> "t.hst", 1, ";", 0, 1\n'
            '<SUPPRESS> MOD(1, 5, 1, 1, 1)\n'
            '<WRITETABLE> (1, 3, AS+SE-, "out.csv")\n'
            '<SOLVER> FREE\n<SUPPRESS> RND(1, 5, 0, 10, 0, 2)\n<SUPPRESS> CKM(1) "pt.txt"\n'
            '<SUPPRESS> GH(0, 100, 1)\n<CLEAR>\n'
            '<OPENMICRODATA> "m.asc"\n<OPENMETADATA> "m.rda"\n'
            '<SPECIFYTABLE> "A"|<freq>|| -2\n<SAFETYRULE> FREQ(3,10)|NK(3,70)|ZERO(5)|'
            'WGT(1)|MIS(0)|MAN(10)|REQ(30,40,3,10)|P(10,2)|P(10,60,2)\n'
            '<READMICRODATA>\n<WRITETABLE> (1, 2, AS+FL+QU-, "c:\\x\\y.csv")\n')
    b = read_arb(text)
    kws = [c.keyword for c in b.commands]
    assert kws.count("<SUPPRESS>") == 4 and kws[-1] == "<WRITETABLE>"
    ap = b.commands[5].args
    assert ap == {"file": "t.hst", "table": 1, "separator": ";", "ignore_errors": False,
                  "expand_trivial": True}
    mod = b.commands[6].args
    assert mod["method"] == "MOD" and mod["table"] == 1 and mod["params"] == [5, 1, 1, 1]
    wt = b.commands[7].args
    assert wt == {"table": 1, "type": 3, "format": "code_value",
                  "options": {"add_status": True, "suppress_empty": False}, "file": "out.csv"}
    assert b.commands[9].args["params"][0] == 5
    assert b.commands[10].args["extra"] == '"pt.txt"'
    assert b.commands[11].args["table"] == 0
    spec = b.commands[15].args
    assert spec["response"] is None and spec["frequency_table"] and spec["cost"] == "unity"
    rules = b.commands[16].args["rules"]
    assert [r[0] for r in rules] == ["FREQ", "NK", "ZERO", "WGT", "MIS", "MAN", "REQ", "P", "P"]
    assert rules[-1] == ("P", (10.0, 60.0, 2.0))
    assert b.commands[-1].args["options"] == {"add_status": True, "names_first_line": True,
                                              "quotes": False}
    again = read_arb(write_arb(b))
    assert [c.args for c in again.commands] == [c.args for c in b.commands]


def test_comments_and_blank_lines_are_skipped_and_lines_counted():
    b = read_arb("// a comment\n\n" + TABLE.replace("<READTABLE> 1", "\t<READTABLE>   1  "))
    assert b.commands[0].line == 3 and b.commands[-1].args["additivity"] == 1


def test_write_is_atomic_to_a_path(tmp_path):
    b = read_arb(TABLE)
    p = tmp_path / "job.arb"
    text = write_arb(b, p)
    assert p.read_text() == text and read_arb(p).commands[2].args["response"] == "Var2"


MALFORMED = [
    ("<FOO> 1\n", 1, "unknown command"),
    ("SPECIFYTABLE x\n", 1, "angle brackets"),
    ('<OPENMETADATA> "t.rda"\n', 1, "must follow <OPENMICRODATA>"),
    (HEAD + '<SAFETYRULE> P(15)\n', 3, "must follow <SPECIFYTABLE>"),
    (HEAD + '<SPECIFYTABLE> Size|"Var2"\n', 3, "quoted explanatory"),
    (HEAD + '<SPECIFYTABLE> "Size" "Region"\n', 3, "'|' or"),
    (HEAD + '<SPECIFYTABLE> "Size"|\n', 3, "response variable is missing"),
    (HEAD + '<SPECIFYTABLE> "Size"|"V"||-7\n', 3, "-1 \\(frequency\\)"),
    (HEAD + '<SPECIFYTABLE> "Size"|"V"||"C",abc\n', 3, "lambda"),
    (HEAD + '<SPECIFYTABLE> "Size"|"V"||\n<SAFETYRULE> XX(1)\n', 4, "unknown safety rule"),
    (HEAD + '<SPECIFYTABLE> "Size"|"V"||\n<SAFETYRULE> NK(3)\n', 4, "needs 2 parameters"),
    (HEAD + '<SPECIFYTABLE> "Size"|"V"||\n<SAFETYRULE> NK(3,a)\n', 4, "must be a number"),
    (HEAD + '<SPECIFYTABLE> "Size"|"V"||\n<SAFETYRULE> NK(3,70\n', 4, "'\\)' is expected"),
    (HEAD + '<SPECIFYTABLE> "Size"|"V"||\n<SAFETYRULE> NK(3,70),P(10)\n', 4, "'|' expected"),
    (HEAD + '<SPECIFYTABLE> "Size"|"V"||\n<SAFETYRULE> P(1,2,3,4)\n', 4, "1 to 3"),
    (HEAD + '<SPECIFYTABLE> "Size"|"V"||\n<SAFETYRULE> P()\n', 4, "parameters"),
    (TABLE.replace("<READTABLE> 1", "<READTABLE> 3"), 5, "0, 1"),
    (TABLE.replace("<READTABLE> 1", "<READTABLE> 2T"), 5, "only allowed with 1"),
    (TABLE.replace("<READTABLE> 1", "<READTABLE> 1 x"), 5, "unexpected"),
    (HEAD + '<SPECIFYTABLE> "Size"|"V"||\n<SAFETYRULE> P(15)\n<SUPPRESS> MOD(1)\n', 5,
     "tables are read"),
    (TABLE + "<SUPPRESS> FOO(1)\n", 6, "unknown suppression method"),
    (TABLE + "<SUPPRESS> MOD(x)\n", 6, "table number"),
    (TABLE + "<SUPPRESS> OPT(0)\n", 6, "only possible for GH and MOD"),
    (TABLE + "<SUPPRESS> MOD(1, abc)\n", 6, "must be a number"),
    (TABLE + "<SUPPRESS> RND(1)\n", 6, "rounding base"),
    (TABLE + "<SUPPRESS> MOD(1\n", 6, "'\\)' is expected"),
    (TABLE + '<WRITETABLE> 1, 3, AS+, "o.csv")\n', 6, "'\\(' expected"),
    (TABLE + '<WRITETABLE> (1, 9, AS+, "o.csv")\n', 6, "output type must be in 1..7"),
    (TABLE + '<WRITETABLE> (1, 3, ZZ+, "o.csv")\n', 6, "unknown output option"),
    (TABLE + '<WRITETABLE> (1, 3, AS, "o.csv")\n', 6, "followed by \\+ or -"),
    (TABLE + '<WRITETABLE> (1, 3, AS+, "o.csv"\n', 6, "'\\)' is expected at the end"),
    (TABLE + '<WRITETABLE> (0, 3, AS+, "o.csv")\n', 6, "table number must be"),
    (TABLE + '<WRITETABLE> (1, 3, AS+, )\n', 6, "output file name"),
    (TABLE + '<APRIORI> "t.hst", x, ";"\n', 6, "table number must be a whole number"),
    (TABLE + '<APRIORI> "t.hst", 1, ;\n', 6, "quoted separator"),
    (TABLE + '<APRIORI> "t.hst" 1, ";"\n', 6, "',' expected"),
    (TABLE + '<APRIORI> "t.hst", 1, ";", 5\n', 6, "ignore-error flag"),
    (TABLE + '<APRIORI> "t.hst, 1\n', 6, "unterminated"),
    (TABLE + "<SOLVER> GUROBI\n", 6, "unknown solver"),
    ('<OPENTABLEDATA>\n', 1, "needs a file name"),
    ("// only a comment\n", None, "no command"),
]


@pytest.mark.parametrize("text,line,rule", MALFORMED)
def test_malformed_lines_give_one_line_errors(tmp_path, text, line, rule):
    p = tmp_path / "job.arb"
    p.write_text(text)
    with pytest.raises(FormatError, match=rule) as e:
        read_arb(p)
    assert e.value.line == line and e.value.file == str(p)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(str(p))
