"""tau-Argus ``.rda`` metadata (riskengine/_formats/rda.py), against the peer's example
files (sdcTools/tauargus @ 52aa410, tests/data/argus/SOURCE.md) and Metadata.java."""

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from riskengine._formats.rda import Metadata, Variable, read_rda, write_rda

DATA = Path(__file__).resolve().parents[1] / "data" / "argus"
PEERS = ["pp.rda", "Tau_TestW.rda", "Tau_TestW_CKM.rda", "hc_9_2_synth_Tau.rda",
         "microdata.rda", "vars1to5sampleG.rda"]


@pytest.mark.parametrize("f", PEERS)
def test_peer_files_round_trip(f):
    meta = read_rda(DATA / f)
    text = write_rda(meta)
    again = read_rda(text)
    assert again == meta
    assert write_rda(again) == text


def test_pp_rda_is_written_back_identically():
    text = (DATA / "pp.rda").read_text("latin-1")
    assert write_rda(read_rda(DATA / "pp.rda")) == text


def test_pp_rda_content():
    meta = read_rda(DATA / "pp.rda")
    assert meta.kind == "table" and meta.separator == ";"
    assert (meta.safe, meta.unsafe, meta.protect) == ("S", "U", "P")
    assert [v.name for v in meta.explanatory] == ["Size", "Region"]
    region = meta.variable("region")
    assert region.missing == ("99",) and region.width is None and region.start is None
    assert region.distance == (2, 4, 4, 4, 4)
    assert region.codelist == "REGION.CDL" and region.hiercodelist == "region2.hrc"
    assert region.hierleadstring == "@" and region.roles == {"recodeable", "hierarchical"}
    assert region.line == 5 and region.lines["hiercodelist"] == 11
    assert [v.name for v in meta.numeric] == ["Var2"]
    assert meta.variable("Var2").decimals == 2
    assert meta.frequency.name == "FreqVar"
    assert meta.shadow.name == "Var2_Shadow" and meta.cost.name == "Var2_Cost"
    assert [v.name for v in meta.maxscore] == ["Top1", "Top2"]
    assert meta.status.name == "StatusVar"
    assert meta.lower_pl.name == "LowerProtLevel" and meta.upper_pl.name == "UpperProtLevel"
    assert meta.weight is None and meta.holding is None and meta.record_key is None
    assert meta.name.endswith("pp.rda")


def test_tau_testw_fixed_width():
    meta = read_rda(DATA / "Tau_TestW.rda")
    assert meta.kind == "micro" and meta.separator is None
    ind = meta.variable("IndustryCode")
    assert (ind.start, ind.width, ind.missing) == (4, 5, ("99999",))
    assert ind.hierlevels == (3, 1, 1, 0, 0) and ind.is_hierarchical
    assert ind.distance == (1, 3, 5, 7, 9)
    assert ind.totcode == "Total"                      # Variable.getTotalCode default
    assert meta.weight.name == "Wgt" and meta.weight.decimals == 1
    assert [v.name for v in meta.request] == ["Request"]
    assert meta.variable("Request").request_codes == ("1", "2")
    assert len(meta.numeric) == 8


def test_separated_microdata_and_ckm():
    meta = read_rda(DATA / "microdata.rda")
    assert meta.kind == "micro" and meta.separator == ";"
    sav = meta.variable("Savings")
    assert (sav.start, sav.width) == (None, 4)
    assert sav.extra == {"ckm": "T(3)", "includezeros": "N", "separation": "Y",
                         "parity": "N", "scaling": "F(0.03,0.30,1000,3,0.5,0.2)"}
    key = meta.record_key
    assert key.name == "Key" and key.decimals == 8
    assert key.extra["pfile_cont"] == "ptab_savings_all.txt"
    hc = read_rda(DATA / "hc_9_2_synth_Tau.rda")
    assert hc.holding.name == "id" and hc.record_key.extra == {
        "pfile": "20160511_szenario_5a.txt"}


def test_kind_inference_and_override():
    text = '<SEPARATOR> ";"\nA 2\n <RECODEABLE>\n <TOTCODE> "T"\nX 5\n <NUMERIC>\n'
    assert read_rda(text).kind == "micro"
    assert read_rda(text, kind="table").variable("A").missing == ("2",)
    quoted = '<SEPARATOR> ";"\nA "9"\n <RECODEABLE>\n <TOTCODE> "T"\nX\n <NUMERIC>\n'
    assert read_rda(quoted).kind == "table"
    # no separator in a table file: readTableMetadata's default ";"
    assert read_rda('A\n <RECODEABLE>\n <TOTCODE> "T"\nF\n <FREQUENCY>\n').separator == ";"


def test_tokenizer_rules():
    meta = read_rda('// a comment\n\tYear 1 2 99 // trailing\n  <recodeable>\n'
                    '"My var" 3 4\n  <NUMERIC>\n')
    assert meta.variable("Year").roles == {"recodeable"}
    assert meta.variable("My var").start == 3
    assert write_rda(meta).splitlines()[3] == '"My var" 3 4'


