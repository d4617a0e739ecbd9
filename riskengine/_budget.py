"""The memory budget every inference route is measured against.

One option decides between routes: ``memory=`` on :func:`riskengine.posterior` and
:func:`riskengine.count_candidates` (bytes, or a string such as ``"8GB"`` / ``"512 MiB"``),
by default a safe fraction of the memory this machine has available now.  Routes
estimate what they need before they allocate; a route that does not fit is skipped
(``route="auto"``) or refused with both numbers.
"""

from __future__ import annotations

import numbers
import os
import re

__all__ = ["DEFAULT_FRACTION", "available_memory", "budget", "fmt_bytes"]

#: share of the available memory a route may plan to use by default
DEFAULT_FRACTION = 0.5

_UNITS = {"": 1, "b": 1, "k": 10 ** 3, "kb": 10 ** 3, "m": 10 ** 6, "mb": 10 ** 6,
          "g": 10 ** 9, "gb": 10 ** 9, "t": 10 ** 12, "tb": 10 ** 12,
          "kib": 2 ** 10, "mib": 2 ** 20, "gib": 2 ** 30, "tib": 2 ** 40}


def available_memory() -> int:
    """Bytes of memory available to a new allocation now (``MemAvailable`` on Linux,
    else physical memory)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        return 8 * 2 ** 30


def budget(memory=None) -> int:
    """The memory budget in bytes: ``memory`` parsed, or the default share of
    :func:`available_memory`.

    >>> budget("2GB"), budget("512 MiB"), budget(1e6)
    (2000000000, 536870912, 1000000)
    """
    if memory is None:
        return int(DEFAULT_FRACTION * available_memory())
    if isinstance(memory, bool):
        raise TypeError(f"memory must be a number of bytes or a string like '8GB', got {memory!r}")
    if isinstance(memory, numbers.Real):
        val = float(memory)
    elif isinstance(memory, str):
        m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*", memory)
        unit = m.group(2).lower() if m else None
        if m is None or unit not in _UNITS:
            raise ValueError(f"memory must be bytes or a size like '8GB', '512 MiB', got "
                             f"{memory!r} (units: {', '.join(u for u in _UNITS if u)})")
        val = float(m.group(1)) * _UNITS[unit]
    else:
        raise TypeError(f"memory must be a number of bytes or a string like '8GB', got "
                        f"{type(memory).__name__}")
    if not val > 0 or val == float("inf"):
        raise ValueError(f"memory must be a positive, finite size, got {memory!r}")
    return int(val)


def fmt_bytes(n: float) -> str:
    """``1.5 GB`` style (decimal units).

    >>> fmt_bytes(3.2e9), fmt_bytes(512), fmt_bytes(float("inf"))
    ('3.2 GB', '512 B', 'unbounded')
    """
    if n == float("inf"):
        return "unbounded"
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{int(n)} B"
