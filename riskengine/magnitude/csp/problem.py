"""The complementary suppression problem (CSP): one instance, and what every solver needs.

Everything works on the vector of *every* cell of the tabular system ``T x = 0``
(interior, totals, subtotals; :mod:`riskengine.tabular`), so published and suppressed
totals are handled like any other cell.  Values are divided by their largest magnitude
(``scale``) before any LP.

A pattern ``z`` (1 = suppressed) protects sensitive cell ``s`` upwards by ``p`` when the
intruder's LP

    max y_s   over   T y = 0,   -x_j z_j <= y_j <= M_j z_j

reaches ``p`` (downwards: min ``y_s`` reaches ``-p``): ``y`` is the move from the true
table to another nonnegative table that agrees with every published cell.  ``M_j`` is the
intruder's a-priori room above ``x_j`` (:func:`upper_room`): the room left under the
smallest total that contains ``j`` (that total's value plus its own room when it may be
suppressed); a cell no total contains gets ``sum of the interior + sum of the upper
protections`` -- never binding when the grand total is published, a finite cap when it
is not (the final audit in :func:`riskengine.magnitude.csp.find_pattern` uses no cap).

This module is the leaf of :mod:`riskengine.magnitude.csp`: the solvers
(:mod:`.lp`, :mod:`.network`, :mod:`.heuristic`, :mod:`.optimal`) import it and it
imports none of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

__all__ = ["CUTOFF", "MARGIN", "REACH", "Problem", "capacity_cut", "make_problem", "proves",
           "upper_room"]

#: a protection counts as reached at ``p (1 - REACH)`` (LP tolerance; the audit decides)
REACH = 1e-9
#: the clean-up keeps a cell unsuppressed only if the protections still hold with this
#: (relative) margin: a pattern it returns passes the intruder's check with room to spare
MARGIN = 1e-6
#: a pattern improves on the best only when cheaper by this much (relative): optimality
#: is proven to within it (it is well above HiGHS's tolerances, well below cost changes)
CUTOFF = 1e-7


@dataclass(eq=False)
class Problem:
    """One CSP instance in scaled units (every vector over the cells of the system)."""

    A: sp.csr_matrix      #: equations, cells of the system as columns
    x: np.ndarray         #: values / scale
    scale: float
    sens: np.ndarray      #: sensitive (primary) cells
    plo: np.ndarray       #: lower protection / scale
    phi: np.ndarray       #: upper protection / scale
    w: np.ndarray         #: suppression cost of every cell (> 0)
    cand: np.ndarray      #: cells that may be suppressed (sensitive cells included)
    M: np.ndarray         #: a-priori room above each cell / scale
    labels: list = field(repr=False, default=None)
    #: ``T`` as a network (a :class:`.network.Network`, 2-D tables): the flow route; None:
    #: the LP route
    net: object = field(repr=False, default=None)

    @property
    def n(self) -> int:
        return self.x.size

    @property
    def tasks(self) -> list:
        """``(cell, direction, protection)`` for every protection a sensitive cell needs,
        largest protection first (ties: cell order, upper before lower)."""
        need = np.maximum(self.plo, self.phi)
        out = []
        for s in sorted(np.flatnonzero(self.sens), key=lambda i: (-need[i], i)):
            for d, p in ((+1, self.phi[s]), (-1, self.plo[s])):
                if p > 0:
                    out.append((int(s), d, float(p)))
        return out

    def label(self, j) -> str:
        return self.labels[j] if self.labels is not None else f"cell {j}"


def make_problem(A, x, sens, plo, phi, w, cand, labels=None, net=None) -> Problem:
    """Scale the values and compute the a-priori room ``M``.  ``net``: ``T`` as a network
    (:func:`.network.network_for`), whose problems are solved by flows; None: by LPs."""
    x = np.asarray(x, dtype=float)
    scale = max(float(np.abs(x).max(initial=0.0)), 1.0)
    A = sp.csr_matrix(A)
    M = upper_room(A, x, cand, big=float(x.max(initial=0.0) + np.sum(phi)))
    return Problem(A, x / scale, scale, np.asarray(sens, bool), plo / scale, phi / scale,
                   np.asarray(w, float), np.asarray(cand, bool), M / scale, labels, net)


def upper_room(A, x, cand, big: float) -> np.ndarray:
    """How far each cell can rise while every published total holds: the minimum, over the
    totals ``t`` containing the cell, of ``x_t + room_t - x_j`` (``room_t = 0`` for a total
    that is never suppressed); ``big`` for a cell no total contains.

    Each equation of ``T`` is ``total - sum(parts) = 0``: the +1 entry is the total."""
    A = sp.coo_matrix(A)
    tot_of_row = np.full(A.shape[0], -1, np.int64)
    tot_of_row[A.row[A.data > 0]] = A.col[A.data > 0]
    part = A.data < 0
    rows, parts = A.row[part], A.col[part]
    room = np.full(A.shape[1], float(big))
    for _ in range(A.shape[1] + 1):
        t = tot_of_row[rows]
        cap = x[t] + np.where(cand[t], room[t], 0.0) - x[parts]
        new = room.copy()
        np.minimum.at(new, parts, cap)
        new = np.maximum(new, 0.0)
        if np.array_equal(new, room):
            break
        room = new
    return room


def capacity_cut(prob: Problem, task, u, z):
    """The capacity cut ``sum_j a_j z_j >= p`` from multipliers ``u`` of ``T y = 0`` (the
    intruder LP's duals at a pattern ``z`` that fails ``task``): for any ``u``, the LP's
    value is at most ``sum_j [max(r_j, 0) M_j + max(-r_j, 0) x_j] z_j`` with
    ``r = c - T'u``; coefficients above ``p`` are lowered to ``p`` (binaries).  Returns
    ``(columns, coefficients)`` or None when no cut separates ``z`` (numerics)."""
    s, d, p = task
    c = np.zeros(prob.n)
    c[s] = d
    best = None
    for uu in (u, -u):
        r = c - prob.A.T @ uu
        coef = np.maximum(r, 0.0) * prob.M + np.maximum(-r, 0.0) * prob.x
        coef = np.where(prob.cand & (coef > 1e-12), np.minimum(coef, p), 0.0)
        val = float(coef @ z)
        if best is None or val < best[1]:
            best = (coef, val)
    coef, val = best
    if val >= p * (1 - REACH):
        return None
    cols = np.flatnonzero(coef)
    return cols, coef[cols]


def proves(prob: Problem, y, task, supp, reach: float) -> bool:
    """Whether the deviation ``y`` (problem units) proves that the pattern ``supp``
    protects ``task``: ``T y = 0``, ``y`` zero off the pattern and within the bounds
    ``-x <= y <= M``, and the cell moved by ``reach * p`` or more -- each to ``1e-9 p``
    (the LP solutions behind ``y`` meet their equations to about 1e-11 of ``p``)."""
    s, d, p = task
    tol = 1e-9 * p
    return bool(d * y[s] >= reach * p - tol
                and np.all(np.abs(y[~supp]) <= tol)
                and np.all(y >= -prob.x - tol) and np.all(y <= prob.M + tol)
                and np.abs(prob.A @ y).max(initial=0.0) <= tol)
