"""The tau-Argus <SAFETYRULE> parser (riskengine.magnitude.argus_rules): the rule objects
it builds, the individual / holding split by position (tau-Argus batch.java,
readSafetyRuleBatch), and clear errors for malformed rules."""

import pytest

from riskengine.magnitude.argus_rules import parse_argus_rule, parse_safety_rule
from riskengine.magnitude.sensitivity import (
    PQ,
    Dominance,
    Frequency,
    Holdings,
    Max,
    PPercent,
    Request,
    Zero,
)


@pytest.mark.parametrize("text, want", [
    ("NK(3,70)", Dominance(3, 70)),
    ("nk( 2 , 85 )", Dominance(2, 85)),
    ("P(10)", PPercent(10)),
    ("P(10,2)", PPercent(10, 2)),
    ("P(10,60,1)", PQ(10, 60)),
    ("P(10,60,3)", PQ(10, 60, 3)),
    ("P(15,100,1)", PPercent(15)),
    ("FREQ(3,10)", Frequency(3, safety_range=10)),
    ("ZERO(2.5)", Zero(2.5)),
    ("REQ(20,30,3,10)", Request(20, 30, 3, 10)),
])
def test_single_rules(text, want):
    assert parse_argus_rule(text) == want


def test_weighted_frequency():
    assert parse_argus_rule("FREQ(3,10)", weighted=True) == Frequency(3, safety_range=10,
                                                                      weighted=True)
    r = parse_safety_rule("FREQ(3,20)|WGT(1)")
    assert r.weighted and r.individual == [Frequency(3, safety_range=20, weighted=True)]


def test_individual_and_holding_parts_by_position():
    r = parse_safety_rule("NK(2,75)|NK(0,0)|NK(1,50)|P(10,1)|P(0,1)|P(20,1)|"
                          "FREQ(3,10)|FREQ(2,20)|ZERO(5)|REQ(20,0,0,10)|MIS(1)|MAN(15)|")
    assert r.individual == [Dominance(2, 75), PPercent(10), Frequency(3, safety_range=10),
                            Zero(5), Request(20, 0, 0, 10)]
    assert r.holding == [Dominance(1, 50), PPercent(20), Frequency(2, safety_range=20)]
    assert r.missing_safe and r.manual_margin == 15 and not r.weighted
    combined = r.rule
    assert isinstance(combined, Max)
    assert combined.rules[-3:] == (Holdings(Dominance(1, 50)), Holdings(PPercent(20)),
                                   Holdings(Frequency(2, safety_range=20)))
    single = parse_safety_rule("NK(3,70)")
    assert single.rule == Dominance(3, 70) and single.holding == []
    assert parse_safety_rule("NK(0,0)|MAN(10)").rule is None


@pytest.mark.parametrize("text, match", [
    ("NK3,70)", r"'\(' is expected"),
    ("NK(3,70", r"'\)' is expected"),
    ("NK(3)", r"NK takes 2 parameters, got 1"),
    ("NK(3,70,1)", r"NK takes 2 parameters, got 3"),
    ("NK(3.5,70)", r"n must be a whole number, got '3.5'"),
    ("NK(3,100)", r"k must be a percentage in \(0, 100\), got 100"),
    ("NK(-1,50)", r"n must be >= 0"),
    ("XY(3,70)", r"unknown rule 'XY'"),
    ("P(30,20,1)", r"p must not exceed q"),
    ("P(10,60,0)", r"n \(the intruders' coalition\) must be >= 1"),
    ("P(,3)", r"empty parameter"),
    ("FREQ(3,120)", r"frequency safety range must be a percentage in \[0, 100\], got 120"),
    ("FREQ(a,10)", r"minimum frequency must be a whole number, got 'a'"),
    ("ZERO(x)", r"zero safety range must be a number, got 'x'"),
    ("ZERO(0)", r"zero safety range must be > 0"),
    ("REQ(20,30,3)", r"REQ takes 4 parameters, got 3"),
    ("WGT(2)", r"a 0 or a 1 is expected, got '2'"),
    ("NK(3,70) NK(2,80)", r"separated by '\|'"),
    ("NK(3,70)||NK(2,80)", r"empty rule between two '\|'"),
    ("", r"the safety rule is empty"),
    ("NK(1,50)|NK(1,50)|NK(1,50)|NK(1,50)|NK(1,50)", r"too many NK rules.*at most 4"),
    ("FREQ(3,10)|FREQ(3,10)|FREQ(3,10)", r"too many FREQ rules.*at most 2"),
    ("MAN(150)", r"manual margin must be a percentage"),
])
def test_malformed_safety_rules(text, match):
    with pytest.raises(ValueError, match=match):
        parse_safety_rule(text)


@pytest.mark.parametrize("text, match", [
    ("NK(3,70)|NK(2,80)", "use parse_safety_rule"),
    ("WGT(1)", "is a setting, not a rule"),
    ("NK(0,0)", "placeholder"),
    ("P(0)", "placeholder"),
])
def test_parse_argus_rule_errors(text, match):
    with pytest.raises(ValueError, match=match):
        parse_argus_rule(text)
    with pytest.raises(TypeError, match="must be a string"):
        parse_argus_rule(3)
