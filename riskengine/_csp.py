"""The complementary suppression problem (CSP): the solvers behind :func:`riskengine.suppress`.

Everything works on the vector of *every* cell of the tabular system ``T x = 0``
(interior, totals, subtotals; :mod:`riskengine.linear`), so published and suppressed
totals are handled like any other cell.  Values are divided by their largest magnitude
(``scale``) before any LP.

A pattern ``z`` (1 = suppressed) protects sensitive cell ``s`` upwards by ``p`` when the
intruder's LP

    max y_s   over   T y = 0,   -x_j z_j <= y_j <= M_j z_j

reaches ``p`` (downwards: min ``y_s`` reaches ``-p``): ``y`` is the move from the true
table to another nonnegative table that agrees with every published cell.  ``M_j`` is the
intruder's a-priori room above ``x_j``: the room left under the smallest total that
contains ``j`` (that total's value plus its own room when it may be suppressed); a cell
no total contains gets ``sum of the interior + sum of the upper protections`` -- never
binding when the grand total is published, a finite cap when it is not (the final audit
in :func:`riskengine.suppress` uses no cap at all).

* :class:`Intruder` -- that LP, kept alive in one HiGHS model (highspy) and re-solved
  with new bounds and objectives from the previous basis (warm start);
* :func:`heuristic` -- protect sensitive cells one at a time, largest protection first,
  each by the cheapest completion LP (seed 004 §3.2-3.3);
* :func:`cleanup` -- drop complementary cells, most expensive first, that no protection
  needs (each task keeps a certificate ``y``; only tasks whose certificate uses the cell
  are re-solved);
* :func:`optimal` -- Fischetti & Salazar's model by row generation over capacity cuts,
  with the heuristic's pattern as incumbent and a proven lower bound: exact (gap 0) or,
  at the time limit, the best protecting pattern found with its gap;
* :func:`optimal_explicit` -- one explicit MILP (a deviation vector per protection task):
  the test reference for :func:`optimal`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import highspy
import numpy as np
import scipy.sparse as sp
from scipy.optimize import Bounds, LinearConstraint, milp

from ._csp_network import NetCompletion, NetIntruder, Network, network_form
from ._highs import lp_model as _lp
from ._highs import run as _run

__all__ = ["Problem", "cleanup", "heuristic", "optimal", "optimal_explicit"]

#: a protection counts as reached at ``p (1 - REACH)`` (LP tolerance; the audit decides)
REACH = 1e-9
#: the clean-up keeps a cell unsuppressed only if the protections still hold with this
#: (relative) margin: a pattern it returns passes the intruder's check with room to spare
MARGIN = 1e-6
#: a pattern improves on the best only when cheaper by this much (relative): optimality
#: is proven to within it (it is well above HiGHS's tolerances, well below cost changes)
CUTOFF = 1e-7
MAX_MILP_VARS = 400_000
_INF = highspy.kHighsInf


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
    #: ``T`` as a network (2-D tables): the flow route (:mod:`riskengine._csp_network`)
    net: Network | None = field(repr=False, default=None)

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


ROUTES = ("auto", "network", "lp")


def make_problem(A, x, sens, plo, phi, w, cand, labels=None, route: str = "auto") -> Problem:
    """Scale the values and compute the a-priori room ``M``.  ``route``: ``"auto"`` solves
    by flows when ``T`` is a network (2-D tables), else by LPs; ``"network"`` insists
    on flows (a ``ValueError`` when ``T`` is not a network), ``"lp"`` on LPs."""
    if route not in ROUTES:
        raise ValueError(f"route must be one of {ROUTES}, got {route!r}")
    x = np.asarray(x, dtype=float)
    scale = max(float(np.abs(x).max(initial=0.0)), 1.0)
    A = sp.csr_matrix(A)
    M = upper_room(A, x, cand, big=float(x.max(initial=0.0) + np.sum(phi)))
    net = None if route == "lp" else network_form(A)
    if route == "network" and net is None:
        raise ValueError("route='network' needs a tabular system that is a network "
                         "(a 2-D table with its totals, no subtotals)")
    return Problem(A, x / scale, scale, np.asarray(sens, bool), plo / scale, phi / scale,
                   np.asarray(w, float), np.asarray(cand, bool), M / scale, labels, net)


def make_intruder(prob: Problem):
    """The intruder's check for ``prob``: by flows on a network, else by LPs."""
    return NetIntruder(prob) if prob.net is not None else Intruder(prob)


