"""The intruder's posterior of a tiny census publication by brute force, from the
definitions: every candidate microdata x every path of the swapping's random choices x
the record keys.

Independent of ``riskengine._census_exact``: the swapping is
:func:`tests.reference.trs_reference.reference_swap` with ``draws="sequential"`` (every
weighted order made one household at a time), run once for every path of its random
choices (depth first over a scripted generator: each ``choice`` branches over its options
of positive probability, each ``permutation`` over every order, each ``random`` over the
midpoints of a grid fine enough that no comparison the algorithm makes changes inside a
grid step); the cell key method's likelihood is
:func:`tests.reference.cell_key.crossing_likelihood` with every *record* as a cell of its
own (its key uniform; a published cell's key the fractional part of the sum of its
records' keys), not the finest cells; a record belongs to a published cell when each of
the cell's dims is at its total or equals the record's value.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

from .cell_key import crossing_likelihood
from .trs_reference import reference_swap


class _Script:
    """A generator that follows ``script`` (option indices) and records its options."""

    def __init__(self, script, uniforms):
        self.script, self.uniforms = script, list(uniforms)
        self.chosen, self.options = [], []
        self.prob = 1.0

    def _pick(self, options):
        t = len(self.chosen)
        i = self.script[t] if t < len(self.script) else 0
        self.chosen.append(i)
        self.options.append(len(options))
        value, p = options[i]
        self.prob *= p
        return value

    def random(self):
        return self._pick(self.uniforms.pop(0))

    def permutation(self, n):
        perms = list(itertools.permutations(range(n)))
        return list(self._pick([(list(q), 1.0 / len(perms)) for q in perms]))

    def choice(self, n, p):
        return self._pick([(i, float(p[i])) for i in range(n) if p[i] > 0])


def paths(program, uniforms):
    """``[(probability, result)]`` over every path of ``program(rng)``'s random choices;
    its ``k``-th ``rng.random()`` branches over ``uniforms[k]``, a list of ``(value,
    probability)``: one value inside each interval where the program's comparisons of
    that uniform do not change."""
    out, script = [], []
    while True:
        rng = _Script(script, uniforms)
        result = program(rng)
        out.append((rng.prob, result))
        k = len(rng.chosen) - 1
        while k >= 0 and rng.chosen[k] == rng.options[k] - 1:
            k -= 1
        if k < 0:
            return out
        script = rng.chosen[:k] + [rng.chosen[k] + 1]


def swap_outcomes(records, swap, household="hid"):
    """``{geography of every record (tuple): probability}`` of the swapping ``swap``
    (``reference_swap``'s keyword arguments) on ``records`` (list of dicts)."""
    hier = swap["hierarchy"]
    nh = len({r[household] for r in records})
    x = Fraction(swap["swaprate"]).limit_denominator(10_000) * nh / 2
    frac = float(x - math.floor(x))
    # the first uniform is compared with frac (the number of swaps rounded up below it);
    # the second, times nh, with the integer running sums of the areas' remainders
    uniforms = [[(v, p) for v, p in ((frac / 2, frac), ((1 + frac) / 2, 1 - frac)) if p > 0],
                [((i + 0.5) / nh, 1 / nh) for i in range(nh)]]

    def run(rng):
        new = reference_swap(records, rng=rng, household=household, draws="sequential",
                             **swap)[0]
        return tuple(tuple(r[g] for g in hier) for r in new)

    out: dict = {}
    for p, geo in paths(run, uniforms):
        out[geo] = out.get(geo, 0.0) + p
    return out


def _members(records, cells):
    """Per published cell (``{dim: code or "Total"}``): the records it holds."""
    return [frozenset(i for i, r in enumerate(records)
                      if all(v == "Total" or r[d] == v for d, v in c.items()))
            for c in cells]


def brute_posterior(candidates, prior, settings, cells, published, household="hid"):
    """The exact posterior by brute force.

    ``candidates``: lists of record dicts; ``prior``: their weights; ``settings``:
    ``[(swap kwargs or None, p-table dict or None, weight)]``; ``cells``: the published
    cells as ``{dim: code or "Total"}``; ``published``: their values.  Returns a dict of
    ``candidates`` (posterior), ``settings`` (posterior), ``pmf`` (per cell ``{original:
    probability}``) and ``real_one`` (per cell: Pr(original 1 and that person still in
    the cell after the swapping)).
    """
    W = [[0.0] * len(settings) for _ in candidates]
    ones = [0.0] * len(cells)
    for m, recs in enumerate(candidates):
        before = _members(recs, cells)
        for k, (swap, ptab, w) in enumerate(settings):
            if prior[m] == 0:
                continue
            geos = ([(None, 1.0)] if swap is None
                    else list(swap_outcomes(recs, swap, household).items()))
            for geo, p in geos:
                if swap is None:
                    new = recs
                else:
                    new = [dict(r, **dict(zip(swap["hierarchy"], g)))
                           for r, g in zip(recs, geo)]
                after = _members(new, cells)
                if ptab is None:
                    lik = float(all(len(a) == y for a, y in zip(after, published)))
                else:
                    lik = crossing_likelihood(ptab, list(zip(after, published)), len)
                jw = prior[m] * w * p * lik
                W[m][k] += jw
                for c in range(len(cells)):
                    if len(before[c]) == 1 and before[c] <= after[c]:
                        ones[c] += jw
    Z = sum(map(sum, W))
    post_m = [sum(row) / Z for row in W]
    post_s = [sum(W[m][k] for m in range(len(candidates))) / Z for k in range(len(settings))]
    pmf = []
    for c in range(len(cells)):
        d: dict = {}
        for m, recs in enumerate(candidates):
            n = len(_members(recs, [cells[c]])[0])
            d[n] = d.get(n, 0.0) + post_m[m]
        pmf.append(d)
    return {"candidates": post_m, "settings": post_s, "pmf": pmf,
            "real_one": [o / Z for o in ones]}
