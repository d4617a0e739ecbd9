"""Exact sum-product over integer variables tied by factors on sums of them (plain NumPy).

The model: variables ``x_0 .. x_{N-1}`` (in the order they are processed), each taking
``lo[k] + w`` (``w < W``) with log-weight ``lw[k, w]`` (``-inf``: impossible), and
*sum factors*: each names two or more variables and weighs their sum ``s`` by
``elw[e][s - elo[e]]`` (``-inf`` outside the given window).  The weight of an assignment
is the product of every variable's and every factor's weight.

Forward pass: after variables ``0..t-1`` the state is the vector of partial sums of the
factors that are *open* (some but not all of their variables processed); a variable adds
its value to the partial sum of every open factor that holds it (opening the factors it
starts), and a factor whose last variable it is weighs its sum and is summed out.  Every
partial sum ranges over what its processed variables can make, cut to what its window
still allows given the variables left, so the state stays as narrow as the windows make
it.  Everything is in log space (no rescaling, nothing underflows), so posteriors with
weights spread over hundreds of orders of magnitude stay exact.  The backward pass gives
every variable's marginal and every factor's sum's marginal; one forward pass the log
normaliser.  The cost is sum over steps of (state size x the variable's window); the
caller picks the order (:func:`plan` computes the state sizes without allocating them).
"""

from __future__ import annotations

import numpy as np

__all__ = ["Plan", "marginals", "plan", "sample"]


class Plan:
    """The state layout of each step (see :func:`plan`): ``axes[t]`` the open factors
    after ``t`` variables (in axis order), ``off[t]``/``size[t]`` each axis' first partial
    sum and its number of values; ``cells[t]`` the state size; ``peak`` the largest
    extended state (before closing factors are summed out); ``closing[t]`` the range
    ``(first, count)`` of each factor variable t closes; ``lo``/``lw``, ``elo``/``elw`` the
    model."""

    def __init__(self, axes, off, size, vlo, vhi, opens, closes, holds, closing, lo, lw,
                 elo, elw):
        self._closing = closing
        self.lo, self.lw, self.elo, self.elw = lo, lw, elo, elw
        self.axes, self.off, self.size = axes, off, size
        self.vlo, self.vhi = vlo, vhi
        self.opens, self.closes, self.holds = opens, closes, holds
        self.cells = [int(np.prod(s, dtype=np.float64)) if s else 1 for s in size]
        ext = []
        for t in range(len(vlo)):
            e_size = self.extended(t)[2]
            ext.append(float(np.prod(e_size, dtype=np.float64)) if e_size else 1.0)
        self.peak = max(ext, default=1.0)

    @property
    def total_cells(self) -> float:
        return float(sum(self.cells))

    def extended(self, t: int):
        """Axes, offsets and sizes of the state after variable t is added, before the
        factors it closes are summed out (new factors appended after the open ones)."""
        axes = list(self.axes[t]) + list(self.opens[t])
        nxt = dict(zip(self.axes[t + 1], zip(self.off[t + 1], self.size[t + 1])))
        off, size = [], []
        for e in axes:
            if e in nxt:
                o, s = nxt[e]
            else:                                   # closes here: its own range
                o, s = self._closing[t][e]
            off.append(o)
            size.append(s)
        return axes, off, size


def _trimmed(lo, lw):
    """Each variable's first and last value of finite weight."""
    fin = np.isfinite(lw)
    if not fin.any(axis=1).all():
        k = int(np.flatnonzero(~fin.any(axis=1))[0])
        raise ValueError(f"variable {k} has no value of positive weight")
    first = np.argmax(fin, axis=1)
    last = lw.shape[1] - 1 - np.argmax(fin[:, ::-1], axis=1)
    return lo + first, lo + last


