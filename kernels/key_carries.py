"""The cell key method's likelihood when published totals share cells (rows and columns
that cross, nested or 3-D margins), integrated exactly over the keys.

Write each nonempty cell's key as ``(g + r) / N``: ``g`` its segment on the grid of the
p-table's interval ends (uniform on ``0 .. N-1``) and ``r`` the remainder (uniform on
``[0, 1)``), all independent.  A total's key then lies in segment ``(sum g + c) mod N``
with the carry ``c = floor(sum r)`` over its nonempty cells, so

    Pr(every entry published as it is) = sum_c P(c) N**-m #{g : every cell's g and every
    total's (sum g + c) mod N in its allowed segments},

where ``P`` is the joint law of the totals' carries: the volume of the polytope
``{0 <= r < 1, c <= sum_{i in t} r_i < c + 1 for every total t}``.  That law depends on
which cells each total holds and nothing else (not on the p-table or the counts).

:func:`carry_law` gets it exactly, in rationals, by counting lattice points: with the
remainders on the grid ``u / K`` (``u`` in ``0 .. K-1``) the number of ``u`` with carries
``c`` is the number of lattice points of the ``K``-th dilate of that (half-open)
polytope.  The constraint matrix of rows and columns is totally unimodular, so the
polytope's vertices are integral and that number is a polynomial in ``K`` of degree
``m`` (Ehrhart) whose leading coefficient is the volume: the ``m``-th finite difference of
the counts at ``K = 1 .. m + 1`` over ``m!``.  Counts at two more ``K`` check the degree
(a difference of order ``m + 1`` must vanish); where they do not (a structure that is not
unimodular) the counts are taken at even ``K`` (vertices with half-integer coordinates),
and beyond that the law is refused, not guessed.

:func:`likelihood` then sums over ``g`` by a chain over the cells that keeps, per
reachable vector of the open totals' segment sums ``mod N`` and of the finished totals'
sets of allowed carries, its share of the ``g`` (every term is non-negative: the sum has
a relative error of a few ``1e-16``).  Plain arrays in and out.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import numpy as np

__all__ = ["CarryLawError", "carry_law", "likelihood"]


class CarryLawError(ValueError):
    """The lattice counts are not a polynomial of the expected degree (a structure whose
    polytopes have vertices beyond half-integers), or the chain passed its limit."""


def _codes(states: np.ndarray, radix) -> np.ndarray:
    """Each row of ``states`` (column ``t`` in ``0 .. radix[t] - 1``) as a few int64
    (mixed radix over runs of columns whose product stays below 2**62): ``(S, c)``."""
    radix = np.asarray(radix, dtype=np.int64)
    cols, prod = [], 1.0
    code = np.zeros(states.shape[0], np.int64)
    mult = 1
    for t in range(states.shape[1]):
        if prod * float(radix[t]) >= 2.0 ** 62:
            cols.append(code)
            code, mult, prod = np.zeros(states.shape[0], np.int64), 1, 1.0
        code = code + states[:, t] * mult
        mult *= int(radix[t])
        prod *= float(radix[t])
    cols.append(code)
    return np.stack(cols, axis=1)


def _merged(states: np.ndarray, weights: np.ndarray, radix) -> tuple:
    """Equal rows of ``states`` as one, their weights added."""
    if states.shape[0] <= 1:
        return states, weights
    codes = _codes(states, radix)
    if codes.shape[1] == 1:
        _, first, inv = np.unique(codes[:, 0], return_index=True, return_inverse=True)
    else:
        _, first, inv = np.unique(codes, axis=0, return_index=True, return_inverse=True)
    return states[first], np.bincount(inv.ravel(), weights=weights, minlength=first.size)


def _counts(members: np.ndarray, K: int, max_states: int) -> dict:
    """``{carry vector: number of u in 0..K-1 (one per cell) with those carries}``: a
    chain over the cells whose state is each total's partial sum (its carry once its last
    cell is in)."""
    k, m = members.shape
    last = np.full(k, -1)
    for t in range(k):
        held = np.flatnonzero(members[t])
        last[t] = held[-1] if held.size else -1
    states = np.zeros((1, k), np.int64)
    weights = np.ones(1)                       # counts below 2**53: exact as floats
    u = np.arange(K, dtype=np.int64)
    size = members.sum(axis=1).astype(np.int64) * (K - 1) + 1     # each total's range
    if float(K) ** m >= 2.0 ** 53:
        raise CarryLawError(f"the carries' chain at K = {K} counts past 2**53")
    for i in range(m):
        if states.shape[0] * K > 4 * max_states:
            raise CarryLawError(f"the carries' chain would keep more than {max_states:,} "
                                "states")
        step = members[:, i].astype(np.int64)
        states = (states[:, None, :] + u[None, :, None] * step[None, None, :]).reshape(-1, k)
        weights = np.repeat(weights, K)
        closing = last == i
        if closing.any():
            states[:, closing] //= K
        states, weights = _merged(states, weights, size)
        if states.shape[0] > max_states:
            raise CarryLawError(f"the carries' chain keeps more than {max_states:,} states")
    return {tuple(int(v) for v in s): round(float(c)) for s, c in zip(states, weights)}


def carry_law(members, max_states: int = 2_000_000) -> tuple:
    """The exact joint law of the carries of sums of independent uniform remainders.

    Parameters
    ----------
    members : (k, m) bool array
        ``members[t, i]``: total ``t`` holds remainder ``i`` (each uniform on [0, 1)).
    max_states : int
        The chain's limit (:class:`CarryLawError` beyond).

    Returns
    -------
    carries : (n, k) int64 array
        Every carry vector ``floor(sum_{i in t} r_i)`` of positive probability.
    probs : (n,) float array
        Their probabilities (each the nearest double to an exact rational).
    exact : tuple of fractions.Fraction
        The probabilities as rationals; they sum to exactly 1.

    Laws are kept (read-only) for the process's later calls with the same ``members``.
    """
    members = np.ascontiguousarray(members, bool)
    return _carry_law(members.shape, members.tobytes(), int(max_states))


@functools.lru_cache(maxsize=256)
def _carry_law(shape: tuple, data: bytes, max_states: int) -> tuple:
    """:func:`carry_law` of the members ``np.frombuffer(data).reshape(shape)``."""
    members = np.frombuffer(data, bool).reshape(shape)
    k, m = members.shape
    if m == 0 or k == 0:
        return _frozen(np.zeros((1, k), np.int64), np.ones(1), [Fraction(1)])
    for period in (1, 2):
        Ks = [period * j for j in range(1, m + 4)]
        # the largest K first: a chain past its limit is refused before the others run
        tables = [_counts(members, K, max_states) for K in Ks[::-1]][::-1]
        keys = set().union(*tables)
        law, ok = {}, True
        for c in keys:
            f = [t.get(c, 0) for t in tables]
            # finite differences in j (K = period * j): order m gives m! * leading
            # coefficient (in j), orders m + 1 must vanish at j = 1 and 2
            d = [sum((-1) ** (n - j) * math.comb(n, j) * f[s + j] for j in range(n + 1))
                 for n, s in ((m, 0), (m + 1, 0), (m + 1, 1))]
            if d[1] != 0 or d[2] != 0:
                ok = False
                break
            if d[0]:
                law[c] = Fraction(d[0], math.factorial(m) * period ** m)
        if ok and sum(law.values()) == 1 and all(v > 0 for v in law.values()):
            cs = sorted(law)
            exact = [law[c] for c in cs]
            return _frozen(np.array(cs, np.int64).reshape(len(cs), k),
                           np.array([float(v) for v in exact]), exact)
    raise CarryLawError("the lattice counts of these totals' carries are not polynomials "
                        "in the grid (their polytopes have vertices beyond half-integers): "
                        "no exact law of the carries")


def _frozen(carries, probs, exact) -> tuple:
    carries.flags.writeable = False
    probs.flags.writeable = False
    return carries, probs, tuple(exact)


def likelihood(N: int, cell_ok, total_ok, members, carries, probs,
               max_states: int = 0, memo: dict | None = None) -> float:
    """Pr(every nonempty cell's key and every total's key in its allowed segments).

    A chain over the cells keeps, per reachable vector of the totals' segment sums
    ``mod N``, the share of the cells' segments that reach it; once a total has all its
    cells, its sum is replaced by the set of its carries that put its key in an allowed
    segment (a bit mask; vectors whose mask is empty are dropped), so finished totals
    merge states instead of multiplying them.  The last step weighs each vector of masks
    by the carries' law.

    Parameters
    ----------
    N : int
        The grid: segment ``s`` is ``[s / N, (s + 1) / N)``.
    cell_ok : (m, N) bool array
        The segments each nonempty cell's key may lie in.
    total_ok : (k, N) bool array
        The segments each total's key may lie in (totals holding two cells or more).
    members : (k, m) bool array
        ``members[t, i]``: total ``t`` holds cell ``i``.
    carries, probs
        The joint law of the totals' carries (:func:`carry_law` of ``members``).
    max_states : int
        Refuse (:class:`CarryLawError`) when the chain would keep more rows (0: no
        limit).
    memo : dict, optional
        The carries' weight of each vector of masks already met (kept across calls with
        the same ``members`` and law: tables of one pattern of nonempty cells share most
        of their final mask vectors).

    Returns
    -------
    float
        The probability (0 when no keys publish the entries as they are).
    """
    cell_ok = np.asarray(cell_ok, bool)
    total_ok = np.asarray(total_ok, bool)
    members = np.asarray(members, bool)
    m = cell_ok.shape[0]
    k = total_ok.shape[0]
    if k == 0:                                 # the cells' keys are independent
        return float(np.prod(cell_ok.sum(axis=1) / N))
    order = _order(members)
    cell_ok, members = cell_ok[order], members[:, order]
    size = members.sum(axis=1).astype(np.int64)           # a total's carries: 0 .. size-1
    if np.any(size > 62):
        raise CarryLawError("a total of more than 62 nonempty cells")
    last = np.array([np.flatnonzero(members[t])[-1] for t in range(k)], np.int64)
    # masks[t, s]: the carries c of total t with (s + c) mod N an allowed segment
    c = np.arange(int(size.max()))
    hit = total_ok[np.arange(k)[:, None, None],
                   (np.arange(N)[None, :, None] + c[None, None, :]) % N]
    hit &= c[None, None, :] < size[:, None, None]
    masks = (hit.astype(np.int64) << c[None, None, :]).sum(axis=2)          # (k, N)
    radix = np.maximum(np.int64(N), np.int64(1) << size)
    states = np.zeros((1, k), np.int64)
    weights = np.ones(1)
    limit = max_states or np.inf
    for i in range(m):
        seg = np.flatnonzero(cell_ok[i])
        if seg.size == 0:
            return 0.0
        step = members[:, i].astype(np.int64)
        closing = np.flatnonzero(last == i)
        # the cell's segments a batch at a time (each batch's rows merged into the rest),
        # so no more than about ``limit`` rows are held before a merge
        per = int(max(1, min(seg.size, limit // max(states.shape[0], 1))))
        acc_s, acc_w = states[:0], weights[:0]
        for at in range(0, seg.size, per):
            g = seg[at:at + per]
            st = (states[:, None, :] + g[None, :, None] * step[None, None, :]).reshape(-1, k)
            st[:, members[:, i]] %= N          # (a finished total's mask is left alone)
            w = np.repeat(weights / N, g.size)
            for t in closing:
                st[:, t] = masks[t, st[:, t]]
                keep = st[:, t] != 0
                st, w = st[keep], w[keep]
            acc_s, acc_w = _merged(np.concatenate([acc_s, st]), np.concatenate([acc_w, w]),
                                   radix)
            if acc_s.shape[0] > limit:
                raise CarryLawError(f"the keys' chain would keep more than {max_states:,} "
                                    "segment sums")
        states, weights = acc_s, acc_w
        if states.shape[0] == 0:
            return 0.0
    codes = _codes(states, radix)
    if memo is None or codes.shape[1] != 1:
        return float(weights @ _mask_weights(states, carries, probs))
    codes = codes[:, 0].tolist()
    vals = np.array([memo.get(c, np.nan) for c in codes])
    new = np.flatnonzero(np.isnan(vals))
    if new.size:
        vals[new] = _mask_weights(states[new], carries, probs)
        memo.update(zip((codes[i] for i in new), vals[new].tolist()))
    return float(weights @ vals)


def _order(members) -> np.ndarray:
    """An order of the cells that keeps few totals open (begun, not finished): each step
    takes the cell after which the fewest are open (a column of a 2 x C table finishes
    before the next begins)."""
    k, m = members.shape
    left = members.sum(axis=1)
    begun = np.zeros(k, bool)
    done = np.zeros(m, bool)
    order = []
    for _ in range(m):
        best, pick = None, -1
        for i in np.flatnonzero(~done):
            rest = left - members[:, i]
            n_open = int(np.sum((begun | members[:, i]) & (rest > 0)))
            if best is None or n_open < best:
                best, pick = n_open, int(i)
        order.append(pick)
        done[pick] = True
        begun |= members[:, pick]
        left = left - members[:, pick]
    return np.array(order, np.int64)


def _mask_weights(states, carries, probs) -> np.ndarray:
    """Per row of finished totals' masks, the probability that the carries fall in them."""
    bits = ((states[:, None, :] >> carries[None, :, :]) & 1).all(axis=2)   # (S, n)
    return bits.astype(float) @ probs
