"""The CTA optimum by enumeration, independent of riskengine's MILP.

Every down/up pattern of the s sensitive cells (2^s of them) is solved as an LP in the
plain adjustment y (free variables with direction-dependent bounds, |y| through
t >= +-y) with scipy.optimize.linprog; the best pattern's objective is the MILP optimum.
Arguments are vectors over the cells of the tabular system: ``a`` values, ``A`` the
equations, ``sens`` sensitive cells, ``p`` protections, ``e`` capacities, ``u`` the
largest moves of sensitive cells, ``w`` objective weights.
"""

from itertools import product

import numpy as np
from scipy.optimize import linprog


def cta_optimum(a, A, sens, p, e, u, w, extra=()):
    """min sum w|y| over every direction pattern (None if none is feasible); ``extra``:
    ``(c, lo, hi)`` rows ``lo <= c @ y <= hi``."""
    n = a.size
    si = np.flatnonzero(sens)
    best = None
    for pattern in product((-1, 1), repeat=si.size):
        lo = -np.minimum(e, a)
        hi = e.copy()
        ok = True
        for i, d in zip(si, pattern):
            if d > 0:
                lo[i], hi[i] = p[i], u[i]
            else:
                lo[i], hi[i] = -min(u[i], a[i]), -p[i]
                if hi[i] < lo[i]:
                    ok = False
        if not ok:
            continue
        # variables [y, t]; min w t; t - y >= 0, t + y >= 0; A y = 0
        I = np.eye(n)
        A_ub = np.block([[I, -I], [-I, -I]])
        b_ub = np.zeros(2 * n)
        rows, rlo, rhi = [], [], []
        for c, clo, chi in extra:
            rows.append(np.r_[c, np.zeros(n)])
            rlo.append(clo)
            rhi.append(chi)
        if rows:
            R = np.array(rows)
            A_ub = np.vstack([A_ub, R, -R])
            b_ub = np.r_[b_ub, rhi, -np.array(rlo)]
        A_eq = np.hstack([A.toarray(), np.zeros((A.shape[0], n))])
        res = linprog(np.r_[np.zeros(n), w], A_ub=A_ub, b_ub=b_ub, A_eq=A_eq,
                      b_eq=np.zeros(A.shape[0]),
                      bounds=list(zip(lo, hi)) + [(0, None)] * n, method="highs")
        if res.status == 0 and (best is None or res.fun < best):
            best = res.fun
    return best
