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
import scipy.sparse as sp

from .._budget import fmt_number

__all__ = ["EntryWindows", "around", "around_cost", "exact", "flat", "from_published",
           "total_bound", "window_bytes"]

#: arrays of a block's windows alive at once while they are made (values, distances,
#: masks, log-likelihood terms: measured with tracemalloc on rounding and noise windows)
_WORKING = 6


@dataclass
class EntryWindows:
    """Windows of the interior and of every total of a release.

    ``lo[keep]`` (int64, the block's shape) and ``lw[keep]`` (float, shape + window) per
    block, keyed by the dims the block keeps (the interior: every dim).  ``approximation``
    says what the likelihood approximates (empty when it is exact).  ``cut[keep]``:
    ``(low, high)`` boolean arrays of the block's shape, True where the window's end cuts
    a likelihood that goes on past it (noise of unbounded support); a block missing from
    ``cut`` has hard ends (the likelihood is zero past them: a rounding window, a count's
    0).  ``cut=None``: not stated (a route then goes by the mechanism's
    ``windows_truncated``).
    """

    dims: tuple
    shape: tuple
    lo: dict
    lw: dict
    approximation: str = field(default="")
    #: log of the constant factor taken out of the weights (added back to the evidence)
    shift: float = field(default=0.0)
    #: ``{keep: (low, high)}``: which window ends cut an unbounded likelihood (see above)
    cut: dict | None = field(default=None)

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
        return EntryWindows(self.dims, self.shape, new_lo, new_lw, self.approximation,
                            self.shift, self.cut)

    def tilted(self, anchor: np.ndarray | None = None) -> EntryWindows:
        """The same weights of every table, better scaled for floating point.

        Each cell's log-weight gets ``s_c v`` added, ``s_c`` the sum over the totals that
        contain the cell of a slope ``theta`` per total entry, and each total's log-weight
        gets ``theta t`` subtracted: a table's weight is a product over entries and
        ``sum_c s_c x_c = sum over total entries of theta t``, so every table keeps its
        weight exactly (nothing is approximated).  The slopes centre each cell's tilted
        window on a table ``x*`` that fits the totals (iterative proportional fitting,
        started from each cell's own mode, to the centres of the totals' windows: for
        Poisson priors the constrained mode): least squares of the cells' log-weight
        slopes there.  Each cell's log-weights are then shifted to 0 at ``x*`` (the
        constant goes to ``shift``), so the tables that carry the posterior weigh about
        1 cell by cell.  Without it a prior centred far from the totals (Poisson(1)
        against totals in the hundreds) weighs every table below the smallest float
        relative to the cells' own maxima.  ``anchor``: the table ``x*`` to use instead
        (e.g. :meth:`mode`).
        """
        dims = self.dims
        lo, lw = self.interior
        blocks = [k for k in self.lo if k != dims]
        if not blocks or lw.shape[-1] == 1:
            return self
        W = lw.shape[-1]
        fin = np.isfinite(lw)
        first = np.argmax(fin, axis=-1)
        last = W - 1 - np.argmax(fin[..., ::-1], axis=-1)
        free = last > first
        if not free.any():
            return self
        axes = {k: tuple(i for i, d in enumerate(dims) if d not in k) for k in blocks}
        expand = {k: tuple(slice(None) if d in k else None for d in dims) for k in blocks}
        target = {}
        for k in blocks:
            f = np.isfinite(self.lw[k])
            a = np.argmax(f, axis=-1)
            b = f.shape[-1] - 1 - np.argmax(f[..., ::-1], axis=-1)
            target[k] = self.lo[k] + (a + b) / 2.0
        # a table near the totals: iterative proportional fitting inside the cell windows
        xmin, xmax = lo + first, lo + last
        mode = lo + np.argmax(np.where(fin, lw, -np.inf), axis=-1)
        x = np.where(free, np.clip(mode, np.maximum(xmin, 0.5), np.maximum(xmax, 0.5)),
                     xmin).astype(float)
        for _ in range(0 if anchor is not None else 30):
            for k in blocks:
                fixed = np.where(free, 0.0, x)
                want = np.asarray(target[k]) - (fixed.sum(axis=axes[k]) if axes[k] else fixed)
                have = np.where(free, x, 0.0)
                have = have.sum(axis=axes[k]) if axes[k] else have
                ratio = np.where(have > 0, np.maximum(want, 0.0) / np.where(have > 0, have, 1.0),
                                 1.0)
                r = np.asarray(ratio)[expand[k]] if np.ndim(ratio) else ratio
                x = np.where(free, np.clip(x * r, xmin, xmax), x)
        if anchor is not None:
            x = np.clip(np.asarray(anchor, dtype=float), xmin, xmax)
        # slope of each free cell's log-weight there (the finite difference across it)
        j = np.clip(np.floor(x - lo).astype(np.int64), first, np.maximum(last - 1, first))
        a = np.take_along_axis(lw, j[..., None], axis=-1)[..., 0]
        b = np.take_along_axis(lw, np.minimum(j + 1, W - 1)[..., None], axis=-1)[..., 0]
        slope = np.where(free & np.isfinite(a) & np.isfinite(b), b - a, np.nan)
        use = np.isfinite(slope)
        if not use.any():
            return self
        # least squares: -slope_c ~ sum over blocks of theta_k[entry of c]
        offsets, n = {}, 0
        for k in blocks:
            size = int(np.prod(np.shape(self.lo[k]), dtype=np.int64))
            offsets[k] = n
            n += size
        rows = np.flatnonzero(use.ravel())
        A = np.zeros((rows.size, n))
        grids = np.indices(lw.shape[:-1]).reshape(len(dims), -1)[:, rows]
        for k in blocks:
            kept = [i for i, d in enumerate(dims) if d in k]
            bshape = tuple(lw.shape[i] for i in kept)
            e = (np.ravel_multi_index(tuple(grids[i] for i in kept), bshape) if kept
                 else np.zeros(rows.size, np.int64))
            A[np.arange(rows.size), offsets[k] + e] = 1.0
        sol = np.linalg.lstsq(A, -slope.ravel()[rows], rcond=None)[0]
        theta = {k: sol[offsets[k]:offsets[k] + int(np.prod(np.shape(self.lo[k]),
                                                              dtype=np.int64))]
                 .reshape(np.shape(self.lo[k])) for k in blocks}
        s = sum(np.asarray(theta[k])[expand[k]] if np.ndim(theta[k]) else theta[k]
                for k in blocks)
        v = lo[..., None] + np.arange(W)
        new_lo, new_lw = dict(self.lo), dict(self.lw)
        tilted = np.where(fin, lw + np.asarray(s)[..., None] * v, -np.inf)
        # anchor: 0 at x* (the nearest value with finite weight)
        at = np.clip(np.rint(x - lo).astype(np.int64), first, last)
        anchor = np.take_along_axis(tilted, at[..., None], axis=-1)[..., 0]
        anchor = np.where(np.isfinite(anchor), anchor,
                          np.where(fin, tilted, -np.inf).max(axis=-1))
        new_lw[dims] = tilted - anchor[..., None]
        shift = self.shift + float(anchor.sum())
        for k in blocks:
            tv = self.lo[k][..., None] + np.arange(self.lw[k].shape[-1])
            f = np.isfinite(self.lw[k])
            new_lw[k] = np.where(f, self.lw[k] - np.asarray(theta[k])[..., None] * tv, -np.inf)
        return EntryWindows(dims, self.shape, new_lo, new_lw, self.approximation, shift,
                            self.cut)

    def _totals_of_cells(self):
        """Each published total's cells and window ends: ``[(e, tlo, thi)]``, ``e[c]``
        the index within that total's table of the total cell ``c`` counts in, ``tlo``
        / ``thi`` the first and last value of each total's window (finite weight)."""
        dims = self.dims
        n = self.interior[1].shape[:-1]
        ncell = int(np.prod(n, dtype=np.int64))
        idx = np.indices(n).reshape(len(dims), -1)
        out = []
        for k in self.lo:
            if k == dims:
                continue
            kept = [i for i, d in enumerate(dims) if d in k]
            bshape = tuple(n[i] for i in kept)
            e = (np.ravel_multi_index(tuple(idx[i] for i in kept), bshape) if kept
                 else np.zeros(ncell, np.int64))
            f = np.isfinite(self.lw[k])
            tlo = (self.lo[k] + np.argmax(f, axis=-1)).ravel()
            thi = (self.lo[k] + f.shape[-1] - 1 - np.argmax(f[..., ::-1], axis=-1)).ravel()
            out.append((e, tlo, thi))
        return out

    def mode(self, rng: np.random.Generator | None = None) -> np.ndarray:
        """The table that maximises the interior's log-weights (concave envelope, by
        linear programming over the increments of each cell, HiGHS) subject to every total
        lying in its window: the exact constrained mode when the log-weights are concave
        and the system is totally unimodular (2-D tables), a close anchor otherwise.
        ``rng``: random gains instead of the log-weights' (a random vertex of the same
        polytope: dispersed starting tables for Monte Carlo chains)."""
        from scipy.optimize import linprog  # on first use: its import costs ~0.15 s
        lo, lw = self.interior
        W = lw.shape[-1]
        fin = np.isfinite(lw)
        first = np.argmax(fin, axis=-1)
        last = W - 1 - np.argmax(fin[..., ::-1], axis=-1)
        base = (lo + first).ravel().astype(float)
        n = lw.shape[:-1]
        ncell = int(np.prod(n, dtype=np.int64))
        steps = (last - first).ravel()
        # one variable per increment of each cell, in [0, 1], gain = its log-weight change
        cell_of = np.repeat(np.arange(ncell), steps)
        w_of = np.concatenate([np.arange(a, b) for a, b in zip(first.ravel(), last.ravel())]) \
            if steps.sum() else np.zeros(0, np.int64)
        flat = lw.reshape(ncell, W)
        gain = flat[cell_of, w_of + 1] - flat[cell_of, w_of]
        gain = np.where(np.isfinite(gain), gain, -1e6)      # holes: walked through at a cost
        if rng is not None:
            gain = np.where(gain > -1e6, rng.standard_normal(gain.shape), gain)
        rows, lb, ub = [], [], []
        nrow = 0
        for e, tlo, thi in self._totals_of_cells():
            fixed = np.bincount(e, weights=base, minlength=tlo.size)
            rows.append(nrow + e[cell_of])
            lb.append(tlo - fixed)
            ub.append(thi - fixed)
            nrow += tlo.size
        x = base.copy()
        if steps.sum() and nrow:
            A = sp.csr_array((np.ones(sum(r.size for r in rows)),
                              (np.concatenate(rows), np.tile(np.arange(cell_of.size),
                                                             len(rows)))),
                             shape=(nrow, cell_of.size))
            res = linprog(-gain, A_ub=sp.vstack([A, -A]),
                          b_ub=np.concatenate([np.concatenate(ub), -np.concatenate(lb)]),
                          bounds=(0, 1), method="highs")
            if res.status == 0:
                x += np.bincount(cell_of, weights=res.x, minlength=ncell)
        return x.reshape(n)

    def vertex(self, rng: np.random.Generator) -> np.ndarray:
        """A random vertex of the polytope of tables whose cells lie between the first and
        last finite values of their windows and whose totals lie in theirs: one LP
        variable a cell (HiGHS), a standard normal gain each.  With a totally unimodular
        system (2-D tables) the vertex is an integer table: dispersed starting tables for
        Monte Carlo chains at counts where :meth:`mode`'s one variable per increment is
        too many.  Falls back to :meth:`mode` with ``rng`` when the LP's answer is not an
        integer table inside the windows.

        Parameters
        ----------
        rng : numpy.random.Generator

        Returns
        -------
        numpy.ndarray
            float, the table's shape.
        """
        from scipy.optimize import linprog  # on first use: its import costs ~0.15 s
        lo, lw = self.interior
        W = lw.shape[-1]
        fin = np.isfinite(lw)
        first = (lo + np.argmax(fin, axis=-1)).ravel().astype(float)
        last = (lo + W - 1 - np.argmax(fin[..., ::-1], axis=-1)).ravel().astype(float)
        n = lw.shape[:-1]
        ncell = int(np.prod(n, dtype=np.int64))
        rows, cols, lb, ub = [], [], [], []
        nrow = 0
        for e, tlo, thi in self._totals_of_cells():
            lb.append(tlo)
            ub.append(thi)
            rows.append(nrow + e)
            cols.append(np.arange(ncell))
            nrow += tlo.size
        gain = rng.standard_normal(ncell)
        if nrow:
            A = sp.csr_array((np.ones(ncell * len(rows)),
                              (np.concatenate(rows), np.concatenate(cols))),
                             shape=(nrow, ncell))
            res = linprog(-gain, A_ub=sp.vstack([A, -A]),
                          b_ub=np.concatenate([np.concatenate(ub), -np.concatenate(lb)]),
                          bounds=list(zip(first, last)), method="highs-ds")
        else:
            res = linprog(-gain, bounds=list(zip(first, last)), method="highs-ds")
        if res.status == 0:
            x = np.rint(res.x)
            ok = np.all(np.abs(res.x - x) < 1e-6) and np.all((x >= first) & (x <= last))
            xi = x.astype(np.int64).reshape(n)
            o = np.clip(xi - lo, 0, W - 1)
            ok = ok and bool(np.all(np.take_along_axis(fin, o[..., None], -1)))
            if ok:
                return x.reshape(n)
        return self.mode(rng)

    def transposed(self) -> EntryWindows:
        """The same windows of a 2-D table with its dims in the other order."""
        if len(self.dims) != 2:
            raise ValueError(f"transposed() is for 2-D tables; dims are {self.dims}")
        lo, lw = dict(self.lo), dict(self.lw)
        lo[self.dims[::-1]] = lo.pop(self.dims).T
        lw[self.dims[::-1]] = np.swapaxes(lw.pop(self.dims), 0, 1)
        cut = None
        if self.cut is not None:
            cut = dict(self.cut)
            if self.dims in cut:
                cut[self.dims[::-1]] = tuple(np.asarray(c).T for c in cut.pop(self.dims))
        return EntryWindows(self.dims[::-1], self.shape[::-1], lo, lw, self.approximation,
                            self.shift, cut)

    def trimmed(self) -> EntryWindows | None:
        """Impossible values at both ends of every window dropped; ``None`` when some entry
        has no possible value (no candidate at all)."""
        lo, lw = {}, {}
        for k, first in self.lo.items():
            t = trim(first, self.lw[k])
            if t is None:
                return None
            lo[k], lw[k] = t
        return EntryWindows(self.dims, self.shape, lo, lw, self.approximation, self.shift,
                            self.cut)


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


