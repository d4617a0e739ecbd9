"""``--rule``: the sensitivity rules of ``riskengine suppress`` / ``audit`` in their
command-line form (checked when the arguments are parsed, before the library loads)."""

from __future__ import annotations

import argparse

#: --rule NAME:NUMBERS -> (rule class of riskengine.magnitude.sensitivity, its parameters);
#: the library's own names for the rules (Rule.to_dict) are accepted too
_RULES = {"p": ("PPercent", ("p",)), "pq": ("PQ", ("p", "q")), "nk": ("Dominance", ("n", "k")),
          "freq": ("Frequency", ("n",))}
_RULE_ALIASES = {"p_percent": "p", "dominance": "nk", "frequency": "freq"}
RULE_SYNTAX = ("p:P (p-percent rule: the second largest contributor must not estimate the "
                "largest within P %, e.g. p:15) | pq:P,Q (pq rule: as p:P when every "
                "contribution is known within Q %, e.g. pq:15,50) | nk:N,K ((n,k)-dominance: "
                "the N largest must not exceed K % of the cell, e.g. nk:3,80) | freq:N[,R]"
                "[,zeros] (threshold rule: a cell of fewer than N units -- its count, or its "
                "number of contributors -- is sensitive, e.g. freq:3; R: the safety range, "
                "the protection in % of the cell value, at least 1, default 10; zeros: empty "
                "cells are sensitive too, e.g. freq:3,zeros or freq:3,20,zeros); repeatable: a "
                "cell is sensitive under any rule and needs the largest protection; a count "
                "table takes freq only")


def rule_spec(text: str) -> tuple:
    """``--rule``: ``(class name, parameters, text)``, checked without loading the library
    (a bad rule is an argument error, answered at once)."""
    name, sep, rest = text.partition(":")
    name = _RULE_ALIASES.get(name.strip().lower(), name.strip().lower())
    if name not in _RULES:
        raise argparse.ArgumentTypeError(f"unknown rule {text.partition(':')[0]!r} in "
                                         f"{text!r}; known: p:P, pq:P,Q, nk:N,K, freq:N[,R][,zeros]")
    cls, params = _RULES[name]
    vals = [v.strip() for v in rest.split(",")] if sep and rest.strip() else []
    if name == "freq":
        return cls, _freq_numbers(vals, text), text
    if len(vals) != len(params):
        raise argparse.ArgumentTypeError(
            f"rule {name} takes {len(params)} number{'s' if len(params) > 1 else ''} "
            f"({name}:{','.join(p.upper() for p in params)}), got {text!r}")
    nums = []
    for p, v in zip(params, vals):
        try:
            nums.append(int(v) if p == "n" else float(v))
        except ValueError:
            kind = "an integer" if p == "n" else "a number"
            raise argparse.ArgumentTypeError(f"rule {text!r}: {p} must be {kind}, got "
                                             f"{v!r}") from None
    return cls, tuple(nums), text


def _freq_numbers(vals: list, text: str) -> tuple:
    """``freq:N[,R][,zeros]`` -> ``(N, zeros, R)`` or ``(N, zeros)``: the positional
    parameters of ``Frequency(n, zeros, safety_range)``."""
    zeros = bool(vals) and vals[-1].lower() == "zeros"
    nums = vals[:-1] if zeros else vals
    if not 1 <= len(nums) <= 2:
        raise argparse.ArgumentTypeError(
            f"rule freq takes freq:N, freq:N,R or either with ',zeros' (N the threshold, R "
            f"the safety range in %), got {text!r}")
    try:
        n = int(nums[0])
    except ValueError:
        raise argparse.ArgumentTypeError(f"rule {text!r}: n must be an integer, got "
                                         f"{nums[0]!r}") from None
    if len(nums) == 1:
        return n, zeros
    try:
        r = float(nums[1])
    except ValueError:
        raise argparse.ArgumentTypeError(f"rule {text!r}: the safety range R must be a number "
                                         f"(or 'zeros' last), got {nums[1]!r}") from None
    return n, zeros, r


def is_frequency(spec) -> bool:
    """A ``--rule`` of the threshold rule (the one rule a count table takes)."""
    return spec[0] == "Frequency"


def sensitivity_rule(specs):
    """The rule of one or several ``--rule`` (several: ``Max``, a cell is sensitive under
    any of them and needs the largest protection)."""
    from ..magnitude import sensitivity as S
    rules = []
    for cls, nums, text in specs:
        try:
            rules.append(getattr(S, cls)(*nums))
        except (ValueError, TypeError) as exc:
            raise ValueError(f"--rule {text}: {exc}") from None
    return rules[0] if len(rules) == 1 else S.Max(*rules)

