"""Checkpoints of a forward pass: which stages to keep when they do not all fit.

A forward-backward pass over T stages keeps every stage for the backward pass when they
fit the memory; otherwise it keeps checkpoints and recomputes each segment between them
from the checkpoint before it.  :func:`checkpoint_plan` chooses the checkpoints that
minimise the peak (stored checkpoints plus the largest segment recomputed at a time) by
a small dynamic program over the stages, for a range of segment caps.  The plan depends
only on the stages' sizes, not on the budget (a budget only decides whether checkpoints
are needed at all), so it is computed once per distinct list of stage sizes: the
estimate, the posterior and the draws of one request share it.  Plain arrays in and out.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

__all__ = ["checkpoint_plan"]


def checkpoint_plan(per, max_states):
    """Which forward stages to keep: all when they fit ``max_states``, else the checkpoints
    that minimise the peak.  ``per``: stored states of every stage (the last one, the end
    state, is not kept).  Returns (keep mask, stored states at the peak)."""
    per = np.asarray(per, dtype=float)[:-1]
    T = len(per)
    full = float(per.sum())
    if full <= max_states or T <= 2:
        return np.ones(T, bool), full
    keep, peak = _minimal_peak(per.tobytes())
    return keep.copy(), peak


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
