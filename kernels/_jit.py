"""One place for the JIT options every kernel uses.

All kernels are compiled with ``cache=True`` so the compile cost is paid once per
machine (see ``benchmarks/`` for the measured warm-up), and with
``error_model="numpy"`` so that division follows IEEE rules instead of raising.
"""

from __future__ import annotations

import os
import time
from contextlib import contextmanager

# A parallel kernel's OpenMP threads wait for the next one passively (asleep) rather than
# spinning: on a machine whose cores are busy (CI, a shared server, a board member's
# laptop) spinning threads fight the work for the cores and a small kernel ran 10-50x
# slower (issue 30; benchmarks/wait_policy.py).  Set before numba loads its threading
# layer (the first parallel launch), and only when the user has not chosen a policy;
# RISKENGINE_WAIT_POLICY=default keeps OpenMP's own.
if os.environ.get("RISKENGINE_WAIT_POLICY", "passive").lower() != "default":
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numba as nb
from numba.core import event as _event
from numba.core.dispatcher import Dispatcher

_PACKAGE = __name__.rpartition(".")[0]

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


# --- compiling for the first time ------------------------------------------------------
#: seconds each module's kernels take to compile on an empty cache, measured by
#: ``riskengine warmup`` on the 2-core reference machine (2026-11-24); the first run on a
#: machine states them while it compiles.  A module not listed: SECONDS_PER_KERNEL each.
#: ``sum_redraw``: 12.6 CPU seconds on an empty cache (2026-11-27), which includes the
#: ``sum_enum`` enumerator it calls; ``sis``: 10.0 s with the importance-sampling
#: posterior's kernels (2026-11-27; the count estimate's alone 2.5 s); ``table_dp``: 12 s
#: with the live-state layout's kernels (2026-11-28: the first exact posterior of a
#: rounded 3 x 3 table on an empty cache, 13.3 s CPU against 9.6 s before it).
COMPILE_SECONDS = {"cyclic_enum": 6, "halves": 9, "table_dp": 12, "gibbs": 8,
                   "multinomial_box": 4, "multinomial_chain": 5, "table_enum": 3, "sum_gibbs": 3,
                   "network": 2, "sis": 10, "sum_enum": 7, "sum_redraw": 12}
SECONDS_PER_KERNEL = 2.0


def compile_estimate(module: str) -> float:
    """Seconds the kernels of ``module`` (``"kernels.table_dp"``) take to compile."""
    name = module.rpartition(".")[2]
    if name in COMPILE_SECONDS:
        return COMPILE_SECONDS[name]
    import sys
    mod = sys.modules.get(module)
    n = sum(isinstance(v, Dispatcher) for v in vars(mod).values()) if mod else 1
    return SECONDS_PER_KERNEL * max(n, 1)


class CompileWatch(_event.Listener):
    """Numba compiling this package's kernels (cache misses only: a kernel loaded from
    numba's cache is not compiled).  ``seconds``: compile time by module (nested compiles
    counted in the outermost); ``count``: kernels compiled; ``first(module)`` is called
    when a module's first kernel starts compiling."""

    def __init__(self, first=None):
        self.first = first
        self.seconds: dict = {}
        self.count = 0
        self._stack: list = []

    def on_start(self, event):
        disp = event.data["dispatcher"]
        module = getattr(getattr(disp, "py_func", None), "__module__", "") or ""
        self._stack.append((module, time.perf_counter()))
        if not module.startswith(_PACKAGE + "."):
            return
        self.count += 1
        if module not in self.seconds:
            self.seconds[module] = 0.0
            if self.first is not None:
                self.first(module)

    def on_end(self, event):
        module, t0 = self._stack.pop()
        if not self._stack and module.startswith(_PACKAGE + "."):
            self.seconds[module] = self.seconds.get(module, 0.0) + time.perf_counter() - t0


@contextmanager
def watch_compiles(first=None):
    """``with watch_compiles(first) as w:`` records the kernels compiled inside the block
    and calls ``first(module)`` when a module starts compiling (:class:`CompileWatch`)."""
    watch = CompileWatch(first)
    _event.register("numba:compile", watch)
    try:
        yield watch
    finally:
        _event.unregister("numba:compile", watch)
