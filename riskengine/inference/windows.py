"""Entry windows: what a release says about each entry of the original table.

Many mechanisms publish every entry (interior cell or total) as a function of its own
original value only: a total published exactly, a cell fixed or suppressed, a value
rounded to a multiple of the base.  Their likelihood is then a product over entries, and
a release is described by one *window* per entry: the first original value it allows and
the log-likelihood of every value from there on (``-inf``: impossible).  The exact routes
for tables with totals (the table DP in 2-D, the streaming enumerator in 3-D) take
windows, add the prior to the interior, and never see the mechanism.

Entries a release says nothing about (a suppressed cell, the interior of a margins-only
release) get a flat window from 0 up to the smallest upper end of the published totals
that contain them (:func:`total_bound`): no table in the candidate set is cut off.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["EntryWindows", "around", "exact", "flat", "from_published", "total_bound"]


@dataclass
class EntryWindows:
    """Windows of the interior and of every total of a release.

    ``lo[keep]`` (int64, the block's shape) and ``lw[keep]`` (float, shape + window) per
    block, keyed by the dims the block keeps (the interior: every dim).  ``approximation``
    says what the likelihood approximates (empty when it is exact).
    """

    dims: tuple
    shape: tuple
    lo: dict
    lw: dict
    approximation: str = field(default="")

    @property
    def interior(self) -> tuple:
        return self.lo[self.dims], self.lw[self.dims]

    def has(self, *keys) -> bool:
        return all(tuple(k) in self.lo for k in keys)

    def with_prior(self, prior, coords) -> EntryWindows:
        """The same windows with the prior's log-weights added to the interior."""
        lo, lw = self.interior
        vals = lo[..., None] + np.arange(lw.shape[-1])
        plw = prior.log_weights(vals, self.dims, coords)
        new_lo, new_lw = dict(self.lo), dict(self.lw)
        with np.errstate(invalid="ignore"):
            both = lw + plw
        new_lw[self.dims] = np.where(np.isnan(both), -np.inf, both)
        return EntryWindows(self.dims, self.shape, new_lo, new_lw, self.approximation)

    def trimmed(self) -> EntryWindows | None:
        """Impossible values at both ends of every window dropped; ``None`` when some entry
        has no possible value (no candidate at all)."""
        lo, lw = {}, {}
        for k, first in self.lo.items():
            t = trim(first, self.lw[k])
            if t is None:
                return None
            lo[k], lw[k] = t
        return EntryWindows(self.dims, self.shape, lo, lw, self.approximation)


def trim(lo, lw):
    """``(lo, lw)`` with impossible values dropped at both ends of each window (common
    width), or ``None`` when some window is empty."""
    lo = np.asarray(lo, dtype=np.int64)
    lw = np.asarray(lw, dtype=float)
    fin = np.isfinite(lw)
    if not fin.any(axis=-1).all():
        return None
    first = np.argmax(fin, axis=-1)
    last = lw.shape[-1] - 1 - np.argmax(fin[..., ::-1], axis=-1)
    W = int((last - first).max(initial=0)) + 1
    idx = first[..., None] + np.arange(W)
    ok = idx <= last[..., None]
    vals = np.take_along_axis(lw, np.minimum(idx, lw.shape[-1] - 1), axis=-1)
    return lo + first, np.where(ok, vals, -np.inf)


def exact(values):
    """Windows of entries published exactly: one value each."""
    v = np.asarray(values, dtype=np.int64)
    return v, np.zeros(v.shape + (1,))


def flat(lower, upper):
    """Flat windows ``lower..upper`` per entry (broadcast; upper >= lower)."""
    lower, upper = np.broadcast_arrays(np.asarray(lower, dtype=np.int64),
                                       np.asarray(upper, dtype=np.int64))
    W = int((upper - lower).max(initial=0)) + 1
    vals = np.arange(W)
    return lower.copy(), np.where(vals <= (upper - lower)[..., None], 0.0, -np.inf)


def around(published, base: int, loglik=None):
    """Windows ``published - (base - 1) .. published + (base - 1)`` (cut at 0), flat or with
    ``loglik(values, published)`` added (broadcast over the window)."""
    pub = np.asarray(published, dtype=np.int64)
    lo = np.maximum(pub - (base - 1), 0)
    vals = lo[..., None] + np.arange(2 * base - 1)
    lw = np.where(np.abs(vals - pub[..., None]) <= base - 1, 0.0, -np.inf)
    if loglik is not None:
        lw = lw + loglik(vals, pub[..., None])
    return lo, lw


def total_bound(dims, shape, lo: dict, lw: dict) -> np.ndarray:
    """Per interior cell, the smallest upper end over the published totals containing it
    (``-1`` where no total bounds it)."""
    bound = np.full(shape, np.iinfo(np.int64).max, dtype=np.int64)
    for keep, first in lo.items():
        if tuple(keep) == tuple(dims):
            continue
        fin = np.isfinite(lw[keep])
        hi = first + fin.shape[-1] - 1 - np.argmax(fin[..., ::-1], axis=-1)
        hi = np.where(fin.any(axis=-1), hi, -1)
        idx = tuple(slice(None) if d in keep else None for d in dims)
        bound = np.minimum(bound, np.asarray(hi)[idx] if np.ndim(hi) else hi)
    return np.where(bound == np.iinfo(np.int64).max, -1, bound)


def from_published(release, totals: dict, fixed=None) -> EntryWindows:
    """Windows for releases whose interior is fixed where published and free elsewhere:
    ``totals`` ``{keep: (lo, lw)}`` for every published total; the interior cells of
    ``fixed`` (NaN = free; ``None``: every cell free) keep their value, the free ones range
    over ``0 ..`` :func:`total_bound`."""
    dims, shape = release.dims, release.shape
    lo = {k: np.asarray(v[0], dtype=np.int64) for k, v in totals.items()}
    lw = {k: np.asarray(v[1], dtype=float) for k, v in totals.items()}
    bound = total_bound(dims, shape, lo, lw)
    if (bound < 0).any():
        i = tuple(int(x) for x in np.argwhere(bound < 0)[0])
        raise ValueError(f"interior cell {i} is in no published total: its original value is "
                         "unbounded (infinitely many candidates)")
    pub = np.full(shape, np.nan) if fixed is None else np.asarray(fixed, dtype=float)
    free = np.isnan(pub)
    val = np.where(free, 0, pub).astype(np.int64)
    clo, clw = flat(np.where(free, 0, val), np.where(free, bound, val))
    lo[dims], lw[dims] = clo, clw
    return EntryWindows(dims, shape, lo, lw)