def plan(lo, lw, members, elo, elw) -> Plan:
    """The layout of the forward pass for variables in the given order.

    ``lo`` (N,), ``lw`` (N, W); ``members``: per factor an int array of variable indices
    (two or more); ``elo`` (M,), ``elw``: per factor a 1-D array of log-weights.
    """
    lo = np.asarray(lo, np.int64)
    lw = np.asarray(lw, np.float64)
    N = lo.shape[0]
    vlo, vhi = _trimmed(lo, lw)
    M = len(members)
    first = np.array([int(np.min(m)) for m in members], np.int64)
    last = np.array([int(np.max(m)) for m in members], np.int64)
    ehi_lo, ehi_hi = [], []
    for e in range(M):
        w = np.asarray(elw[e])
        fin = np.flatnonzero(np.isfinite(w))
        if fin.size == 0:
            raise ValueError(f"sum factor {e} has no value of positive weight")
        ehi_lo.append(int(elo[e]) + int(fin[0]))
        ehi_hi.append(int(elo[e]) + int(fin[-1]))
    holds = [[] for _ in range(N)]
    for e, m in enumerate(members):
        for k in np.unique(m):
            holds[int(k)].append(e)
    opens = [[e for e in holds[t] if first[e] == t] for t in range(N)]
    closes = [[e for e in holds[t] if last[e] == t] for t in range(N)]
    done_lo = np.zeros(M, np.int64)
    done_hi = np.zeros(M, np.int64)
    tot_lo = np.array([int(vlo[np.unique(m)].sum()) for m in members], np.int64)
    tot_hi = np.array([int(vhi[np.unique(m)].sum()) for m in members], np.int64)
    axes, off, size = [[]], [[]], [[]]
    closing = []
    open_now: list = []
    for t in range(N):
        ext_close = {}
        for e in holds[t]:
            done_lo[e] += vlo[t]
            done_hi[e] += vhi[t]
        for e in opens[t]:
            if last[e] != t:
                open_now.append(e)
        cur_axes, cur_off, cur_size = [], [], []
        for e in open_now + [e for e in closes[t] if e not in open_now]:
            r_lo = tot_lo[e] - done_lo[e]
            r_hi = tot_hi[e] - done_hi[e]
            a = max(int(done_lo[e]), ehi_lo[e] - int(r_hi))
            b = min(int(done_hi[e]), ehi_hi[e] - int(r_lo))
            if b < a:
                raise ValueError(f"sum factor {e}: no partial sum after variable {t} fits "
                                 "its window (no table has positive weight)")
            if last[e] == t:
                ext_close[e] = (a, b - a + 1)
            else:
                cur_axes.append(e)
                cur_off.append(a)
                cur_size.append(b - a + 1)
        open_now = [e for e in open_now if last[e] != t]
        assert open_now == cur_axes
        closing.append(ext_close)
        axes.append(cur_axes)
        off.append(cur_off)
        size.append(cur_size)
    return Plan(axes, off, size, vlo, vhi, opens, closes, holds, closing, lo, lw,
                np.asarray(elo, np.int64), [np.asarray(w, np.float64) for w in elw])


def _lse(a, axis):
    m = np.max(a, axis=axis, keepdims=True)
    safe = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        out = np.log(np.sum(np.exp(a - safe), axis=axis, keepdims=True)) + safe
    return np.squeeze(out, axis=axis)


def _lse_all(a):
    if a.size == 0:
        return -np.inf
    m = np.max(a)
    if not np.isfinite(m):
        return -np.inf
    return float(np.log(np.sum(np.exp(a - m))) + m)


def _moves(p: Plan, t: int):
    """For each value v of variable t of finite weight: ``(v, log-weight, src, dst)``, the
    slices of the state before (``src``) and of the extended state after (``dst``) that it
    connects (a factor opened by t takes one index in ``dst`` and has none in ``src``)."""
    e_axes, e_off, e_size = p.extended(t)
    old = dict(zip(p.axes[t], zip(p.off[t], p.size[t])))
    out = []
    for v in range(int(p.vlo[t]), int(p.vhi[t]) + 1):
        w = p.lw[t, v - int(p.lo[t])]
        if not np.isfinite(w):
            continue
        src, dst, ok = [], [], True
        for e, o, s in zip(e_axes, e_off, e_size):
            if e in old:
                oo, os_ = old[e]
                shift = v if e in p.holds[t] else 0
                # old index i (partial oo + i) -> extended index oo + i + shift - o
                i0 = max(0, o - oo - shift)
                i1 = min(os_, o + s - oo - shift)
                if i1 <= i0:
                    ok = False
                    break
                src.append(slice(i0, i1))
                dst.append(slice(oo + i0 + shift - o, oo + i1 + shift - o))
            else:
                j = v - o
                if j < 0 or j >= s:
                    ok = False
                    break
                dst.append(j)
        if ok:
            out.append((v, float(w), tuple(src), tuple(dst)))
    return out, e_axes, e_off, e_size