def make_completion(prob: Problem, cols=None):
    """The cheapest-completion solver for ``prob``: by flows on a network, else by LPs."""
    if prob.net is not None:
        return NetCompletion(prob, cols, margin=MARGIN)
    return _Completion(prob, cols)


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
        self.sparse_cuts = False         # (the flow route's option; the LP's duals are)

    def pattern(self, z) -> None:
        """Pattern ``z`` for the next solves (fractional in the LP relaxation, whose
        values may stray outside [0, 1] by the solver's tolerance: clipped, so that the
        bounds keep ``y = 0`` feasible)."""
        z = np.clip(np.asarray(z, float), 0.0, 1.0)
        z[z < 1e-12] = 0.0
        self._z = z

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


class _Completion:
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


def heuristic(prob: Problem, start=None, intruder: Intruder | None = None) -> np.ndarray:
    """Protect the tasks one at a time (largest protection first): a task the pattern so
    far already protects is skipped, else the cells its cheapest completion moves are
    suppressed.  ``start``: cells suppressed from the outset.  Raises ``ValueError`` when
    a cell cannot be protected even with every candidate suppressed."""
    intr = intruder or make_intruder(prob)
    comp = make_completion(prob)
    supp = prob.sens.copy() if start is None else (np.asarray(start, bool) | prob.sens)
    pool = _Pool(prob)
    for task in prob.tasks:
        if pool.proves(task, supp):
            continue
        for attempt in range(4):
            intr.pattern(supp)
            ok, y, _ = intr.protected(task)
            pool.add(y)
            if ok:
                break
            if attempt == 3:
                raise RuntimeError(f"the completion LPs of {prob.label(task[0])} do not "
                                   "protect it when checked (numerics)")
            y = comp.solve(supp, task)
            if y is None:
                s, d, p = task
                side = "above" if d > 0 else "below"
                raise ValueError(f"sensitive cell {prob.label(s)} cannot be protected by "
                                 f"{p * prob.scale:g} {side} its value "
                                 f"{prob.x[s] * prob.scale:g}, even suppressing every "
                                 "candidate cell")
            # the cells the completion moves (a retry, if the check still fails,
            # moves the suppressed cells for free)
            supp |= (np.abs(y) > 1e-9 * task[2]) & prob.cand
            pool.add(y)
            if proves(prob, y, task, supp, 1.0):
                break           # the completion itself is a deviation within the pattern
    return supp


class _Pool:
    """Deviations met so far (the heuristic's completions and the intruder's solutions).
    The pattern only grows during the heuristic, so each stays a deviation within it,
    and one of them, reversed or scaled up where the bounds allow, often proves that a
    later task is already protected: no LP for that task (the same answer as the
    intruder's LP, which would find at least as much)."""

    def __init__(self, prob: Problem):
        self.prob = prob
        self.Y = np.zeros((16, prob.n))
        self.k = 0
        self.used = np.zeros(prob.n, bool)     # cells some deviation moves (the rest: 0)
        self.res = np.zeros(16)                # max |T y| of each (scaling scales it)

    def add(self, y) -> None:
        if self.k == self.Y.shape[0]:
            self.Y = np.vstack([self.Y, np.zeros_like(self.Y)])
            self.res = np.concatenate([self.res, np.zeros_like(self.res)])
        self.Y[self.k] = y
        self.res[self.k] = np.abs(self.prob.A @ y).max(initial=0.0)
        self.used |= y != 0
        self.k += 1

    def proves(self, task, supp) -> bool:
        """Whether some deviation so far, reversed or scaled up, proves ``task`` within
        ``supp`` (the tests of :func:`proves`, over the cells some deviation moves)."""
        s, d, p = task
        if self.k == 0 or not self.used[s]:
            return False
        prob = self.prob
        t = d * self.Y[: self.k, s]
        pos, neg = np.flatnonzero(t > 0), np.flatnonzero(t < 0)
        if pos.size + neg.size == 0:
            return False
        idx = np.flatnonzero(self.used)
        rows = np.concatenate([pos, neg])
        C = self.Y[rows][:, idx]
        C[pos.size:] *= -1.0
        res = self.res[rows]
        a = np.maximum(1.0, p / np.abs(t[rows]))
        C *= a[:, None]
        tol = 1e-9 * p
        ok = (np.all(C >= -prob.x[idx] - tol, axis=1) & np.all(C <= prob.M[idx] + tol, axis=1)
              & np.all(np.abs(C[:, ~supp[idx]]) <= tol, axis=1) & (a * res <= tol))
        return bool(ok.any())


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


