"""Cell statuses: riskengine's names and the letters of tau-Argus, JJ files and sdcTable.

riskengine's vocabulary (`STATUSES`):

``"safe"``
    Publishable; secondary suppression may still pick it.
``"primary"``
    Primary unsafe: a sensitivity rule (or the user) says it must not be published.
``"secondary"``
    Suppressed to protect a primary cell (complementary suppression).
``"forced_safe"``
    Published whatever happens: never suppressed (tau-Argus "protected", sdcTable
    "forced to be published").
``"empty"``
    A structurally empty cell (tau-Argus writes it apart; a solver must keep it, so it
    goes to JJ and sdcTable as their "never suppress" letter ``z``).

The letters, from the peers' sources:

* sdcTable ``sdcStatus`` (``R/change_cellstatus.R``: "a valid anonymization code ('u',
  'z', 'x', 's')"): ``s`` safe, ``u`` primary, ``x`` secondary, ``z`` forced to be
  published.  (sdcTable's GaussSuppression wrapper also knows an internal ``w``, not a
  status a user file holds; it is refused.)
* JJ files (libtauargus ``src/JJFormat.cpp``, ``CJJFormat::WriteCells``): ``s`` for
  CS_SAFE, CS_SAFE_MANUAL, CS_EMPTY_NONSTRUCTURAL; ``u`` for every CS_UNSAFE_*; ``z``
  for CS_PROTECT_MANUAL and CS_EMPTY; ``m`` for CS_SECONDARY_UNSAFE[_MANUAL].
  sdcTable's ``createJJFormat`` copies its ``sdcStatus``, so ``x`` is read as
  secondary too.
* tau-Argus table files (the intermediate format, WRITETABLE type 5, ``TableSet.write``,
  and the status column of an input ``.tab`` with the ``<SAFE>``/``<UNSAFE>``/
  ``<PROTECT>`` defaults of ``Metadata.java``): ``S`` safe-not-protected, ``U`` primary,
  ``M`` secondary, ``P`` protected (``CellStatusCategory.java``), ``E`` empty (either
  empty status).  The other WRITETABLE outputs carry no letters: types 2 and 3 with
  ``AS+`` add the numeric ``CellStatus`` code (1..14, `TAUARGUS_CODES`, written by
  libtauargus ``TauArgus::WriteCSVCell`` as ``%ld``); types 1-3 without it replace an
  unsafe or secondary value by ``x`` and an empty one by ``-``; type 4 (SBS) writes
  ``V`` safe/protected, ``A`` frequency-unsafe, ``B``/``C``/``F`` other unsafe, ``D``
  secondary, ``-`` empty; type 7 (CKM) has no status.

Examples
--------
>>> to_letters(["safe", "primary", "secondary", "forced_safe"], "sdctable")
['s', 'u', 'x', 'z']
>>> from_letters(["S", "M", "E"], "tauargus")
['safe', 'secondary', 'empty']
"""

from __future__ import annotations

__all__ = ["FROM_LETTERS", "STATUSES", "TAUARGUS_CODES", "TO_LETTERS", "from_letters",
           "to_letters"]

#: riskengine's status names.
STATUSES = ("safe", "primary", "secondary", "forced_safe", "empty")

#: ``{scheme: {riskengine status: letter}}`` for writing.
TO_LETTERS = {
    "sdctable": {"safe": "s", "primary": "u", "secondary": "x", "forced_safe": "z",
                 "empty": "z"},
    "jj": {"safe": "s", "primary": "u", "secondary": "m", "forced_safe": "z", "empty": "z"},
    "tauargus": {"safe": "S", "primary": "U", "secondary": "M", "forced_safe": "P",
                 "empty": "E"},
}

#: ``{scheme: {letter: riskengine status}}`` for reading.
FROM_LETTERS = {
    "sdctable": {"s": "safe", "u": "primary", "x": "secondary", "z": "forced_safe"},
    "jj": {"s": "safe", "u": "primary", "m": "secondary", "x": "secondary",
           "z": "forced_safe"},
    "tauargus": {"S": "safe", "U": "primary", "M": "secondary", "P": "forced_safe",
                 "E": "empty"},
}

#: tau-Argus's numeric cell status (``CellStatus.java`` / libtauargus ``defines.h``):
#: ``{code: (tau-Argus name, riskengine status)}``.
TAUARGUS_CODES = {
    1: ("SAFE", "safe"), 2: ("SAFE_MANUAL", "safe"),
    3: ("UNSAFE_RULE", "primary"), 4: ("UNSAFE_PEEP", "primary"),
    5: ("UNSAFE_FREQ", "primary"), 6: ("UNSAFE_ZERO", "primary"),
    7: ("UNSAFE_SINGLETON", "primary"), 8: ("UNSAFE_SINGLETON_MANUAL", "primary"),
    9: ("UNSAFE_MANUAL", "primary"), 10: ("PROTECT_MANUAL", "forced_safe"),
    11: ("SECONDARY_UNSAFE", "secondary"), 12: ("SECONDARY_UNSAFE_MANUAL", "secondary"),
    13: ("EMPTY_NONSTRUCT", "empty"), 14: ("EMPTY", "empty"),
}


def _scheme(scheme: str) -> str:
    if scheme not in TO_LETTERS:
        raise ValueError(f"unknown scheme {scheme!r}: one of {', '.join(TO_LETTERS)}")
    return scheme


def to_letters(statuses, scheme: str) -> list:
    """The letters of riskengine statuses in one of the peers' schemes.

    Parameters
    ----------
    statuses : iterable of str
        Names from `STATUSES`.
    scheme : {"sdctable", "jj", "tauargus"}
        Whose letters.

    Returns
    -------
    list of str
    """
    table = TO_LETTERS[_scheme(scheme)]
    out = []
    for i, s in enumerate(statuses):
        if s not in table:
            raise ValueError(f"status {i}: {s!r} is not a riskengine status (one of "
                             f"{', '.join(STATUSES)})")
        out.append(table[s])
    return out


def from_letters(letters, scheme: str) -> list:
    """riskengine statuses of letters in one of the peers' schemes.

    Parameters
    ----------
    letters : iterable of str
        The letters (case matters: tau-Argus upper case, JJ and sdcTable lower case).
    scheme : {"sdctable", "jj", "tauargus"}
        Whose letters.

    Returns
    -------
    list of str
        Names from `STATUSES`.
    """
    table = FROM_LETTERS[_scheme(scheme)]
    out = []
    for i, s in enumerate(letters):
        if s not in table:
            raise ValueError(f"status {i}: {s!r} is not a {scheme} status letter (one of "
                             f"{', '.join(table)})")
        out.append(table[s])
    return out