def window_bytes(block_sizes, width: int) -> float:
    """Peak bytes of making windows of ``width`` values for blocks of ``block_sizes``
    entries: every block's windows kept (8-byte floats), and the working arrays of the
    largest block while it is made.

    Parameters
    ----------
    block_sizes : sequence of int
        Entries per block (the interior, each published total).
    width : int
        Values in each entry's window.

    Returns
    -------
    float
        Bytes (a float: huge widths need no integer overflow check).
    """
    sizes = [int(n) for n in block_sizes]
    return 8.0 * float(width) * (sum(sizes) + _WORKING * max(sizes, default=0))


def around_cost(release, base: int, mechanism: str):
    """The ``window_cost`` input of mechanisms whose windows are :func:`around` (every
    entry within ``base - 1`` of its published value): ``(what, bytes, detail)``.

    Parameters
    ----------
    release : rk.Release
        The release (its interior and published totals are the entries).
    base : int
        The rounding base.
    mechanism : str
        The mechanism's class name, for the message.

    Returns
    -------
    tuple
        ``(what, bytes, detail)``: ``what`` names the parameter and its value, ``bytes``
        the peak memory of the windows, ``detail`` what was counted.
    """
    sizes = [int(np.prod(release.shape, dtype=np.int64))] + [
        int(np.size(v)) for v in release.margins.values()]
    W = 2 * int(base) - 1
    detail = (f"a window of 2 x base - 1 = {W:.3g} original values for each of the "
              f"{sum(sizes)} published cells and totals, 8 bytes a value")
    return f"{mechanism} base {fmt_number(base)}", window_bytes(sizes, W), detail


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