def cleanup(prob: Problem, supp, intruder: Intruder | None = None) -> np.ndarray:
    """Unsuppress complementary cells (most expensive first) that no protection needs.

    First every suppressed cell that cannot move at all is published again: a cell
    alone (among suppressed cells) in some equation is fixed by it, and so on
    (:class:`_Incidence`); such a cell protects nothing and is exactly disclosed.  Then
    every task keeps a certificate (:class:`_Certificates`): a deviation within the
    pattern that proves its protection, first the cheapest (:meth:`_Completion.solve`
    with ``within=True``), which avoids expensive cells, so the most expensive
    complements are usually used by no certificate and are dropped at no cost.
    Dropping another cell ``j`` first fixes the cells it leaves alone in an equation
    (dropped with it; when that fixes a sensitive cell, ``j`` stays, with no LP); the
    certificates that use a dropped cell are then repaired by combining them with
    each other (no LP), and only those that cannot be repaired are re-solved, each
    from the basis it ended with last time.  The certificates are verified at the end
    (:func:`proves`); a task that fails there (never seen) is protected again by the
    heuristic."""
    intr = intruder or make_intruder(prob)
    need = prob.sens & (np.maximum(prob.plo, prob.phi) > 0)
    inc = _Incidence(prob.A, supp, need)
    if inc.drop(np.flatnonzero(supp & ~prob.sens)) is None:
        # the pattern fixes a sensitive cell: it does not protect it
        supp = heuristic(prob, start=supp, intruder=intr)
        inc = _Incidence(prob.A, supp, need)
        if inc.drop(np.flatnonzero(supp & ~prob.sens)) is None:
            raise RuntimeError("the heuristic's pattern fixes a sensitive cell (numerics)")
    supp = inc.supp.copy()
    tasks = prob.tasks
    cert = _Certificates(prob, supp, tasks)
    cands = np.flatnonzero(supp & ~prob.sens)
    for j in cands[np.lexsort((cands, -prob.w[cands]))]:
        if not supp[j] or cert.unproven:    # fixed by an earlier drop / nothing can go
            continue
        gone = inc.trial(j)
        if gone is None:                    # dropping j would fix a sensitive cell
            continue
        trial = supp.copy()
        trial[gone] = False
        if cert.drop(j, gone, trial):
            inc.commit(gone)
            supp = trial
    bad = [tasks[k] for k in np.flatnonzero(~cert.valid_all(supp))]
    if bad:
        intr.pattern(supp)
        if not all(intr.protected(task)[0] for task in bad):
            supp = heuristic(prob, start=supp, intruder=intr)
    return supp


