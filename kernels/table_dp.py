"""Exact dynamic program over 2-D tables with (interval) margins and product-form weights.

Plain arrays in, plain arrays out.  The table has r rows and c columns; every
interior cell x_ij takes values ``lo[i, j] + w`` (w < W) with weight
``cw[i, j, w]`` (0 = impossible); every column total takes ``clo[j] + w`` with
weight ``kw[j, w]``; row totals and the grand total enter through ``init``, the
weight of each vector of row totals (the start state).

State: the vector of *remaining* row sums s plus the partial sum of the current
column.  Cells are added one at a time in column-major order; at the end of a
column its total is weighed and the partial sum reset; at the end only s = 0
survives.  Each stage t has its own box of reachable states: per row
``[roff[t, i], roff[t, i] + rsize[t, i])`` intersected with what the remaining
cells can still hold, and likewise for the partial column sum (``coff, csize``),
so narrow windows (rounding) give small states and wide ones (margins only) are
bounded by the margins.  ``derived`` (every total fixed) drops the column-sum
axis: the partial column sum is the start-of-column remaining total minus the
current one.

The forward pass stores the state array before every step; the backward pass
computes each step's marginals from it, so one forward and one backward pass
give the evidence and every marginal.  Arrays are rescaled per step (log scale
kept).  Counting: 0/1 weights and ``mod > 0`` (a prime < 2^26) reduce every
stage modulo ``mod`` so sums stay exact in float64; the caller combines primes.
"""

from __future__ import annotations

import numpy as np

from ._jit import njit


@njit
def _strides(size):
    r = size.shape[0]
    st = np.ones(r, np.int64)
    for k in range(r - 2, -1, -1):
        st[k] = st[k + 1] * size[k + 1]
    return st


