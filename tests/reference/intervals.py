"""LP intervals of suppressed cells, formulated independently of riskengine.

The equations are built by hand from the table's row / column / margin / subtotal sums
(dense, one unknown per suppressed cell, right-hand side = published total minus the
published cells), never through riskengine.tabular, and each min / max is solved with
HiGHS's dual simplex ("highs-ds") instead of the default choice.  ``sums_*`` list the
published sums of a 2-D table with its totals, a 3-D table with its 2-way margins and a
2-D table with one level of subtotals along its first dim.
"""

import itertools

import numpy as np
from scipy.optimize import linprog

TOL = 1e-6


def reference_intervals(x, supp, sums, only=None):
    """``sums``: list of (mask of interior cells, published sum).  Returns lower, upper
    (``only``: a mask of the suppressed cells to solve for; the others stay NaN)."""
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
    out = sums_2d(x)
    for g in parts:
        for j in range(x.shape[1]):
            m = np.zeros(x.shape, bool)
            m[list(g), j] = True
            out.append((m, x[m].sum()))
    return out
