"""ptable's maximum-entropy construction of a p-table (:meth:`PTable.design`).

For each original count ``i`` (up to the threshold rows), the perturbation probabilities
``p(d | i)`` on ``d`` in ``-D..D`` (none that would publish ``1..js``) with mean 0 and
variance ``V`` (exactly, or at most ``V``), optional monotonicity and a floor ``pstay``
on ``p(0 | i)``, that maximise the entropy: a linear program finds a feasible row (and the
variance range), SLSQP the maximum-entropy one, as the R package ptable does.  Rows are
memoised per parameter set.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy.optimize import linprog, minimize

#: smallest probability of a designed p-table's entry (as the ptable package)
_EPS = 1e-8


@functools.lru_cache(maxsize=64)
def _design(D: int, V: float, js: int, pstay, mono: bool, exact: bool) -> tuple:
    top = D if js == 0 else D + js + 1
    rows = [(np.array([0]), np.array([1.0]))]
    for i in range(1, top + 1):
        j = np.arange(max(i - D, 0), i + D + 1)
        j = j[~((j >= 1) & (j <= js))]
        v = (j - i).astype(float)
        lb = np.full(v.size, _EPS)
        stay = v == 0
        if pstay is not None and stay.any():
            lb[stay] = pstay

        def retry(p, stay=stay, v=v):  # the package's loop: lower pstay's bound by 0.05
            if pstay is None or not stay.any() or p is None:
                return exact and p is None and pstay is not None and stay.any()
            return not exact and p @ (v * v) < V - 5e-4

        p = _max_entropy_row(v, V, lb, mono, exact)
        tries = 0
        while retry(p) and tries < 20:
            lb[stay] = max(lb[stay][0] - 0.05, _EPS)
            tries += 1
            p = _max_entropy_row(v, V, lb, mono, exact)
        if p is None:
            lo, hi = _variance_range(v, mono)
            rise = " and probabilities rising up to the original" if mono else ""
            hint = ("" if not exact or V < lo else
                    "; variance='at_most' gives the ptable package's rows, whose variance may "
                    "fall short of V")
            raise ValueError(f"no p-table row for original {i} has variance "
                             f"{'' if exact else 'at most '}V={V:g}: with perturbations "
                             f"{int(v.min())}..{int(v.max())} (|v| <= D={D}, published >= 0"
                             f"{f', no published 1..{js}' if js else ''}), mean 0{rise} a "
                             f"row's variance lies in [{lo:.6g}, {hi:.6g}]{hint}")
        keep = p > 0
        rows.append((j[keep], p[keep]))
    return tuple(rows)


def _constraints(v, mono, V=None, exact=True):
    """``(A_eq, b_eq, A_ub, b_ub)``: sum 1, mean 0 and (``exact``) variance V; the
    monotone rise up to v = 0 and (not ``exact``) variance <= V.  ``V=None``: no
    variance constraint."""
    n = v.size
    A_eq, b_eq = [np.ones(n), v], [1.0, 0.0]
    A_ub, b_ub = [], []
    if V is not None:
        (A_eq if exact else A_ub).append(v * v)
        (b_eq if exact else b_ub).append(V)
    z = np.flatnonzero(v == 0)
    if mono and z.size and z[0] > 0:
        for k in range(z[0]):               # p[k] - p[k + 1] <= 0 below the original
            row = np.zeros(n)
            row[k], row[k + 1] = 1.0, -1.0
            A_ub.append(row)
            b_ub.append(0.0)
    return (np.array(A_eq), np.array(b_eq), np.array(A_ub).reshape(-1, n) if A_ub else None,
            np.array(b_ub) if b_ub else None)


def _variance_range(v, mono) -> tuple:
    A_eq, b_eq, A_ub, b_ub = _constraints(v, mono)
    out = []
    for sign in (1.0, -1.0):
        r = linprog(sign * v * v, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq, bounds=(0, 1),
                    method="highs")
        out.append(float(v * v @ r.x) if r.status == 0 else math.nan)
    return tuple(out)


def _max_entropy_row(v, V, lb, mono, exact):
    """Probabilities on the perturbations ``v`` maximising the entropy subject to sum 1,
    mean 0, variance V (``exact``) or at most V, ``p >= lb`` and (``mono``) the rise up to
    v = 0; ``None`` when no row meets them.  Entries the constraints force to 0 (with
    ``lb`` relaxed to 0) are 0."""
    n = v.size
    A_eq, b_eq, A_ub, b_ub = _constraints(v, mono, V, exact)
    # entries some feasible row (bounds relaxed to 0) uses: the rest are forced to 0
    use = np.zeros(n, bool)
    for k in range(n):
        c = np.zeros(n)
        c[k] = -1.0
        r = linprog(c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq, bounds=(0, 1),
                    method="highs")
        if r.status != 0:
            return None
        use[k] = r.x[k] > 1e-12
    lbu = np.where(use, lb, 0.0)
    ubu = np.where(use, 1.0, 0.0)
    start = linprog(np.zeros(n), A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq,
                    bounds=list(zip(lbu, ubu)), method="highs")
    if start.status != 0:
        return None
    idx = np.flatnonzero(use)
    Ae, Au = A_eq[:, idx], None if A_ub is None else A_ub[:, idx]
    cons = [{"type": "eq", "fun": lambda q: Ae @ q - b_eq, "jac": lambda q: Ae}]
    if Au is not None:
        cons.append({"type": "ineq", "fun": lambda q: b_ub - Au @ q, "jac": lambda q: -Au})

    def negent(q):
        return float(q @ np.log(np.maximum(q, 1e-300)))

    def grad(q):
        return np.log(np.maximum(q, 1e-300)) + 1.0

    res = minimize(negent, start.x[idx], jac=grad, method="SLSQP", constraints=cons,
                   bounds=list(zip(lbu[idx], ubu[idx])),
                   options={"ftol": 1e-15, "maxiter": 3000})
    q = np.clip(res.x, lbu[idx], 1.0)
    # the last bits of the equality constraints: the least-norm correction of the entries
    # off their lower bounds
    free = q > lbu[idx] + 1e-10
    if free.any():
        Af = Ae[:, free]
        q[free] += Af.T @ np.linalg.lstsq(Af @ Af.T, b_eq - Ae @ q, rcond=None)[0]
    ok = np.abs(Ae @ q - b_eq).max() <= 1e-9 and (q >= lbu[idx] - 1e-15).all()
    if Au is not None:
        ok &= bool((Au @ q - b_ub).max() <= 1e-9)
    if not ok:
        raise RuntimeError(f"the maximum-entropy row on perturbations {v.tolist()} did not "
                           f"converge ({res.message})")
    p = np.zeros(n)
    p[idx] = q
    return p
