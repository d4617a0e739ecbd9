"""Release: the published values + the mechanism with its public parameters.

A release is what an agency publishes: interior values (``NaN`` = suppressed,
``None`` = not published at all), the published totals (``margins``, keyed by
the tuple of dims each total keeps), and the public description of how the
original was protected.  ``to_json`` / ``from_json`` round-trip exactly.
"""

from __future__ import annotations

import json

import numpy as np
import xarray as xr

from . import _validate as V
from ._io import atomic_write_text
from .protocol import Mechanism, mechanism_from_dict
from .table import Table, _clean_coords, aligned, default_margins, margin_closure, totals
from .tabular import _clean_groups, check_equations, tabular_system

__all__ = ["FORMAT", "FORMAT_VERSION", "Release"]

FORMAT = "riskengine.release"
FORMAT_VERSION = 1


class Release:
    """A published table and the mechanism that produced it.

    Parameters
    ----------
    published : array-like, xarray.DataArray or None
        Published interior values; ``NaN`` marks a suppressed cell; ``None``
        when only totals are published.
    margins : dict, optional
        ``{dims kept: values}``: ``("v",)`` row totals, ``()`` grand total.
        ``None``: the totals of ``published`` over the default structure (for
        mechanisms that keep margins exactly).
    mechanism : riskengine mechanism
        The protection mechanism with its public parameters.
    dims, coords
        Dimension names and category labels (taken from a DataArray if given).
    kind : {"count", "magnitude"}, optional
    groups : dict, optional
        One level of subtotals along one dim: ``{dim: [[category indices], ...]}``
        (the groups partition the categories), as in :func:`riskengine.tabular.tabular_system`.
    subtotals : dict, optional
        With ``groups``: ``{dims kept: values}`` for every configuration of the
        table's structure (interior included) that keeps the grouped dim, with that
        dim aggregated to its groups (one entry per group).  Stored in JSON as the
        optional fields ``groups`` / ``subtotals`` of format version 1.

    Examples
    --------
    >>> import numpy as np, riskengine as rk
    >>> rel = rk.Release(np.array([[3, 1], [2, 4]]), mechanism=rk.CyclicPerturbation(
    ...     cycles=[[[1, -1], [-1, 1]]], alpha=0.25, beta=0.25), dims=("v", "w"))
    >>> rk.Release.from_json(rel.to_json()) == rel
    True
    """

    def __init__(self, published=None, margins=None, mechanism=None, dims=None, coords=None,
                 kind: str | None = None, groups=None, subtotals=None):
        if mechanism is None or not isinstance(mechanism, Mechanism):
            raise TypeError("a Release needs its mechanism (e.g. rk.CyclicPerturbation(...)), "
                            f"got {mechanism!r}")
        self.mechanism = mechanism
        if isinstance(published, Table):
            published = published.data
        if isinstance(published, xr.DataArray):
            # matched by dim names (and by labels, when coords are given too)
            if dims is None:
                dims = tuple(published.dims)
            elif set(map(str, dims)) != set(map(str, published.dims)) or \
                    len(dims) != published.ndim:
                raise ValueError(f"published has dims {tuple(published.dims)} but "
                                 f"dims={tuple(dims)} (dims are matched by name, not position: "
                                 "rename the DataArray's dims, or pass its .values)")
            dims = tuple(str(d) for d in dims)
            published = published.transpose(*dims)
            if coords is None:
                coords = {d: list(published.coords[d].values) for d in dims
                          if d in published.coords}
                published = published.values
            else:
                published = aligned(published, dims,
                                    _clean_coords(coords, dims, published.shape), "published")
        if published is None:
            if dims is None:
                raise ValueError("a margins-only release needs dims=")
            dims = tuple(str(d) for d in dims)
            shape = _shape_from(dims, coords, margins)
            self.published = None
        else:
            arr = np.asarray(published)
            if dims is None:
                dims = tuple(f"dim_{i}" for i in range(arr.ndim))
            dims = tuple(str(d) for d in dims)
            if len(dims) != arr.ndim:
                raise ValueError(f"dims {dims} has {len(dims)} names but published has "
                                 f"{arr.ndim} dimensions (shape {arr.shape})")
            shape = arr.shape
            if kind is None:
                af = arr.astype(float)
                fin = af[~np.isnan(af)]
                # suppressed cells hide values: the totals tell counts from magnitudes too
                for v in dict(margins or {}).values():
                    v = v.values if isinstance(v, xr.DataArray) else v
                    fin = np.concatenate([fin, np.ravel(np.asarray(v, dtype=float))])
                fin = fin[~np.isnan(fin)]       # a suppressed total says nothing of the kind
                kind = "count" if np.all(fin == np.round(fin)) else "magnitude"
            signed = getattr(mechanism, "published_signed", False)
            self.published = (V.count_array(arr, "published", allow_nan=True, signed=signed)
                              if kind == "count"
                              else V.magnitude_array(arr, "published", allow_nan=True))
            self.published.setflags(write=False)
        self.kind = kind or "count"
        V.choice(self.kind, "kind", ("count", "magnitude"))
        self.dims = dims
        self.shape = tuple(int(s) for s in shape)
        self.coords = _clean_coords(coords, dims, self.shape)
        self.margins = self._clean_margins(margins)
        self.structure = margin_closure(list(self.margins), dims) if self.margins else ()
        self.groups, self.subtotals = self._clean_groups(groups, subtotals)
        self._check_additivity()
        #: free-form facts about how the release was made (e.g. bootstrap regenerations)
        self.info: dict = {}
        mechanism.validate_release(self)

    # --- validation -------------------------------------------------------------------
    def _clean_margins(self, margins) -> dict:
        if margins is None:
            if self.published is None or np.isnan(np.asarray(self.published, float)).any():
                raise ValueError("margins must be given when published is None or has "
                                 "suppressed (NaN) cells")
            if not self.mechanism.additive:
                raise ValueError(f"{self.mechanism.name} releases do not add up to the original "
                                 "totals: give the published totals (margins=...), e.g. the "
                                 "original grand total n as margins={(): n}")
            return totals(self.published, self.dims, default_margins(self.dims))
        out = {}
        for key, val in dict(margins).items():
            keep = (key,) if isinstance(key, str) else tuple(key)
            bad = [d for d in keep if d not in self.dims]
            if bad:
                raise ValueError(f"margin key {key!r} names unknown dims {bad}; dims are {self.dims}")
            if len(set(keep)) != len(keep):
                raise ValueError(f"margin key {key!r} repeats a dim")
            given, keep = keep, tuple(d for d in self.dims if d in keep)
            if len(keep) == len(self.dims):
                raise ValueError(f"margin {key!r} keeps every dim; put interior values in published")
            want = tuple(self.shape[self.dims.index(d)] for d in keep)
            if not isinstance(val, xr.DataArray) and given != keep:
                # a plain array keyed in another dim order: its axes follow the key
                arr = np.asarray(val)
                if arr.ndim != len(given):
                    raise ValueError(f"margin {key!r} must have {len(given)} dims, got shape "
                                     f"{arr.shape}")
                val = np.transpose(arr, [given.index(d) for d in keep])
            out[keep] = self._clean_block(val, keep, want, f"margin {keep}",
                                          f"(its dims {keep})")
        return out

    def _clean_block(self, val, keep, want, label, why) -> np.ndarray:
        """A published block (margin or subtotal) as a read-only validated array."""
        if isinstance(val, xr.DataArray):
            val = aligned(val, keep, {d: self.coords[d] for d in keep}, label)
        arr = np.asarray(val)
        if arr.shape != want:
            raise ValueError(f"{label} must have shape {want} {why}, got {arr.shape}")
        hide = getattr(self.mechanism, "suppressible_totals", False)
        if not hide and np.isnan(np.asarray(arr, dtype=float)).any():
            raise ValueError(f"{label} has NaN (suppressed) entries, but "
                             f"{self.mechanism.name} releases publish every total")
        signed = getattr(self.mechanism, "published_signed", False)
        arr = (V.count_array(arr, label, allow_nan=hide, signed=signed) if self.kind == "count"
               else V.magnitude_array(arr, label, allow_nan=hide))
        arr.setflags(write=False)
        return arr

    def _clean_groups(self, groups, subtotals):
        if not groups:
            if subtotals:
                raise ValueError("subtotals need the groups they sum (groups=)")
            return {}, {}
        groups = _clean_groups(groups, self.dims, self.shape)
        if len(groups) != 1:
            raise ValueError(f"a release carries one level of subtotals along one dim; "
                             f"got groups for {sorted(groups)}")
        (g, parts), = groups.items()
        need = [k for k in (self.dims,) + tuple(self.structure) if g in k]
        given = {((k,) if isinstance(k, str) else tuple(k)): v
                 for k, v in dict(subtotals or {}).items()}
        subtotals = {}
        for k, v in given.items():
            keep = tuple(d for d in self.dims if d in k)
            if isinstance(v, xr.DataArray):
                v = v.transpose(*[f"{d}_group" if d == g and f"{d}_group" in v.dims else d
                                  for d in keep]).values
            elif k != keep:
                v = np.transpose(np.asarray(v), [k.index(d) for d in keep])
            subtotals[keep] = v
        if set(subtotals) != set(need):
            raise ValueError(f"subtotals along {g!r} must be given for exactly the "
                             f"configurations {need}; got {sorted(subtotals)}")
        out = {}
        for keep in need:
            want = tuple(len(parts) if d == g else self.shape[self.dims.index(d)] for d in keep)
            out[keep] = self._clean_block(subtotals[keep], keep, want, f"subtotal {keep}",
                                          f"(grouped along {g!r})")
        return groups, out

    def system(self):
        """The tabular system T x = 0 of this release (structure and subtotal groups).

        Returns
        -------
        riskengine.tabular.TabularSystem
            The system of the release's dims, shape, published structure and groups.
        """
        return tabular_system(self.dims, self.shape, self.structure, self.groups,
                              coords=self.coords)

    def cell_vector(self, system=None) -> np.ndarray:
        """Every cell of the release as one float vector in ``system`` order (interior,
        totals, subtotals); NaN where nothing is published.

        Parameters
        ----------
        system : riskengine.tabular.TabularSystem, optional
            The system whose variable order to use (default: :meth:`system`).

        Returns
        -------
        numpy.ndarray
            Float vector of length ``system.n_var``.
        """
        system = system or self.system()
        out = np.full(system.n_var, np.nan)
        for b in system.blocks:
            if b.is_interior:
                val = (np.full(self.shape, np.nan) if self.published is None
                       else np.asarray(self.published, dtype=float))
            elif b.grouped is None:
                val = self.margins.get(b.keep)
            else:
                val = self.subtotals.get(b.keep)
            if val is not None:
                out[b.slice] = np.asarray(val, dtype=float).ravel()
        return out

    def _check_additivity(self):
        if self._hidden_totals():
            # suppressed totals or subtotals: the general check over T x = 0
            sys_ = self.system()
            check_equations(sys_, self.cell_vector(sys_), what="published cells and totals",
                            coords=self.coords)
            return
        # totals must agree with each other (for mechanisms that keep the table additive):
        # every two margins summed down to the dims they share give the same totals
        keys = list(self.margins) if self.mechanism.additive else []
        for i, a in enumerate(keys):
            for b in keys[i + 1:]:
                common = tuple(d for d in self.dims if d in a and d in b)
                sa = self.margins[a].sum(axis=tuple(j for j, d in enumerate(a)
                                                    if d not in common))
                sb = self.margins[b].sum(axis=tuple(j for j, d in enumerate(b)
                                                    if d not in common))
                tol = V.additivity_tol(sa, sb)
                if np.any(np.abs(sa - sb) > tol):
                    raise ValueError(f"published margins do not add up: margin {a} summed to "
                                     f"{common} gives {np.asarray(sa).tolist()}, margin {b} "
                                     f"gives {np.asarray(sb).tolist()}")
        if self.groups:
            sys_ = self.system()
            x = self.cell_vector(sys_)
            if self.published is not None and not self.mechanism.additive:
                x[sys_.blocks[0].slice] = np.nan
            check_equations(sys_, x, what="published subtotals", coords=self.coords)
        # ... and with the interior, when the interior is fully published and the
        # mechanism keeps the table additive
        if self.published is None or not self.mechanism.additive:
            return
        pub = np.asarray(self.published)
        if np.isnan(pub.astype(float)).any():
            return
        for keep, val in self.margins.items():
            s = totals(pub, self.dims, [keep])[keep]
            tol = V.additivity_tol(s, val)
            diff = np.abs(s - val)
            if np.any(diff > tol):
                where = tuple(int(i) for i in np.argwhere(np.atleast_1d(diff > tol))[0])
                at = dict(zip(keep, where))
                entry = ", ".join(str(self.coords[d][at[d]]) if d in at else "total"
                                  for d in self.dims)
                raise ValueError(
                    f"published table does not add up to margin {keep}: at {where} "
                    f"({entry}) the cells sum to {np.atleast_1d(s)[where]} but the margin is "
                    f"{np.atleast_1d(val)[where]} ({self.mechanism.name} releases are "
                    "additive)")

    def _hidden_totals(self) -> bool:
        blocks = list(self.margins.values()) + list(self.subtotals.values())
        return any(np.isnan(np.asarray(v, dtype=float)).any() for v in blocks)

    # --- views --------------------------------------------------------------------------
    @property
    def data(self) -> xr.DataArray:
        """Published interior as a DataArray (NaN = suppressed)."""
        if self.published is None:
            vals = np.full(self.shape, np.nan)
        else:
            vals = np.asarray(self.published).copy()
        return xr.DataArray(vals, dims=self.dims, coords=self.coords, name="published",
                            attrs={"mechanism": self.mechanism.describe()})

    def __repr__(self) -> str:
        return (f"Release(mechanism={self.mechanism.describe()}, dims={self.dims}, "
                f"shape={self.shape}, margins={list(self.margins)})")

    def __eq__(self, other):
        if not isinstance(other, Release):
            return NotImplemented
        same_pub = ((self.published is None and other.published is None) or
                    (self.published is not None and other.published is not None and
                     np.array_equal(np.asarray(self.published), np.asarray(other.published),
                                    equal_nan=True) and
                     np.asarray(self.published).dtype == np.asarray(other.published).dtype))
        return (same_pub and self.dims == other.dims and self.coords == other.coords
                and self.kind == other.kind
                and self.margins.keys() == other.margins.keys()
                and all(np.array_equal(self.margins[k], other.margins[k], equal_nan=True)
                        for k in self.margins)
                and self.groups == other.groups
                and self.subtotals.keys() == other.subtotals.keys()
                and all(np.array_equal(self.subtotals[k], other.subtotals[k], equal_nan=True)
                        for k in self.subtotals)
                and self.mechanism.to_dict() == other.mechanism.to_dict())

    __hash__ = None

    # --- JSON ---------------------------------------------------------------------------------
    def to_dict(self) -> dict:
        """The release as plain JSON-able data (format ``riskengine.release``, version 1).

        Returns
        -------
        dict
            The format and version, kind, dims, shape, coords, published values (None
            for a margins-only release), margins, the mechanism's ``to_dict()``, and
            groups / subtotals and info when there are any.
        """
        return {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "kind": self.kind,
            "dims": list(self.dims),
            "shape": list(self.shape),
            "coords": {d: list(v) for d, v in self.coords.items()},
            "published": None if self.published is None else _to_lists(self.published),
            "margins": [{"keep": list(k), "values": _to_lists(v)} for k, v in self.margins.items()],
            "mechanism": self.mechanism.to_dict(),
            **({"groups": {d: [list(g) for g in gs] for d, gs in self.groups.items()},
                "subtotals": [{"keep": list(k), "values": _to_lists(v)}
                              for k, v in self.subtotals.items()]} if self.groups else {}),
            **({"info": self.info} if self.info else {}),
        }

    def to_json(self, indent: int | None = None) -> str:
        """JSON text; ``indent`` puts each top-level field on its own line.

        Parameters
        ----------
        indent : int, optional
            Spaces before each top-level field, one field a line; None: one line.

        Returns
        -------
        str
            The JSON text of :meth:`to_dict` (no NaN: suppressed cells are ``null``).
        """
        d = self.to_dict()
        if indent is None:
            return json.dumps(d, allow_nan=False)
        pad = " " * indent
        body = ",\n".join(f"{pad}{json.dumps(k)}: {json.dumps(v, allow_nan=False)}"
                           for k, v in d.items())
        return "{\n" + body + "\n}\n"

    @classmethod
    def from_dict(cls, d: dict) -> Release:
        """The release written by :meth:`to_dict`.

        Parameters
        ----------
        d : dict
            Data of format ``riskengine.release``, version 1.

        Returns
        -------
        Release
            The release, validated against its mechanism.

        Raises
        ------
        ValueError
            If ``d`` is not a release of a supported version, or its values are invalid.
        """
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            raise ValueError(f"not a riskengine release (format must be {FORMAT!r})")
        ver = d.get("version")
        if ver != FORMAT_VERSION:
            raise ValueError(f"release format version {ver!r} is not supported "
                             f"(this riskengine reads version {FORMAT_VERSION})")
        kind = d.get("kind", "count")
        dtype = np.int64 if kind == "count" else float
        pub = d.get("published")
        if pub is not None:
            pub = _from_lists(pub, dtype, "published")
        margins = {tuple(m["keep"]): _from_lists(m["values"], dtype, f"margin {m['keep']}")
                   for m in d.get("margins", [])}
        subtotals = {tuple(m["keep"]): _from_lists(m["values"], dtype, f"subtotal {m['keep']}")
                     for m in d.get("subtotals", [])}
        rel = cls(published=pub, margins=margins, mechanism=mechanism_from_dict(d["mechanism"]),
                  dims=tuple(d["dims"]), coords=d.get("coords"), kind=kind,
                  groups=d.get("groups"), subtotals=subtotals or None)
        if "shape" in d and tuple(d["shape"]) != rel.shape:
            raise ValueError(f"release JSON says shape {tuple(d['shape'])} but its values have "
                             f"shape {rel.shape}")
        rel.info = dict(d.get("info", {}))
        return rel

    @classmethod
    def from_json(cls, text: str) -> Release:
        """The release written by :meth:`to_json`.

        Parameters
        ----------
        text : str
            The JSON text.

        Returns
        -------
        Release
            The release (see :meth:`from_dict`).
        """
        try:
            d = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"release JSON is not valid JSON: {exc}") from None
        return cls.from_dict(d)

    def save(self, path) -> None:
        """Write the release as JSON, atomically.

        Parameters
        ----------
        path : str or path-like
            The file to write (replaced whole, never left half written).
        """
        atomic_write_text(path, self.to_json(indent=1))

    @classmethod
    def load(cls, path) -> Release:
        """Read a release written by :meth:`save`.

        Parameters
        ----------
        path : str or path-like
            The JSON file.

        Returns
        -------
        Release
            The release (see :meth:`from_dict`).
        """
        with open(path, encoding="utf-8") as fh:
            return cls.from_json(fh.read())


