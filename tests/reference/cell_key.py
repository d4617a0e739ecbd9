"""The cell key method from its definition: the lookup, and the posterior by enumerating
every original table in a box.

A p-table is ``{i: {j: p}}`` for i = 0..top: Pr(original i is published as j); an
original x above top is published as x + (j - top) with the top row's probabilities.
Lookup (tau-Argus, ``SetCellKeyValuesFreq``): the row's values in increasing j, each
owning the interval [cumulated p before it, cumulated p up to it) of [0, 1); the value
published is the one whose interval holds the cell key.  A cell key is the fractional
part of the sum of the record keys of the records in the cell; a total is the cell of
all the records of its cells.  Everything here is exact rational arithmetic
(``fractions.Fraction``) on the keys and the cumulated probabilities.

The posterior (DESIGN.md): every table in a box of cell values, weighed by the prior
times the product over the published entries of Pr(published | original); entries that
hold the same set of interior cells (the column totals of a one-row table) are one cell
with one key and count once.  Plain Python / NumPy / SciPy; no code shared with
riskengine.
"""

from __future__ import annotations

import math
from fractions import Fraction
from itertools import product

import numpy as np
from scipy.special import logsumexp

from .numerics import log_prior

# --- the p-table and the lookup ------------------------------------------------------------------


def prob(ptab: dict, x: int, y: int) -> float:
    """Pr(original x is published as y)."""
    top = max(ptab)
    r = min(x, top)
    return float(ptab[r].get(r + (y - x), 0.0))


def shifts(ptab: dict) -> tuple:
    """Smallest and largest published - original over every row."""
    top = max(ptab)
    v = [j - min(i, top) for i, row in ptab.items() for j, p in row.items() if p > 0]
    return min(v), max(v)


def lookup(ptab: dict, x: int, key: Fraction) -> int:
    """The published value of original x with cell key ``key`` (a Fraction in [0, 1))."""
    top = max(ptab)
    r = min(x, top)
    cum = Fraction(0)
    for j in sorted(ptab[r]):
        p = ptab[r][j]
        if p <= 0:
            continue
        cum += Fraction(p)
        if key < cum:
            return x + (j - r)
    # the cumulated floats may end a hair below 1: the last value owns the rest
    return x + (max(j for j, p in ptab[r].items() if p > 0) - r)


def cell_key(record_keys) -> Fraction:
    """Fractional part of the exact sum of the record keys (floats)."""
    s = sum((Fraction(float(k)) for k in record_keys), Fraction(0))
    return s - math.floor(s)


def protect_records(ptab: dict, cells: list, keys: list, shape: tuple, dims: tuple,
                    margins: list) -> tuple:
    """The published interior and totals of microdata ``cells`` (one index tuple per
    record) with record ``keys``: every entry from the records it holds."""
    counts = np.zeros(shape, np.int64)
    members = {}
    for r, c in enumerate(cells):
        counts[c] += 1
        members.setdefault(tuple(c), []).append(keys[r])

    def publish(index_set):
        ks = [k for c in index_set for k in members.get(c, [])]
        x = len(ks)
        return x if x == 0 else lookup(ptab, x, cell_key(ks))

    all_cells = list(product(*[range(n) for n in shape]))
    interior = np.zeros(shape, np.int64)
    for c in all_cells:
        interior[c] = publish([c])
    totals = {}
    for keep in margins:
        kept = [dims.index(d) for d in keep]
        tshape = tuple(shape[i] for i in kept)
        out = np.zeros(tshape, np.int64)
        for t in product(*[range(n) for n in tshape]):
            out[t] = publish([c for c in all_cells if tuple(c[i] for i in kept) == t])
        totals[tuple(keep)] = out
    return counts, interior, totals


# --- priors -------------------------------------------------------------------------------------


# --- the posterior by enumeration ---------------------------------------------------------------


# --- the likelihood integrated over the keys ---------------------------------------------------


def interval(ptab: dict, x: int, y: int):
    """``(lo, hi)``: the keys (Fractions) that publish original x as y, or None."""
    top = max(ptab)
    r = min(x, top)
    cum = Fraction(0)
    for j in sorted(ptab[r]):
        p = ptab[r][j]
        if p <= 0:
            continue
        lo, cum = cum, cum + Fraction(repr(float(p)))    # the decimal the p-table writes
        if x + (j - r) == y:
            return lo, (Fraction(1) if j == max(k for k, q in ptab[r].items() if q > 0)
                        else cum)
    return None


def _volume_below(s, alphas, lengths) -> Fraction:
    """Volume of {k in the box prod [alpha_c, alpha_c + p_c) : sum k < s}: inclusion and
    exclusion over the box's corners, (1/n!) sum_T (-1)^|T| (s - sum alpha - sum_T p)_+^n."""
    n = len(alphas)
    base = s - sum(alphas, Fraction(0))
    sums = {Fraction(0): 1}                     # subset sums of the lengths, signed counts
    for p in lengths:
        nxt = dict(sums)
        for v, c in sums.items():
            nxt[v + p] = nxt.get(v + p, 0) - c
        sums = nxt
    tot = Fraction(0)
    for v, c in sums.items():
        d = base - v
        if d > 0 and c:
            tot += c * d ** n
    return tot / math.factorial(n)


_VOL: dict = {}


