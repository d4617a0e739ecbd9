"""Checkpoints of a forward pass: which stages to keep when they do not all fit.

A forward-backward pass over T stages keeps every stage for the backward pass when they
fit the memory; otherwise it keeps checkpoints and recomputes each segment between them
from the checkpoint before it.  :func:`checkpoint_plan` first finds the checkpoints that
minimise the peak (stored checkpoints plus the largest segment recomputed at a time) by
a small dynamic program over the stages, for a range of segment caps: the least memory
the pass can run in.  When the budget holds more than that, it keeps as many stages as
the budget allows instead (:func:`_least_recompute`): the stages it drops are
recomputed once each, so keeping more recomputes less.  The least-peak plan depends only
on the stages' sizes, so it is computed once per distinct list of stage sizes: the
estimate, the posterior and the draws of one request share it.  Plain arrays in and out.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

__all__ = ["checkpoint_plan"]


def checkpoint_plan(per, max_states):
    """Which forward stages to keep: all when they fit ``max_states``; else, when the
    least peak fits, a plan within ``max_states`` that recomputes less (when there is
    one); else the
    checkpoints that minimise the peak (the caller refuses when that peak does not fit).
    ``per``: stored states of every stage (the last one, the end state, is not kept).
    Returns (keep mask, stored states at the peak)."""
    per = np.asarray(per, dtype=float)[:-1]
    T = len(per)
    full = float(per.sum())
    if full <= max_states or T <= 2:
        return np.ones(T, bool), full
    keep, peak = _minimal_peak(per.tobytes())
    if peak < max_states:
        more = _least_recompute(per, float(max_states))
        if more is not None and per[~more[0]].sum() < per[~keep].sum():
            return more
    return keep.copy(), peak


def _least_recompute(per, budget):
    """Checkpoints with a peak (stored stages plus the largest run of dropped stages, which
    the backward pass recomputes and holds at once) within ``budget`` that drop few
    states: for segment caps S from the largest stage up, drop stages largest first (never
    the first stage) while each run of dropped stages stays within S, until the kept ones
    fit ``budget - S``; the first cap that fits wins (a larger cap drops more).  Returns
    (keep mask, peak), or None when no cap fits."""
    T = len(per)
    full = float(per.sum())
    order = sorted(range(1, T), key=lambda t: -per[t])
    for S in float(per.max()) * np.array([1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0]):
        need = full + S - budget               # states to drop at least
        drop = np.zeros(T, bool)
        dropped = 0.0
        for t in order:
            if dropped >= need:
                break
            a, b = t, t                        # the run t would join
            while a > 1 and drop[a - 1]:
                a -= 1
            while b < T - 1 and drop[b + 1]:
                b += 1
            if per[a:b + 1].sum() > S:
                continue
            drop[t] = True
            dropped += per[t]
        if dropped < need:
            continue
        runs, run = 0.0, 0.0
        for t in range(T):
            run = run + per[t] if drop[t] else 0.0
            runs = max(runs, run)
        peak = full - dropped + runs
        if peak <= budget:
            return ~drop, peak
    return None


@lru_cache(maxsize=64)
def _minimal_peak(per_bytes: bytes):
    """The checkpoints of least peak for stage sizes ``per`` (memoised: a pure function
    of the sizes)."""
    per = np.frombuffer(per_bytes, dtype=float)
    T = len(per)
    full = float(per.sum())
    cs = np.concatenate([[0.0], np.cumsum(per)])

    def inner(a, b):                     # stored states of the stages a+1..b-1
        return cs[b] - cs[a + 1] if b > a + 1 else 0.0

    caps = np.unique(np.concatenate([per, [0.0]]))
    caps = np.unique(np.concatenate([caps, np.geomspace(max(per.max(), 1.0), max(full, 1.0),
                                                        40)]))
    best = (full, np.ones(T, bool))
    for S in caps:
        f = np.full(T, np.inf)
        prev = np.full(T, -1)
        f[0] = per[0]
        for t in range(1, T):
            for u in range(t - 1, -1, -1):
                if inner(u, t) > S:
                    break
                if f[u] + per[t] < f[t]:
                    f[t], prev[t] = f[u] + per[t], u
        ends = [t for t in range(T) if inner(t, T) <= S and np.isfinite(f[t])]
        if not ends:
            continue
        t = min(ends, key=lambda x: f[x])
        peak = f[t] + S
        if peak < best[0]:
            keep = np.zeros(T, bool)
            while t >= 0:
                keep[t] = True
                t = prev[t]
            best = (peak, keep)
    best[1].flags.writeable = False
    return best[1], float(best[0])
