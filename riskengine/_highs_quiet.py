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

__all__ = ["c_stdout_silenced", "new"]

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