class _Certificates:
    """One deviation per task proving that the pattern protects it (the clean-up's
    bookkeeping), stored over the columns of the clean-up's starting pattern."""

    def __init__(self, prob: Problem, supp, tasks):
        self.prob, self.tasks = prob, tasks
        self.cols = np.flatnonzero(supp)
        self.pos = np.full(prob.n, -1)
        self.pos[self.cols] = np.arange(self.cols.size)
        A = prob.A[:, self.cols].tocsr()
        self.A = A[np.flatnonzero(A.getnnz(axis=1))]
        c = self.cols
        self.lo, self.hi = -prob.x[c], prob.M[c]
        self.wc = np.where(prob.sens[c], 0.0, prob.w[c])     # complementary cells' cost
        self.p = np.array([t[2] for t in tasks])
        self.comp = make_completion(prob, c)
        self.Y = np.zeros((len(tasks), c.size))
        self.res = np.zeros(len(tasks))         # max |T y| of each certificate
        self.bases = [None] * len(tasks)
        # tasks the pattern protects (the intruder's LP said so) but not with the
        # clean-up's margin: no cell can be dropped
        self.unproven = []
        for k, task in enumerate(tasks):
            y = self.comp.solve(supp, task, within=True)
            if y is None:
                self.unproven.append(k)
            else:
                self._set(k, y[c], self.comp.basis())

    def _set(self, k, y, basis, res=None) -> None:
        self.Y[k], self.bases[k] = y, basis
        self.res[k] = np.abs(self.A @ y).max(initial=0.0) if res is None else res

    def users(self, g):
        """Tasks whose certificate moves a cell of ``g`` (positions), heaviest first."""
        share = np.abs(self.Y[:, g]).max(axis=1) / self.p
        users = np.flatnonzero(share > 1e-9)
        return users[np.argsort(-share[users], kind="stable")]

    def drop(self, j, gone, trial) -> bool:
        """Whether ``trial`` (the pattern without ``gone``, ``j`` first) still protects
        every task: repair or re-solve the certificates that use a dropped cell; on
        success they are replaced, else nothing changes."""
        g = self.pos[gone]
        jj = g[0]
        users = self.users(g)
        # repair vectors: the users' certificates that move j (differences of two of
        # them zero j); a combination that zeroes j zeroes every cell fixed with it
        vs = users[np.abs(self.Y[users, jj]) > 1e-6 * self.p[users]]
        V, resV = self.Y[vs], self.res[vs]
        keep = np.ones(self.cols.size, bool)
        keep[g] = False
        keep &= trial[self.cols]
        wc = self.wc * keep
        new = {}
        for k in users:
            rep = self._repair(k, jj, g, V, resV, wc)
            if rep is not None:
                new[k] = (rep[0], self.bases[k], rep[1])
                continue
            y = self.comp.solve(trial, self.tasks[k], within=True, basis=self.bases[k])
            if y is None:
                return False
            new[k] = (y[self.cols], self.comp.basis(), None)
        for k, (y, b, res) in new.items():
            self._set(k, y, b, res)
        return True

    def _repair(self, k, jj, g, V, resV, wc):
        """The cheapest valid ``Y[k] - (Y[k, j] / v_j) v`` over the rows ``v`` of ``V``,
        scaled up (if needed and the bounds allow) to reach the protection, with a bound
        of its ``max |T y|``; None if no combination is valid.  Vectorised over ``V``."""
        if V.shape[0] == 0:
            return None
        s, d, p = self.tasks[k]
        ss = self.pos[s]
        yk = self.Y[k]
        mult = yk[jj] / V[:, jj]
        C = yk[None, :] - mult[:, None] * V
        # what zeroing the dropped cells (0 up to rounding) can change in any equation
        # (each cell enters an equation with coefficient +-1)
        res = self.res[k] + np.abs(mult) * resV + np.abs(C[:, g]).sum(axis=1)
        C[:, g] = 0.0
        t = d * C[:, ss]
        ok = t > 0
        if not ok.any():
            return None
        C, t, res = C[ok], t[ok], res[ok]
        a = np.maximum(1.0, p * (1 + MARGIN) / t)
        C *= a[:, None]
        res *= a
        tol = 1e-9 * p
        ok = np.all(C >= self.lo - tol, axis=1) & np.all(C <= self.hi + tol, axis=1)
        if not ok.any():
            return None
        C, res = C[ok], res[ok]
        # a large multiplier can magnify rounding: where the bound does not settle it,
        # keep the combinations that still add up
        loose = res > tol
        if loose.any():
            res[loose] = np.abs(self.A @ C[loose].T).max(axis=0, initial=0.0)
            C, res = C[res <= tol], res[res <= tol]
            if C.shape[0] == 0:
                return None
        best = int(np.argmin(np.abs(C) @ wc))
        return C[best], float(res[best])

    def valid(self, k, supp) -> bool:
        """Whether task ``k``'s certificate proves it within ``supp`` (:func:`proves`)."""
        if k in self.unproven:
            return False
        y = np.zeros(self.prob.n)
        y[self.cols] = self.Y[k]
        return proves(self.prob, y, self.tasks[k], supp, 1.0)

    def valid_all(self, supp) -> np.ndarray:
        """:meth:`valid` of every task at once (the same tests, vectorised)."""
        Y, p = self.Y, self.p
        tol = (1e-9 * p)[:, None]
        s = self.pos[[t[0] for t in self.tasks]]
        d = np.array([t[1] for t in self.tasks], float)
        off = ~np.asarray(supp, bool)[self.cols]
        ok = (d * Y[np.arange(len(p)), s] >= p - tol[:, 0])
        ok &= np.all(np.abs(Y[:, off]) <= tol, axis=1)
        ok &= np.all(Y >= self.lo - tol, axis=1) & np.all(Y <= self.hi + tol, axis=1)
        ok &= np.abs(self.A @ Y.T).max(axis=0, initial=0.0) <= tol[:, 0]
        ok[self.unproven] = False
        return ok


