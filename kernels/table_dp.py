"""Exact dynamic program over 2-D tables with (interval) margins and product-form weights.

Plain arrays in, plain arrays out.  The table has r rows and c columns; every
interior cell x_ij takes values ``lo[i, j] + w`` (w < W) with weight
``cw[i, j, w]`` (0 = impossible); every column total takes ``clo[j] + w`` with
weight ``kw[j, w]``; row totals and the grand total enter through their log-weights
(``start``): the weight of each vector of row totals (the start state).

State: the vector s of *remaining* row sums plus the partial sum p of the current
column.  Cells are added one at a time in column-major order; at the end of a column its
total is weighed and p reset; at the end only s = 0 survives.  Each stage t has its own
box of reachable states: per row ``[roff[t, i], roff[t, i] + rsize[t, i])`` intersected
with what the remaining cells can still hold, an interval ``[plo[t], phi[t]]`` for p
(what the column total still allows given the cells left in the column), and an interval
for sigma = sum(s) + p, the total of the columns not yet closed: within the sum of their
windows and within the grand total's window less what the closed columns can hold.  A
cell's step leaves sigma unchanged (its value leaves a row's remaining sum and enters p),
so sigma has one interval per column; with every total fixed it is one value and p
follows from s.

Only live states are stored.  The prefix q numbers the box's rows 0..r-2 in mixed radix
(row r-2 fastest); for each prefix the states follow by the last row's remaining sum sl,
then p, both ascending, keeping those whose m = sum(s) = pre(q) + sl leaves p a value in
both intervals: n(m) values from pa(m) on.  With C the running sum of n over m, state
(q, sl, p) is stored at ``off[q] + C[m] - C[pre(q) + roff_last] + p - pa(m)``, where
``off`` (:func:`_offsets`) is the running count over the prefixes, computed per stage
when a step needs it.  The slab on sigma halves the stored states of a rounded 8 x 6
table against its box alone.

Every step is a gather (each output state sums its inputs), parallel over the
prefixes; the backward pass accumulates the marginals per chunk of prefixes
(fixed chunking, so results do not depend on the number of threads).  One
forward pass gives the evidence (floats, rescaled per step, log scale kept)
and, optionally in the same loops, the exact number of tables with positive
weight: ``L`` 64-bit limbs added with carries, i.e. arithmetic modulo
2^(64 L), exact once the caller picks L with count < 2^(64 L) (any upper bound,
e.g. the product of the window sizes).  The backward pass gives every marginal.

Draws (:func:`sample`): the same forward pass, then backward sampling -- from the final
state, each step picks the state before it in proportion to the terms the backward pass
sums (forward message times the cell's or the column total's weight), one kernel call
per step for all draws, with uniforms from the caller's generator.  Stages not kept as
checkpoints are recomputed segment by segment exactly as for the marginals.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager

import numba as nb
import numpy as np
from numba import prange

from ._jit import njit, threads_for
from .checkpoints import checkpoint_plan

_NCHUNK = 128

# --- thread safety of the parallel kernels -----------------------------------------------
#: held around every call into a parallel kernel of the package (here, in
#: :mod:`kernels.halves` and in :mod:`kernels.multinomial_box`) when numba's threading
#: layer is not threadsafe.  numba's ``workqueue`` layer (its fallback on a machine without
#: OpenMP or TBB) aborts the process when two Python threads are inside parallel regions at
#: once (Monte Carlo chains run on threads, and each 2-D chain calls :func:`sample`); under
#: it the threads take turns here.  ``omp`` and ``tbb`` are threadsafe: nobody waits.
PARALLEL_LOCK = threading.RLock()
_THREADSAFE: list = []


def layer_threadsafe() -> bool:
    """Whether numba's active threading layer may be entered from several threads at once.

    Returns
    -------
    bool
        False under numba's ``workqueue`` layer (or when the layer cannot be told), True
        under ``omp`` and ``tbb``.  The layer is loaded as a first parallel call would
        load it (``NUMBA_THREADING_LAYER`` decides which) and is decided once a process.
    """
    if not _THREADSAFE:
        try:
            nb.get_num_threads()                 # loads the threading layer
            safe = nb.threading_layer() != "workqueue"
        except ValueError:                       # no layer loads (numba's error): be careful
            safe = False
        _THREADSAFE.append(safe)
    return _THREADSAFE[0]


@contextmanager
def parallel_region():
    """``with parallel_region():`` around a call into a parallel kernel: one thread at a
    time under a threading layer that is not threadsafe (:data:`PARALLEL_LOCK`), no wait
    otherwise."""
    if layer_threadsafe():
        yield
        return
    with PARALLEL_LOCK:
        yield


@njit
def _strides(rsize):
    """Mixed-radix strides of the prefix rows 0..r-2 (row r-2 fastest)."""
    R1 = rsize.shape[0] - 1
    st = np.ones(max(R1, 1), np.int64)
    for k in range(R1 - 2, -1, -1):
        st[k] = st[k + 1] * rsize[k + 1]
    return st


@njit(inline="always")
def _before(C, k):
    """Live states of m < mlo + k (C's running count, k clipped to its range)."""
    return C[min(max(k, 0), C.shape[0] - 1)]


@njit(inline="always")
def _line_start(base, si, pre, d, i, roff, st, C, mlo, off, k):
    """Where the states of the k-th live sum start (at their first live column sum) for
    the state whose row i holds ``si + d`` and the other rows the prefix ``base`` (their
    index in this box without row i), ``pre`` the prefix's sum before the shift."""
    R1 = roff.shape[0] - 1
    q = base
    if i != R1:
        q += (si + d - roff[i]) * st[i]
        pre += d
    return off[q] + C[k] - _before(C, pre + roff[R1] - mlo)


@njit
def _live_sl(pre, roff, rsize, R1, mlo, nm):
    """The last row's values whose m = pre + sl is live: ``range(first, end)``."""
    return max(roff[R1], mlo - pre), min(roff[R1] + rsize[R1], mlo + nm - pre)


@njit
def _decode(q, i, roff, rsize, st, roff_b, st_b):
    """Prefix q of a box (rows 0..r-2): the sum of its rows' values, row i's value (0 when
    i is not a prefix row) and the index in another box (``roff_b``, ``st_b``) of the same
    values of the rows other than i."""
    base = 0
    si = 0
    pre = 0
    for k in range(roff.shape[0] - 1):
        sk = roff[k] + (q // st[k]) % rsize[k]
        pre += sk
        if k == i:
            si = sk
        else:
            base += (sk - roff_b[k]) * st_b[k]
    return base, si, pre


@njit
def _offsets(roff, rsize, C, mlo):
    """``off[q]``: where prefix q's states start, for every prefix of the stage's box, and
    ``off[npre]``, the stage's number of stored states."""
    R1 = rsize.shape[0] - 1
    npre = 1
    for k in range(R1):
        npre *= rsize[k]
    off = np.zeros(npre + 1, np.int64)
    dig = np.zeros(max(R1, 1), np.int64)
    pre = 0
    for k in range(R1):
        pre += roff[k]
    a0 = roff[R1] - mlo
    a1 = roff[R1] + rsize[R1] - mlo
    for q in range(npre):
        off[q + 1] = off[q] + _before(C, pre + a1) - _before(C, pre + a0)
        k = R1 - 1                      # the next prefix: last digit up, with carries
        while k >= 0:
            dig[k] += 1
            pre += 1
            if dig[k] < rsize[k]:
                break
            pre -= dig[k]
            dig[k] = 0
            k -= 1
    return off


@njit(inline="always")
def _add_limbs(dst, o, src, oi, L):
    """dst[o, :] += src[oi, :] modulo 2^(64 L)."""
    if L == 1:
        dst[o, 0] += src[oi, 0]
        return
    if L == 2:
        y = src[oi, 0]
        s = dst[o, 0] + y
        dst[o, 0] = s
        dst[o, 1] += src[oi, 1] + (np.uint64(1) if s < y else np.uint64(0))
        return
    carry = np.uint64(0)
    for k in range(L):
        y = src[oi, k]
        s = dst[o, k] + y
        c1 = s < y
        s2 = s + carry
        c2 = s2 < carry
        dst[o, k] = s2
        carry = np.uint64(1) if (c1 or c2) else np.uint64(0)


@njit(parallel=True)
def _cell_fwd(a, ca, out, cout, i, roff_in, rsize_in, C_in, pa_in, mlo_in, off_in, plo_in,
              phi_in, roff_out, rsize_out, C_out, pa_out, mlo_out, off_out, lo, wts, ind,
              do_float, L, inv, pmax, fixed):
    """out[s, p] = inv sum_v w[v] a[s + v e_i, p - v]; cout likewise with 0/1 weights (no
    scaling); pmax[q] = largest output of prefix q.  Visits only live states.  ``fixed``:
    sigma is one value (every total fixed), so every live m has one p, sigma - m, and the
    state of m is stored at ``off[q] + (m - mlo) - (pre(q) + roff_last - mlo)``."""
    R1 = roff_out.shape[0] - 1
    st_in = _strides(rsize_in)
    st_out = _strides(rsize_out)
    npre = off_out.shape[0] - 1
    nm_in = pa_in.shape[0]
    nm_out = pa_out.shape[0]
    W = wts.shape[0]
    for q in prange(npre):
        base, si, pre = _decode(q, i, roff_out, rsize_out, st_out, roff_in, st_in)
        idx = off_out[q]
        lm = 0.0
        sl0, sl1 = _live_sl(pre, roff_out, rsize_out, R1, mlo_out, nm_out)
        for sl in range(sl0, sl1):
            ko = pre + sl - mlo_out
            n = C_out[ko + 1] - C_out[ko]
            p0 = pa_out[ko]
            if i == R1:
                si = sl
            # v keeps row i in the input box and m + v among the input's live m
            # and p - v in the input's interval for some p of the line
            wmin = max(roff_in[i] - si, mlo_in - pre - sl, p0 - phi_in) - lo
            wmax = min(roff_in[i] + rsize_in[i] - 1 - si, mlo_in + nm_in - 1 - pre - sl,
                       p0 + n - 1 - plo_in) - lo
            if fixed:                   # one p a line, every input m in range is live
                k0 = ko + mlo_out - mlo_in
                acc = 0.0
                for w in range(max(wmin, 0), min(wmax, W - 1) + 1):
                    v = lo + w
                    b = _line_start(base, si, pre, v, i, roff_in, st_in, C_in, mlo_in, off_in,
                                    k0 + v)
                    if do_float:
                        acc += wts[w] * a[b]
                    if L > 0 and ind[w]:
                        _add_limbs(cout, idx, ca, b, L)
                if do_float:
                    x = acc * inv
                    out[idx] = x
                    lm = max(lm, x)
                idx += 1
                continue
            for w in range(max(wmin, 0), min(wmax, W - 1) + 1):
                v = lo + w
                ki = ko + mlo_out + v - mlo_in
                if ki < 0 or ki >= nm_in:
                    continue
                ni = C_in[ki + 1] - C_in[ki]
                if ni == 0:
                    continue
                # the input state (row i's sum up by v, p - v) is stored at b + p
                b = (_line_start(base, si, pre, v, i, roff_in, st_in, C_in, mlo_in, off_in, ki)
                     - pa_in[ki] - v)
                p1 = max(p0, pa_in[ki] + v)
                p2 = min(p0 + n, pa_in[ki] + ni + v)
                if do_float:
                    wt = wts[w]
                    if wt != 0.0:
                        for p in range(p1, p2):
                            out[idx + p - p0] += wt * a[b + p]
                if L > 0 and ind[w]:
                    for p in range(p1, p2):
                        _add_limbs(cout, idx + p - p0, ca, b + p, L)
            if do_float:
                for k in range(idx, idx + n):
                    x = out[k] * inv
                    out[k] = x
                    lm = max(lm, x)
            idx += n
        if do_float:
            pmax[q] = lm


@njit(parallel=True)
def _cell_bwd(a, bout, marg, b_next, i, roff_in, rsize_in, C_in, pa_in, mlo_in, off_in,
              roff_out, rsize_out, C_out, pa_out, mlo_out, off_out, plo_out, phi_out, lo, wts,
              fixed):
    """bout[s, p] = sum_v w[v] b_next[s - v e_i, p + v]; marg[v] += a[s, p] w[v] b_next[..]
    (``fixed``: as in :func:`_cell_fwd`)."""
    R1 = roff_in.shape[0] - 1
    st_in = _strides(rsize_in)
    st_out = _strides(rsize_out)
    npre = off_in.shape[0] - 1
    nm_in = pa_in.shape[0]
    nm_out = pa_out.shape[0]
    W = wts.shape[0]
    nch = min(_NCHUNK, npre)
    loc = np.zeros((nch, W))
    for ch in prange(nch):
        for q in range(ch * npre // nch, (ch + 1) * npre // nch):
            base, si, pre = _decode(q, i, roff_in, rsize_in, st_in, roff_out, st_out)
            idx = off_in[q]
            sl0, sl1 = _live_sl(pre, roff_in, rsize_in, R1, mlo_in, nm_in)
            for sl in range(sl0, sl1):
                ki = pre + sl - mlo_in
                n = C_in[ki + 1] - C_in[ki]
                p0 = pa_in[ki]
                if i == R1:
                    si = sl
                # v keeps row i in the output box and m - v among the output's live m
                # and p + v in the output's interval for some p of the line
                wmin = max(si - (roff_out[i] + rsize_out[i] - 1),
                           pre + sl - mlo_out - nm_out + 1, plo_out - (p0 + n - 1))
                wmax = min(si - roff_out[i], pre + sl - mlo_out, phi_out - p0)
                if fixed:               # one p a line, every output m in range is live
                    k0 = ki + mlo_in - mlo_out
                    x = a[idx]
                    acc = 0.0
                    for w in range(max(wmin - lo, 0), min(wmax - lo, W - 1) + 1):
                        wt = wts[w]
                        if wt == 0.0:
                            continue
                        v = lo + w
                        b = _line_start(base, si, pre, -v, i, roff_out, st_out, C_out, mlo_out,
                                        off_out, k0 - v)
                        t = wt * b_next[b]
                        acc += t
                        if x != 0.0:
                            loc[ch, w] += x * t
                    bout[idx] = acc
                    idx += 1
                    continue
                for w in range(max(wmin - lo, 0), min(wmax - lo, W - 1) + 1):
                    wt = wts[w]
                    if wt == 0.0:
                        continue
                    v = lo + w
                    ko = ki + mlo_in - v - mlo_out
                    if ko < 0 or ko >= nm_out:
                        continue
                    no = C_out[ko + 1] - C_out[ko]
                    if no == 0:
                        continue
                    # the output state (row i's sum down by v, p + v) is stored at b + p
                    b = (_line_start(base, si, pre, -v, i, roff_out, st_out, C_out, mlo_out,
                                     off_out, ko) - pa_out[ko] + v)
                    p1 = max(p0, pa_out[ko] - v)
                    p2 = min(p0 + n, pa_out[ko] + no - v)
                    acc = 0.0
                    for p in range(p1, p2):
                        t = wt * b_next[b + p]
                        bout[idx + p - p0] += t
                        x = a[idx + p - p0]
                        if x != 0.0:
                            acc += x * t
                    loc[ch, w] += acc
                idx += n
    for ch in range(nch):
        for w in range(W):
            marg[w] += loc[ch, w]


@njit(parallel=True)
def _col_fwd(a, ca, out, cout, roff, rsize, C_in, pa_in, mlo_in, off_in, C_out, mlo_out,
             off_out, clo, kw, kind, do_float, L, inv, pmax):
    """out[s] = inv sum_p a[s, p] k(p): the column's total p weighed, p reset to 0 (the box
    of rows is the same before and after)."""
    R1 = roff.shape[0] - 1
    st = _strides(rsize)
    npre = off_in.shape[0] - 1
    nm_in = C_in.shape[0] - 1
    nm_out = C_out.shape[0] - 1
    W = kw.shape[0]
    for q in prange(npre):
        pre = _decode(q, -1, roff, rsize, st, roff, st)[2]
        idx = off_in[q]
        o0 = off_out[q] - _before(C_out, pre + roff[R1] - mlo_out)
        lm = 0.0
        sl0, sl1 = _live_sl(pre, roff, rsize, R1, mlo_in, nm_in)
        for sl in range(sl0, sl1):
            ki = pre + sl - mlo_in
            ni = C_in[ki + 1] - C_in[ki]
            ko = pre + sl - mlo_out
            if ko >= 0 and ko < nm_out:
                o = o0 + C_out[ko]
                p0 = pa_in[ki]
                acc = 0.0
                for p in range(max(p0, clo), min(p0 + ni, clo + W)):
                    if do_float:
                        acc += a[idx + p - p0] * kw[p - clo]
                    if L > 0 and kind[p - clo]:
                        _add_limbs(cout, o, ca, idx + p - p0, L)
                if do_float:
                    out[o] = acc * inv
                    lm = max(lm, acc * inv)
            idx += ni
        if do_float:
            pmax[q] = lm


@njit(parallel=True)
def _col_bwd(a, bout, marg, b_next, roff, rsize, C_in, pa_in, mlo_in, off_in, C_out, mlo_out,
             off_out, clo, kw):
    """bout[s, p] = k(p) b_next[s]; marg[p] += a[s, p] k(p) b_next[s]."""
    R1 = roff.shape[0] - 1
    st = _strides(rsize)
    npre = off_in.shape[0] - 1
    nm_in = C_in.shape[0] - 1
    nm_out = C_out.shape[0] - 1
    W = kw.shape[0]
    nch = min(_NCHUNK, npre)
    loc = np.zeros((nch, W))
    for ch in prange(nch):
        for q in range(ch * npre // nch, (ch + 1) * npre // nch):
            pre = _decode(q, -1, roff, rsize, st, roff, st)[2]
            idx = off_in[q]
            o0 = off_out[q] - _before(C_out, pre + roff[R1] - mlo_out)
            sl0, sl1 = _live_sl(pre, roff, rsize, R1, mlo_in, nm_in)
            for sl in range(sl0, sl1):
                ki = pre + sl - mlo_in
                ni = C_in[ki + 1] - C_in[ki]
                ko = pre + sl - mlo_out
                if ko >= 0 and ko < nm_out:
                    p0 = pa_in[ki]
                    bn = b_next[o0 + C_out[ko]]
                    for p in range(max(p0, clo), min(p0 + ni, clo + W)):
                        t = kw[p - clo] * bn
                        bout[idx + p - p0] = t
                        if t != 0.0:
                            loc[ch, p - clo] += a[idx + p - p0] * t
                idx += ni
    for ch in range(nch):
        for w in range(W):
            marg[w] += loc[ch, w]


@njit(parallel=True)
def _cell_draw(a, sq, ssl, sp, u, vals, i, roff_in, rsize_in, C_in, pa_in, mlo_in, off_in,
               plo_in, phi_in, roff_out, rsize_out, lo, wts):
    """Backward sampling through cell (i, .): each draw d in the state (prefix sq[d], last
    row ssl[d], column sum sp[d]) after the cell moves to the state before it, the cell's
    value v picked with probability proportional to w[v] a[s + v e_i, p - v] (the terms
    :func:`_cell_bwd` sums) by the uniform u[d]; vals[d] = v (lo - 1 when every term is
    0)."""
    R1 = roff_out.shape[0] - 1
    st_in = _strides(rsize_in)
    st_out = _strides(rsize_out)
    nm_in = pa_in.shape[0]
    W = wts.shape[0]
    for d in prange(sq.shape[0]):
        q = sq[d]
        sl = ssl[d]
        p = sp[d]
        base, si, pre = _decode(q, i, roff_out, rsize_out, st_out, roff_in, st_in)
        if i == R1:
            si = sl
        wmin = max(max(roff_in[i] - si, mlo_in - pre - sl, p - phi_in) - lo, 0)
        wmax = min(min(roff_in[i] + rsize_in[i] - 1 - si, mlo_in + nm_in - 1 - pre - sl,
                       p - plo_in) - lo, W - 1)
        tot = 0.0
        pick = -1
        for rep in range(2):            # the sum of the terms, then the pick
            target = u[d] * tot
            acc = 0.0
            pick = -1
            for w in range(wmin, wmax + 1):
                v = lo + w
                ki = pre + sl + v - mlo_in
                if ki < 0 or ki >= nm_in or wts[w] == 0.0:
                    continue
                ni = C_in[ki + 1] - C_in[ki]
                pin = p - v
                if pin < pa_in[ki] or pin >= pa_in[ki] + ni:
                    continue
                t = wts[w] * a[_line_start(base, si, pre, v, i, roff_in, st_in, C_in, mlo_in,
                                           off_in, ki) + pin - pa_in[ki]]
                if rep == 0:
                    tot += t
                elif t > 0.0:
                    pick = w
                    acc += t
                    if acc > target:
                        break
        if pick < 0:
            vals[d] = lo - 1
            continue
        v = lo + pick
        vals[d] = v
        if i == R1:
            sq[d] = base
            ssl[d] = sl + v
        else:
            sq[d] = base + (si + v - roff_in[i]) * st_in[i]
        sp[d] = p - v


@njit(parallel=True)
def _col_draw(a, sq, ssl, sp, u, vals, roff, rsize, C_in, pa_in, mlo_in, off_in, clo, kw):
    """Backward sampling through a column's total: each draw in the state (sq[d], ssl[d],
    p = 0) after the column closed picks its sum p with probability proportional to
    a[s, p] k(p) (the terms :func:`_col_bwd` sums) by the uniform u[d]; sp[d] = vals[d] = p
    (vals[d] = clo - 1 when every term is 0)."""
    R1 = roff.shape[0] - 1
    st = _strides(rsize)
    W = kw.shape[0]
    for d in prange(sq.shape[0]):
        q = sq[d]
        sl = ssl[d]
        pre = _decode(q, -1, roff, rsize, st, roff, st)[2]
        ki = pre + sl - mlo_in
        if ki < 0 or ki >= pa_in.shape[0]:
            vals[d] = clo - 1
            continue
        p0 = pa_in[ki]
        ni = C_in[ki + 1] - C_in[ki]
        at = off_in[q] + C_in[ki] - _before(C_in, pre + roff[R1] - mlo_in) - p0
        p1 = max(p0, clo)
        p2 = min(p0 + ni, clo + W)
        tot = 0.0
        for p in range(p1, p2):
            tot += a[at + p] * kw[p - clo]
        target = u[d] * tot
        acc = 0.0
        pick = clo - 1
        for p in range(p1, p2):
            t = a[at + p] * kw[p - clo]
            if t > 0.0:
                pick = p
                acc += t
                if acc > target:
                    break
        vals[d] = pick
        sp[d] = pick


@njit(parallel=True)
def _rescale(a):
    """Divide by the largest entry (if positive); return its log."""
    f = a.reshape(-1)
    m = 0.0
    for k in prange(f.shape[0]):
        m = max(m, f[k])
    if m > 0.0:
        inv = 1.0 / m
        for k in prange(f.shape[0]):
            f[k] *= inv
        return np.log(m)
    return 0.0


def boxes(row_lo_hi, lo, hi, clo, chi, glo, ghi):
    """Per-stage boxes of reachable states: steps, row offsets and sizes (stage, r),
    column-sum intervals plo, phi (stage,) and the intervals slo, shi (stage,) of sigma,
    the total of the columns not yet closed (grand total window ``glo..ghi``)."""
    r, c = lo.shape
    steps = []
    for j in range(c):
        for i in range(r):
            steps.append(("cell", i, j))
        steps.append(("col", -1, j))
    # remaining capacity of each row after each step: suffix sums of the row's cells
    fut_lo = np.zeros((r, c + 1), np.int64)
    fut_hi = np.zeros((r, c + 1), np.int64)
    for j in range(c - 1, -1, -1):
        fut_lo[:, j] = fut_lo[:, j + 1] + lo[:, j]
        fut_hi[:, j] = fut_hi[:, j + 1] + hi[:, j]
    # sigma in column j: the open columns' windows, and the grand total less the closed ones
    open_lo = np.concatenate([np.cumsum(clo[::-1])[::-1], [0]])
    open_hi = np.concatenate([np.cumsum(chi[::-1])[::-1], [0]])
    shut_lo = np.concatenate([[0], np.cumsum(clo)])
    shut_hi = np.concatenate([[0], np.cumsum(chi)])
    sig_lo = np.maximum(open_lo, glo - shut_hi)
    sig_hi = np.minimum(open_hi, ghi - shut_lo)
    rlo = np.maximum(row_lo_hi[:, 0], fut_lo[:, 0])
    rhi = np.minimum(row_lo_hi[:, 1], fut_hi[:, 0])
    roffs, rsizes, plos, phis, slos, shis = [], [], [], [], [], []
    cl, ch = 0, 0
    for kind, i, j in steps:
        roffs.append(rlo.copy())
        rsizes.append(np.maximum(rhi - rlo + 1, 0))
        plos.append(cl)
        phis.append(ch)
        slos.append(sig_lo[j])
        shis.append(sig_hi[j])
        if kind == "cell":
            rlo = rlo.copy()
            rhi = rhi.copy()
            rlo[i] = max(rlo[i] - hi[i, j], fut_lo[i, j + 1])
            rhi[i] = min(rhi[i] - lo[i, j], fut_hi[i, j + 1])
            rest_lo = lo[i + 1:, j].sum()
            rest_hi = hi[i + 1:, j].sum()
            cl = max(cl + lo[i, j], clo[j] - rest_hi)
            ch = min(ch + hi[i, j], chi[j] - rest_lo)
        else:
            cl, ch = 0, 0
    roffs.append(rlo.copy())
    rsizes.append(np.maximum(rhi - rlo + 1, 0))
    plos.append(0)
    phis.append(0)
    slos.append(sig_lo[c])
    shis.append(sig_hi[c])
    return (steps, np.array(roffs), np.array(rsizes), np.array(plos, np.int64),
            np.array(phis, np.int64), np.array(slos, np.int64), np.array(shis, np.int64))


def lines(roff, rsize, plo, phi, slo, shi):
    """One stage's lines: ``(mlo, C, pa)`` -- the least live m = sum(s) (p has a value in
    both intervals from m to the greatest live m, and none elsewhere), the running count C
    of the live values of p over those m (``C[k]``: those of m < mlo + k) and the first
    live value pa of p at each of them."""
    if not (rsize > 0).all() or plo > phi or slo > shi:
        return 0, np.zeros(1, np.int64), np.zeros(0, np.int64)
    # live m: p = sigma - m in both intervals for some sigma, an interval of m
    first = max(int(roff.sum()), slo - phi)
    last = min(int((roff + rsize - 1).sum()), shi - plo)
    m = first + np.arange(max(last - first + 1, 0))
    pa = np.maximum(plo, slo - m)
    n = np.minimum(phi, shi - m) - pa + 1
    return first, np.concatenate([[0], np.cumsum(n)]).astype(np.int64), pa.astype(np.int64)


def _box_sums(rsize):
    """How many states of the box have each sum m (offset from the least): float64."""
    cnt = np.ones(1)
    for k in rsize:
        if k <= 0:
            return np.zeros(0)
        cs = np.concatenate([[0.0], np.cumsum(np.concatenate([cnt, np.zeros(k - 1)]))])
        idx = np.arange(cnt.size + k - 1)
        cnt = cs[idx + 1] - cs[np.maximum(idx + 1 - k, 0)]
    return cnt


def _stored(roffs, rsizes, lns):
    """Stored (live) states per stage: the box's states by their sum m times the live
    values of p at each m (float64), from each stage's lines (:func:`lines`)."""
    per = np.zeros(len(lns))
    for t, (mlo, C, _) in enumerate(lns):
        n = np.diff(C).astype(float)
        if n.size:
            k = mlo - int(roffs[t].sum())     # the live m's place among the box's sums
            per[t] = float(_box_sums(rsizes[t])[k:k + n.size] @ n)
    return per


def _lines_of(roffs, rsizes, plos, phis, slos, shis):
    """Every stage's :func:`lines`."""
    return [lines(roffs[t], rsizes[t], plos[t], phis[t], slos[t], shis[t])
            for t in range(len(plos))]


def _stage_arrays(start, row_lo_hi, lo, cind, clo, kind):
    """Boxes (:func:`boxes`) from the possible values of the cells and column totals."""
    W = cind.shape[2]
    hi = lo + np.where(cind, np.arange(W), -1).max(axis=2)
    Wc = kind.shape[1]
    chi = clo + np.where(kind, np.arange(Wc), -1).max(axis=1)
    clo_live = clo + np.argmax(kind, axis=1)
    grand_lo, grand_lw = start[2], np.asarray(start[3])
    fin = np.flatnonzero(np.isfinite(grand_lw))
    glo, ghi = (grand_lo + fin[0], grand_lo + fin[-1]) if fin.size else (1, 0)
    return boxes(row_lo_hi, lo, hi, clo_live, chi, glo, ghi)


def stage_states(start, row_lo_hi, lo, cw, clo, kw):
    """Number of stored (live) states of every stage (the inputs of each step, and the
    end)."""
    _, roffs, rsizes, plos, phis, slos, shis = _stage_arrays(start, row_lo_hi, lo, cw > 0,
                                                             clo, kw > 0)
    return _stored(roffs, rsizes, _lines_of(roffs, rsizes, plos, phis, slos, shis))


def n_states(start, row_lo_hi, lo, cw, clo, kw):
    """(largest stage, sum over stages) of the number of stored states."""
    per = stage_states(start, row_lo_hi, lo, cw, clo, kw)
    return float(per.max()), float(per.sum())


def start_weights(roff, rsize, start, indicator: bool = False):
    """Weights of every vector of row totals in the box ``roff + [0, rsize)`` (mixed radix,
    last row fastest): the row totals' log-weights plus the grand total's (a function of
    their sum), from ``start = (row_lo (r,), row_lw (r, Wr), grand_lo, grand_lw (Wg,))``.
    Returns ``(weights, log scale, sums)``: ``exp(lw - scale)`` with the largest weight 1
    (``indicator``: 1.0 where the weight is positive, scale 0) and each vector's sum."""
    row_lo, row_lw, grand_lo, grand_lw = start
    lw = np.zeros(1)
    tot = np.zeros(1, np.int64)
    for i in range(len(rsize)):
        vals = roff[i] + np.arange(rsize[i])
        k = vals - row_lo[i]
        row = np.full(rsize[i], -np.inf)
        ok = (k >= 0) & (k < row_lw.shape[1])
        row[ok] = row_lw[i, k[ok]]
        lw = (lw[:, None] + row[None, :]).ravel()
        tot = (tot[:, None] + vals[None, :]).ravel()
    g = tot - grand_lo
    gok = (g >= 0) & (g < grand_lw.shape[0])
    glw = np.full(lw.size, -np.inf)
    glw[gok] = grand_lw[g[gok]]
    lw = lw + glw
    fin = np.isfinite(lw)
    if indicator:
        return fin.astype(float), 0.0, tot
    mx = lw[fin].max() if fin.any() else 0.0
    return np.where(fin, np.exp(lw - mx), 0.0), float(mx), tot


def run(start, row_lo_hi, lo, cw, cind, clo, kw, kind, limbs=0, posterior=True,
        max_states=2e8):
    """See :func:`_run` (small problems run on one thread)."""
    dp = _Stages(start, row_lo_hi, lo, cw, cind, clo, kw, kind, limbs, posterior)
    work = float(dp.per.sum()) * max(cw.shape[2], 1)
    # weights beyond the floats' range show in the result (log_z inf or NaN), which the
    # caller checks and answers by re-anchoring the weights: no warning on the way
    with parallel_region(), threads_for(work), \
            np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        return _run(dp, max_states)


class _Stages:
    """One table DP: its steps, the boxes and lines of every stage (:func:`boxes`,
    :func:`lines`), their stored sizes and the forward step.  The posterior
    (:func:`_run`) and the draws (:func:`_sample`) share the forward pass and the
    stage-by-stage walk back."""

    def __init__(self, start, row_lo_hi, lo, cw, cind, clo, kw, kind, limbs=0,
                 posterior=True):
        (self.steps, self.roffs, self.rsizes, self.plos, self.phis, self.slos,
         self.shis) = _stage_arrays(start, row_lo_hi, lo, cind, clo, kind)
        self.lines = _lines_of(self.roffs, self.rsizes, self.plos, self.phis, self.slos,
                               self.shis)
        self.per = _stored(self.roffs, self.rsizes, self.lines)
        self.start = start
        self.lo, self.cw, self.cind, self.clo, self.kw, self.kind = lo, cw, cind, clo, kw, kind
        self.L, self.posterior = int(limbs), posterior
        self.f1 = np.zeros(1)
        self.u1 = np.zeros((1, 1), np.uint64)
        self._off = {}
        self.start_live = None     # stage 0's live states in its box (set by the forward pass)

    def live(self) -> bool:
        """False when some stage has no live state (no table at all)."""
        return bool((self.per > 0).all()) and bool((self.roffs[-1] == 0).all())

    def layout(self, t):
        """Stage t's ``(roff, rsize, C, pa, mlo, off)``; the offsets of the last few
        stages asked for are kept."""
        if t not in self._off:
            if len(self._off) >= 4:
                self._off.pop(next(iter(self._off)))
            mlo, C, _ = self.lines[t]
            self._off[t] = _offsets(self.roffs[t], self.rsizes[t], C, mlo)
        mlo, C, pa = self.lines[t]
        return self.roffs[t], self.rsizes[t], C, pa, mlo, self._off[t]

    def size(self, t) -> int:
        """Stored states of stage t."""
        return int(self.layout(t)[5][-1])

    def step(self, t, a, ca, inv):
        """Stage t -> t + 1: (out, cout, pmax); ``ca`` None: no count."""
        kd, i, j = self.steps[t]
        L, posterior, u1 = self.L, self.posterior, self.u1
        ri, si_, Ci, pai, mi, oi = self.layout(t)
        ro, so, Co, pao, mo, oo = self.layout(t + 1)
        n_out = int(oo[-1])
        out = np.zeros(n_out) if posterior else self.f1
        cout = np.zeros((n_out, L), np.uint64) if L and ca is not None else u1
        pmax = np.zeros(oo.shape[0] - 1)
        Lt = L if ca is not None else 0
        if kd == "cell":
            _cell_fwd(a, ca if Lt else u1, out, cout, i, ri, si_, Ci, pai, mi, oi,
                      self.plos[t], self.phis[t], ro, so, Co, pao, mo, oo, self.lo[i, j],
                      self.cw[i, j], self.cind[i, j], posterior, Lt, inv, pmax,
                      self.slos[t] == self.shis[t])
        else:
            _col_fwd(a, ca if Lt else u1, out, cout, ri, si_, Ci, pai, mi, oi, Co, mo, oo,
                     self.clo[j], self.kw[j], self.kind[j], posterior, Lt, inv, pmax)
        return out, cout, pmax

    def start_states(self, indicator=False):
        """The start weights of stage 0's live states (and the log scale taken out), and
        the mask of the live ones in stage 0's box."""
        roff, rsize = self.roffs[0], self.rsizes[0]
        w, scale, tot = start_weights(roff, rsize, self.start, indicator)
        mlo, C, _ = self.lines[0]
        live = (tot >= mlo) & (tot < mlo + C.size - 1)
        return w[live], scale, live

    def forward(self, start, keep):
        """The forward pass: ``(fwd, invs, a, ca, inv, logscale, start_scale)`` -- the
        stages kept (``keep``, posterior only), each step's scale factor, the last stage
        (float and limbs), the scale factor still to apply to it, the log of those applied
        and the log scale taken out of the start weights (:func:`start_weights`)."""
        posterior, L, u1 = self.posterior, self.L, self.u1
        a = self.f1
        start_scale = 0.0
        if posterior:
            a, start_scale, self.start_live = self.start_states()
        ca = u1
        if L:
            ind = self.start_states(indicator=True)[0]
            ca = np.zeros((ind.size, L), np.uint64)
            ca[:, 0] = ind > 0
        # deferred rescaling: each step multiplies by 1 / (largest entry of its input)
        m = a.max() if posterior and a.size else 1.0
        inv = 1.0 / m if m > 0.0 else 1.0
        logscale = np.log(m) if m > 0.0 else 0.0
        fwd = {}
        invs = []
        for t in range(len(self.steps)):
            if posterior and keep[t]:
                fwd[t] = a
            invs.append(inv)
            out, cout, pmax = self.step(t, a, ca if L else None, inv)
            if posterior:
                m = pmax.max() if pmax.size else 0.0
                inv = 1.0 / m if m > 0.0 else 1.0
                logscale += np.log(m) if m > 0.0 else 0.0
            a, ca = out, (cout if L else u1)
        return fwd, invs, a, ca, inv, logscale, start_scale

    def back(self, fwd, invs):
        """The forward stages from the last step's input down to the first: yields
        ``(t, a_t)``; a stage not kept is recomputed, with the rest of its segment, from
        the checkpoint before it with the same scale factors (one segment held at a time)."""
        seg = {}
        for t in range(len(self.steps) - 1, -1, -1):
            if t not in fwd and t not in seg:
                t0 = max(k for k in fwd if k <= t)
                seg = {t0: fwd[t0]}
                x = fwd[t0]
                for u in range(t0, t):
                    x = self.step(u, x, None, invs[u])[0]
                    seg[u + 1] = x
                del x
            yield t, (fwd[t] if t in fwd else seg[t])
            seg.pop(t, None)


def _plan_memory(dp, max_states, posterior=True):
    """Stages to keep (:func:`checkpoint_plan`) within ``max_states`` less the backward
    pass's two messages (the largest stage each), or MemoryError when even the least peak
    passes ``max_states``."""
    per = dp.per
    keep, need = (checkpoint_plan(per, max_states - 2 * per.max()) if posterior
                  else (None, 2 * per.max()))
    if need > max_states:
        raise MemoryError(f"the exact table DP needs {need:.3g} stored states "
                          f"(largest stage {per.max():.3g}); the limit is {max_states:.3g}")
    return keep


def _run(dp, max_states=2e8):
    """Forward (and backward) pass over the table.

    Parameters of the DP (:class:`_Stages`)
    ---------------------------------------
    start : (row_lo (r,), row_lw (r, Wr), grand_lo, grand_lw (Wg,))
        Log-weights of the row totals and of the grand total: the weight of each start
        state (vector of row totals, :func:`start_weights`).
    row_lo_hi : int64 (r, 2)   range of each row total
    lo, cw, cind : int64 (r, c), float64 (r, c, W), bool (r, c, W)
        cell windows, weights and which values are possible (positive weight)
    clo, kw, kind : int64 (c,), float64 (c, Wc), bool (c, Wc)  the same for column totals
    limbs : int          0: no count; L > 0: count modulo 2^(64 L) in the forward pass
    posterior : bool     float weights, evidence and marginals (else count only)
    max_states : float   stored states allowed: every forward stage is kept when they fit,
                         else checkpoints (:func:`checkpoint_plan`); refuse (MemoryError)
                         when even that does not fit

    Returns
    -------
    dict: z, log_z (posterior; without the start weights' ``start_scale``, also returned),
    count (limbs > 0, Python int modulo 2^(64 L)); with
    posterior also normalised cell marginals (r, c, W), column-total marginals (c, Wc)
    and the start-state marginal over its box (roff0, rsize0).
    """
    posterior = dp.posterior
    keep = _plan_memory(dp, max_states, posterior)
    res = {"z": 0.0, "log_z": -np.inf, "count": 0, "start_scale": 0.0}
    if not dp.live():
        return res
    L = dp.L
    fwd, invs, a, ca, inv, logscale, res["start_scale"] = dp.forward(dp.start, keep)
    if L:
        res["count"] = sum(int(x) << (64 * k) for k, x in enumerate(ca[0]))
    if not posterior:
        return res
    z = a[0] * inv
    res.update(z=z, log_z=(np.log(z) + logscale) if z > 0 else -np.inf)
    if not z > 0.0:
        return res
    cw, kw = dp.cw, dp.kw
    b = np.ones(1)
    cell_m = np.zeros(cw.shape)
    col_m = np.zeros(kw.shape)
    for t, ft in dp.back(fwd, invs):
        kd, i, j = dp.steps[t]
        bout = np.zeros_like(ft)
        ri, si_, Ci, pai, mi, oi = dp.layout(t)
        ro, so, Co, pao, mo, oo = dp.layout(t + 1)
        if kd == "cell":
            _cell_bwd(ft, bout, cell_m[i, j], b, i, ri, si_, Ci, pai, mi, oi, ro, so, Co, pao,
                      mo, oo, dp.plos[t + 1], dp.phis[t + 1], dp.lo[i, j], cw[i, j],
                      dp.slos[t] == dp.shis[t])
        else:
            _col_bwd(ft, bout, col_m[j], b, ri, si_, Ci, pai, mi, oi, Co, mo, oo, dp.clo[j],
                     kw[j])
        del ft
        _rescale(bout)
        b = bout
    live = dp.start_live
    start = np.zeros(live.size)
    start[live] = fwd[0] * b
    res.update(cell=cell_m / cell_m.sum(axis=-1, keepdims=True),
               col=col_m / col_m.sum(axis=-1, keepdims=True),
               start=start / start.sum(), roff0=dp.roffs[0], rsize0=dp.rsizes[0])
    return res


def sample(start, row_lo_hi, lo, cw, cind, clo, kw, kind, n, rng, max_states=2e8):
    """``n`` independent tables from the exact posterior: forward filtering, backward
    sampling (small problems run on one thread).

    The forward pass of :func:`_run` (same stages, same checkpoints within
    ``max_states``), then every draw walks back from the final state: at each step it
    picks the state before it with probability proportional to the terms
    :func:`_cell_bwd` / :func:`_col_bwd` sum (forward message of the input state times
    the cell's or the column total's weight), all draws at once in one kernel call per
    step with uniforms from ``rng`` (numpy Generator): the draws depend only on its state.
    The first cell step picks the start state (the vector of row totals) from the
    initial weights.  Arguments as for :func:`_run`.

    Returns
    -------
    dict: z, log_z and ``tables`` int64 (n, r, c) (None when no table has positive weight).
    """
    dp = _Stages(start, row_lo_hi, lo, cw, cind, clo, kw, kind)
    work = float(dp.per.sum()) * max(cw.shape[2], 1)
    work = max(work, float(n) * len(dp.plos) * max(cw.shape[2], 1))
    with parallel_region(), threads_for(work), \
            np.errstate(over="ignore", divide="ignore", invalid="ignore"):   # as in run()
        return _sample(dp, int(n), rng, max_states)


def _sample(dp, n, rng, max_states):
    keep = _plan_memory(dp, max_states)
    res = {"z": 0.0, "log_z": -np.inf, "tables": None}
    if not dp.live():
        return res
    fwd, invs, a, _, inv, logscale, _ = dp.forward(dp.start, keep)
    z = a[0] * inv
    res.update(z=z, log_z=(np.log(z) + logscale) if z > 0 else -np.inf)
    if not z > 0.0:
        return res
    del a
    r, c = dp.lo.shape
    tables = np.zeros((n, r, c), np.int64)
    sq = np.zeros(n, np.int64)              # every draw's state: prefix, last row, column sum
    ssl = np.zeros(n, np.int64)
    sp = np.zeros(n, np.int64)
    vals = np.zeros(n, np.int64)
    for t, ft in dp.back(fwd, invs):
        kd, i, j = dp.steps[t]
        ri, si_, Ci, pai, mi, oi = dp.layout(t)
        if kd == "cell":
            _cell_draw(ft, sq, ssl, sp, rng.random(n), vals, i, ri, si_, Ci, pai, mi, oi,
                       dp.plos[t], dp.phis[t], dp.roffs[t + 1], dp.rsizes[t + 1], dp.lo[i, j],
                       dp.cw[i, j])
            if (vals < dp.lo[i, j]).any():
                raise RuntimeError(f"internal error: a draw reached a state of weight 0 at "
                                   f"cell ({i}, {j})")
            tables[:, i, j] = vals
        else:
            _col_draw(ft, sq, ssl, sp, rng.random(n), vals, ri, si_, Ci, pai, mi, oi,
                      dp.clo[j], dp.kw[j])
            if (vals < dp.clo[j]).any():
                raise RuntimeError(f"internal error: a draw reached a state of weight 0 at "
                                   f"column {j}'s total")
        del ft
    res["tables"] = tables
    return res
