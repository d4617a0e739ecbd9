"""The heuristic of :func:`riskengine.magnitude.csp.find_pattern` and its clean-up.

* :func:`heuristic` -- protect sensitive cells one at a time, largest protection first,
  each by its cheapest completion (seed 004 §3.2-3.3);
* :func:`cleanup` -- drop complementary cells, most expensive first, that no protection
  needs (each task keeps a certificate, a deviation proving it; the certificates a drop
  breaks are repaired by combining them, re-solved only when that fails).

The intruder's LP and the cheapest completion are solved by flows on 2-D tables (their
tabular system is a network: :mod:`.network`) and by HiGHS LPs otherwise (:mod:`.lp`);
:func:`make_intruder` and :func:`make_completion` choose.  The optimal method
(Fischetti & Salazar's row generation) is in :mod:`.optimal`.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .lp import Intruder, LPCompletion
from .network import NetCompletion, NetIntruder
from .problem import MARGIN, Problem, proves

__all__ = ["cleanup", "heuristic", "make_completion", "make_intruder"]


def make_intruder(prob: Problem):
    """The intruder's check for ``prob``: by flows on a network, else by LPs."""
    return NetIntruder(prob) if prob.net is not None else Intruder(prob)


def make_completion(prob: Problem, cols=None):
    """The cheapest-completion solver for ``prob``: by flows on a network, else by LPs."""
    if prob.net is not None:
        return NetCompletion(prob, cols, margin=MARGIN)
    return LPCompletion(prob, cols)


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

    #: deviations kept (the most recent): a few hundred rows of the table's length, not
    #: one per task (Castro's dale, 16,514 cells: 4,373 rows held 1 GB)
    CAP = 256

    def __init__(self, prob: Problem):
        self.prob = prob
        self.Y = np.zeros((16, prob.n))
        self.k = 0                             # rows in use
        self.next = 0                          # the row the next deviation goes to
        self.used = np.zeros(prob.n, bool)     # cells some deviation moves (a superset)
        self.res = np.zeros(16)                # max |T y| of each (scaling scales it)

    def add(self, y) -> None:
        if self.next == self.Y.shape[0]:
            if self.Y.shape[0] < self.CAP:
                grow = min(self.Y.shape[0], self.CAP - self.Y.shape[0])
                self.Y = np.vstack([self.Y, np.zeros((grow, self.prob.n))])
                self.res = np.concatenate([self.res, np.zeros(grow)])
            else:
                self.next = 0                  # full: the oldest makes room
        self.Y[self.next] = y
        self.res[self.next] = np.abs(self.prob.A @ y).max(initial=0.0)
        self.used |= y != 0
        self.next += 1
        self.k = max(self.k, self.next)

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