def _closing_weights(p: Plan, t: int, e_axes, e_off, e_size) -> np.ndarray:
    """Log-weights of the factors closed at step t, broadcast over the extended state."""
    cw = np.zeros((1,) * len(e_size))
    for ax, (e, o, s) in enumerate(zip(e_axes, e_off, e_size)):
        if e not in p.closes[t]:
            continue
        idx = o + np.arange(s) - p.elo[e]
        w = np.full(s, -np.inf)
        inside = (idx >= 0) & (idx < p.elw[e].shape[0])
        w[inside] = p.elw[e][idx[inside]]
        shape = [1] * len(e_size)
        shape[ax] = s
        cw = cw + w.reshape(shape)
    return cw


def _at(a, src):
    return a[src] if src else np.asarray(a)


def run(steps):
    """Run a stepwise computation (:func:`forward_steps`, :func:`marginals_steps`) to its
    end and return its result; a caller that reports progress iterates it instead (each
    step yields the number of steps done): no callback into the caller."""
    try:
        while True:
            next(steps)
    except StopIteration as end:
        return end.value


def forward(p: Plan):
    """Log forward messages (``alphas[t]``: the state before variable t) and the log
    normaliser."""
    return run(forward_steps(p))


def forward_steps(p: Plan):
    """:func:`forward` step by step: yields the steps done (one per variable), returns
    ``(alphas, log_z)``."""
    alpha = np.zeros(())
    alphas = []
    for t in range(len(p.vlo)):
        yield t
        alphas.append(alpha)
        moves, e_axes, e_off, e_size = _moves(p, t)
        ext = np.full(tuple(e_size), -np.inf)
        for _, w, src, dst in moves:
            ext[dst] = np.logaddexp(ext[dst], _at(alpha, src) + w)
        ext = ext + _closing_weights(p, t, e_axes, e_off, e_size)
        gone = tuple(ax for ax, e in enumerate(e_axes) if e in p.closes[t])
        alpha = _lse(ext, gone) if gone else ext
    return alphas, _lse_all(np.asarray(alpha))


def _normalised(logp, log_z):
    with np.errstate(under="ignore"):
        q = np.exp(np.asarray(logp) - log_z)
    s = q.sum()
    if not np.isfinite(s) or s <= 0:
        raise FloatingPointError("a marginal lost its mass (no value of positive weight)")
    return q / s


def marginals(p: Plan):
    """``(log_z, var_probs, factor_probs, alphas)``: per variable t its probabilities over
    ``p.vlo[t] .. p.vhi[t]``; per factor ``{e: (first value, probabilities)}`` of its sum;
    the forward messages (for :func:`sample`)."""
    return run(marginals_steps(p))


