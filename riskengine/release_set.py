"""ReleaseSet: several tables published from the same microdata, analysed together.

An agency often publishes several tables from one set of records: region x age, and the
same with one region split in two; a table and a coarser one; a table and a sub-table.
Every published cell and total is the count of a set of records; the sets are unions of
the cells of the *finest* table, the common refinement of every table in the set.  The
set's posterior is over that finest table: each published entry (in any table) weighs the
sum of the finest cells it covers, so differences between tables (a region's total minus
its two parts' totals) are used exactly as an intruder would use them.

Categories are matched by label, dim by dim: the same label on a dim in two tables is the
same category (the same records).  A category of one table that is the union of finer
categories of another is declared in ``groups``: ``{dim: {label: [finer labels]}}``.  A
dim missing from a table is summed over in it (every category of that dim).  Within one
table, two labels whose categories overlap are refused (a subtotal row inside a table is
its own entry only through ``groups`` across tables).

Entries holding the same records in two tables: mechanisms whose noise is *keyed* to the
records (the cell key method: the same records give the same key, so the same
perturbation) must publish the same value there, and it counts once; mechanisms drawing
fresh noise for every publication (random rounding, noisy counts) give independent
observations that all count.

Examples
--------
A region split in two, protected by random rounding to base 3:

>>> import numpy as np, riskengine as rk
>>> rr = rk.RandomRounding(3)
>>> whole = rk.Release(np.array([[9, 3], [6, 6]]), margins={}, mechanism=rr,
...                    dims=("region", "age"), coords={"region": ["N", "S"]})
>>> split = rk.Release(np.array([[6, 3], [3, 0]]), margins={}, mechanism=rr,
...                    dims=("region", "age"), coords={"region": ["N1", "N2"]})
>>> both = rk.ReleaseSet([whole, split], groups={"region": {"N": ["N1", "N2"]}})
>>> both.coords["region"]
['N1', 'N2', 'S']
>>> post = rk.posterior(both, rk.priors.Flat(0, 20))
>>> post.shape
(3, 2)
"""

from __future__ import annotations

import numpy as np

from ._budget import fmt_bytes
from .protocol import Inputs
from .release import Release

__all__ = ["Entry", "ReleaseSet"]


class Entry:
    """One published number of one release: ``release`` (index in the set), ``keep``
    (the block: the release's dims for an interior cell, the dims a total keeps),
    ``index`` (within the block), ``cells`` (sorted flat indices of the finest cells it
    counts) and ``value`` (the published number)."""

    __slots__ = ("cells", "index", "keep", "release", "value")

    def __init__(self, release, keep, index, cells, value):
        self.release, self.keep, self.index, self.cells, self.value = (release, keep, index,
                                                                       cells, value)

    def __repr__(self) -> str:
        return (f"Entry(release={self.release}, keep={self.keep}, index={self.index}, "
                f"cells={self.cells.tolist()}, value={self.value})")


class _SetMechanism:
    """What the route resolver needs of a set's mechanism: its name, description and
    routes (those the mechanisms of every release offer for sets)."""

    def __init__(self, mechanisms):
        self.mechanisms = mechanisms
        first = mechanisms[0]
        names = [r.name for r in getattr(first, "set_routes", ())]
        common = [r for r in getattr(first, "set_routes", ())
                  if all(r.name in [o.name for o in getattr(m, "set_routes", ())]
                         for m in mechanisms)]
        # every route refuses first a set whose windows alone exceed the memory budget
        self.routes = tuple(common)
        distinct = sorted({m.name for m in mechanisms})
        self.name = "set of " + " + ".join(distinct)
        lacking = sorted({m.name for m in mechanisms if not getattr(m, "set_routes", ())})
        self.no_route = (f"releases of {', '.join(lacking)} cannot be analysed together: "
                         "a set needs mechanisms whose likelihood is a product over the "
                         "published entries (cell key, random rounding, noisy counts)"
                         if lacking else
                         f"the mechanisms share no route for sets ({', '.join(names)})")

    @staticmethod
    def inputs(rset) -> Inputs:
        """The set routes' input: every release's entry windows, in order, and their
        ``window_cost`` (the releases' own, summed, naming the largest); where every
        release gives them, every release's ``key_intervals`` (the cell key method)."""
        inputs = [r.mechanism.inputs(r) for r in rset.releases]
        keyed = all("key_intervals" in i for i in inputs)
        return Inputs(windows=lambda: [i["windows"] for i in inputs],
                      window_cost=lambda: _set_cost(inputs),
                      key_intervals=(lambda: [i["key_intervals"] for i in inputs])
                      if keyed else None)

    def describe(self) -> str:
        out = []
        for m in self.mechanisms:
            d = m.describe()
            if d not in out:
                out.append(d)
        return " + ".join(out)


