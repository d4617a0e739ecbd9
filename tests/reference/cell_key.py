"""The cell key method from its definition: the lookup, and the posterior by enumerating
every original table in a box.

A p-table is ``{i: {j: p}}`` for i = 0..top: Pr(original i is published as j); an
original x above top is published as x + (j - top) with the top row's probabilities.
Lookup (tau-Argus, ``SetCellKeyValuesFreq``): the row's values in increasing j, each
owning the interval [cumulated p before it, cumulated p up to it) of [0, 1); the value
published is the one whose interval holds the cell key.  A cell key is the fractional
part of the sum of the record keys of the records in the cell; a total is the cell of
all the records of its cells.  Everything here is exact rational arithmetic
(``fractions.Fraction``) on the keys and the cumulated probabilities (the polytope volumes
of :func:`crossing_likelihood` come from qhull and are rounded onto their exact rational
grid).

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


# --- the likelihood integrated over the keys when totals cross ---------------------------------
#
# Entries that share cells (the rows, columns and grand total of a 2-D table) have keys that
# are not independent.  The integral over the nonempty cells' keys k (uniform on [0, 1)^m) of
# "every entry's key lies in its interval" is split on the grid 1/N of the interval ends:
# k_i = (g_i + r_i) / N, g_i in 0..N-1, r_i in [0, 1).  A cell's key lies in [a/N, b/N) iff
# a <= g_i < b; the key frac(sum_S k) of an entry holding the nonempty cells S lies in
# [A/N, B/N) iff (sum_S g + floor(sum_S r)) mod N is in A..B-1.  So the likelihood is
# (1/N^m) sum over the carry vectors c = (floor(sum_S r))_S of Pr_r(c) times the number of
# grid vectors g that put every entry in its interval with those carries.  Pr_r(c) is the
# volume of the polytope {0 <= r_i <= 1, c_S <= sum_S r <= c_S + 1}: qhull finds its vertices
# and its volume in floating point; the vertices, solutions of integer systems, are rational,
# and are recovered exactly (each checked: feasible, d independent tight constraints); with D
# the common denominator of the vertices the volume is a multiple of 1/(d! D^d) (a
# triangulation on the vertices), so rounding qhull's volume to that grid gives it exactly.
# The carry probabilities of one membership structure must then add up to exactly 1.

_CARRIES: dict = {}
_INTERVALS: dict = {}


def _grid_denominator(points: np.ndarray, A: np.ndarray, b: np.ndarray) -> int:
    """The common denominator of the vertices ``points`` (floats from qhull) of the polytope
    {A r <= b} (integer A, b), each recovered as an exact rational vertex and checked."""
    d = A.shape[1]
    D = 1
    for p in np.unique(np.round(points, 9), axis=0):
        q = math.lcm(*(Fraction(float(v)).limit_denominator(10_000).denominator for v in p))
        z = np.round(p * q).astype(np.int64)
        slack = A @ z - b * q                      # exact, integers: q (A v - b)
        tight = A[slack == 0]
        if (slack > 0).any() or np.abs(z - p * q).max() > 1e-6 * q or \
                np.linalg.matrix_rank(tight.astype(float)) < d:
            raise RuntimeError(f"qhull vertex {p} is not an exact vertex")
        D = math.lcm(D, q)
    return D


def _chebyshev(A: np.ndarray, b: np.ndarray):
    """A point deep inside {r : A r <= b} (the centre of the largest ball in it, radius at
    most 1), or None when that radius is below 1e-7 (no interior: volume 0; the polytopes
    here have small integer data, so one with interior has a far larger inradius, and a
    wrongly dropped one would break the exact sum of :func:`carry_probabilities`)."""
    from scipy.optimize import linprog

    d = A.shape[1]
    norms = np.linalg.norm(A, axis=1)
    lp = linprog(np.r_[np.zeros(d), -1.0], A_ub=np.c_[A, norms], b_ub=b,
                 bounds=[(None, None)] * d + [(0, 1)], method="highs")
    return lp.x[:d] if lp.status == 0 and lp.x[-1] >= 1e-7 else None


def _polytope_volume(A: np.ndarray, b: np.ndarray) -> Fraction:
    """Exact volume (a Fraction) of the bounded polytope {r : A r <= b}, integer A and b,
    or 0 when it has no interior."""
    from scipy.spatial import ConvexHull, HalfspaceIntersection

    x0 = _chebyshev(A, b)
    if x0 is None:
        return Fraction(0)
    d = A.shape[1]
    pts = HalfspaceIntersection(np.c_[A, -b].astype(float), x0).intersections
    vol = ConvexHull(pts).volume
    D = _grid_denominator(pts, A, b)
    K = math.factorial(d) * D ** d
    k = round(vol * K)
    if abs(vol * K - k) > 1e-6 * max(1.0, vol * K) or k <= 0:
        raise RuntimeError(f"qhull volume {vol} is not on the grid 1/{K}")
    return Fraction(k, K)


def carry_probabilities(sets: tuple, d: int) -> dict:
    """``{c: Pr}``: for r uniform on [0, 1)^d, the exact probability (Fraction) that
    floor(sum_{i in sets[t]} r_i) = c[t] for every t, over the carry vectors c of positive
    probability.  ``sets``: tuples of indices in 0..d-1, each of two or more.  The carry
    vectors are grown one set at a time (the largest sets last), a partial vector dropped
    as soon as its polytope has no interior (an LP); the full ones get their volume (qhull,
    made exact).  Cached by (d, sets)."""
    key = (d, sets)
    if key in _CARRIES:
        return _CARRIES[key]
    order = sorted(range(len(sets)), key=lambda t: len(sets[t]))
    M = np.zeros((len(sets), d), np.int64)
    for t, s in enumerate(sets):
        M[t, list(s)] = 1
    M = M[order]
    eye = np.eye(d, dtype=np.int64)
    box_A, box_b = np.r_[-eye, eye], np.r_[np.zeros(d, np.int64), np.ones(d, np.int64)]

    def system(c):
        k = len(c)
        c = np.array(c, np.int64)
        return np.r_[box_A, -M[:k], M[:k]], np.r_[box_b, -c, c + 1]

    partial = [()]
    for t in range(len(sets) - 1):
        partial = [c + (v,) for c in partial for v in range(len(sets[order[t]]))
                   if _chebyshev(*system(c + (v,))) is not None]
    out = {}
    for c in partial:
        for v in range(len(sets[order[-1]])):
            vol = _polytope_volume(*system(c + (v,)))
            if vol:
                full = [0] * len(sets)
                for t, ct in zip(order, c + (v,)):
                    full[t] = ct
                out[tuple(full)] = vol
    if sum(out.values()) != 1:
        raise RuntimeError(f"carry probabilities of {sets} add up to {sum(out.values())}")
    _CARRIES[key] = out
    return out


def crossing_likelihood(ptab: dict, entries: list, x_of) -> float:
    """The likelihood of one original table integrated exactly over the record keys, for
    any set of published entries, totals that share cells (rows, columns and grand total;
    nested or 3-D margins) included: the volume, in the unit cube of the nonempty cells'
    keys, of {every entry's key lies in the interval that publishes its original as its
    published value}.  A nonempty cell's key is its own; an entry's key is the fractional
    part of the sum of its nonempty cells' keys, 0 if they are all empty (then its interval
    must hold 0; with row 0 = {0: 1} that is: published 0).

    ``entries``: ``[(frozenset of interior cells held, published)]``, each set once;
    ``x_of(held) -> original`` (it is asked for single cells too).

    Method: the grid 1/N of the interval ends (N the least common denominator, at most
    1000, else ValueError); each key k_i = (g_i + r_i)/N; the likelihood is (1/N^m) sum over
    the carry vectors c of Pr_r(c) (:func:`carry_probabilities`, exact rational polytope
    volumes) times the number of g (brute force over the cells' grid boxes, with NumPy)
    that put every entry in its interval.  No Fourier transform, no lattice-point counts.

    Accuracy: exact (a Fraction, rounded once to float at the end): each polytope volume
    from qhull (floating point, ~1e-15) is rounded onto its exact rational grid 1/(d! D^d)
    (the vertices recovered and checked exactly), and the carry probabilities of a
    structure are checked to add up to exactly 1 (RuntimeError otherwise).  It equals the
    exact inclusion-exclusion :func:`key_likelihood` bit for bit where totals do not cross.

    Cost: the first table of each membership structure (which nonempty cells each entry
    holds; cached) pays the LPs and qhull calls of its carry vectors: a full 2 x 2 table
    (rows, columns, grand total) 20 carry vectors, ~0.1 s; a full 2 x 3 table 96, ~0.7 s;
    2 x 2 x 2 with two margins 128-208, ~2 s; a full 3 x 3 table 1071, ~25 s.  Each call
    then costs the grid count: ~0.5 ms (2 x 2), 1-10 ms (2 x 3, N = 10..20), 10-25 ms
    (2 x 2 x 2), ~2 s (3 x 3, N = 20).  The count merges equal partial sums cell by cell
    (:func:`_grid_counts`) and raises ValueError beyond ~2e7 states (memory)."""
    cells = sorted(set().union(*[h for h, _ in entries])) if entries else []
    nonempty = [c for c in cells if x_of(frozenset([c])) > 0]
    index = {c: i for i, c in enumerate(nonempty)}
    m = len(nonempty)
    ivs: dict = {}                      # nonempty cells held -> the intervals of the entries
    frozen = tuple((i, tuple(sorted(row.items()))) for i, row in sorted(ptab.items()))
    for held, y in entries:
        x = x_of(held)
        if (frozen, x, y) not in _INTERVALS:
            _INTERVALS[frozen, x, y] = interval(ptab, x, y)
        iv = _INTERVALS[frozen, x, y]
        if iv is None:
            return 0.0
        s = tuple(sorted(index[c] for c in held if c in index))
        if not s:
            if iv[0] != 0:                          # the key is 0
                return 0.0
            continue
        ivs.setdefault(s, []).append(iv)
    N = math.lcm(*[v.denominator for vs in ivs.values() for iv in vs for v in iv])
    if N > 1000:
        raise ValueError(f"the interval ends' common denominator {N} exceeds 1000")
    masks = {}
    for s, vs in ivs.items():
        mask = np.ones(N, bool)
        for lo, hi in vs:
            g = np.arange(N)
            mask &= (g >= int(lo * N)) & (g < int(hi * N))
        if not mask.any():
            return 0.0
        masks[s] = mask
    boxes = [np.flatnonzero(masks.get((i,), np.ones(N, bool))) for i in range(m)]
    sets = tuple(s for s in masks if len(s) > 1)
    involved = sorted(set().union(*sets)) if sets else []
    free = math.prod(len(boxes[i]) for i in range(m) if i not in involved)
    if not sets:
        return float(Fraction(free, N ** m))
    relabel = {c: j for j, c in enumerate(involved)}
    rsets = tuple(tuple(relabel[i] for i in s) for s in sets)
    C, nums, K = _carry_table(rsets, len(involved))
    counts = _grid_counts([boxes[i] for i in involved], rsets, [masks[s] for s in sets], N, C)
    total = sum(a * b for a, b in zip(nums, counts))                  # Python integers
    return float(Fraction(total * free, K * N ** m))


_MAX_ROWS = 20_000_000


def _grid_counts(boxes: list, sets: tuple, masks: list, N: int, C: np.ndarray) -> list:
    """For each carry vector (row of C), the number of grid vectors g (g_i in boxes[i])
    with (sum_{i in sets[t]} g_i + C[., t]) mod N in masks[t] for every t (Python ints).

    Brute force, one cell at a time, merging equal states: a state holds, for each set
    still open, the partial sum mod N, and for each completed set only which carries put it
    in its mask (a bit pattern), with the number of g that reach it."""
    if math.prod(b.size for b in boxes) >= 2 ** 62:
        raise ValueError("too many grid vectors for int64 counts")
    T = len(sets)
    last = [max(s) for s in sets]
    member = np.zeros((len(boxes), T), np.int64)
    for t, s in enumerate(sets):
        member[list(s), t] = 1
    radix = [max(N, 2 ** len(s)) for s in sets]
    if math.prod(radix) >= 2 ** 62:
        raise ValueError("too many states for this brute-force reference")
    place = np.array([math.prod(radix[:t]) for t in range(T)], np.int64)
    radix = np.array(radix, np.int64)

    def step(code, mult, i, box):
        S = (code[:, None] // place) % radix                               # (states, sets)
        S = (S[:, None, :] + (box[:, None] * member[i])[None]).reshape(-1, T)
        for t in range(T):
            if member[i, t]:
                S[:, t] %= N
            if last[t] == i:                   # set t complete: keep only its pattern
                pattern = np.zeros(S.shape[0], np.int64)
                for c in range(len(sets[t])):
                    pattern |= masks[t][(S[:, t] + c) % N].astype(np.int64) << c
                S[:, t] = pattern
        return _merge(S @ place, np.repeat(mult, box.size))

    code, mult = np.zeros(1, np.int64), np.ones(1, np.int64)
    for i, box in enumerate(boxes):
        chunk = max(1, _MAX_ROWS // (box.size * T))
        parts = [step(code[k:k + chunk], mult[k:k + chunk], i, box)
                 for k in range(0, code.size, chunk)]
        code, mult = _merge(np.concatenate([c for c, _ in parts]),
                            np.concatenate([w for _, w in parts]))
        if code.size * T > _MAX_ROWS:
            raise ValueError("too many states for this brute-force reference")
    S = (code[:, None] // place) % radix                                   # all patterns
    ok = np.ones((C.shape[0], S.shape[0]), bool)
    for t in range(T):
        ok &= ((S[None, :, t] >> C[:, t, None]) & 1).astype(bool)
    return (ok.astype(np.int64) @ mult).tolist()


def _merge(code: np.ndarray, weights: np.ndarray) -> tuple:
    """The distinct codes with positive total weight, and those totals (exact int64)."""
    code, inv = np.unique(code, return_inverse=True)
    out = np.zeros(code.size, np.int64)
    np.add.at(out, inv.ravel(), weights)
    keep = out > 0
    return code[keep], out[keep]


_TABLES: dict = {}


def _carry_table(sets: tuple, d: int) -> tuple:
    """:func:`carry_probabilities` as (carry vectors (array), numerators, common
    denominator K): Pr(c) = numerator / K, integers.  Cached."""
    key = (d, sets)
    if key not in _TABLES:
        probs = carry_probabilities(sets, d)
        K = math.lcm(*[p.denominator for p in probs.values()])
        _TABLES[key] = (np.array(list(probs), np.int64),
                        [p.numerator * (K // p.denominator) for p in probs.values()], K)
    return _TABLES[key]

def posterior(ptab: dict, published, margins: dict, dims: tuple, spec: dict,
              keys: bool = False, crossing: bool = False) -> dict:
    """The exact posterior over every table whose cells lie within the p-table's
    perturbations of their published values: the product likelihood, or (``keys=True``)
    the likelihood integrated over the keys (:func:`key_likelihood`; ``"keys": False`` in
    the result when the entries holding several cells cross and the product was used,
    unless ``crossing=True``: then those tables weigh :func:`crossing_likelihood` and
    ``"keys"`` is True).

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
    disjoint = all(not (a & b) for i, a in enumerate(groups) for b in groups[i + 1:])
    integrate = keys and (disjoint or crossing)
    if integrate:
        likelihood = key_likelihood if disjoint else crossing_likelihood
        ll = np.empty(T.shape[0])
        pairs = [(h, y) for h, y, _ in once]
        cols = {h: x for h, _, x in once}
        for t in range(T.shape[0]):
            like = likelihood(ptab, pairs, lambda h, t=t: int(cols[h][t]))
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
