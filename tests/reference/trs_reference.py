"""Targeted record swapping written from its description, with plain loops and dicts.

Independent of ``riskengine.mechanisms.swapping`` (imports nothing of riskengine): the
algorithm of sdcMicro's ``recordSwap`` (``src/recordSwap/recordSwap.cpp``) with the
choices riskengine documents (unbiased random roundings of the number of swaps; a donor
always lies in another area of the level; households processed in ascending id within
an area).  Records are dicts; households, areas and profiles are plain Python values.

``draws="keys"``: the random numbers of riskengine's protocol (one uniform for the total,
a permutation of the lowest areas and a uniform for their extra swaps, an
``(households, levels)`` array of Exp(1) for the donor orders, ``households`` Exp(1) for
the lowest-level draws), so the output is identical draw for draw.
``draws="sequential"``: the same distribution by other means: every weighted order and
every weighted draw without replacement made one household at a time (``rng.choice``
with probabilities proportional to the risks of those left).
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np


def _weighted_order(items, weight, rng):
    """A random order of ``items`` (weight > 0 only): each next one drawn with
    probability proportional to its weight among those left."""
    left = [h for h in items if weight[h] > 0]
    out = []
    while left:
        p = np.array([weight[h] for h in left], dtype=float)
        i = int(rng.choice(len(left), p=p / p.sum()))
        out.append(left.pop(i))
    return out


def must_levels(records, hierarchy, risk_variables, household, threshold):
    """``(ids, risk, level)``: households in ascending id, each one's risk per level
    (max over members of 1 / persons of its area with its risk values) and its level
    (first level with risk > threshold; ``len(hierarchy)``: none)."""
    L = len(hierarchy)
    ids = sorted({r[household] for r in records})
    counts = []
    for lev in range(L):
        c = Counter()
        for r in records:
            c[(tuple(r[g] for g in hierarchy[:lev + 1]),
               tuple(r[v] for v in risk_variables))] += 1
        counts.append(c)
    risk = {h: [0.0] * L for h in ids}
    for r in records:
        for lev in range(L):
            k = (tuple(r[g] for g in hierarchy[:lev + 1]), tuple(r[v] for v in risk_variables))
            risk[r[household]][lev] = max(risk[r[household]][lev], 1.0 / counts[lev][k])
    level = {}
    for h in ids:
        level[h] = L
        for lev in range(L):
            if risk[h][lev] > threshold:
                level[h] = lev
                break
    return ids, risk, level


def reference_swap(records, hierarchy, risk_variables, similar, swaprate, k_anonymity,
                   rng, household="hid", carry_along=(), risk_threshold=None,
                   draws="keys"):
    """``(new_records, swaps, fails)``: ``swaps`` a list of ``(household, donor, level,
    profile)``, ``fails`` of ``(household, level)`` (ids and level indices)."""
    L = len(hierarchy)
    threshold = 1.0 / k_anonymity if risk_threshold is None else risk_threshold
    ids, risk, level = must_levels(records, hierarchy, risk_variables, household, threshold)
    nh = len(ids)
    first = {}
    for r in records:
        first.setdefault(r[household], r)

    def area(h, lev):
        return tuple(first[h][g] for g in hierarchy[:lev + 1])

    # number of swaps, and its share of each lowest-level area
    x = swaprate * nh / 2
    total = math.floor(x) + (1 if rng.random() < x - math.floor(x) else 0)
    lows = sorted({area(h, L - 1) for h in ids})
    n_in = Counter(area(h, L - 1) for h in ids)
    quota = {a: (n_in[a] * total) // nh for a in lows}
    rem = {a: (n_in[a] * total) % nh for a in lows}
    perm = [lows[i] for i in rng.permutation(len(lows))]
    point = rng.random() * nh           # points point, point + nh, ... on the line of rems
    cum = 0
    for a in perm:
        lo, cum = cum, cum + rem[a]
        while point < cum:
            if point >= lo:
                quota[a] += 1
            point += nh

    # donor orders (per level) and the lowest-level draw keys
    if draws == "keys":
        E = rng.standard_exponential((nh, L))
        E2 = rng.standard_exponential(nh)
        donor_order = []
        for lev in range(L):
            key = {h: risk[h][lev] / E[i, lev] for i, h in enumerate(ids)}
            donor_order.append(sorted([h for h in ids if key[h] > 0],
                                      key=lambda h: (-key[h], ids.index(h))))
        sel_key = {h: risk[h][L - 1] / E2[i] for i, h in enumerate(ids)}
    elif draws == "sequential":
        donor_order = [_weighted_order(ids, {h: risk[h][lev] for h in ids}, rng)
                       for lev in range(L)]
    else:
        raise ValueError(draws)

    used, failed = set(), set()
    swaps, fails = [], []
    for lev in range(L):
        for a in sorted({area(h, lev) for h in ids}):
            here = [h for h in ids if area(h, lev) == a]
            todo = [h for h in here if level[h] == lev and h not in used and h not in failed]
            if lev == L - 1:
                already = sum(1 for s, d, lv, p in swaps if area(s, lev) == a)
                n_more = max(0, quota[a] - already) - len(todo)
                cands = [h for h in here if level[h] != lev and h not in used
                         and h not in failed and risk[h][lev] > 0]
                if n_more > 0:
                    if draws == "keys":
                        drawn = sorted(cands, key=lambda h: (-sel_key[h], ids.index(h)))
                    else:
                        drawn = _weighted_order(cands, {h: risk[h][lev] for h in cands}, rng)
                    todo += drawn[:n_more]
            for s in todo:
                found = None
                for p, prof in enumerate(similar):
                    for d in donor_order[lev]:
                        if d in used or area(d, lev) == a:
                            continue
                        if all(first[d][c] == first[s][c] for c in prof):
                            found = (d, p)
                            break
                    if found:
                        break
                if found is None:
                    failed.add(s)
                    fails.append((s, lev))
                else:
                    used.update((s, found[0]))
                    swaps.append((s, found[0], lev, found[1]))

    cols = list(hierarchy) + [c for c in carry_along if c not in hierarchy]
    partner = {}
    for s, d, lv, p in swaps:
        partner[s], partner[d] = d, s
    new = []
    for r in records:
        r2 = dict(r)
        h = r[household]
        if h in partner:
            for c in cols:
                r2[c] = first[partner[h]][c]
        new.append(r2)
    return new, swaps, fails