class _Incidence:
    """Which equations hold which suppressed cells, to find the cells a pattern fixes:
    a suppressed cell that is the only suppressed cell of some equation equals the
    published rest of it, whatever the other suppressions; dropping it from the pattern
    changes no deviation, so it can be dropped too (repeatedly)."""

    def __init__(self, A, supp, sens):
        A = sp.csr_matrix(A)
        self.row_ptr, self.row_cols = A.indptr, A.indices
        Ac = A.tocsc()
        self.col_ptr, self.col_rows = Ac.indptr, Ac.indices
        self.supp = np.asarray(supp, bool).copy()
        self.count = np.asarray(
            sp.csr_matrix((np.ones(A.nnz), A.indices, A.indptr), A.shape)
            @ self.supp.astype(float)).round().astype(np.int64)
        self.sens = np.asarray(sens, bool)

    def _propagate(self, start, supp, count, sens):
        """Drop ``start`` from ``supp`` (updating ``count`` in place) and every cell that
        becomes alone in an equation; None as soon as a cell of ``sens`` would go."""
        gone = []
        stack = [int(j) for j in start if supp[j]]
        for j in stack:
            supp[j] = False
        while stack:
            j = stack.pop()
            if sens is not None and sens[j]:
                return None
            gone.append(j)
            for r in self.col_rows[self.col_ptr[j]:self.col_ptr[j + 1]]:
                count[r] -= 1
                if count[r] == 1:
                    for c in self.row_cols[self.row_ptr[r]:self.row_ptr[r + 1]]:
                        if supp[c]:
                            supp[c] = False
                            stack.append(int(c))
                            break
        return np.array(gone, dtype=np.int64)

    def drop(self, cells):
        """Drop every cell of ``cells`` that is fixed by the pattern (committed); None
        if the pattern fixes a sensitive cell (nothing changed)."""
        alone = [int(j) for j in cells if self._alone(j)]
        supp, count = self.supp.copy(), self.count.copy()
        gone = self._propagate(alone, supp, count, self.sens)
        if gone is not None:
            self.supp, self.count = supp, count
        return gone

    def _alone(self, j) -> bool:
        rows = self.col_rows[self.col_ptr[j]:self.col_ptr[j + 1]]
        return bool(self.supp[j] and (self.count[rows] == 1).any())

    def trial(self, j):
        """The cells that leave the pattern with ``j`` (``j`` first); None if a
        sensitive cell would be fixed.  Nothing is changed until :meth:`commit`."""
        return self._propagate([j], self.supp.copy(), self.count.copy(), self.sens)

    def commit(self, gone) -> None:
        self._propagate(list(gone), self.supp, self.count, None)


