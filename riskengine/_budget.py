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

__all__ = ["DEFAULT_FRACTION", "available_memory", "budget", "check_fits", "fmt_bytes",
           "fmt_number"]

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


def fmt_bytes(n: float, binary: bool = False) -> str:
    """``1.5 GB`` style (decimal units), or ``1.4 GiB`` (``binary``: powers of 1024, as
    NumPy's ``MemoryError`` says).

    >>> fmt_bytes(3.2e9), fmt_bytes(512), fmt_bytes(float("inf"))
    ('3.2 GB', '512 B', 'unbounded')
    >>> fmt_bytes(16e12, binary=True), fmt_bytes(2**31, binary=True), fmt_bytes(1.2e15)
    ('14.6 TiB', '2 GiB', '1200 TB')
    """
    if n == float("inf"):
        return "unbounded"
    units = ((("PiB", 2.0 ** 50), ("TiB", 2.0 ** 40), ("GiB", 2.0 ** 30), ("MiB", 2.0 ** 20),
              ("KiB", 2.0 ** 10)) if binary else
             (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)))
    for unit, size in units:
        if n >= size:
            v = n / size
            return f"{v:.3g} {unit}" if v < 1000 or v >= 1e6 else f"{v:.0f} {unit}"
    return f"{int(n)} B"


def fmt_number(value) -> str:
    """A parameter's value as a person would write it: integers that are powers of ten
    from 10**4 up as ``10**k``, other numbers as they are (floats in short form).

    Parameters
    ----------
    value : int or float
        The parameter's value.

    Returns
    -------
    str
        E.g. ``"10**12"``, ``"1e+09"``, ``"3"``, ``"2.5"``.

    >>> fmt_number(10**12), fmt_number(1e9), fmt_number(12345), fmt_number(0.25)
    ('10**12', '1e+09', '12345', '0.25')
    """
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        v = int(value)
        k = len(str(abs(v))) - 1
        if k >= 4 and abs(v) == 10 ** k:
            return ("-" if v < 0 else "") + f"10**{k}"
        return str(v)
    return f"{float(value):.6g}"


def check_fits(what: str, need: float, detail: str, memory: float) -> None:
    """Refuse, before anything is allocated, work whose memory exceeds the budget.

    Parameters
    ----------
    what : str
        What sets the size, naming the parameter and its value (e.g.
        ``"RandomRounding base 10**12"``).
    need : float
        Bytes the work needs.
    detail : str
        What was counted (shown in parentheses).
    memory : float
        The memory budget in bytes (:func:`budget`).

    Returns
    -------
    None
        When ``need <= memory``.

    Raises
    ------
    ValueError
        One line: ``"<what> needs <need> (<detail>); the memory budget is <memory>"``.
    """
    if need > memory:
        size = fmt_bytes(need, binary=True) + (" memory" if need == float("inf") else "")
        raise ValueError(f"{what} needs {size} ({detail}); the "
                         f"memory budget is {fmt_bytes(memory, binary=True)} (raise memory= "
                         "if the machine has more)")
