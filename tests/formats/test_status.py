"""The status vocabulary and its mappings to the letters of sdcTable, JJ and tau-Argus."""

from __future__ import annotations

import inspect
import re

import pytest

from riskengine._formats import status as stmod
from riskengine._formats.jj import JJ_STATUSES
from riskengine._formats.status import (
    FROM_LETTERS,
    STATUSES,
    TAUARGUS_CODES,
    TO_LETTERS,
    from_letters,
    to_letters,
)


@pytest.mark.parametrize("scheme", sorted(TO_LETTERS))
def test_every_status_has_a_letter_and_reads_back(scheme):
    assert set(TO_LETTERS[scheme]) == set(STATUSES)
    for s in STATUSES:
        back = FROM_LETTERS[scheme][TO_LETTERS[scheme][s]]
        # "empty" goes out as the never-suppress letter where the scheme has no own one
        assert back == s or (s == "empty" and back == "forced_safe")
    assert set(FROM_LETTERS[scheme].values()) <= set(STATUSES)


def test_letters_as_the_peers_write_them():
    assert to_letters(STATUSES, "sdctable") == ["s", "u", "x", "z", "z"]
    assert to_letters(STATUSES, "jj") == ["s", "u", "m", "z", "z"]
    assert to_letters(STATUSES, "tauargus") == ["S", "U", "M", "P", "E"]
    assert set(FROM_LETTERS["jj"]) == set(JJ_STATUSES)
    assert from_letters("sxuz", "sdctable") == ["safe", "secondary", "primary", "forced_safe"]
    assert from_letters(["x", "m"], "jj") == ["secondary", "secondary"]


def test_tauargus_codes():
    assert sorted(TAUARGUS_CODES) == list(range(1, 15))
    cats = {"safe": "S", "primary": "U", "secondary": "M", "forced_safe": "P", "empty": "E"}
    assert {cats[s] for _, s in TAUARGUS_CODES.values()} == set(FROM_LETTERS["tauargus"])
    assert TAUARGUS_CODES[10] == ("PROTECT_MANUAL", "forced_safe")
    assert TAUARGUS_CODES[14][1] == "empty"


@pytest.mark.parametrize("func,arg,scheme,word", [
    (to_letters, ["safe", "unsafe"], "sdctable", "status 1: 'unsafe'"),
    (from_letters, ["s", "S"], "sdctable", "status 1: 'S'"),
    (from_letters, ["s"], "sas", "unknown scheme"),
    (from_letters, ["w"], "sdctable", "not a sdctable status letter"),
])
def test_errors(func, arg, scheme, word):
    with pytest.raises(ValueError, match=re.escape(word)):
        func(arg, scheme)


def _has(doc, section):
    return bool(re.search(rf"^{section}\n-{{3,}}\s*$", inspect.cleandoc(doc or ""), re.MULTILINE))


@pytest.mark.parametrize("func", [to_letters, from_letters])
def test_numpydoc_sections(func):
    doc = inspect.getdoc(func)
    assert _has(doc, "Parameters") and _has(doc, "Returns")
    assert func.__name__ in stmod.__all__