class _Master:
    """The master problem over the binaries: min w z subject to the cuts so far."""

    def __init__(self, prob: Problem):
        self.prob = prob
        n = prob.n
        lb = np.where(prob.sens, 1.0, 0.0)
        ub = np.where(prob.cand, 1.0, 0.0)
        self.unit = float(prob.w @ prob.cand) or 1.0     # objective in units of O(1)
        self.h = _lp(n, sp.csr_matrix((0, n)), lb, ub, prob.w / self.unit)
        # binaries: tight tolerances, so no cut is met "within tolerance" only
        for opt in ("mip_feasibility_tolerance", "primal_feasibility_tolerance"):
            self.h.setOptionValue(opt, 1e-9)
        self.idx = np.arange(n, dtype=np.int32)
        # row 0: the objective cutoff w z <= best (HiGHS's objective_bound is no cutoff)
        c = np.flatnonzero(prob.cand)
        self.h.addRows(1, np.array([-_INF]), np.array([_INF]), c.size,
                       np.array([0], np.int32), c.astype(np.int32), prob.w[c] / self.unit)
        self.n_cuts = 0

    def add(self, cuts) -> None:
        if not cuts:
            return
        starts, index, value, lo = [], [], [], []
        k = 0
        for (cols, coef), p in cuts:
            starts.append(k)
            index.append(cols)
            value.append(coef)
            lo.append(p)
            k += cols.size
        self.h.addRows(len(cuts), np.array(lo), np.full(len(cuts), _INF), k,
                       np.array(starts, np.int32), np.concatenate(index).astype(np.int32),
                       np.concatenate(value))
        self.n_cuts += len(cuts)

    def integral(self, flag: bool) -> None:
        kind = highspy.HighsVarType.kInteger if flag else highspy.HighsVarType.kContinuous
        self.h.changeColsIntegrality(self.prob.n, self.idx,
                                     np.full(self.prob.n, int(kind), np.uint8))

    def solve_lp(self):
        self.integral(False)
        self.h.changeRowBounds(0, -_INF, _INF)
        st = _run(self.h, "master LP")
        if st is not None:
            raise RuntimeError(f"HiGHS failed on the suppression LP relaxation: "
                               f"{self.h.modelStatusToString(st)}")
        return (np.asarray(self.h.getSolution().col_value),
                self.h.getInfo().objective_function_value)

    def solve_mip(self, cutoff, seconds):
        """The first master solution cheaper than ``cutoff`` (HiGHS stops at its first
        improving solution).  Returns ``(z, value, lower bound, state)`` with ``state``
        "found", "none" (no solution below the cutoff exists: proven) or "time_limit"."""
        self.integral(True)
        h = self.h
        h.setOptionValue("mip_rel_gap", 0.0)
        h.setOptionValue("mip_abs_gap", 0.0)
        h.changeRowBounds(0, -_INF, float(cutoff) / self.unit)
        h.setOptionValue("mip_max_improving_sols", 1)
        h.setOptionValue("time_limit", float(max(seconds, 0.5)) if seconds is not None
                         else _INF)
        if seconds is None:
            h.run()
        else:
            # HiGHS checks its time limit between phases (overshoots of 30 s seen on
            # 3-D tables): the MIP callback interrupts it at the deadline as well
            deadline = time.perf_counter() + max(seconds, 0.5)

            def stop(e):
                if time.perf_counter() > deadline:
                    e.interrupt()

            h.cbMipInterrupt += stop
            try:
                h.run()
            finally:
                h.cbMipInterrupt -= stop
        st = h.getModelStatus()
        info = h.getInfo()
        S = highspy.HighsModelStatus
        if st == S.kInfeasible:
            return None, None, float(cutoff), "none"
        u = self.unit
        sol = np.asarray(h.getSolution().col_value)
        has = info.primal_solution_status == 2 and sol.size == self.prob.n
        if st in (S.kOptimal, S.kSolutionLimit) or (st == S.kInterrupt and has):
            lb = float(info.objective_function_value) if st == S.kOptimal \
                else float(info.mip_dual_bound)
            return sol > 0.5, u * float(info.objective_function_value), u * lb, "found"
        if st in (S.kTimeLimit, S.kInterrupt):
            return None, None, u * float(info.mip_dual_bound), "time_limit"
        raise RuntimeError(f"HiGHS failed on the suppression master MILP: "
                           f"{h.modelStatusToString(st)}")


