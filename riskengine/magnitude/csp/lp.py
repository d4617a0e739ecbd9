"""The LP route of the suppression solvers (3-D tables, subtotals; any tabular system).

* :class:`Intruder` -- how far the intruder can move a cell under a pattern: the LP
  ``max d y_s`` over ``T y = 0``, ``-x_j z_j <= y_j <= M_j z_j``, kept alive in one
  HiGHS model (highspy) and re-solved with new bounds and objectives from the previous
  basis;
* :class:`LPCompletion` -- the cheapest completion (heuristic) or certificate (clean-up).

Their twins on networks (2-D tables) are in :mod:`.network`.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._highs import lp_model as _lp
from .._highs import run as _run
from .problem import MARGIN, REACH, Problem

__all__ = ["Intruder", "LPCompletion", "clip_pattern"]


def clip_pattern(z) -> np.ndarray:
    """A pattern for the intruder's bounds ``-x z <= y <= M z``: fractional in the LP
    relaxation, whose values may stray outside [0, 1] by the solver's tolerance, so
    clipped (the bounds keep ``y = 0`` feasible) and with dust set to 0."""
    z = np.clip(np.asarray(z, float), 0.0, 1.0)
    z[z < 1e-12] = 0.0
    return z


class Intruder:
    """The intruder's LP for one pattern, re-solved from the previous basis.

    Each task is solved in units of its own protection (bounds divided by ``p``, so the
    target is 1): a small cell in a table with large totals keeps its precision."""

    def __init__(self, prob: Problem):
        self.prob = prob
        n = prob.n
        self.h = _lp(n, prob.A, np.zeros(n), np.zeros(n), np.zeros(n))
        # successive solves change the objective: the primal simplex keeps its basis
        # feasible (measured 5x faster than the default on a 40x40 table)
        self.h.setOptionValue("simplex_strategy", 4)
        self.idx = np.arange(n, dtype=np.int32)
        self._z = np.zeros(n)        # pattern asked for
        self._zs = np.zeros(n)       # pattern in the model
        self._f = 1.0                # unit of the model's bounds
        self._cost_col = None
        self.n_solves = 0
        #: the flow route's option (:class:`.network.NetIntruder`); the
        #: LP's duals are used as they come
        self.sparse_cuts = False

    def pattern(self, z) -> np.ndarray:
        """Pattern ``z`` for the next solves (:func:`clip_pattern`); returns it."""
        self._z = clip_pattern(z)
        return self._z

    def _bounds(self, f: float) -> None:
        p, z = self.prob, self._z
        if f != self._f:
            idx = self.idx
        else:
            idx = np.flatnonzero(z != self._zs).astype(np.int32)
        if idx.size:
            self.h.changeColsBounds(idx.size, idx, -p.x[idx] * z[idx] * f,
                                    p.M[idx] * z[idx] * f)
        self._zs, self._f = z, f

    def move(self, s: int, d: int, p: float = 1.0):
        """``(max d * y_s, y, row duals)`` under the current pattern (solved in units
        of ``p``)."""
        self._bounds(1.0 / p)
        if self._cost_col is not None:
            self.h.changeColCost(self._cost_col, 0.0)
        self.h.changeColCost(int(s), -float(d))
        self._cost_col = int(s)
        st = _run(self.h, "intruder")
        self.n_solves += 1
        if st is not None:
            raise RuntimeError(f"HiGHS failed on the intruder LP of "
                               f"{self.prob.label(s)}: {self.h.modelStatusToString(st)}")
        sol = self.h.getSolution()
        return (-p * self.h.getInfo().objective_function_value,
                p * np.asarray(sol.col_value), np.asarray(sol.row_dual))

    def protected(self, task) -> tuple:
        s, d, p = task
        v, y, u = self.move(s, d, p)
        return v >= p * (1 - REACH), y, u


class LPCompletion:
    """The heuristic's LP: the cheapest deviation that moves one cell by its protection
    (variables ``y+``, ``y-``; moving an already suppressed cell is free)."""

    def __init__(self, prob: Problem, cols=None):
        """``cols``: the only cells that may ever move (the clean-up's starting pattern:
        a smaller model), default every cell."""
        self.prob = prob
        self.cols = np.arange(prob.n) if cols is None else np.asarray(cols)
        A = prob.A[:, self.cols]
        A = A[np.flatnonzero(A.getnnz(axis=1))]
        m = self.cols.size
        self.h = _lp(2 * m, sp.hstack([A, -A]).tocsr(), np.zeros(2 * m), np.zeros(2 * m),
                     np.zeros(2 * m))
        # what the model holds: successive solves change only what differs (a few
        # bounds between the tasks of one pattern), which keeps the warm start
        self._cost = np.zeros(2 * m)
        self._lo = np.zeros(2 * m)
        self._hi = np.zeros(2 * m)
        # every solve starts from the slack basis or from a basis the caller keeps for
        # the task, never from the previous task's (a poor start: measured 2-8x slower
        # on 3-D tables); presolve costs more than it saves on these LPs
        self.h.setOptionValue("presolve", "off")

    def solve(self, supp, task, within: bool = False, basis=None):
        """The deviation (in the problem's units), or None if no completion exists.
        Solved in units of the protection, costs divided by the largest.

        ``within=False`` (the heuristic): any candidate may move, suppressed cells for
        free.  ``within=True`` (the clean-up's certificates): only suppressed cells move,
        each complementary cell at its cost, the target raised by ``MARGIN`` -- the
        cheapest proof that ``supp`` protects the task, which avoids expensive cells.

        ``basis``: where to start (the basis this task ended with last time: after a
        small change of the pattern the dual simplex needs a few pivots from there);
        default the slack basis.  :meth:`basis` returns the basis of the last solve."""
        prob, c = self.prob, self.cols
        s, d, p = task
        s = int(np.searchsorted(c, s))          # cols are sorted and hold s
        supp = np.asarray(supp, bool)[c]
        wn = prob.w[c] / prob.w.max()
        if within:
            cost = np.where(supp & ~prob.sens[c], wn, 0.0)
            room = supp
        else:
            cost = np.where(supp, 0.0, wn)
            room = supp | prob.cand[c]
        up = np.where(room, prob.M[c] / p, 0.0)
        dn = np.where(room, prob.x[c] / p, 0.0)
        m = c.size
        lo = np.zeros(2 * m)
        k = s if d > 0 else m + s
        (dn if d > 0 else up)[s] = 0.0
        hi = np.concatenate([up, dn])
        if within:
            # the cell itself moves by p (1 + MARGIN) or more, within its room
            lo[k] = 1.0 + MARGIN
            if hi[k] < lo[k]:
                return None
        else:
            lo[k] = hi[k] = 1.0
        cost = np.concatenate([cost, cost])
        idx = np.flatnonzero(cost != self._cost).astype(np.int32)
        if idx.size:
            self.h.changeColsCost(idx.size, idx, cost[idx])
            self._cost = cost
        idx = np.flatnonzero((lo != self._lo) | (hi != self._hi)).astype(np.int32)
        if idx.size:
            self.h.changeColsBounds(idx.size, idx, lo[idx], hi[idx])
            self._lo, self._hi = lo, hi
        if basis is None:
            self.h.clearSolver()
        else:
            self.h.setBasis(basis)
        st = _run(self.h, "completion", accept_infeasible=within)
        if st is not None:
            return None
        v = np.asarray(self.h.getSolution().col_value)
        y = np.zeros(prob.n)
        y[c] = p * (v[:m] - v[m:])
        return y

    def basis(self):
        return self.h.getBasis()
