"""Persistent HiGHS models (highspy) for the LPs that are solved many times over.

Suppression, its clean-up and the audit solve the same LP again and again with a new
objective or a few new bounds.  ``scipy.optimize.linprog`` rebuilds and presolves the
model on every call; a highspy model is kept alive and re-solved from its last basis.
"""

from __future__ import annotations

import highspy

from .._highs_quiet import model as _quiet_model
from .._highs_quiet import new as _quiet_new
from .._highs_quiet import run as _quiet_run

__all__ = ["INF", "Status", "lp_model", "new", "run"]

INF = highspy.kHighsInf
Status = highspy.HighsModelStatus


def new() -> highspy.Highs:
    """A silent HiGHS model (:func:`riskengine._highs.new`)."""
    return _quiet_new()


def lp_model(n_col, A, lower, upper, cost, row_lower=None, row_upper=None) -> highspy.Highs:
    """``min cost x`` over ``row_lower <= A x <= row_upper`` (default ``A x = 0``),
    ``lower <= x <= upper``, as a loaded model (:func:`riskengine._highs_quiet.model`)."""
    return _quiet_model(n_col, A, lower, upper, cost, row_lower, row_upper)


def run(h, what: str = "", accept_infeasible: bool = False):
    """Solve; on anything but an optimum, once more from scratch (a warm start can
    leave HiGHS with status "unknown").  None on success, else the model status.
    ``accept_infeasible``: trust an infeasibility found from a warm start (where a wrong
    "infeasible" only costs optimality, never protection).  No time limit (one an earlier
    run set on the model is lifted)."""
    _quiet_run(h, None)
    st = h.getModelStatus()
    if accept_infeasible and st == Status.kInfeasible:
        return st
    if st != Status.kOptimal:
        h.clearSolver()
        _quiet_run(h, None)
        st = h.getModelStatus()
        if st != Status.kOptimal:
            return st
    return None