def _set_cost(inputs):
    """``(what, bytes, detail)`` of every release's windows (each release's
    ``window_cost`` where its mechanism gives one): the largest names the parameter."""
    costs = [(i, inp["window_cost"]) for i, inp in enumerate(inputs) if "window_cost" in inp]
    costs = [(i, c) for i, c in costs if c is not None]
    if not costs:
        return None
    i, (what, need, detail) = max(costs, key=lambda c: c[1][1])
    total = sum(c[1] for _, c in costs)
    rest = total - need
    more = (f"; the set's other releases' windows {fmt_bytes(rest, binary=True)}"
            if rest > 0 else "")
    return f"{what} (release {i} of the set)", total, detail + more


class ReleaseSet:
    """Several releases of tables from the same microdata (see the module docstring).

    Parameters
    ----------
    releases : sequence of rk.Release
        Count releases; their categories are matched by label.
    groups : dict, optional
        ``{dim: {label: [finer labels]}}``: a category that is the union of finer ones
        (one level: the finer labels are categories of the finest table).

    Attributes
    ----------
    dims, coords, shape
        The finest table's dims (in order of first appearance), labels and shape.
    entries
        Every published number of every release (:class:`Entry`).
    """

    def __init__(self, releases, groups=None):
        if isinstance(releases, Release):
            releases = [releases]
        releases = list(releases)
        if not releases:
            raise ValueError("a ReleaseSet needs at least one release")
        for i, r in enumerate(releases):
            if not isinstance(r, Release):
                raise TypeError(f"release {i} of the set is a {type(r).__name__}, not an "
                                "rk.Release")
            if r.kind != "count":
                raise ValueError(f"release {i} holds magnitudes; a ReleaseSet analyses "
                                 "tables of counts")
            if r.published is None or np.isnan(np.asarray(r.published, float)).any():
                raise ValueError(f"release {i} hides interior cells (suppressed or not "
                                 "published); a ReleaseSet needs every interior cell "
                                 "published")
            if any(np.isnan(np.asarray(v, float)).any() for v in r.margins.values()):
                raise ValueError(f"release {i} hides totals; a ReleaseSet needs every "
                                 "published total's value")
            if r.groups:
                raise ValueError(f"release {i} carries subtotals; give the grouped table as "
                                 "its own release in the set instead")
        self.releases = tuple(releases)
        self.groups = self._clean_groups(groups)
        dims = []
        for r in releases:
            dims += [d for d in r.dims if d not in dims]
        unknown = sorted(set(self.groups) - set(dims))
        if unknown:
            raise ValueError(f"groups name dims {unknown} that no release has; dims: {dims}")
        self.system = self._system()
        self.dims = self.system.dims
        self.coords = {d: list(self.system.coords[d]) for d in self.dims}
        self.shape = self.system.shape
        self.mechanism = _SetMechanism([r.mechanism for r in releases])
        self.margins: dict = {}
        self.kind = "count"
        self.entries = self._entries()
        self.published = self._published()

    @classmethod
    def from_table_set(cls, release) -> ReleaseSet:
        """The set view of an ``rk.TableSetRelease`` whose mechanism perturbs every
        published cell on its own (random rounding, noisy counts, the cell key method):
        one entry per published cell of the publication, over its finest cells (a cell
        two tables share is one entry: it was published once).

        Parameters
        ----------
        release : rk.TableSetRelease
            Every published cell with a value (none suppressed).

        Returns
        -------
        ReleaseSet
            Its one release lists the published cells (dim ``cell``, labelled by the
            cells' labels); the posterior is over the publication's finest cells.
        """
        s = release.system
        mech = release.mechanism.base
        idx = np.flatnonzero(s.published)
        vals = np.asarray(release.values)[idx]
        if np.isnan(vals).any():
            j = idx[int(np.argmax(np.isnan(vals)))]
            raise ValueError(f"{s.labels()[j]} is not published: a {mech.name} release of "
                             "a table set publishes every cell of every table")
        labels = s.labels()
        rel = Release(np.rint(vals).astype(np.int64), margins={}, mechanism=mech,
                      dims=("cell",), coords={"cell": [labels[j] for j in idx]},
                      kind="count")
        out = cls.__new__(cls)
        out.releases = (rel,)
        out.groups = {}
        out.system = s
        out.dims, out.shape = s.dims, s.shape
        out.coords = {d: list(s.coords[d]) for d in s.dims}
        out.mechanism = _SetMechanism([mech])
        out.margins = {}
        out.kind = "count"
        M = s.M.tocsr()
        out.entries = [Entry(0, ("cell",), (k,),
                             np.sort(M.indices[M.indptr[j]:M.indptr[j + 1]]).astype(np.int64),
                             int(rel.published[k])) for k, j in enumerate(idx)]
        out.published = out._published()
        return out

    # --- structure -----------------------------------------------------------------------
    @staticmethod
    def _clean_groups(groups) -> dict:
        out = {}
        for d, g in dict(groups or {}).items():
            if not isinstance(g, dict):
                raise TypeError(f"groups[{d!r}] must be {{label: [finer labels]}}, got "
                                f"{type(g).__name__}")
            gd = {}
            for label, members in g.items():
                members = list(members) if not isinstance(members, str) else [members]
                if not members:
                    raise ValueError(f"group {label!r} of dim {d!r} has no members")
                if len(set(members)) != len(members):
                    raise ValueError(f"group {label!r} of dim {d!r} lists a member twice: "
                                     f"{members}")
                gd[label] = members
            for label, members in gd.items():
                nested = [m for m in members if m in gd]
                if nested:
                    raise ValueError(f"group {label!r} of dim {d!r} has member {nested[0]!r}, "
                                     "itself a group; list the finest labels instead")
            out[str(d)] = gd
        return out

    def _system(self):
        """The set's :class:`~riskengine.cell_system.CellSystem`: each release a table (its
        categories, its published totals), ``groups`` the codes split into finer ones."""
        from .cell_system import cell_system
        from .table import Table
        tables = {}
        for i, r in enumerate(self.releases):
            tables[f"release {i}"] = Table(np.zeros(r.shape, np.int64), dims=r.dims,
                                           coords=r.coords, margins=list(r.margins),
                                           kind="count")
        system = cell_system(tables, splits=self.groups)
        for d in system.dims:             # 1 and "1" would be two categories: refuse
            seen = {}
            for label in system.coords[d]:
                other = seen.setdefault(str(label), label)
                if other is not label and type(other) is not type(label):
                    raise ValueError(
                        f"dim {d!r} has the labels {other!r} and {label!r} in different "
                        "releases: labels match exactly, so they would be two categories; "
                        "give both releases the same labels")
        return system

    def _entries(self) -> list:
        """Every published number of every release, with the finest cells it counts (the
        rows of the set's cell system)."""
        s = self.system
        M = s.M.tocsr()
        out = []
        for ri, r in enumerate(self.releases):
            tdims, _, ids = s.grids[f"release {ri}"]
            total = [len(r.coords[d]) for d in tdims]   # flat codes: leaves, then total
            blocks = [(r.dims, r.published)] + list(r.margins.items())
            for keep, values in blocks:
                values = np.asarray(values)
                for index in np.ndindex(values.shape):
                    at = tuple(index[keep.index(d)] if d in keep else total[k]
                               for k, d in enumerate(tdims))
                    j = int(ids[at])
                    cells = np.sort(M.indices[M.indptr[j]:M.indptr[j + 1]]).astype(np.int64)
                    out.append(Entry(ri, tuple(keep), index, cells, int(values[index])))
        return out

    def _published(self) -> np.ndarray:
        """Each finest cell's published value where a release publishes it alone (the first
        release that does), else NaN."""
        pub = np.full(self.shape, np.nan)
        flat = pub.reshape(-1)
        for e in self.entries:
            if e.cells.size == 1 and np.isnan(flat[e.cells[0]]):
                flat[e.cells[0]] = e.value
        return pub

    def to_dict(self) -> dict:
        """The releases' descriptions and the groups (JSON-ready).

        Returns
        -------
        dict
            ``{"releases": [each release's to_dict()], "groups": {dim: {group: [labels]}}}``.
        """
        return {"releases": [r.to_dict() for r in self.releases],
                "groups": {d: {str(k): list(v) for k, v in g.items()}
                           for d, g in self.groups.items()}}

    def __len__(self) -> int:
        return len(self.releases)

    def __iter__(self):
        return iter(self.releases)

    def __repr__(self) -> str:
        return (f"ReleaseSet({len(self.releases)} releases, finest table {self.dims} "
                f"{self.shape}, {len(self.entries)} published numbers)")