@njit
def _cell_step(a, out, marg, b_next, backward, i, roff_in, rsize_in, roff_out, rsize_out,
               coff_in, coff_out, lo, wts, derived, mod):
    """Forward: out[s - v e_i, c + v] += a[s, c] w[v].
    Backward: out[s, c] = sum_v w[v] b_next[s - v e_i, c + v], marg[v] += a[s, c] w b_next."""
    S, nc_in = a.shape if not backward else (out.shape[0], out.shape[1])
    nc_out = b_next.shape[1] if backward else out.shape[1]
    r = rsize_in.shape[0]
    st_in = _strides(rsize_in)
    st_out = _strides(rsize_out)
    W = wts.shape[0]
    for idx in range(S):
        base = 0
        si = 0
        for k in range(r):
            sk = roff_in[k] + (idx // st_in[k]) % rsize_in[k]
            if k == i:
                si = sk
            else:
                base += (sk - roff_out[k]) * st_out[k]
        for cc in range(nc_in):
            c = coff_in + cc
            x = a[idx, cc]
            if not backward and x == 0.0:
                continue
            acc = 0.0
            for w in range(W):
                wt = wts[w]
                if wt == 0.0:
                    continue
                v = lo + w
                j = si - v - roff_out[i]
                if j < 0:
                    break
                if j >= rsize_out[i]:
                    continue
                c2 = 0 if derived else c + v - coff_out
                if c2 < 0:
                    continue
                if c2 >= nc_out:
                    break
                o = base + j * st_out[i]
                if backward:
                    t = wt * b_next[o, c2]
                    acc += t
                    if mod == 0.0 and x != 0.0:
                        marg[w] += x * t
                else:
                    out[o, c2] += x * wt
            if backward:
                out[idx, cc] = acc
    if mod > 0.0:
        for idx in range(out.shape[0]):
            for cc in range(out.shape[1]):
                out[idx, cc] = out[idx, cc] % mod


@njit
def _col_step(a, out, marg, b_next, backward, roff, rsize, coff, start_sum, clo, kw, derived,
              mod):
    """Forward: out[s, 0] = sum_c a[s, c] k(c).  Backward: out[s, c] = k(c) b_next[s, 0]."""
    S, nc = a.shape
    r = rsize.shape[0]
    st = _strides(rsize)
    W = kw.shape[0]
    for idx in range(S):
        tot_rows = 0
        if derived:
            for k in range(r):
                tot_rows += roff[k] + (idx // st[k]) % rsize[k]
        acc = 0.0
        for cc in range(nc):
            tot = start_sum - tot_rows if derived else coff + cc
            w = tot - clo
            kk = kw[w] if 0 <= w < W else 0.0
            if backward:
                t = kk * b_next[idx, 0]
                out[idx, cc] = t % mod if mod > 0.0 else t
                if mod == 0.0 and kk != 0.0:
                    marg[w] += a[idx, cc] * t
            else:
                acc += a[idx, cc] * kk
        if not backward:
            out[idx, 0] = acc % mod if mod > 0.0 else acc


@njit
def _rescale(a):
    m = a.max()
    if m > 0.0:
        a /= m
        return np.log(m)
    return 0.0


def _boxes(r, c, row_lo_hi, lo, hi, clo, chi, derived):
    """Per-stage boxes of reachable states (remaining row sums, partial column sum)."""
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
    roffs, rsizes, coffs, csizes = [], [], [], []
    cl, ch = 0, 0
    for kind, i, j in steps:
        roffs.append(rlo.copy())
        rsizes.append(np.maximum(rhi - rlo + 1, 0))
        coffs.append(cl)
        csizes.append(1 if derived else max(ch - cl + 1, 0))
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
    coffs.append(0)
    csizes.append(1)
    return steps, np.array(roffs), np.array(rsizes), np.array(coffs), np.array(csizes)


def run(init_fn, row_lo_hi, lo, cw, clo, kw, derived, col_start_sums, mod=0.0,
        max_states=40_000_000):
    """Forward-backward over the table.

    Parameters
    ----------
    init_fn : callable(roff, rsize) -> float64 (S,)
        Weight of each start state (vector of row totals) in the given box (mixed radix,
        last row fastest).
    row_lo_hi : int64 (r, 2)   range of each row total
    lo, cw : int64 (r, c), float64 (r, c, W)  cell windows and weights
    clo, kw : int64 (c,), float64 (c, Wc)     column-total windows and weights
    derived : bool       every total fixed: no column-sum axis
    col_start_sums : int64 (c,)  remaining grand total at each column start (derived mode)
    mod : float          0 for real weights; a prime < 2^26 for counting modulo it

    Returns
    -------
    dict: z, log_z; with mod == 0 also normalised cell marginals (r, c, W), column-total
    marginals (c, Wc) and the start-state marginal with its box (roff0, rsize0).
    """
    r, c = lo.shape
    W = cw.shape[2]
    hi = lo + np.where(cw > 0, np.arange(W), -1).max(axis=2)
    chi = clo + kw.shape[1] - 1
    steps, roffs, rsizes, coffs, csizes = _boxes(r, c, row_lo_hi, lo, hi, clo, chi, derived)
    n_states = (np.prod(rsizes.astype(float), axis=1) * csizes).max()
    if n_states > max_states:
        raise MemoryError(f"the exact table DP needs {n_states:.3g} states at one step; "
                          f"the limit is {max_states:.3g}")
    empty = (rsizes == 0).any() or (csizes == 0).any()
    res = {"z": 0.0, "log_z": -np.inf}
    if empty:
        return res
    a = np.zeros((int(np.prod(rsizes[0])), 1))
    a[:, 0] = init_fn(roffs[0], rsizes[0])
    if mod > 0.0:
        a %= mod
    logscale = _rescale(a) if mod == 0.0 else 0.0
    fwd = []
    dummy = np.zeros(1)
    dummy2 = np.zeros((1, 1))
    for t, (kind, i, j) in enumerate(steps):
        fwd.append(a)
        out = np.zeros((int(np.prod(rsizes[t + 1])), int(csizes[t + 1])))
        if kind == "cell":
            _cell_step(a, out, dummy, dummy2, False, i, roffs[t], rsizes[t], roffs[t + 1],
                       rsizes[t + 1], coffs[t], coffs[t + 1], lo[i, j], cw[i, j], derived, mod)
        else:
            _col_step(a, out, dummy, dummy2, False, roffs[t], rsizes[t], coffs[t],
                      col_start_sums[j], clo[j], kw[j], derived, mod)
        if mod == 0.0:
            logscale += _rescale(out)
        a = out
    # final box must contain s = 0 only
    z = a[0, 0] if (roffs[-1] == 0).all() else 0.0
    res = {"z": z, "log_z": (np.log(z) + logscale) if (mod == 0.0 and z > 0) else -np.inf}
    if mod > 0.0 or not z > 0.0:
        return res
    b = np.zeros_like(a)
    b[0, 0] = 1.0
    cell_m = np.zeros(cw.shape)
    col_m = np.zeros(kw.shape)
    for t in range(len(steps) - 1, -1, -1):
        kind, i, j = steps[t]
        bout = np.zeros_like(fwd[t])
        if kind == "cell":
            _cell_step(fwd[t], bout, cell_m[i, j], b, True, i, roffs[t], rsizes[t], roffs[t + 1],
                       rsizes[t + 1], coffs[t], coffs[t + 1], lo[i, j], cw[i, j], derived, 0.0)
        else:
            _col_step(fwd[t], bout, col_m[j], b, True, roffs[t], rsizes[t], coffs[t],
                      col_start_sums[j], clo[j], kw[j], derived, 0.0)
        _rescale(bout)
        b = bout
    start = fwd[0][:, 0] * b[:, 0]
    res.update(cell=cell_m / cell_m.sum(axis=-1, keepdims=True),
               col=col_m / col_m.sum(axis=-1, keepdims=True),
               start=start / start.sum(), roff0=roffs[0], rsize0=rsizes[0])
    return res
