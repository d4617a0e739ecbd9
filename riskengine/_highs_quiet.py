"""Quiet HiGHS: C-level output kept off the user's terminal.

HiGHS prints its banner from C++ when the first ``highspy.Highs`` of a process is built,
before any option can be set, and its MIP solver (through ``scipy.optimize.milp``) can
print debug lines the same way.  Python's ``sys.stdout`` never sees them: file descriptor
1 has to go to ``/dev/null`` meanwhile.  Every module that solves LPs or MIPs (the
suppression and audit models of ``magnitude``, the integer bounds of ``inference``)
takes its models and its silence from here.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys

__all__ = ["c_stdout_silenced", "model", "new", "run"]

_quiet = False


@contextlib.contextmanager
def c_stdout_silenced():
    """File descriptor 1 to /dev/null for the block (output written from C, not Python).
    Nothing happens where stdout has no file descriptor (a notebook)."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        yield
        return
    sys.stdout.flush()
    saved, null = os.dup(fd), os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, fd)
        yield
    finally:
        try:
            ctypes.CDLL(None).fflush(None)
        except (OSError, AttributeError):     # no C library handle (not POSIX)
            pass
        os.dup2(saved, fd)
        os.close(saved)
        os.close(null)


def new():
    """A silent ``highspy.Highs`` model (the first of a process built with fd 1 silenced)."""
    import highspy
    global _quiet
    if _quiet:
        h = highspy.Highs()
    else:
        with c_stdout_silenced():
            h = highspy.Highs()
        _quiet = True
    h.setOptionValue("output_flag", False)
    return h


def model(n_col, A, lower, upper, cost, row_lower=None, row_upper=None, integer=None):
    """A silent model of ``min cost x`` over ``row_lower <= A x <= row_upper`` (default
    ``A x = 0``), ``lower <= x <= upper``; ``integer``: a boolean mask of the integer
    columns (default none)."""
    import highspy
    import numpy as np
    import scipy.sparse as sp
    h = new()
    m = A.shape[0]
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = n_col, m
    lp.col_cost_ = np.asarray(cost, float)
    lp.col_lower_ = np.asarray(lower, float)
    lp.col_upper_ = np.asarray(upper, float)
    lp.row_lower_ = np.zeros(m) if row_lower is None else np.asarray(row_lower, float)
    lp.row_upper_ = np.zeros(m) if row_upper is None else np.asarray(row_upper, float)
    Ac = sp.csc_matrix(A, dtype=float)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = Ac.indptr.astype(np.int32)
    lp.a_matrix_.index_ = Ac.indices.astype(np.int32)
    lp.a_matrix_.value_ = Ac.data.astype(float)
    lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = n_col, m
    if integer is not None and np.any(integer):
        kinds = (highspy.HighsVarType.kContinuous, highspy.HighsVarType.kInteger)
        lp.integrality_ = [kinds[bool(b)] for b in integer]
    h.passModel(lp)
    return h


def run(h, seconds=None) -> None:
    """``h.run()`` stopped after ``seconds`` more (None: no limit).

    HiGHS compares its ``time_limit`` with the run time the model has accumulated over
    every ``run()`` since it was made (``getRunTime``), not with this run's: a model kept
    alive over many objectives would otherwise stop at once, with "Time limit reached",
    once its runs added up to the limit.  The limit is set past the time already run."""
    if seconds is None:
        h.setOptionValue("time_limit", float("inf"))
    else:
        h.setOptionValue("time_limit", float(h.getRunTime()) + float(seconds))
    h.run()