def optimal(prob: Problem, incumbent, time_limit: float | None = None):
    """Minimum-cost protecting pattern by row generation (Fischetti & Salazar's capacity
    cuts).  ``incumbent``: a protecting pattern (the heuristic's), the upper bound.

    Rounds of the LP relaxation first (cheap; most cuts), then MILP rounds: HiGHS looks
    for a master solution cheaper than the best protecting pattern so far and stops at
    the first it finds.  One that protects every cell becomes the new best; one that
    does not gets its cuts and is repaired (heuristic + cleanup from it) into a protecting
    pattern, the new best when cheaper.  When no master solution is cheaper than the
    best, the best is optimal (the master relaxes the problem: every cut is valid for
    every protecting pattern).  The master's dual bound is the lower bound reported at
    the time limit.

    Returns ``(mask, info)``, ``info`` with ``status`` ("optimal", "time_limit", or
    "stalled" if HiGHS returned a pattern twice -- a numerical safeguard, never seen),
    ``lower_bound``, ``upper_bound`` (costs), ``gap`` (relative), ``rounds``, ``cuts``."""
    t_end = None if time_limit is None else time.perf_counter() + max(float(time_limit), 0.0)

    def left():
        return None if t_end is None else t_end - time.perf_counter()

    intr = make_intruder(prob)
    intr.sparse_cuts = True
    master = _Master(prob)
    tasks = prob.tasks
    best = np.asarray(incumbent, bool).copy()
    ub = float(prob.w @ best)
    lb = float(prob.w @ prob.sens)

    # the last deviation that proved each task: while the pattern's bounds still hold
    # it, the task needs no LP (z changes little from round to round)
    witness = np.zeros((len(tasks), prob.n))
    proven = np.zeros(len(tasks), bool)

    def separate(z):
        intr.pattern(z)
        z = intr._z
        lo, hi = -prob.x * z, prob.M * z
        cuts = []
        for k, task in enumerate(tasks):
            s, d, p = task
            y = witness[k]
            tol = 1e-9 * p
            if (proven[k] and d * y[s] >= p * (1 - REACH) and np.all(y >= lo - tol)
                    and np.all(y <= hi + tol)):
                continue
            ok, y, u = intr.protected(task)
            if ok:
                witness[k], proven[k] = y, True
                continue
            cut = capacity_cut(prob, task, u, z)
            if cut is None:
                raise RuntimeError("could not derive a violated protection cut (numerics)")
            cuts.append((cut, task[2]))
        return cuts

    rounds = 0
    status = "optimal"
    # LP rounds
    while True:
        z, val = master.solve_lp()
        lb = max(lb, val * master.unit)
        cuts = separate(z)
        if not cuts:
            break
        master.add(cuts)
        rounds += 1
        if t_end is not None and left() <= 0:
            break
    # MILP rounds: the master's first solution below the best protecting pattern
    seen = set()
    while ub > lb * (1 + CUTOFF):
        rem = left()
        if rem is not None and rem <= 0:
            status = "time_limit"
            break
        z, val, bound, state = master.solve_mip(ub * (1 - CUTOFF), rem)
        rounds += 1
        lb = max(lb, bound)
        if state == "found":
            key = np.flatnonzero(z).tobytes()
            if key in seen:     # numerics: a cut HiGHS meets within its tolerance only
                status = "stalled"
                break
            seen.add(key)
        if state == "none":
            lb = ub
            break
        if state == "time_limit":
            status = "time_limit"
            break
        cuts = separate(z.astype(float))
        if not cuts:            # protects every cell and is cheaper (the cutoff): the new best
            best, ub = z, float(prob.w @ z)
            continue
        master.add(cuts)
        rem = left()
        if rem is not None and rem <= 0:
            status = "time_limit"
            break
        rep = cleanup(prob, heuristic(prob, start=z, intruder=intr), intruder=intr)
        c = float(prob.w @ rep)
        if c < ub - 1e-12 * abs(ub):
            best, ub = rep, c
    lb = min(lb, ub)
    gap = 0.0 if ub <= 0 else max(ub - lb, 0.0) / ub
    if gap <= 2 * CUTOFF:
        status, gap = "optimal", 0.0
    return best, {"status": status, "lower_bound": lb, "upper_bound": ub, "gap": gap,
                  "rounds": rounds, "cuts": master.n_cuts, "lp_solves": intr.n_solves}


