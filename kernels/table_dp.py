"""Exact dynamic program over 2-D tables with (interval) margins and product-form weights.

Plain arrays in, plain arrays out.  The table has r rows and c columns; every
interior cell x_ij takes values ``lo[i, j] + w`` (w < W) with weight
``cw[i, j, w]`` (0 = impossible); every column total takes ``clo[j] + w`` with
weight ``kw[j, w]``; row totals and the grand total enter through their log-weights
(``start``): the weight of each vector of row totals (the start state).

State: the vector of *remaining* row sums s plus the partial sum p of the
current column.  Cells are added one at a time in column-major order; at the
end of a column its total is weighed and p reset; at the end only s = 0
survives.  Each stage t has its own box of reachable states: per row
``[roff[t, i], roff[t, i] + rsize[t, i])`` intersected with what the remaining
cells can still hold, and an interval ``[plo[t], phi[t]]`` for p (what the
column total still allows given the cells left in the column).  Stored layout:
rows 0..r-2 in mixed radix (the prefix), then one line per prefix -- the last
row's remaining sum, times the p axis.  ``derived`` (every total fixed) has no
separate p axis: p is the start-of-column remaining total minus the sum of s, so
the line is indexed by p (its interval) and the last row's sum is implied; only
these live states are stored and visited (every step only takes the cell values
that keep p inside the next interval, so the last cell of a column is forced).

Every step is a gather (each output state sums its inputs), parallel over the
output states; the backward pass accumulates the marginals per chunk of states
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
def _strides(size):
    r = size.shape[0]
    st = np.ones(r, np.int64)
    for k in range(r - 2, -1, -1):
        st[k] = st[k + 1] * size[k + 1]
    return st


@njit
def _add_limbs(dst, o, cc, src, oi, ci, L):
    """dst[o, cc, :] += src[oi, ci, :] modulo 2^(64 L)."""
    if L == 1:
        dst[o, cc, 0] += src[oi, ci, 0]
        return
    carry = np.uint64(0)
    for k in range(L):
        y = src[oi, ci, k]
        s = dst[o, cc, k] + y
        c1 = s < y
        s2 = s + carry
        c2 = s2 < carry
        dst[o, cc, k] = s2
        carry = np.uint64(1) if (c1 or c2) else np.uint64(0)


@njit
def _last_range(roff, rsize, derived, start_sum, pre_tot, plo, phi):
    """Values of the last row's remaining sum in the box (derived: with p in [plo, phi])."""
    R1 = rsize.shape[0] - 1
    lo_l = roff[R1]
    hi_l = roff[R1] + rsize[R1] - 1
    if derived:
        lo_l = max(lo_l, start_sum - pre_tot - phi)
        hi_l = min(hi_l, start_sum - pre_tot - plo)
    return lo_l, hi_l


@njit
def _layout(rsize, derived, plo, phi):
    """Strides of rows 0..r-2 (the prefix), number of prefixes, stored line length:
    the last row's box (or, derived, the column-sum interval, which implies it)."""
    R1 = rsize.shape[0] - 1
    st = np.ones(R1, np.int64)
    for k in range(R1 - 2, -1, -1):
        st[k] = st[k + 1] * rsize[k + 1]
    npre = st[0] * rsize[0] if R1 > 0 else 1
    nl = phi - plo + 1 if derived else rsize[R1]
    return st, npre, nl


