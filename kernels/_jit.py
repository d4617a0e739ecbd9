"""One place for the JIT options every kernel uses.

All kernels are compiled with ``cache=True`` so the compile cost is paid once per
machine (see ``benchmarks/`` for the measured warm-up), and with
``error_model="numpy"`` so that division follows IEEE rules instead of raising.
"""

from __future__ import annotations

from contextlib import contextmanager

import numba as nb

#: work (inner-loop iterations) below which a parallel kernel runs on one thread: starting
#: the thread team costs more than it saves on small problems (and much more when the
#: machine's cores are busy)
SERIAL_BELOW = 2e5


def njit(*args, parallel: bool = False, **kwargs):
    """``numba.njit`` with the project's options (cached, numpy error model)."""
    opts = {"cache": True, "error_model": "numpy", "nogil": True}
    if parallel:
        opts["parallel"] = True
    opts.update(kwargs)
    return nb.njit(*args, **opts)


@contextmanager
def threads_for(work: float):
    """Run the parallel kernels called inside on one thread when ``work`` is small."""
    if work >= SERIAL_BELOW:
        yield
        return
    before = nb.get_num_threads()
    nb.set_num_threads(1)
    try:
        yield
    finally:
        nb.set_num_threads(before)
