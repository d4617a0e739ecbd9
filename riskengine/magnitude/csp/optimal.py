"""The optimal method of :func:`riskengine.magnitude.csp.find_pattern`: Fischetti &
Salazar's model.

* :func:`optimal` -- row generation over capacity cuts (the master over the binaries in
  one HiGHS model, :class:`_Master`), with the heuristic's pattern as incumbent and a
  proven lower bound: exact (gap 0) or, at the time limit, the best protecting pattern
  found with its gap;
* :func:`optimal_explicit` -- one explicit MILP (a deviation vector per protection task):
  the test reference for :func:`optimal`.
"""

from __future__ import annotations

import time

import highspy
import numpy as np
import scipy.sparse as sp
from scipy.optimize import Bounds, LinearConstraint, milp

from ..._highs_quiet import run as _timed_run
from .._highs import lp_model as _lp
from .._highs import run as _run
from .heuristic import cleanup, heuristic, make_intruder
from .problem import CUTOFF, REACH, Problem, capacity_cut

__all__ = ["optimal", "optimal_explicit"]

MAX_MILP_VARS = 400_000
_INF = highspy.kHighsInf


class _Master:
    """The master problem over the binaries: min w z subject to the cuts so far."""

    def __init__(self, prob: Problem, scale: float):
        self.prob = prob
        n = prob.n
        lb = np.where(prob.sens, 1.0, 0.0)
        ub = np.where(prob.cand, 1.0, 0.0)
        # objective in units of the incumbent's cost: the cutoff's margin CUTOFF * best is
        # then CUTOFF master units, far above HiGHS's 1e-9 tolerances (in units of the sum
        # of every candidate's cost it fell below them on Castro's table8: the master
        # returned the incumbent again and the search "stalled" short of the optimum)
        self.unit = float(scale) if scale > 0 else (float(prob.w @ prob.cand) or 1.0)
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
        if seconds is None:
            _timed_run(h, None)
        else:
            # HiGHS checks its time limit between phases (overshoots of 30 s seen on
            # 3-D tables): the MIP callback interrupts it at the deadline as well
            deadline = time.perf_counter() + max(seconds, 0.5)

            def stop(e):
                if time.perf_counter() > deadline:
                    e.interrupt()

            h.cbMipInterrupt += stop
            try:
                _timed_run(h, max(seconds, 0.5))   # this run's limit: HiGHS's clock adds up
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
    best = np.asarray(incumbent, bool).copy()
    ub = float(prob.w @ best)
    master = _Master(prob, ub)
    tasks = prob.tasks
    lb = float(prob.w @ prob.sens)

    # the last deviation that proved each task: while the pattern's bounds still hold
    # it, the task needs no LP (z changes little from round to round)
    witness = np.zeros((len(tasks), prob.n))
    proven = np.zeros(len(tasks), bool)

    def separate(z):
        z = intr.pattern(z)
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
