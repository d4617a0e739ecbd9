"""tau-Argus safety rules as text (``<SAFETYRULE>`` of a batch file) -> rule objects.

tau-Argus's batch syntax (tau-Argus ``batch.java``, ``readSafetyRuleBatch``) is a list of
rules separated by ``|``::

    NK(3,70)|NK(0,0)|NK(1,50)|P(10,1)|FREQ(3,10)|FREQ(2,10)|ZERO(5)|REQ(20,30,3,10)|WGT(1)|MAN(10)

* ``NK(n,k)``: (n, k) dominance.  Up to four: the 1st and 2nd apply to the individual
  contributions, the 3rd and 4th to holdings (``CTable::SetDominance``:
  ``DominanceNumberCell_1/2``, ``DominanceNumberHolding_1/2``).  ``NK(0,0)`` (n or k 0)
  holds a place and sets no rule.
* ``P(p)``, ``P(p,n)``, ``P(p,q,n)``: the p % rule (``q = 100``) or the pq rule with a
  coalition of ``n`` intruders (default 1); up to four, positions as for NK
  (``CTable::SetPQRule``); ``p = 0`` holds a place.  tau-Argus requires ``p <= q``.
* ``FREQ(minfreq,range)``: the minimum frequency rule and its safety range (percent);
  the 1st for contributors, the 2nd for holdings (``SafeMinRec``, ``SafeMinHoldings``);
  ``minfreq = 0`` holds a place.
* ``ZERO(range)``: cells of value 0 with contributors are unsafe (``ApplyZeroRule``).
* ``REQ(p1,p2,minfreq,range)``: the request rule; 1st individual, 2nd holdings.
* ``WGT(0|1)``: apply the sampling weights (``ApplyWeight``, ``ApplyWeightOnSafetyRule``;
  the frequency rule then counts the sum of the weights, ``CTable::UnsafeCellMinRec``);
  ``MIS(0|1)``: cells with a missing code always safe; ``MAN(perc)``: the manual safety
  margin (percent).  These are settings, kept in :class:`SafetyRule`.

Numbers are integers, as tau-Argus parses them (``Integer.parseInt``), except the zero
rule's range (a decimal).  Rule names are case-insensitive, blanks are ignored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .sensitivity import PQ, Dominance, Frequency, Holdings, Max, PPercent, Request, Rule, Zero

__all__ = ["SafetyRule", "parse_argus_rule", "parse_safety_rule"]

_TOKEN = re.compile(r"\s*([A-Za-z]+)\s*\(([^()|]*)\)\s*")
#: arity of each rule: the numbers of parameters it accepts
_ARITY = {"NK": (2,), "P": (1, 2, 3), "FREQ": (2,), "ZERO": (1,), "REQ": (4,),
          "WGT": (1,), "MIS": (1,), "MAN": (1,)}
#: how many of each rule tau-Argus accepts (individual first, then holdings)
_MAX = {"NK": 4, "P": 4, "FREQ": 2, "REQ": 2, "ZERO": 1, "WGT": 1, "MIS": 1, "MAN": 1}
_HOLDING_FROM = {"NK": 2, "P": 2, "FREQ": 1, "REQ": 1}


@dataclass
class SafetyRule:
    """A parsed tau-Argus safety rule: the rules on individual contributions, the rules on
    holdings, and the settings.

    Parameters
    ----------
    individual : list of Rule
        The rules on the individual contributions (records / respondents).
    holding : list of Rule
        The rules on holdings (each evaluated through :class:`Holdings`).
    weighted : bool
        ``WGT(1)``: apply the sampling weights.
    missing_safe : bool
        ``MIS(1)``: cells with a missing code are always safe (not applied here).
    manual_margin : float or None
        ``MAN(perc)``: the safety margin of manually unsafe cells (not applied here).
    text : str
        The rule as given.
    """

    individual: list = field(default_factory=list)
    holding: list = field(default_factory=list)
    weighted: bool = False
    missing_safe: bool = False
    manual_margin: float | None = None
    text: str = ""

    @property
    def rule(self) -> Rule | None:
        """All rules as one: ``Max`` of the individual rules and ``Holdings`` of each
        holding rule (a cell is sensitive when any rule says so); ``None`` without rules.

        Returns
        -------
        Rule or None
        """
        rules = list(self.individual) + [Holdings(r) for r in self.holding]
        if not rules:
            return None
        return rules[0] if len(rules) == 1 else Max(*rules)


def parse_argus_rule(text: str, weighted: bool = False) -> Rule:
    """One tau-Argus rule (``"NK(3,70)"``, ``"P(10)"``, ``"P(10,60,2)"``,
    ``"FREQ(3,10)"``, ``"ZERO(5)"``, ``"REQ(20,30,3,10)"``) as a rule object.

    Parameters
    ----------
    text : str
        A single rule, without ``|``.
    weighted : bool, default False
        Build a weighted frequency rule (tau-Argus's ``FREQ`` under ``WGT(1)``).

    Returns
    -------
    Rule
        :class:`Dominance`, :class:`PPercent`, :class:`PQ`, :class:`Frequency`,
        :class:`Zero` or :class:`Request`.

    Examples
    --------
    >>> parse_argus_rule("NK(3,70)")
    Dominance(n=3, k=70)
    >>> parse_argus_rule("p(10, 60, 2)")
    PQ(p=10, q=60, n=2)
    """
    if not isinstance(text, str):
        raise TypeError(f"a tau-Argus rule must be a string, got {text!r}")
    if "|" in text:
        raise ValueError(f"{text!r} holds several rules (separated by |): use "
                         "parse_safety_rule")
    items = _items(text)
    if len(items) != 1:
        raise ValueError(f"expected one rule, got {len(items)} in {text!r}")
    name, args, src = items[0]
    if name in ("WGT", "MIS", "MAN"):
        raise ValueError(f"{src!r} is a setting, not a rule: use parse_safety_rule")
    rule = _build(name, args, src, weighted)
    if rule is None:
        raise ValueError(f"{src!r} is a placeholder (a 0 parameter) that sets no rule")
    return rule


def parse_safety_rule(text: str) -> SafetyRule:
    """A tau-Argus ``<SAFETYRULE>`` (rules separated by ``|``) as individual rules, holding
    rules and settings.

    Parameters
    ----------
    text : str
        E.g. ``"NK(2,75)|NK(0,0)|NK(1,50)|FREQ(3,10)"``.

    Returns
    -------
    SafetyRule
        ``.individual`` and ``.holding`` (lists of rules), the settings, and ``.rule``
        (all of them as one rule for :func:`~riskengine.magnitude.sensitivity.assess`).

    Examples
    --------
    >>> r = parse_safety_rule("NK(2,75)|NK(0,0)|NK(1,50)|FREQ(3,10)|WGT(0)")
    >>> r.individual, r.holding
    ([Dominance(n=2, k=75), Frequency(n=3, safety_range=10)], [Dominance(n=1, k=50)])
    >>> r.rule
    Max(Dominance(n=2, k=75), Frequency(n=3, safety_range=10), Holdings(Dominance(n=1, k=50)))
    """
    if not isinstance(text, str):
        raise TypeError(f"a tau-Argus safety rule must be a string, got {text!r}")
    if not text.strip():
        raise ValueError("the safety rule is empty: give at least one rule such as NK(3,70)")
    parts = text.split("|")
    if parts and not parts[-1].strip() and len(parts) > 1:
        parts = parts[:-1]          # tau-Argus accepts a trailing "|"
    items = []
    for part in parts:
        if not part.strip():
            raise ValueError(f"an empty rule between two '|' in {text!r}")
        got = _items(part)
        if len(got) != 1:
            raise ValueError(f"rules must be separated by '|': {part.strip()!r} in {text!r}")
        items.append(got[0])
    weighted = False
    for name, args, src in items:
        if name == "WGT":
            weighted = _flag(args, src)
    seen = {}
    out = SafetyRule(text=text)
    for name, args, src in items:
        k = seen.get(name, 0)
        if k >= _MAX[name]:
            raise ValueError(f"too many {name} rules in {text!r}: tau-Argus accepts at most "
                             f"{_MAX[name]}")
        seen[name] = k + 1
        if name == "WGT":
            continue
        if name == "MIS":
            out.missing_safe = _flag(args, src)
            continue
        if name == "MAN":
            out.manual_margin = _percent(_int(args[0], src, "the manual margin"), src,
                                         "the manual margin")
            continue
        rule = _build(name, args, src, weighted)
        if rule is None:
            continue
        if name in _HOLDING_FROM and k >= _HOLDING_FROM[name]:
            out.holding.append(rule)
        else:
            out.individual.append(rule)
    out.weighted = weighted
    return out


def _items(text: str) -> list:
    pos, out = 0, []
    s = text.strip()
    if not s:
        raise ValueError("empty rule")
    while pos < len(s):
        m = _TOKEN.match(s, pos)
        if not m:
            rest = s[pos:]
            if "(" not in rest:
                raise ValueError(f"a '(' is expected after the rule name in {rest!r} "
                                 "(e.g. NK(3,70))")
            if ")" not in rest:
                raise ValueError(f"a ')' is expected to close {rest!r}")
            raise ValueError(f"cannot read {rest!r} as a rule NAME(parameters)")
        name = m.group(1).upper()
        src = m.group(0).strip()
        if name not in _ARITY:
            raise ValueError(f"unknown rule {m.group(1)!r} in {src!r}; tau-Argus knows "
                             f"{', '.join(sorted(_ARITY))}")
        raw = m.group(2)
        args = [a.strip() for a in raw.split(",")] if raw.strip() else []
        if any(a == "" for a in args) or not args:
            raise ValueError(f"empty parameter in {src!r}")
        if len(args) not in _ARITY[name]:
            want = " or ".join(str(a) for a in _ARITY[name])
            raise ValueError(f"{name} takes {want} parameters, got {len(args)} in {src!r}")
        out.append((name, args, src))
        pos = m.end()
    return out


def _int(tok: str, src: str, what: str) -> int:
    if not re.fullmatch(r"[+-]?\d+", tok):
        raise ValueError(f"{what} must be a whole number, got {tok!r} in {src!r}")
    return int(tok)


def _percent(x, src, what):
    if not 0 <= x <= 100:
        raise ValueError(f"{what} must be a percentage in [0, 100], got {x} in {src!r}")
    return x


def _flag(args, src) -> bool:
    if args[0] not in ("0", "1"):
        raise ValueError(f"a 0 or a 1 is expected, got {args[0]!r} in {src!r}")
    return args[0] == "1"


def _build(name, args, src, weighted) -> Rule | None:
    if name == "NK":
        n = _int(args[0], src, "n")
        k = _int(args[1], src, "k")
        if n < 0:
            raise ValueError(f"n must be >= 0, got {n} in {src!r}")
        if n == 0 or k == 0:
            return None
        if not 0 < k < 100:
            raise ValueError(f"k must be a percentage in (0, 100), got {k} in {src!r}")
        return Dominance(n, k)
    if name == "P":
        p = _int(args[0], src, "p")
        q, n = 100, 1
        if len(args) == 2:
            n = _int(args[1], src, "n")
        elif len(args) == 3:
            q = _int(args[1], src, "q")
            n = _int(args[2], src, "n")
        if p < 0:
            raise ValueError(f"p must be >= 0, got {p} in {src!r}")
        if p == 0:
            return None
        if not 0 < q <= 100:
            raise ValueError(f"q must be a percentage in (0, 100], got {q} in {src!r}")
        if p > q:
            raise ValueError(f"p must not exceed q (tau-Argus CTable::SetPQRule), got p={p}, "
                             f"q={q} in {src!r}")
        if n < 1:
            raise ValueError(f"n (the intruders' coalition) must be >= 1, got {n} in {src!r}")
        return PPercent(p, n) if q == 100 else PQ(p, q, n)
    if name == "FREQ":
        mf = _int(args[0], src, "the minimum frequency")
        rng = _percent(_int(args[1], src, "the frequency safety range"), src,
                       "the frequency safety range")
        if mf < 0:
            raise ValueError(f"the minimum frequency must be >= 0, got {mf} in {src!r}")
        if mf <= 1:
            return None     # tau-Argus turns 0 into 1: no cell has fewer than 1 unit
        return Frequency(mf, safety_range=rng, weighted=weighted)
    if name == "ZERO":
        try:
            rng = float(args[0])
        except ValueError:
            raise ValueError(f"the zero safety range must be a number, got {args[0]!r} in "
                             f"{src!r}") from None
        if not rng > 0:
            raise ValueError(f"the zero safety range must be > 0, got {args[0]} in {src!r}")
        return Zero(rng)
    if name == "REQ":
        p1 = _percent(_int(args[0], src, "p1"), src, "p1")
        p2 = _percent(_int(args[1], src, "p2"), src, "p2")
        mf = _int(args[2], src, "the minimum frequency")
        rng = _percent(_int(args[3], src, "the safety margin"), src, "the safety margin")
        if mf < 0:
            raise ValueError(f"the minimum frequency must be >= 0, got {mf} in {src!r}")
        if p1 == 0 and p2 == 0 and mf == 0:
            return None
        return Request(p1, p2, mf, rng)
    raise AssertionError(name)
