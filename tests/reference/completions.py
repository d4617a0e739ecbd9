"""Integer completions of a suppressed count release, by enumerating every assignment of
the hidden entries (plain itertools), kept when every published sum holds.

* :func:`completions` -- hidden interior cells, published sums given as (mask, total)
  pairs (:func:`tests.reference.intervals.sums_2d` and friends);
* :func:`completions_ext` -- hidden entries of the extended array (totals may be hidden
  too), equations "each line sums to its last entry".
"""

import itertools

import numpy as np

from .intervals import line_equations


def completions(x, supp, sums, logw):
    """All nonnegative integer completions of the cells ``supp`` of ``x``: their count and
    the per-cell pmf (values 0..V-1, V - 1 the largest published sum) under the weights
    exp(sum of ``logw(table)``), ``logw`` giving a log weight per cell.  Each hidden cell
    runs from 0 to the smallest published sum holding it."""
    cells = list(zip(*np.nonzero(supp)))
    V = int(max(t for _, t in sums)) + 1
    cap = [min(int(t) for m, t in sums if m[c]) for c in cells]  # a cell <= each sum holding it
    hist = np.zeros(x.shape + (V,))
    n, z = 0, 0.0
    for vals in itertools.product(*(range(k + 1) for k in cap)):
        y = x.copy()
        for c, v in zip(cells, vals):
            y[c] = v
        if all(y[m].sum() == t for m, t in sums):
            n += 1
            w = np.exp(logw(y).sum())
            z += w
            for idx in np.ndindex(*x.shape):
                hist[idx + (y[idx],)] += w
    return n, hist / z if z else hist


def completions_ext(e, hide):
    """Every nonnegative integer extended array agreeing with the published entries of
    ``e`` (those not in ``hide``): each hidden entry from 0 to the largest published one,
    kept when every line sums to its last entry."""
    A = line_equations(e.shape)
    unk = np.flatnonzero(hide.ravel())
    top = int(np.nanmax(np.where(hide, np.nan, e))) if (~hide).any() else 0
    base = np.where(hide, 0, e).ravel()
    out = []
    for vals in itertools.product(range(top + 1), repeat=unk.size):
        v = base.copy()
        v[unk] = vals
        if np.all(np.abs(A @ v) < 1e-9):
            out.append(v.reshape(e.shape))
    return out