def total_volume(cell_intervals, total_interval) -> Fraction:
    """Pr over the nonempty cells' keys (uniform, independent) that each lies in its
    interval and the fractional part of their sum lies in ``total_interval``: the exact
    volume, sum over the integer parts z of the sum."""
    key = (tuple(sorted(cell_intervals)), total_interval)
    if key in _VOL:
        return _VOL[key]
    lo_t, hi_t = total_interval
    if not cell_intervals:
        out = Fraction(1 if lo_t == 0 < hi_t else 0)
    else:
        alphas = [a for a, _ in cell_intervals]
        lengths = [b - a for a, b in cell_intervals]
        top = sum(b for _, b in cell_intervals)
        out = Fraction(0)
        for z in range(math.ceil(top) + 1):
            out += (_volume_below(z + hi_t, alphas, lengths)
                    - _volume_below(z + lo_t, alphas, lengths))
    _VOL[key] = out
    return out


def key_likelihood(ptab: dict, entries: list, x_of) -> float | None:
    """The likelihood of one table integrated over the keys when the entries holding
    several cells are disjoint (None otherwise): a cell outside every such entry weighs its
    p-table probability; each such entry, with its cells, weighs :func:`total_volume`.

    ``entries``: ``[(held cells, published)]`` counted once per set of cells;
    ``x_of(held) -> original``."""
    groups = [(h, y) for h, y in entries if len(h) > 1]
    for i, (h1, _) in enumerate(groups):
        for h2, _ in groups[i + 1:]:
            if h1 & h2:
                return None
    single = {next(iter(h)): y for h, y in entries if len(h) == 1}
    grouped = set().union(*[h for h, _ in groups]) if groups else set()
    like = 1.0
    for c, y in single.items():
        if c not in grouped:
            like *= prob(ptab, x_of(frozenset([c])), y)
    for h, yt in groups:
        ivs = []
        for c in h:
            xc = x_of(frozenset([c]))
            iv = interval(ptab, xc, single[c])
            if iv is None:
                return 0.0
            if xc > 0:
                ivs.append(iv)
        xt = x_of(h)
        jt = interval(ptab, xt, yt)
        if jt is None:
            return 0.0
        like *= float(total_volume(ivs, jt))
    return like


def posterior(ptab: dict, published, margins: dict, dims: tuple, spec: dict,
              keys: bool = False) -> dict:
    """The exact posterior over every table whose cells lie within the p-table's
    perturbations of their published values: the product likelihood, or (``keys=True``)
    the likelihood integrated over the keys (:func:`key_likelihood`; ``"keys": False`` in
    the result when the entries holding several cells cross and the product was used).

    Returns ``{"cells": {cell: {value: prob}}, "totals": {keep: {entry: {value: prob}}},
    "count": tables with positive weight, "log_z": log evidence, "keys": bool}``.
    """
    P = np.asarray(published, dtype=np.int64)
    vmin, vmax = shifts(ptab)
    lo, hi = np.maximum(P - vmax, 0), P - vmin
    axes = [np.arange(a, b + 1) for a, b in zip(lo.ravel(), hi.ravel())]
    T = np.array(np.meshgrid(*axes, indexing="ij")).reshape(P.size, -1).T.reshape((-1,) + P.shape)
    logw = log_prior(spec, T)
    # every published entry: the set of interior cells it holds, its published value and
    # its original value in each table of the box
    entries = [(frozenset([idx]), int(P[idx]), T[(slice(None), *idx)])
               for idx in np.ndindex(*P.shape)]
    sums = {}
    for keep, val in margins.items():
        kept = [dims.index(d) for d in keep]
        S = T.sum(axis=tuple(1 + i for i in range(len(dims)) if i not in kept))
        sums[keep] = S
        val = np.asarray(val)
        for t in np.ndindex(*val.shape):
            held = frozenset(c for c in np.ndindex(*P.shape) if tuple(c[i] for i in kept) == t)
            entries.append((held, int(val[t]), S[(slice(None), *t)]))
    counted = set()
    once = []
    for held, y, x in entries:
        if held in counted:
            continue                      # the same records: the same key, counted once
        counted.add(held)
        once.append((held, y, x))
    groups = [h for h, _, _ in once if len(h) > 1]
    integrate = keys and all(not (a & b) for i, a in enumerate(groups) for b in groups[i + 1:])
    if integrate:
        ll = np.empty(T.shape[0])
        pairs = [(h, y) for h, y, _ in once]
        cols = {h: x for h, _, x in once}
        for t in range(T.shape[0]):
            like = key_likelihood(ptab, pairs, lambda h, t=t: int(cols[h][t]))
            ll[t] = math.log(like) if like > 0 else -math.inf
        logw = logw + ll
    else:
        for held, y, x in once:
            xs = np.unique(x)
            with np.errstate(divide="ignore"):
                ll = np.log([prob(ptab, int(v), y) for v in xs])
            logw = logw + ll[np.searchsorted(xs, x)]
    ok = np.isfinite(logw)
    count = int(ok.sum())
    if count == 0:
        return {"cells": {}, "totals": {}, "count": 0, "log_z": -math.inf, "keys": integrate}
    log_z = float(logsumexp(logw[ok]))
    w = np.where(ok, np.exp(logw - log_z), 0.0)

    def pmf(values):
        xs, inv = np.unique(values, return_inverse=True)
        return dict(zip(xs.tolist(), np.bincount(inv.ravel(), weights=w).tolist()))

    cells = {idx: pmf(T[(slice(None), *idx)]) for idx in np.ndindex(*P.shape)}
    totals = {keep: {t: pmf(S[(slice(None), *t)]) for t in np.ndindex(*S.shape[1:])}
              for keep, S in sums.items()}
    return {"cells": cells, "totals": totals, "count": count, "log_z": log_z,
            "keys": integrate}