def test_distance_is_filled_like_tau_argus():
    meta = read_rda("A 1 1\n <RECODEABLE>\n <DISTANCE> 2 3\n")
    assert meta.variable("A").distance == (2, 3, 3, 3, 3)


def test_table_hierlevels_set_the_width():
    meta = read_rda('<SEPARATOR> ";"\nA "9"\n <RECODEABLE>\n <TOTCODE> "T"\n'
                    ' <HIERARCHICAL>\n <HIERLEVELS> 1 2\nX\n <NUMERIC>\n')
    assert meta.variable("A").width == 3


def test_missing_variable_name():
    with pytest.raises(KeyError, match="no variable"):
        read_rda(DATA / "pp.rda").variable("nope")


def test_write_to_path(tmp_path):
    meta = read_rda(DATA / "Tau_TestW.rda")
    text = write_rda(meta, tmp_path / "out.rda")
    assert (tmp_path / "out.rda").read_text() == text
    assert read_rda(tmp_path / "out.rda") == meta


# ------------------------------------------------------------------ random metadata

_names = st.text(alphabet="abcdefghijXYZ_0123456789", min_size=1, max_size=8).filter(
    lambda s: not s[0].isdigit())
_code = st.text(alphabet="0123456789abc", min_size=1, max_size=3)


@st.composite
def metadata(draw):
    kind = draw(st.sampled_from(["micro-fixed", "micro-sep", "table"]))
    names = draw(st.lists(_names, min_size=2, max_size=6,
                          unique_by=lambda s: s.lower()))
    variables = []
    start = 1
    for i, name in enumerate(names):
        width = draw(st.integers(1, 6)) if kind != "table" else None
        missing = tuple(draw(st.lists(_code, max_size=2)))
        if width is not None:
            missing = tuple(m[:width] for m in missing)
        if i == 0:
            roles = {"recodeable"}
        elif i == 1:
            roles = {"numeric"}
        else:
            roles = set(draw(st.sampled_from(
                [["recodeable"], ["numeric"], []] +
                ([["recodeable", "numeric"]] if kind != "table" else [["maxscore"]]))))
        kw = {"name": name, "missing": missing, "roles": frozenset(roles),
                  "decimals": draw(st.integers(0, 3))}
        if kind == "micro-fixed":
            kw["start"] = start
        if width is not None:
            kw["width"] = width
        start += width or 0
        if "recodeable" in roles:
            kw["totcode"] = draw(st.sampled_from(["Total", "T", "00"]))
            if draw(st.booleans()):
                kw["distance"] = tuple(draw(st.lists(st.integers(1, 9), min_size=5,
                                                     max_size=5)))
            hier = draw(st.sampled_from([None, "file", "levels"]))
            if hier == "file":
                kw["roles"] = kw["roles"] | {"hierarchical"}
                kw["hiercodelist"] = name + ".hrc"
                kw["hierleadstring"] = draw(st.sampled_from(["@", ".", "*"]))
            elif hier == "levels":
                w = width or draw(st.integers(1, 6))
                cut = draw(st.integers(0, w))
                levels = (cut, w - cut) if cut else (w,)
                kw["roles"] = kw["roles"] | {"hierarchical"}
                kw["hierlevels"] = levels
                kw["width"] = w
        variables.append(Variable(**kw))
    sep = None if kind == "micro-fixed" else draw(st.sampled_from([";", ",", "|"]))
    meta = {"variables": tuple(variables), "separator": sep,
                "kind": "table" if kind == "table" else "micro"}
    if kind == "table":
        meta.update(safe=draw(st.sampled_from(["S", "V"])),
                    unsafe=draw(st.sampled_from(["U", "X"])))
    return Metadata(**meta)


@settings(max_examples=150, deadline=None)
@given(metadata())
def test_random_metadata_round_trip(meta):
    text = write_rda(meta)
    back = read_rda(text, kind=meta.kind)
    assert back == meta
    assert write_rda(back) == text
    assert read_rda(text) == meta          # the kind is inferred the same way


# ------------------------------------------------------------------ documentation

def test_public_callables_have_numpydoc_sections_and_doctests_pass():
    import doctest
    import inspect

    from riskengine._formats import asc, hst, rda, tab
    from tests.test_docstrings import missing_sections

    bad = {}
    for module in (rda, tab, hst, asc):
        for name in module.__all__:
            obj = getattr(module, name)
            if not callable(obj):
                continue
            targets = [(name, obj)]
            if inspect.isclass(obj):
                targets += [(f"{name}.{m}", f) for m, f in vars(obj).items()
                            if not m.startswith("_") and inspect.isfunction(f)]
            for path, target in targets:
                if miss := missing_sections(target):
                    bad[f"{module.__name__}.{path}"] = miss
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert result.failed == 0, module.__name__
    assert not bad
    for reader in (rda.read_rda, tab.read_tab, hst.read_hst, asc.read_asc):
        assert ">>> " in reader.__doc__