def optimal_explicit(prob: Problem, time_limit: float | None = None) -> np.ndarray:
    """The same optimum from one explicit MILP: a deviation vector ``y^t`` per protection
    task with ``T y^t = 0``, ``-x_j z_j <= y^t_j <= M_j z_j`` and ``y^t_s = +-p`` (scipy's
    HiGHS).  The reference for :func:`optimal` in the tests."""
    tasks = prob.tasks
    cidx = np.flatnonzero(prob.cand)
    nc = cidx.size
    n_var = nc * (1 + len(tasks))
    if n_var > MAX_MILP_VARS:
        raise ValueError(f"the explicit suppression MILP would have {n_var} variables "
                         f"({nc} candidate cells x {len(tasks)} protection directions + "
                         f"{nc} binaries), above {MAX_MILP_VARS}")
    where = {int(j): k for k, j in enumerate(cidx)}
    A_c = prob.A[:, cidx]
    A_c = A_c[np.flatnonzero(np.diff(A_c.tocsr().indptr) > 0)]
    T = len(tasks)
    cost = np.concatenate([prob.w[cidx], np.zeros(nc * T)])
    lb = np.concatenate([prob.sens[cidx].astype(float), np.full(nc * T, -np.inf)])
    ub = np.concatenate([np.ones(nc), np.full(nc * T, np.inf)])
    for t, (s, d, p) in enumerate(tasks):
        k = nc * (1 + t) + where[s]
        lb[k] = ub[k] = d * p
    cons = []
    if T:
        I = sp.identity(nc, format="csr")
        zero = sp.csr_matrix((A_c.shape[0] * T, nc))
        cons.append(LinearConstraint(sp.hstack([zero, sp.block_diag([A_c] * T)]), 0.0, 0.0))
        # y + x z >= 0  and  y - M z <= 0
        cons.append(LinearConstraint(sp.hstack([sp.vstack([sp.diags(prob.x[cidx])] * T),
                                                sp.block_diag([I] * T)]), 0.0, np.inf))
        cons.append(LinearConstraint(sp.hstack([sp.vstack([sp.diags(-prob.M[cidx])] * T),
                                                sp.block_diag([I] * T)]), -np.inf, 0.0))
    options = {"mip_rel_gap": 0.0, "disp": False}
    if time_limit is not None:
        options["time_limit"] = float(time_limit)
    integrality = np.concatenate([np.ones(nc), np.zeros(nc * T)])
    res = milp(cost, integrality=integrality, bounds=Bounds(lb, ub), constraints=cons,
               options=options)
    if res.status != 0 or res.x is None:
        raise ValueError(f"the explicit suppression MILP did not reach a proven optimum: "
                         f"{res.message}")
    mask = np.zeros(prob.n, bool)
    mask[cidx] = res.x[:nc] > 0.5
    return mask