@njit(parallel=True)
def _cell_fwd(a, ca, out, cout, i, roff_in, rsize_in, roff_out, rsize_out, coff_in, coff_out,
              lo, wts, ind, derived, start_sum, plo_in, phi_in, plo_out, phi_out, do_float, L,
              inv, pmax):
    """out[s, p] = inv sum_v w[v] a[s + v e_i, p - v]; cout likewise with 0/1 weights (no
    scaling); pmax[q] = largest output of prefix q.  Loops over lines along the last
    row's axis, visiting only live states."""
    nc_out = out.shape[1] if do_float else cout.shape[1]
    nc_in = a.shape[1] if do_float else ca.shape[1]
    R1 = rsize_in.shape[0] - 1
    st_in, _, nl_in = _layout(rsize_in, derived, plo_in, phi_in)
    st_out, npre, nl_out = _layout(rsize_out, derived, plo_out, phi_out)
    W = wts.shape[0]
    for q in prange(npre):
        lm = 0.0
        base = 0
        si = 0
        pre = 0
        for k in range(R1):
            sk = roff_out[k] + (q // st_out[k]) % rsize_out[k]
            pre += sk
            if k == i:
                si = sk
            else:
                base += (sk - roff_in[k]) * st_in[k]
        lo_l, hi_l = _last_range(roff_out, rsize_out, derived, start_sum, pre, plo_out, phi_out)
        for sl in range(lo_l, hi_l + 1):
            p = start_sum - pre - sl
            idx = q * nl_out + (p - plo_out if derived else sl - roff_out[R1])
            if i == R1:
                si = sl
            vmin = roff_in[i] - si
            vmax = roff_in[i] + rsize_in[i] - 1 - si
            if derived:
                vmin = max(vmin, p - phi_in)
                vmax = min(vmax, p - plo_in)
            wmin = max(vmin - lo, 0)
            wmax = min(vmax - lo, W - 1)
            for cc in range(nc_out):
                c = coff_out + cc
                w0, w1 = wmin, wmax
                if not derived:
                    w0 = max(w0, c - coff_in - nc_in + 1 - lo)
                    w1 = min(w1, c - coff_in - lo)
                if do_float:
                    acc = 0.0
                    for w in range(w0, w1 + 1):
                        v = lo + w
                        oi = _in_index(base, si, v, sl, p, i, R1, roff_in, st_in, nl_in, plo_in,
                                       derived)
                        ci = 0 if derived else c - v - coff_in
                        acc += wts[w] * a[oi, ci]
                    acc *= inv
                    out[idx, cc] = acc
                    lm = max(lm, acc)
                carry = 0
                for k in range(L):          # limb by limb, counting the carries
                    s = np.uint64(carry)
                    carry = 0
                    for w in range(w0, w1 + 1):
                        if ind[w]:
                            v = lo + w
                            oi = _in_index(base, si, v, sl, p, i, R1, roff_in, st_in, nl_in,
                                           plo_in, derived)
                            ci = 0 if derived else c - v - coff_in
                            y = ca[oi, ci, k]
                            s += y
                            if s < y:
                                carry += 1
                    cout[idx, cc, k] = s
        if do_float:
            pmax[q] = lm


@njit(inline="always")
def _in_index(base, si, v, sl, p, i, R1, roff_in, st_in, nl_in, plo_in, derived):
    """Stored index of the state before cell (i, .) took value v (output state: prefix
    partial index base, row i at si, last row at sl, column sum p)."""
    if i == R1:
        q = base
        sli = sl + v
    else:
        q = base + (si + v - roff_in[i]) * st_in[i]
        sli = sl
    return q * nl_in + (p - v - plo_in if derived else sli - roff_in[R1])


@njit(inline="always")
def _out_index(base, si, v, sl, p, i, R1, roff_out, st_out, nl_out, plo_out, derived):
    """Stored index of the state after cell (i, .) takes value v from (si, sl, p)."""
    if i == R1:
        q = base
        slo = sl - v
    else:
        q = base + (si - v - roff_out[i]) * st_out[i]
        slo = sl
    return q * nl_out + (p + v - plo_out if derived else slo - roff_out[R1])


@njit(parallel=True)
def _cell_bwd(a, bout, marg, b_next, i, roff_in, rsize_in, roff_out, rsize_out, coff_in,
              coff_out, lo, wts, derived, start_sum, plo_in, phi_in, plo_out, phi_out):
    """bout[s, p] = sum_v w[v] b_next[s - v e_i, p + v]; marg[v] += a[s, p] w[v] b_next[..]."""
    nc_in = a.shape[1]
    nc_out = b_next.shape[1]
    R1 = rsize_in.shape[0] - 1
    st_in, npre, nl_in = _layout(rsize_in, derived, plo_in, phi_in)
    st_out, _, nl_out = _layout(rsize_out, derived, plo_out, phi_out)
    W = wts.shape[0]
    nch = min(_NCHUNK, npre)
    loc = np.zeros((nch, W))
    for ch in prange(nch):
        for q in range(ch * npre // nch, (ch + 1) * npre // nch):
            base = 0
            si = 0
            pre = 0
            for k in range(R1):
                sk = roff_in[k] + (q // st_in[k]) % rsize_in[k]
                pre += sk
                if k == i:
                    si = sk
                else:
                    base += (sk - roff_out[k]) * st_out[k]
            lo_l, hi_l = _last_range(roff_in, rsize_in, derived, start_sum, pre, plo_in, phi_in)
            for sl in range(lo_l, hi_l + 1):
                p = start_sum - pre - sl
                idx = q * nl_in + (p - plo_in if derived else sl - roff_in[R1])
                if i == R1:
                    si = sl
                vmin = si - (roff_out[i] + rsize_out[i] - 1)
                vmax = si - roff_out[i]
                if derived:
                    vmin = max(vmin, plo_out - p)
                    vmax = min(vmax, phi_out - p)
                wmin = max(vmin - lo, 0)
                wmax = min(vmax - lo, W - 1)
                for cc in range(nc_in):
                    c = coff_in + cc
                    w0, w1 = wmin, wmax
                    if not derived:
                        w0 = max(w0, coff_out - c - lo)
                        w1 = min(w1, coff_out + nc_out - 1 - c - lo)
                    x = a[idx, cc]
                    acc = 0.0
                    for w in range(w0, w1 + 1):
                        v = lo + w
                        o = _out_index(base, si, v, sl, p, i, R1, roff_out, st_out, nl_out,
                                       plo_out, derived)
                        c2 = 0 if derived else c + v - coff_out
                        t = wts[w] * b_next[o, c2]
                        acc += t
                        if x != 0.0:
                            loc[ch, w] += x * t
                    bout[idx, cc] = acc
    for ch in range(nch):
        for w in range(W):
            marg[w] += loc[ch, w]


@njit(parallel=True)
def _col_fwd(a, ca, out, cout, roff, rsize, coff, start_sum, plo, phi, clo, kw, kind, derived,
             do_float, L, inv, pmax):
    """out[s, 0] = sum_p a[s, p] k(p) (derived: p = start_sum - sum(s), one stored value
    per prefix before and after)."""
    nc = a.shape[1] if do_float else ca.shape[1]
    R1 = rsize.shape[0] - 1
    st, npre, nl = _layout(rsize, derived, plo, phi)
    W = kw.shape[0]
    for q in prange(npre):
        lm = 0.0
        pre = 0
        for k in range(R1):
            pre += roff[k] + (q // st[k]) % rsize[k]
        lo_l, hi_l = _last_range(roff, rsize, derived, start_sum, pre, plo, phi)
        for sl in range(lo_l, hi_l + 1):
            idx = q * nl + (start_sum - pre - sl - plo if derived else sl - roff[R1])
            acc = 0.0
            for cc in range(nc):
                tot = start_sum - pre - sl if derived else coff + cc
                w = tot - clo
                if w < 0 or w >= W:
                    continue
                if do_float:
                    acc += a[idx, cc] * kw[w]
                if L > 0 and kind[w]:
                    _add_limbs(cout, idx, 0, ca, idx, cc, L)
            if do_float:
                out[idx, 0] = acc * inv
                lm = max(lm, acc * inv)
        if do_float:
            pmax[q] = lm


@njit
def _col_bwd(a, bout, marg, b_next, roff, rsize, coff, start_sum, plo, phi, clo, kw, derived):
    """bout[s, p] = k(p) b_next[s, 0]; marg[p] += a[s, p] k(p) b_next[s, 0]."""
    nc = a.shape[1]
    R1 = rsize.shape[0] - 1
    st, npre, nl = _layout(rsize, derived, plo, phi)
    W = kw.shape[0]
    for q in range(npre):
        pre = 0
        for k in range(R1):
            pre += roff[k] + (q // st[k]) % rsize[k]
        lo_l, hi_l = _last_range(roff, rsize, derived, start_sum, pre, plo, phi)
        for sl in range(lo_l, hi_l + 1):
            idx = q * nl + (start_sum - pre - sl - plo if derived else sl - roff[R1])
            for cc in range(nc):
                tot = start_sum - pre - sl if derived else coff + cc
                w = tot - clo
                if w < 0 or w >= W:
                    continue
                t = kw[w] * b_next[idx, 0]
                bout[idx, cc] = t
                if kw[w] != 0.0:
                    marg[w] += a[idx, cc] * t


@njit(parallel=True)
def _cell_draw(a, sidx, scc, u, vals, i, roff_in, rsize_in, roff_out, rsize_out, coff_in,
               coff_out, lo, wts, derived, start_sum, plo_in, phi_in, plo_out, phi_out):
    """Backward sampling through cell (i, .): each draw d in the state (sidx[d], scc[d])
    after the cell moves to the state before it, the cell's value v picked with
    probability proportional to w[v] a[s + v e_i, p - v] (the terms :func:`_cell_bwd`
    sums) by the uniform u[d]; vals[d] = v (lo - 1 when every term is 0)."""
    nc_in = a.shape[1]
    R1 = rsize_in.shape[0] - 1
    st_in, _, nl_in = _layout(rsize_in, derived, plo_in, phi_in)
    st_out, _, nl_out = _layout(rsize_out, derived, plo_out, phi_out)
    W = wts.shape[0]
    for d in prange(sidx.shape[0]):
        idx = sidx[d]
        cc = scc[d]
        q = idx // nl_out
        line = idx - q * nl_out
        base = 0
        si = 0
        pre = 0
        for k in range(R1):
            sk = roff_out[k] + (q // st_out[k]) % rsize_out[k]
            pre += sk
            if k == i:
                si = sk
            else:
                base += (sk - roff_in[k]) * st_in[k]
        if derived:
            p = plo_out + line
            sl = start_sum - pre - p
        else:
            sl = roff_out[R1] + line
            p = start_sum - pre - sl
        if i == R1:
            si = sl
        vmin = roff_in[i] - si
        vmax = roff_in[i] + rsize_in[i] - 1 - si
        if derived:
            vmin = max(vmin, p - phi_in)
            vmax = min(vmax, p - plo_in)
        w0 = max(vmin - lo, 0)
        w1 = min(vmax - lo, W - 1)
        c = coff_out + cc
        if not derived:
            w0 = max(w0, c - coff_in - nc_in + 1 - lo)
            w1 = min(w1, c - coff_in - lo)
        tot = 0.0
        for w in range(w0, w1 + 1):
            oi = _in_index(base, si, lo + w, sl, p, i, R1, roff_in, st_in, nl_in, plo_in,
                           derived)
            tot += wts[w] * a[oi, 0 if derived else c - lo - w - coff_in]
        target = u[d] * tot
        acc = 0.0
        pick = -1
        for w in range(w0, w1 + 1):
            oi = _in_index(base, si, lo + w, sl, p, i, R1, roff_in, st_in, nl_in, plo_in,
                           derived)
            t = wts[w] * a[oi, 0 if derived else c - lo - w - coff_in]
            if t > 0.0:
                pick = w
                acc += t
                if acc > target:
                    break
        if pick < 0:
            vals[d] = lo - 1
            continue
        v = lo + pick
        vals[d] = v
        sidx[d] = _in_index(base, si, v, sl, p, i, R1, roff_in, st_in, nl_in, plo_in, derived)
        scc[d] = 0 if derived else c - v - coff_in


@njit(parallel=True)
def _col_draw(a, scc, sidx, u, coff, clo, kw):
    """Backward sampling through a column's total (rows' remaining sums unchanged, not
    derived): each draw picks the column's sum p = coff + scc with probability
    proportional to a[s, p] k(p) (the terms :func:`_col_bwd` sums) by the uniform u[d]
    (scc[d] = -1 when every term is 0)."""
    nc = a.shape[1]
    W = kw.shape[0]
    for d in prange(sidx.shape[0]):
        idx = sidx[d]
        c0 = max(clo - coff, 0)
        c1 = min(clo + W - 1 - coff, nc - 1)
        tot = 0.0
        for cc in range(c0, c1 + 1):
            tot += a[idx, cc] * kw[coff + cc - clo]
        target = u[d] * tot
        acc = 0.0
        pick = -1
        for cc in range(c0, c1 + 1):
            t = a[idx, cc] * kw[coff + cc - clo]
            if t > 0.0:
                pick = cc
                acc += t
                if acc > target:
                    break
        scc[d] = pick


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


def boxes(row_lo_hi, lo, hi, clo, chi, derived):
    """Per-stage boxes of reachable states: steps, row offsets and sizes (stage, r),
    column-sum intervals plo, phi (stage,) and the stored column-axis size (1 if derived)."""
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
    rlo = np.maximum(row_lo_hi[:, 0], fut_lo[:, 0])
    rhi = np.minimum(row_lo_hi[:, 1], fut_hi[:, 0])
    roffs, rsizes, plos, phis = [], [], [], []
    cl, ch = 0, 0
    for kind, i, j in steps:
        roffs.append(rlo.copy())
        rsizes.append(np.maximum(rhi - rlo + 1, 0))
        plos.append(cl)
        phis.append(ch)
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
    plos, phis = np.array(plos, np.int64), np.array(phis, np.int64)
    csizes = np.ones(len(plos), np.int64) if derived else np.maximum(phis - plos + 1, 0)
    return steps, np.array(roffs), np.array(rsizes), plos, phis, csizes


def _stored(rsizes, plos, phis, csizes, derived):
    """Stored states per stage: prefix box x line (last row, or derived the column sum)."""
    pre = np.prod(rsizes[:, :-1].astype(float), axis=1)
    line = np.maximum(phis - plos + 1, 0) if derived else rsizes[:, -1]
    return pre * line * csizes


def stage_states(row_lo_hi, lo, cw, clo, kw, derived):
    """Number of stored states of every stage (the inputs of each step, and the end)."""
    hi = lo + np.where(cw > 0, np.arange(cw.shape[2]), -1).max(axis=2)
    _, _, rsizes, plos, phis, csizes = boxes(row_lo_hi, lo, hi, clo, clo + kw.shape[1] - 1,
                                             derived)
    return _stored(rsizes, plos, phis, csizes, derived)


def n_states(row_lo_hi, lo, cw, clo, kw, derived):
    """(largest stage, sum over stages) of the number of stored states."""
    per = stage_states(row_lo_hi, lo, cw, clo, kw, derived)
    return float(per.max()), float(per.sum())


def start_weights(roff, rsize, start, indicator: bool = False):
    """Weights of every vector of row totals in the box ``roff + [0, rsize)`` (mixed radix,
    last row fastest): the row totals' log-weights plus the grand total's (a function of
    their sum), from ``start = (row_lo (r,), row_lw (r, Wr), grand_lo, grand_lw (Wg,))``.
    Returns ``(weights, log scale)``: ``exp(lw - scale)`` with the largest weight 1
    (``indicator``: 1.0 where the weight is positive, scale 0)."""
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
        return fin.astype(float), 0.0
    mx = lw[fin].max() if fin.any() else 0.0
    return np.where(fin, np.exp(lw - mx), 0.0), float(mx)


def run(start, row_lo_hi, lo, cw, cind, clo, kw, kind, derived, col_start_sums,
        limbs=0, posterior=True, max_states=2e8):
    """See :func:`_run` (small problems run on one thread)."""
    W = cw.shape[2]
    hi = lo + np.where(cind, np.arange(W), -1).max(axis=2)
    _, _, rsizes, plos, phis, csizes = boxes(row_lo_hi, lo, hi, clo, clo + kw.shape[1] - 1,
                                             derived)
    work = float(_stored(rsizes, plos, phis, csizes, derived).sum()) * max(W, 1)
    # weights beyond the floats' range show in the result (log_z inf or NaN), which the
    # caller checks and answers by re-anchoring the weights: no warning on the way
    with parallel_region(), threads_for(work), \
            np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        return _run(start, row_lo_hi, lo, cw, cind, clo, kw, kind, derived,
                    col_start_sums, limbs, posterior, max_states)


class _Stages:
    """One table DP: its steps, the boxes of every stage (:func:`boxes`), their stored
    sizes and the forward step.  The posterior (:func:`_run`) and the draws
    (:func:`_sample`) share the forward pass and the stage-by-stage walk back."""

    def __init__(self, row_lo_hi, lo, cw, cind, clo, kw, kind, derived, col_start_sums,
                 limbs=0, posterior=True):
        W = cw.shape[2]
        hi = lo + np.where(cind, np.arange(W), -1).max(axis=2)
        chi = clo + kw.shape[1] - 1
        (self.steps, self.roffs, self.rsizes, self.plos, self.phis,
         self.csizes) = boxes(row_lo_hi, lo, hi, clo, chi, derived)
        self.per = _stored(self.rsizes, self.plos, self.phis, self.csizes, derived)
        self.lo, self.cw, self.cind, self.clo, self.kw, self.kind = lo, cw, cind, clo, kw, kind
        self.derived, self.col_start_sums = derived, col_start_sums
        self.L, self.posterior = int(limbs), posterior
        self.f1 = np.zeros((1, 1))
        self.u1 = np.zeros((1, 1, 1), np.uint64)
        self.sizes = None

    def live(self) -> bool:
        """False when some stage has no reachable state (no table at all)."""
        rsizes, csizes, plos, phis = self.rsizes, self.csizes, self.plos, self.phis
        if (rsizes == 0).any() or (csizes == 0).any() or (phis < plos).any():
            return False
        if self.derived and ((rsizes[0] != 1).any()
                             or self.col_start_sums[0] != self.roffs[0].sum()):
            return False               # derived: one start state, and it must be live
        # per[t] counts stored states over both axes: prefix x line first, column sums second
        self.sizes = [(int(self.per[t]) // int(self.csizes[t]), int(self.csizes[t]))
                      for t in range(len(self.steps) + 1)]
        return True

    def step(self, t, a, ca, inv):
        """Stage t -> t + 1: (out, cout, pmax); ``ca`` None: no count."""
        kd, i, j = self.steps[t]
        roffs, rsizes, plos, phis = self.roffs, self.rsizes, self.plos, self.phis
        derived, L, posterior, u1 = self.derived, self.L, self.posterior, self.u1
        out = np.zeros(self.sizes[t + 1]) if posterior else self.f1
        cout = np.zeros(self.sizes[t + 1] + (L,), np.uint64) if L and ca is not None else u1
        pmax = np.zeros(_layout(rsizes[t + 1], derived, plos[t + 1], phis[t + 1])[1]
                        if kd == "cell" else _layout(rsizes[t], derived, plos[t], phis[t])[1])
        Lt = L if ca is not None else 0
        ss = int(self.col_start_sums[j])
        if kd == "cell":
            _cell_fwd(a, ca if Lt else u1, out, cout, i, roffs[t], rsizes[t], roffs[t + 1],
                      rsizes[t + 1], plos[t], plos[t + 1], self.lo[i, j], self.cw[i, j],
                      self.cind[i, j], derived, ss, plos[t], phis[t], plos[t + 1], phis[t + 1],
                      posterior, Lt, inv, pmax)
        else:
            _col_fwd(a, ca if Lt else u1, out, cout, roffs[t], rsizes[t], plos[t], ss, plos[t],
                     phis[t], self.clo[j], self.kw[j], self.kind[j], derived, posterior, Lt, inv,
                     pmax)
        return out, cout, pmax

    def forward(self, start, keep):
        """The forward pass: ``(fwd, invs, a, ca, inv, logscale, start_scale)`` -- the
        stages kept (``keep``, posterior only), each step's scale factor, the last stage
        (float and limbs), the scale factor still to apply to it, the log of those applied
        and the log scale taken out of the start weights (:func:`start_weights`)."""
        posterior, L, u1 = self.posterior, self.L, self.u1
        a = self.f1
        start_scale = 0.0
        if posterior:
            a = np.zeros(self.sizes[0])
            a[:, 0], start_scale = start_weights(self.roffs[0], self.rsizes[0], start)
        ca = u1
        if L:
            ca = np.zeros(self.sizes[0] + (L,), np.uint64)
            ca[:, 0, 0] = start_weights(self.roffs[0], self.rsizes[0], start, True)[0] > 0
        # deferred rescaling: each step multiplies by 1 / (largest entry of its input)
        m = a.max() if posterior else 1.0
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
    """Stages to keep (:func:`checkpoint_plan`), or MemoryError beyond ``max_states``."""
    per = dp.per
    keep, need = checkpoint_plan(per, max_states) if posterior else (None, 2 * per.max())
    if need > max_states:
        raise MemoryError(f"the exact table DP needs {need:.3g} stored states "
                          f"(largest stage {per.max():.3g}); the limit is {max_states:.3g}")
    return keep


def _run(start, row_lo_hi, lo, cw, cind, clo, kw, kind, derived, col_start_sums,
         limbs=0, posterior=True, max_states=2e8):
    """Forward (and backward) pass over the table.

    Parameters
    ----------
    start : (row_lo (r,), row_lw (r, Wr), grand_lo, grand_lw (Wg,))
        Log-weights of the row totals and of the grand total: the weight of each start
        state (vector of row totals, :func:`start_weights`).
    row_lo_hi : int64 (r, 2)   range of each row total
    lo, cw, cind : int64 (r, c), float64 (r, c, W), bool (r, c, W)
        cell windows, weights and which values are possible (positive weight)
    clo, kw, kind : int64 (c,), float64 (c, Wc), bool (c, Wc)  the same for column totals
    derived : bool       every total fixed: no column-sum axis
    col_start_sums : int64 (c,)  remaining grand total at each column start (derived mode)
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
    and the start-state marginal with its box (roff0, rsize0).
    """
    dp = _Stages(row_lo_hi, lo, cw, cind, clo, kw, kind, derived, col_start_sums, limbs,
                 posterior)
    keep = _plan_memory(dp, max_states, posterior)
    res = {"z": 0.0, "log_z": -np.inf, "count": 0, "start_scale": 0.0}
    if not dp.live():
        return res
    L = dp.L
    fwd, invs, a, ca, inv, logscale, res["start_scale"] = dp.forward(start, keep)
    roffs, rsizes, plos, phis = dp.roffs, dp.rsizes, dp.plos, dp.phis
    at_zero = bool((roffs[-1] == 0).all())
    if L and at_zero:
        res["count"] = sum(int(x) << (64 * k) for k, x in enumerate(ca[0, 0]))
    if not posterior:
        return res
    z = a[0, 0] * inv if at_zero else 0.0
    res.update(z=z, log_z=(np.log(z) + logscale) if z > 0 else -np.inf)
    if not z > 0.0:
        return res
    b = np.zeros_like(a)
    b[0, 0] = 1.0
    cell_m = np.zeros(cw.shape)
    col_m = np.zeros(kw.shape)
    for t, ft in dp.back(fwd, invs):
        kd, i, j = dp.steps[t]
        bout = np.zeros_like(ft)
        ss = int(col_start_sums[j])
        if kd == "cell":
            _cell_bwd(ft, bout, cell_m[i, j], b, i, roffs[t], rsizes[t], roffs[t + 1],
                      rsizes[t + 1], plos[t], plos[t + 1], lo[i, j], cw[i, j], derived, ss,
                      plos[t], phis[t], plos[t + 1], phis[t + 1])
        else:
            _col_bwd(ft, bout, col_m[j], b, roffs[t], rsizes[t], plos[t], ss, plos[t],
                     phis[t], clo[j], kw[j], derived)
        del ft
        _rescale(bout)
        b = bout
    start = fwd[0][:, 0] * b[:, 0]
    res.update(cell=cell_m / cell_m.sum(axis=-1, keepdims=True),
               col=col_m / col_m.sum(axis=-1, keepdims=True),
               start=start / start.sum(), roff0=roffs[0], rsize0=rsizes[0])
    return res


def sample(start, row_lo_hi, lo, cw, cind, clo, kw, kind, derived, col_start_sums, n, rng,
           max_states=2e8):
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
    W = cw.shape[2]
    hi = lo + np.where(cind, np.arange(W), -1).max(axis=2)
    _, _, rsizes, plos, phis, csizes = boxes(row_lo_hi, lo, hi, clo, clo + kw.shape[1] - 1,
                                             derived)
    work = float(_stored(rsizes, plos, phis, csizes, derived).sum()) * max(W, 1)
    with parallel_region(), threads_for(max(work, float(n) * len(plos) * max(W, 1))), \
            np.errstate(over="ignore", divide="ignore", invalid="ignore"):   # as in run()
        return _sample(start, row_lo_hi, lo, cw, cind, clo, kw, kind, derived,
                       col_start_sums, int(n), rng, max_states)


def _sample(start, row_lo_hi, lo, cw, cind, clo, kw, kind, derived, col_start_sums, n, rng,
            max_states):
    dp = _Stages(row_lo_hi, lo, cw, cind, clo, kw, kind, derived, col_start_sums)
    keep = _plan_memory(dp, max_states)
    res = {"z": 0.0, "log_z": -np.inf, "tables": None}
    if not dp.live():
        return res
    fwd, invs, a, _, inv, logscale, _ = dp.forward(start, keep)
    if not (dp.roffs[-1] == 0).all():
        return res
    z = a[0, 0] * inv
    res.update(z=z, log_z=(np.log(z) + logscale) if z > 0 else -np.inf)
    if not z > 0.0:
        return res
    del a
    r, c = lo.shape
    roffs, rsizes, plos, phis = dp.roffs, dp.rsizes, dp.plos, dp.phis
    tables = np.zeros((n, r, c), np.int64)
    sidx = np.zeros(n, np.int64)           # every draw's state: stored index, column-sum slot
    scc = np.zeros(n, np.int64)
    vals = np.zeros(n, np.int64)
    for t, ft in dp.back(fwd, invs):
        kd, i, j = dp.steps[t]
        ss = int(col_start_sums[j])
        if kd == "cell":
            _cell_draw(ft, sidx, scc, rng.random(n), vals, i, roffs[t], rsizes[t],
                       roffs[t + 1], rsizes[t + 1], plos[t], plos[t + 1], lo[i, j], cw[i, j],
                       derived, ss, plos[t], phis[t], plos[t + 1], phis[t + 1])
            if (vals < lo[i, j]).any():
                raise RuntimeError(f"internal error: a draw reached a state of weight 0 at "
                                   f"cell ({i}, {j})")
            tables[:, i, j] = vals
        elif not derived:                   # derived: the column's sum is fixed, no choice
            _col_draw(ft, scc, sidx, rng.random(n), plos[t], clo[j], kw[j])
            if (scc < 0).any():
                raise RuntimeError(f"internal error: a draw reached a state of weight 0 at "
                                   f"column {j}'s total")
        del ft
    res["tables"] = tables
    return res