def _shape_from(dims, coords, margins) -> tuple:
    shape = []
    for d in dims:
        if coords and d in coords and coords[d] is not None:
            shape.append(len(coords[d]))
            continue
        n = None
        for key, val in (margins or {}).items():
            keep = (key,) if isinstance(key, str) else tuple(key)
            if d in keep:
                n = np.asarray(val).shape[list(keep).index(d)]
                break
        if n is None:
            raise ValueError(f"cannot tell the size of dim {d!r}: give coords or a margin keeping it")
        shape.append(int(n))
    return tuple(shape)


def _to_lists(a):
    a = np.asarray(a)
    if np.issubdtype(a.dtype, np.integer):
        return a.tolist()
    return np.where(np.isnan(a), None, a).tolist()


def _from_lists(x, dtype, what: str = "values"):
    """Nested JSON lists as an array: int64 for counts (every entry an integer, or null =
    suppressed: then float with NaN), float for magnitudes; anything else is an error."""
    flat = []

    def walk(v):
        if isinstance(v, list):
            for w in v:
                walk(w)
        else:
            flat.append(v)

    walk(x)
    for v in flat:
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            # a file's content, not a caller's argument: a value error
            raise ValueError(f"release {what} must be numbers (or null for suppressed), got "  # noqa: TRY004
                             f"{v!r}")
        if dtype is not float and not (isinstance(v, int) or float(v).is_integer()):
            raise ValueError(f"release {what} of a count release must be integers, got {v!r}")
    a = np.array(x, dtype=object)
    if dtype is not float and not np.any(a == None):
        return np.array(x, dtype=np.int64)
    return np.array(np.where(a == None, np.nan, a), dtype=float)
