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

That LP and the cheapest completion are solved by flows on 2-D tables (their tabular
system is a network: :mod:`riskengine._csp_network`) and by HiGHS LPs otherwise
(:mod:`riskengine._csp_lp`); :func:`make_intruder` and :func:`make_completion` choose.

* :func:`heuristic` -- protect sensitive cells one at a time, largest protection first,
  each by its cheapest completion (seed 004 §3.2-3.3);
* :func:`cleanup` -- drop complementary cells, most expensive first, that no protection
  needs (each task keeps a certificate, a deviation proving it; the certificates a drop
  breaks are repaired by combining them, re-solved only when that fails);
* the optimal method (Fischetti & Salazar's row generation) is in
  :mod:`riskengine._csp_optimal`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from ._csp_lp import Intruder, LPCompletion
from ._csp_network import NetCompletion, NetIntruder, Network, network_form

__all__ = ["Problem", "cleanup", "heuristic", "make_completion", "make_intruder",
           "make_problem"]

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
    return LPCompletion(prob, cols)


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
    pattern that proves its protection, first the cheapest (:meth:`LPCompletion.solve`
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

    def valid_all(self, supp) -> np.ndarray:
        """Whether each task's certificate proves it within ``supp``: the tests of
        :func:`proves`, vectorised over the tasks."""
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
