"""LP intervals of suppressed cells, formulated independently of riskengine.

The equations are built by hand from the table's row / column / margin / subtotal sums
(dense, one unknown per suppressed cell, right-hand side = published total minus the
published cells), never through riskengine.tabular, and each min / max is solved with
HiGHS's dual simplex ("highs-ds") instead of the default choice.  ``sums_*`` list the
published sums of a 2-D table with its totals, a 3-D table with its 2-way margins and a
2-D table with one level of subtotals along its first dim.  :func:`independently_protected`
and :func:`reaches` read protection off these intervals.

Hidden totals: the *extended* array (:func:`extend`: one more entry on every axis, the
last entry of each line the line's total) makes every equation of the published structure
"each line sums to its last entry" (:func:`line_equations`);
:func:`reference_intervals_ext` and :func:`protected_ext` solve in those terms.
"""

import itertools

import numpy as np
from scipy.optimize import linprog

TOL = 1e-6


def reference_intervals(x, supp, sums, only=None):
    """LP min and max of every suppressed cell of ``x`` (``supp``) given the published
    cells and sums, cells >= 0.  ``sums``: list of (mask of interior cells, published
    sum).  Returns lower, upper (published cells: their value; ``only``: a mask of the
    suppressed cells to solve for, the others stay NaN)."""
    idx = list(zip(*np.nonzero(supp)))
    pos = {c: k for k, c in enumerate(idx)}
    rows, rhs = [], []
    for mask, total in sums:
        cells = list(zip(*np.nonzero(mask)))
        unknown = [c for c in cells if c in pos]
        if not unknown:
            continue
        a = np.zeros(len(idx))
        for c in unknown:
            a[pos[c]] = 1.0
        rows.append(a)
        rhs.append(total - sum(x[c] for c in cells if c not in pos))
    lo = np.where(supp, np.nan, x)
    hi = lo.copy()
    for c, k in pos.items():
        if only is not None and not only[c]:
            continue
        e = np.zeros(len(idx))
        e[k] = 1.0
        r1 = linprog(e, A_eq=np.array(rows), b_eq=np.array(rhs), bounds=(0, None),
                     method="highs-ds")
        r2 = linprog(-e, A_eq=np.array(rows), b_eq=np.array(rhs), bounds=(0, None),
                     method="highs-ds")
        assert r1.status == 0 and r2.status == 0
        lo[c], hi[c] = r1.fun, -r2.fun
    return lo, hi


def sums_2d(x):
    """The published sums of a 2-D table with its totals: every row, then every column."""
    r, c = x.shape
    out = []
    for i in range(r):
        m = np.zeros(x.shape, bool)
        m[i] = True
        out.append((m, x[i].sum()))
    for j in range(c):
        m = np.zeros(x.shape, bool)
        m[:, j] = True
        out.append((m, x[:, j].sum()))
    return out


def sums_3d(x):
    """The published sums of a 3-D table with its 2-way margins: every line along each
    axis."""
    out = []
    for ax in range(3):
        other = [a for a in range(3) if a != ax]
        for i, j in itertools.product(range(x.shape[other[0]]), range(x.shape[other[1]])):
            m = np.zeros(x.shape, bool)
            sl = [slice(None)] * 3
            sl[other[0]], sl[other[1]] = i, j
            m[tuple(sl)] = True
            out.append((m, x[m].sum()))
    return out


def sums_groups(x, parts):
    """:func:`sums_2d` plus the subtotal of every group of rows ``parts`` in each column."""
    out = sums_2d(x)
    for g in parts:
        for j in range(x.shape[1]):
            m = np.zeros(x.shape, bool)
            m[list(g), j] = True
            out.append((m, x[m].sum()))
    return out


def independently_protected(x, supp, sens, plo, phi, sums):
    """Every sensitive cell is suppressed and its LP interval (:func:`reference_intervals`)
    reaches at least ``plo`` below and ``phi`` above its value (to TOL)."""
    if not supp[sens].all():
        return False
    lo, hi = reference_intervals(x.astype(float), supp, sums, only=sens)
    for c in zip(*np.nonzero(sens)):
        if x[c] - lo[c] < plo[c] - TOL or hi[c] - x[c] < phi[c] - TOL:
            return False
    return True


def reaches(x, supp, sens, sums):
    """Room below and above every sensitive cell (x - lower, upper - x) from
    :func:`reference_intervals`."""
    lo, hi = reference_intervals(x, supp, sums, only=sens)
    return x - lo, hi - x


# --- the extended array: totals may be hidden -----------------------------------------------


def extend(x):
    """The extended array: x with every total appended (2-D or 3-D)."""
    e = np.asarray(x, dtype=float)
    for ax in range(e.ndim):
        e = np.concatenate([e, e.sum(axis=ax, keepdims=True)], axis=ax)
    return e


def line_equations(shape_e):
    """Rows over the flattened extended array: every line sums to its last entry."""
    idx = np.arange(int(np.prod(shape_e))).reshape(shape_e)
    rows = []
    for ax in range(len(shape_e)):
        moved = np.moveaxis(idx, ax, -1).reshape(-1, shape_e[ax])
        for line in moved:
            r = np.zeros(idx.size)
            r[line[:-1]] = 1.0
            r[line[-1]] = -1.0
            rows.append(r)
    return np.array(rows)


def reference_intervals_ext(e, hidden):
    """LP min / max of every hidden entry of the extended array ``e`` (inf: unbounded),
    entries >= 0, by HiGHS's dual simplex on the dense line equations."""
    A = line_equations(e.shape)
    v = e.ravel()
    h = hidden.ravel()
    unk = np.flatnonzero(h)
    Au = A[:, unk]
    b = -A[:, ~h] @ v[~h]
    keep = np.abs(Au).sum(axis=1) > 0
    Au, b = Au[keep], b[keep]
    lo = np.where(h, np.nan, v)
    hi = lo.copy()
    for k, j in enumerate(unk):
        c = np.zeros(unk.size)
        c[k] = 1.0
        r1 = linprog(c, A_eq=Au, b_eq=b, bounds=(0, None), method="highs-ds")
        r2 = linprog(-c, A_eq=Au, b_eq=b, bounds=(0, None), method="highs-ds")
        assert r1.status == 0
        lo[j] = r1.fun
        hi[j] = np.inf if r2.status == 3 else -r2.fun
    return lo.reshape(e.shape), hi.reshape(e.shape)


def protected_ext(e, hide, sens_e, plo_e, phi_e):
    """Every sensitive entry of the extended array is hidden and its interval
    (:func:`reference_intervals_ext`) reaches ``plo_e`` below and ``phi_e`` above (to TOL)."""
    lo, hi = reference_intervals_ext(e, hide)
    for c in zip(*np.nonzero(sens_e)):
        if not hide[c]:
            return False
        if e[c] - lo[c] < plo_e[c] - TOL or hi[c] - e[c] < phi_e[c] - TOL:
            return False
    return True
