"""One place for the JIT options every kernel uses.

All kernels are compiled with ``cache=True`` so the compile cost is paid once per
machine (see ``benchmarks/`` for the measured warm-up), and with
``error_model="numpy"`` so that division follows IEEE rules instead of raising.
"""

from __future__ import annotations

import numba as nb


def njit(*args, parallel: bool = False, **kwargs):
    """``numba.njit`` with the project's options (cached, numpy error model)."""
    opts = {"cache": True, "error_model": "numpy", "nogil": True}
    if parallel:
        opts["parallel"] = True
    opts.update(kwargs)
    return nb.njit(*args, **opts)
