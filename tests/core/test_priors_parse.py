"""Prior specs from the command line: every form parses, a wrong number of values is
refused naming the form (it used to fail with 'list index out of range')."""

from __future__ import annotations

import pytest

from riskengine import priors
from riskengine.cli import main


@pytest.mark.parametrize("text, want", [
    ("uniform", priors.Uniform()), ("flat", priors.Flat()), ("flat:1", priors.Flat(1)),
    ("flat:1,9", priors.Flat(1, 9)), ("poisson:2.5", priors.Poisson(2.5)),
    ("negbin:5,2", priors.NegativeBinomial(5.0, 2.0)),
])
def test_specs_parse(text, want):
    assert repr(priors.parse(text)) == repr(want)


@pytest.mark.parametrize("text, msg", [
    ("negbin:5", r"negbin takes negbin:MEAN,DISPERSION \(2 values after the colon\), got 1"),
    ("poisson", r"poisson takes poisson:RATE \(1 value after the colon\), got 0"),
    ("poisson:1,2", "got 2"),
    ("flat:1,2,3", r"flat takes flat\[:LOW\[,HIGH\]\] \(0 to 2 values"),
    ("uniform:3", "uniform takes uniform"),
    ("poisson:x", "bad prior spec 'poisson:x'"),
    ("gamma:1", "unknown prior 'gamma:1'; known: uniform, flat, poisson, negbin"),
])
def test_bad_specs_are_refused_by_form(text, msg):
    with pytest.raises(ValueError, match=msg):
        priors.parse(text)


def test_cli_level_must_be_a_probability(capsys):
    with pytest.raises(SystemExit) as e:
        main(["assess", "--level", "0"])
    assert e.value.code == 2
    assert "--level must be a probability in (0, 1]" in capsys.readouterr().err