def marginals_steps(p: Plan):
    """:func:`marginals` step by step: yields the steps done (``2 N``: forward, then
    backward), returns its result."""
    alphas, log_z = yield from forward_steps(p)
    if not np.isfinite(log_z):
        raise ValueError("no table has positive weight")
    N = len(p.vlo)
    var_probs = [None] * N
    fac = {}
    beta = np.zeros(())
    for t in range(N - 1, -1, -1):
        yield 2 * N - 1 - t
        moves, e_axes, e_off, e_size = _moves(p, t)
        cw = _closing_weights(p, t, e_axes, e_off, e_size)
        shape = [1 if e in p.closes[t] else s for e, s in zip(e_axes, e_size)]
        bext = np.asarray(beta).reshape(shape) + cw          # beta on the extended state
        alpha = alphas[t]
        new_beta = np.full(tuple(p.size[t]), -np.inf)
        pv = np.full(int(p.vhi[t] - p.vlo[t]) + 1, -np.inf)
        closing = [ax for ax, e in enumerate(e_axes) if e in p.closes[t]]
        ext = np.full(tuple(e_size), -np.inf) if closing else None
        for v, w, src, dst in moves:
            b = bext[dst] + w
            a = _at(alpha, src)
            pv[v - int(p.vlo[t])] = _lse_all(a + b)
            if src:
                new_beta[src] = np.logaddexp(new_beta[src], b)
            else:
                new_beta = np.logaddexp(new_beta, b)
            if closing:
                ext[dst] = np.logaddexp(ext[dst], a + w)
        var_probs[t] = _normalised(pv, log_z)
        if closing:
            joint = ext + bext
            for ax in closing:
                other = tuple(i for i in range(len(e_axes)) if i != ax)
                m = _lse(joint, other) if other else joint
                fac[e_axes[ax]] = (int(e_off[ax]), _normalised(m, log_z))
        beta = new_beta
    return log_z, var_probs, fac, alphas


def _factor_logw(p: Plan, e: int, sums: np.ndarray) -> np.ndarray:
    idx = sums - p.elo[e]
    w = np.full(idx.shape, -np.inf)
    inside = (idx >= 0) & (idx < p.elw[e].shape[0])
    w[inside] = p.elw[e][idx[inside]]
    return w


def sample(p: Plan, alphas, uniforms: np.ndarray) -> np.ndarray:
    """Exact draws (int64 (n, N)) by backward sampling from the forward messages
    ``alphas`` (:func:`marginals`); ``uniforms`` (n, N) in [0, 1) from the caller's
    generator: draw d picks variable t with ``uniforms[d, t]``."""
    n, N = uniforms.shape
    out = np.empty((n, N), np.int64)
    for d in range(n):
        state = {}                          # open factor -> partial sum after step t
        for t in range(N - 1, -1, -1):
            axes, off, size = p.axes[t], p.off[t], p.size[t]
            alpha = alphas[t]
            logs, picks = [], []
            for v in range(int(p.vlo[t]), int(p.vhi[t]) + 1):
                w = p.lw[t, v - int(p.lo[t])]
                if not np.isfinite(w) or any(state[e] != v for e in p.opens[t]
                                             if e not in p.closes[t]):
                    continue
                idx, free, ok = [], [], True
                for e, o, s in zip(axes, off, size):
                    if e in p.closes[t]:
                        idx.append(slice(None))
                        free.append((e, o, s))
                        continue
                    i = state[e] - (v if e in p.holds[t] else 0) - o
                    if not 0 <= i < s:
                        ok = False
                        break
                    idx.append(i)
                if not ok:
                    continue
                a = np.asarray(alpha[tuple(idx)] if idx else alpha) + w
                for k, (e, o, s) in enumerate(free):
                    shape = [1] * len(free)
                    shape[k] = s
                    a = a + _factor_logw(p, e, o + np.arange(s) + v).reshape(shape)
                a = np.ravel(a)
                logs.append(a)
                picks.append((v, idx, [s for _, _, s in free]))
            allw = np.concatenate(logs)
            q = np.exp(allw - np.max(allw))
            cum = np.cumsum(q)
            r = min(int(np.searchsorted(cum, uniforms[d, t] * cum[-1], side="right")),
                    cum.shape[0] - 1)
            for v, idx, fs in picks:
                size_v = int(np.prod(fs)) if fs else 1
                if r < size_v:
                    break
                r -= size_v
            out[d, t] = v
            loc = iter(np.unravel_index(r, fs) if fs else ())
            state = {e: int(o) + (int(next(loc)) if isinstance(i, slice) else int(i))
                     for e, o, i in zip(axes, off, idx)}
    return out
