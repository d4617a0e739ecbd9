"""Which cells need protection, and how much: the readers of ``sensitive`` / ``protection``.

Suppression (:func:`riskengine.magnitude.csp.find_pattern`) and the audit
(:func:`riskengine.magnitude.audit.audit`) take the sensitive cells and their protection
levels in the same forms, read here into vectors over every cell of the tabular system
(interior, totals, subtotals; :func:`riskengine.tabular.tabular_system`):

* ``sensitive``: a boolean (or 0/1) mask of the table's shape (totals then not
  sensitive), or one entry per cell of the system, or the Dataset of
  :func:`riskengine.magnitude.sensitivity.assess` (totals included; ``protection`` then
  defaults to its ``protection``);
* ``protection``: an array in the same forms, a scalar (every sensitive cell), or a pair
  ``(lower, upper)`` of those.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from ..tabular import TabularSystem, cell_values
from .sensitivity import SENSITIVE_TOTALS, cell_vector

__all__ = ["check_coverage", "protection_levels", "sensitive_cells"]


def check_coverage(x, name: str) -> None:
    """Refuse an interior variable of :func:`riskengine.sensitivity.assess` (e.g.
    ``ds.sensitive``) when the assessment also found sensitive totals: passing it alone
    would silently leave those totals unprotected."""
    n = getattr(x, "attrs", {}).get(SENSITIVE_TOTALS, 0) if isinstance(x, xr.DataArray) else 0
    if n:
        raise ValueError(f"{name} covers the interior cells only, but its sensitivity "
                         f"assessment found {n} sensitive total(s) as well: pass the whole "
                         "Dataset of rk.sensitivity.assess (totals included), not one of its "
                         "variables")


def sensitive_cells(sensitive, protection, system: TabularSystem) -> tuple:
    """``(sens, lower, upper)`` over every cell of ``system``: the sensitive cells and the
    protection each needs below and above its value (0 on the other cells).

    Examples
    --------
    >>> from riskengine.tabular import tabular_system
    >>> s = tabular_system(("v", "w"), (1, 2))   # 2 cells, row total, 2 column totals, total
    >>> sens, lo, hi = sensitive_cells([[True, False]], (1.0, 2.0), s)
    >>> sens.tolist()
    [True, False, False, False, False, False]
    >>> lo.tolist(), hi.tolist()
    ([1.0, 0.0, 0.0, 0.0, 0.0, 0.0], [2.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    """
    check_coverage(sensitive, "sensitive")
    check_coverage(protection, "protection")
    if isinstance(sensitive, xr.Dataset):
        sens = cell_vector(sensitive, "sensitive", system).astype(bool)
        if protection is None:
            protection = cell_vector(sensitive, "protection", system)
            if "protection_lower" in sensitive:     # Frequency: never below 0
                protection = (cell_vector(sensitive, "protection_lower", system), protection)
    else:
        if isinstance(sensitive, xr.DataArray):
            sensitive = sensitive.transpose(*system.dims).values \
                if set(sensitive.dims) == set(system.dims) else sensitive.values
        sens = cell_values(sensitive, system, "sensitive", fill=0, dtype=None)
        if sens.dtype != bool:
            if not np.isin(sens, (0, 1)).all():
                raise ValueError("sensitive must be a boolean mask (or 0/1), got values "
                                 f"{np.unique(sens)[:5].tolist()}")
            sens = sens.astype(bool)
    if protection is None:
        raise TypeError("suppress needs protection= (or the Dataset of "
                        "rk.sensitivity.assess as sensitive)")
    if isinstance(protection, tuple) and len(protection) == 2:
        lo, hi = (protection_levels(p, system, sens, name)
                  for p, name in zip(protection, ("lower protection", "upper protection")))
    else:
        lo = hi = protection_levels(protection, system, sens, "protection")
    return sens, np.where(sens, lo, 0.0), np.where(sens, hi, 0.0)


def protection_levels(p, system: TabularSystem, sens, name: str) -> np.ndarray:
    """One protection input (array of the table's shape or per system cell, scalar, or a
    DataArray) as a nonnegative vector over ``system``; a scalar fills the cells of
    ``sens``.  ``name`` labels the errors."""
    if isinstance(p, xr.DataArray):
        p = p.transpose(*system.dims).values if set(p.dims) == set(system.dims) else p.values
    arr = cell_values(p, system, name, fill=0.0, scalar_mask=sens)
    if (arr < 0).any():
        j = int(np.argmax(arr < 0))
        raise ValueError(f"{name} must be finite and nonnegative, got {arr[j]:g} at "
                         f"{system.labels()[j]}")
    return arr
