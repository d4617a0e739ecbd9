"""``rk.audit``: the feasible interval of every suppressed cell, with disclosure flags.

The intervals come from the LP engine (:func:`riskengine.magnitude.intervals.intervals`:
min / max of each unknown cell over ``x >= 0``, ``T x = 0``, published cells fixed);
this module reads the inputs (the release, and for the auditor the sensitive cells,
their protection levels and the original table) and labels the result as a Dataset
over the table's dims (and over every total block when totals are hidden or sensitive).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from ..release import Release
from ..table import Table
from .contributions import Contributions
from .intervals import intervals, protection_tol
from .protection import sensitive_cells

# ``intervals`` and ``protection_tol`` are offered here too: ``riskengine.audit`` (an alias
# of this module) offered them
__all__ = ["audit", "intervals", "protection_arrays", "protection_tol"]


def audit(release, sensitive=None, protection=None, *, table=None, unions=None) -> xr.Dataset:
    """Feasible interval of every suppressed cell, with disclosure flags.

    Parameters
    ----------
    release : rk.Release
        A release with suppressed (NaN) cells: interior cells in ``published`` and, for
        releases that may hide them, totals and subtotals in ``margins`` / ``subtotals``.
    sensitive : bool array, or the Dataset of :func:`riskengine.sensitivity.assess`, optional
        The cells that need protection: of the table's shape, or one entry per cell of
        the tabular system (totals included), or the ``assess`` Dataset.
    protection : array, scalar or a pair ``(lower, upper)``, optional
        Protection each sensitive cell needs below and above its true value (same forms;
        defaults to the Dataset's ``protection``).
    table : rk.Table, rk.Contributions or array, optional
        The original table: the auditor's view, needed to check protection (how far
        each interval reaches below and above the true value).  For an
        ``rk.TableSetRelease``: the ``rk.TableSet`` (or hierarchical table) it protects.
    unions : list, optional
        ``rk.TableSetRelease`` only: groups of suppressed cells (each a list of cell
        indices of the system) whose *sum* is audited too: an intruder who pins the sum
        of a few small cells learns about all of them (approximate disclosure of a union,
        tau-Argus users' "union of suppressed cells").

    An ``rk.TableSetRelease`` (a hierarchical table or a set of linked tables) is audited
    over every cell of every table at once; the Dataset is then over one ``cell`` dim,
    with each cell's codes (one coordinate per dim, ``tables``) as coordinates, and
    ``exact`` covers the finest cells no table publishes as well (a cell the intruder can
    compute is disclosed even if no table shows it).

    Returns
    -------
    xarray.Dataset
        Over the table's dims: ``published``; ``suppressed``; ``lower`` / ``upper``
        (the LP interval for suppressed cells; a published cell's interval is its
        value; ``inf`` when nothing bounds it); ``width``; ``exact`` (suppressed and
        ``upper - lower`` within tolerance: exact disclosure).  With ``sensitive`` and
        ``protection``: ``approximate_disclosure`` (sensitive, not exact, but the
        interval is narrower than the protection: the intruder pins the cell within
        less than its protection without knowing the truth).  With ``table`` as well:
        ``value``, ``room_below`` / ``room_above`` (value - lower, upper - value) and
        ``under_protected`` (sensitive and ``room_below < lower protection`` or
        ``room_above < upper protection``).  When the release hides a total or a total
        is sensitive, the same variables for every total block, suffixed as in
        :func:`riskengine.sensitivity.assess` (``lower_total_v``, ``exact_total``,
        ``under_protected_subtotal_v_w`` with dim ``v_group``, ...).  ``attrs``:
        tolerance, counts over every cell (totals included), method.

    Examples
    --------
    >>> import numpy as np, riskengine as rk
    >>> nan = np.nan
    >>> rel = rk.Release(np.array([[nan, nan, 3.0], [nan, nan, 4.0]]),
    ...                  margins={("v",): [6.0, 9.0], ("w",): [5.0, 3.0, 7.0], (): 15.0},
    ...                  mechanism=rk.CellSuppression(), dims=("v", "w"))
    >>> a = rk.audit(rel)
    >>> a["lower"].values.round(9).tolist()
    [[0.0, 0.0, 3.0], [2.0, 0.0, 4.0]]
    >>> a["upper"].values.round(9).tolist()
    [[3.0, 3.0, 3.0], [5.0, 3.0, 4.0]]
    """
    from ..table_set import TableSetRelease
    if isinstance(release, TableSetRelease):
        return _audit_set(release, sensitive, protection, table, unions)
    if unions is not None:
        raise ValueError("unions= audits sums of suppressed cells of an rk.TableSetRelease")
    if not isinstance(release, Release):
        raise TypeError(f"release must be an rk.Release, got {type(release).__name__}")
    if (sensitive is None) and (protection is not None):
        raise ValueError("give sensitive and protection together (or neither)")
    if sensitive is not None and protection is None and not isinstance(sensitive, xr.Dataset):
        raise ValueError("give sensitive and protection together (or neither)")
    if table is not None and sensitive is None:
        raise ValueError("table= is used to check protection: give sensitive and protection")
    dims, shape = release.dims, release.shape
    system = release.system()
    x = release.cell_vector(system)
    ctol = np.zeros(x.size)
    lo, hi = intervals(system, x, tol_out=ctol)
    supp = np.isnan(x)
    tol = protection_tol(x)             # comparisons of published values
    width = hi - lo
    exact = supp & (width <= ctol)      # each cell's own accuracy (its LP component)
    data = {"published": x, "suppressed": supp, "lower": lo, "upper": hi, "width": width,
            "exact": exact}
    attrs = {"method": "LP interval audit (HiGHS): min/max of each suppressed cell over "
                       "x >= 0, T x = 0, published cells fixed",
             "tolerance": tol, "n_suppressed": int(supp.sum()), "n_exact": int(exact.sum()),
             "mechanism": release.mechanism.describe()}
    sens = np.zeros(x.size, bool)
    if sensitive is not None:
        sens, plo, phi = sensitive_cells(sensitive, protection, system)
        approx = sens & ~exact & (width < np.maximum(plo, phi) - ctol)
        data.update({"sensitive": sens, "protection_lower": plo, "protection_upper": phi,
                     "approximate_disclosure": approx})
        attrs["n_approximate_disclosure"] = int(approx.sum())
        attrs["n_sensitive_published"] = int((sens & ~supp).sum())
        if table is not None:
            if isinstance(table, Table):
                table = table.data
            val = system.vector(_interior_array(table, "table", dims, shape, float))
            val = val.astype(float)
            if not np.all(np.abs(val[~supp] - x[~supp]) <= tol):
                raise ValueError("table does not match the release's published cells")
            below, above = val - lo, hi - val
            under = sens & ((below < plo - ctol) | (above < phi - ctol))
            data.update({"value": val, "room_below": below, "room_above": above,
                         "under_protected": under})
            attrs["n_under_protected"] = int(under.sum())
    n_int = system.n_interior
    show = bool(supp[n_int:].any() or sens[n_int:].any())
    out = {}
    for b in system.blocks:
        if not (b.is_interior or show):
            continue
        for name, vec in data.items():
            out[name + b.suffix] = (b.xdims, vec[b.slice].reshape(b.shape))
    coords = {d: release.coords[d] for d in dims}
    return xr.Dataset(out, coords=coords, attrs=attrs)


def _interior_array(a, name: str, dims: tuple, shape: tuple, dtype) -> np.ndarray:
    """``a`` (array, DataArray, Table or Contributions) as an array of the table's
    ``shape``: a mask (``dtype=bool``) or finite nonnegative floats."""
    if isinstance(a, Contributions):
        a = a.table
    if isinstance(a, Table):
        a = a.data if tuple(a.dims) != tuple(dims) else a.values
    if isinstance(a, xr.DataArray):
        missing = [d for d in dims if d not in a.dims]
        if missing or a.ndim != len(dims):
            raise ValueError(f"{name} must have dims {dims}, got {a.dims}")
        a = a.transpose(*dims).values
    arr = np.asarray(a)
    if arr.dtype == object:
        raise TypeError(f"{name} must be a numeric array, got dtype object")
    if arr.shape != tuple(shape):
        raise ValueError(f"{name} must have the table's shape {tuple(shape)}, got {arr.shape}")
    if dtype is bool:
        if arr.dtype != bool and not np.isin(arr, (0, 1)).all():
            raise ValueError(f"{name} must be a boolean mask (or 0/1), got values "
                             f"{np.unique(arr)[:5].tolist()}")
        return arr.astype(bool)
    arr = arr.astype(float)
    if not np.isfinite(arr).all() or (arr < 0).any():
        bad = arr[~np.isfinite(arr) | (arr < 0)][0]
        raise ValueError(f"{name} must be finite and nonnegative, got {bad!r}")
    return arr


def protection_arrays(protection, dims, shape) -> tuple:
    """``(lower, upper)`` protection levels from one array (symmetric) or a pair."""
    if isinstance(protection, tuple) and len(protection) == 2:
        lo = _interior_array(protection[0], "lower protection", dims, shape, float)
        hi = _interior_array(protection[1], "upper protection", dims, shape, float)
        return lo, hi
    p = _interior_array(protection, "protection", dims, shape, float)
    return p, p


class _Augmented:
    """A system with extra cells: the sums of given groups of cells (one equation each)."""

    def __init__(self, system, groups):
        import scipy.sparse as sp
        n = system.n_var
        rows, cols, vals = [], [], []
        for k, g in enumerate(groups):
            rows += [k] * (len(g) + 1)
            cols += [n + k] + list(g)
            vals += [1.0] + [-1.0] * len(g)
        extra = sp.csr_matrix((vals, (rows, cols)), shape=(len(groups), n + len(groups)))
        A = sp.hstack([system.A, sp.csr_matrix((system.A.shape[0], len(groups)))])
        self.A = sp.vstack([A, extra]).tocsr()
        self.n_var = n + len(groups)
        self._labels = system.labels() + [f"union {k}" for k in range(len(groups))]

    def labels(self, coords=None):
        return list(self._labels)


def _audit_set(release, sensitive, protection, table, unions) -> xr.Dataset:
    """The audit of a hierarchical table's or a table set's release (see :func:`audit`)."""
    s = release.system
    x = release.cell_vector()
    pub = s.published
    groups = []
    for k, g in enumerate(unions or []):
        g = [int(j) for j in g]
        bad = [j for j in g if not (0 <= j < s.n_var) or not release.hidden[j]]
        if bad or len(g) < 2 or len(set(g)) != len(g):
            raise ValueError(f"union {k} must list two or more distinct suppressed cells "
                             f"(indices into the system's cells), got {g}"
                             + (f"; {bad[0]} is not a suppressed cell" if bad else ""))
        groups.append(g)
    if groups:
        aug = _Augmented(s, groups)
        ctol_all = np.zeros(s.n_var + len(groups))
        lo_all, hi_all = intervals(aug, np.concatenate([x, np.full(len(groups), np.nan)]),
                                   tol_out=ctol_all)
        lo, hi = lo_all[: s.n_var], hi_all[: s.n_var]
        ctol = ctol_all[: s.n_var]
    else:
        ctol = np.zeros(s.n_var)
        lo, hi = intervals(s, x, tol_out=ctol)
    unknown = np.isnan(x)
    supp = unknown & pub
    tol = protection_tol(x)             # comparisons of published values
    width = hi - lo
    exact = unknown & (width <= ctol)   # each cell's own accuracy (its LP component)
    data = {"published": x, "suppressed": supp, "lower": lo, "upper": hi, "width": width,
            "exact": exact}
    attrs = {"method": "LP interval audit (HiGHS) over every table of the publication at "
                       "once: min/max of each unknown cell over x >= 0, A x = 0, published "
                       "cells fixed",
             "tolerance": tol, "n_suppressed": int(supp.sum()),
             "n_exact": int((exact & pub).sum()),
             "n_exact_unpublished": int((exact & ~pub).sum()),
             "mechanism": release.mechanism.describe(),
             "tables": ", ".join(s.grids)}
    if sensitive is not None:
        from ..magnitude.sensitivity import Frequency, Rule
        from ..table_set import TableSet
        if isinstance(sensitive, Rule):
            if table is None or not isinstance(sensitive, Frequency):
                raise ValueError("a rule in the audit of a set needs the original (table=) "
                                 "and is the frequency rule on counts")
            ts = table if isinstance(table, TableSet) else TableSet(table)
            val = np.where(pub, ts.values, 0.0)     # the rule judges published cells only
            sens = sensitive.sensitive(val) & pub
            plo, phi = sensitive.protection_levels(val)
            plo, phi = np.where(sens, plo, 0.0), np.where(sens, phi, 0.0)
        else:
            sens = np.asarray(sensitive, bool)
            if sens.shape != (s.n_var,):
                raise ValueError(f"sensitive must hold one entry per cell of the system "
                                 f"({s.n_var}), got shape {sens.shape}")
            if protection is None:
                raise ValueError("give sensitive and protection together (or a rule)")
            p = protection if isinstance(protection, tuple) else (protection, protection)
            plo, phi = (np.where(sens, np.broadcast_to(np.asarray(q, float), (s.n_var,)),
                                 0.0) for q in p)
        approx = sens & ~exact & supp & (width < np.maximum(plo, phi) - ctol)
        data.update({"sensitive": sens, "protection_lower": plo, "protection_upper": phi,
                     "approximate_disclosure": approx})
        attrs["n_approximate_disclosure"] = int(approx.sum())
        attrs["n_sensitive_published"] = int((sens & ~supp).sum())
        if table is not None:
            from ..table_set import TableSet
            ts = table if isinstance(table, TableSet) else TableSet(table)
            if ts.system.n_var != s.n_var:
                raise ValueError("table= is not the set this release protects (its system "
                                 "differs)")
            val = ts.values
            known = ~unknown
            if not np.all(np.abs(val[known] - x[known]) <= tol):
                j = int(np.argmax(known & (np.abs(np.nan_to_num(val) - np.nan_to_num(x)) >
                                           tol)))
                raise ValueError(f"table= does not match the release: cell "
                                 f"{s.labels()[j]} is {val[j]:g} there, published {x[j]:g}")
            below, above = val - lo, hi - val
            under = sens & ((below < plo - ctol) | (above < phi - ctol))
            data.update({"value": val, "room_below": below, "room_above": above,
                         "under_protected": under})
            attrs["n_under_protected"] = int(under.sum())
    coords = {"cell": np.arange(s.n_var),
              "tables": ("cell", [",".join(t) for t in s.cells["tables"]])}
    for d in s.dims:
        coords[d] = ("cell", [str(c) for c in s.cells[d]])
    coords["label"] = ("cell", s.labels())
    ds = xr.Dataset({k: ("cell", np.asarray(v)) for k, v in data.items()}, coords=coords,
                    attrs=attrs)
    if groups:
        ulo, uhi = lo_all[s.n_var:], hi_all[s.n_var:]
        val_u = None
        if table is not None and "value" in ds:
            val_u = np.array([ds["value"].values[g].sum() for g in groups])
        ds["union_lower"] = ("union", ulo)
        ds["union_upper"] = ("union", uhi)
        ds["union_width"] = ("union", uhi - ulo)
        utol = ctol_all[s.n_var:]
        ds["union_exact"] = ("union", (uhi - ulo) <= utol)
        ds["union_cells"] = ("union", [" + ".join(s.labels()[j] for j in g) for g in groups])
        if val_u is not None:
            ds["union_value"] = ("union", val_u)
        ds.attrs["n_union_exact"] = int(((uhi - ulo) <= utol).sum())
    return ds
