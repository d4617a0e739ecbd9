"""The cell key method for tables of counts (Eurostat's 2021 census recommendation;
tau-Argus 4.2, the R packages cellKey and ptable).

Every record carries a record key, uniform on [0, 1), drawn once and kept with the
microdata.  A cell's key is the fractional part of the sum of its records' keys, so the
same records give the same key in every table.  A p-table (:class:`PTable`) gives, for
each original count i (every count from its top row on shares that row), a partition of
[0, 1) into intervals, one per published value, of lengths Pr(published | i); a cell is
published as the value whose interval holds its key.  Totals are cells too, each
perturbed by its own key: the table does not add up.  The p-table is public (it travels
in the release); the keys are secret.

Keys are held on a grid of 2^-52 (a float key is rounded down to it): sums of keys
modulo 1 are then exact integer sums, so a cell's key does not depend on how its records
are added up (records, cells of a total, or the cells of another table).

Likelihood of a published table given the original: the probability, over the keys of
its nonempty cells (uniform and independent), that every published cell and total is
published as it is.  Entries that hold the same records (the column totals of a table with
one row; a total with one nonempty cell) have the same key.  Routes:

* ``keys`` (exact; :mod:`riskengine.inference.keyed`): tables whose published totals are
  disjoint sums of cells (a 1-D table and its total, a 2-D table and its grand total, the
  totals of one dim) and whose p-table's interval ends lie on a grid of at most 1e5
  segments (p-tables written as decimals): the likelihood integrated over the keys, by a
  chain over the cells carrying the exact piecewise-polynomial density of the running
  fractional sum of the keys.  The default wherever it applies.
* ``keys-crossing`` (exact; :mod:`riskengine.inference.keyed_crossing`): totals that
  share cells (rows and columns), a p-table on a grid, candidate tables few enough to list.
* ``keys_mcmc`` (Monte Carlo; :mod:`riskengine.inference.keyed_gibbs`): chains over the
  counts and the keys together, any published totals; the default where no exact route
  applies and a table has totals.  Validated against ``keys``, ``keys-crossing`` and,
  for crossing totals, against a Monte Carlo integral over the keys of every candidate.
  Tempered replicas (soft totals) carry the chains between the turns of the totals' key
  sums; rounds at twice the thinning run while the draws fail the usual rules, within
  the time budget (R-hat and ESS say how it went).
* the product of every entry's p-table probability (``dp``, ``enumerate``, ``line``,
  ``gibbs``): exact for a table without totals (the default there); with totals an
  approximation (taken by ``auto`` only past the key chains' time estimate), named in
  the posterior's ``attrs["approximation"]`` (any proper subset of the keys of a total and
  its cells is independent and uniform, but the total's key is the fractional part of the
  sum of its cells' keys).  Measured against ``keys`` in benchmarks/RESULTS.md: posterior
  probabilities off by up to 0.41 on small 1-D tables, and more where rows and columns
  cross.

Every entry's window holds the originals within the p-table's largest perturbations of
its published value, and the number of candidates is finite.

Examples
--------
The fictional p-table of the SDC handbook: a published 2 under a flat prior on 1..3.  (Its
row 2 is biased, E[published - 2 | 2] = 0.2: a ``UserWarning`` says so.)

>>> import warnings
>>> import numpy as np, riskengine as rk
>>> with warnings.catch_warnings():
...     warnings.filterwarnings("ignore", "the p-table .* is biased", UserWarning)
...     ck = rk.CellKey.from_matrix({0: {0: 1.0}, 1: {0: 0.5, 2: 0.5}, 2: {2: 0.8, 3: 0.2},
...                                  3: {2: 0.3, 3: 0.4, 4: 0.3}})
>>> rel = rk.Release(np.array([2]), margins={}, mechanism=ck, dims=("v",))
>>> post = rk.posterior(rel, rk.priors.Flat(1, 3))
>>> [round(float(post.prob(np.array([x])).item()), 4) for x in (1, 2, 3)]
[0.3125, 0.5, 0.1875]

Two cells published (0, 4) and their total 3: were cell 0 empty, the total would hold the
records of cell 1, with its key and its published value (4, not 3); so cell 0 is 1.

>>> rel = rk.Release(np.array([0, 4]), margins={(): 3}, mechanism=ck, dims=("v",))
>>> post = rk.posterior(rel, rk.priors.Flat(0, 8))
>>> post.attrs["route"], post.probs[0].tolist()
('keys', [0.0, 1.0, 0.0])
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np

from .. import _validate as V
from ..inference import windows as win
from ..inference.enumerate_3d import Enumerate3D
from ..inference.gibbs import BlockGibbs
from ..inference.keyed import MAX_GRID, KeyIntegration
from ..inference.keyed_crossing import KeyCrossing, KeyCrossingSet
from ..inference.keyed_gibbs import KeyGibbs
from ..inference.line import Line
from ..inference.linked import LinkedDP
from ..inference.linked_gibbs import LinkedGibbs
from ..inference.table_dp import TableDP
from ..protocol import Example, Inputs, Mechanism, register
from ..release import Release
from ..table import Table, aligned, count_table
from ._examples import counts_3x3
from ._ptable import PTable

__all__ = ["CellKey", "KeyIntervals", "PTable", "key_intervals"]

#: the example p-table of a 1-D table: the SDC handbook's fictional p-table (Hundepool et
#: al.) with its row 2 made unbiased (the handbook's 2 -> 2 | 3 with 0.8 | 0.2 has mean
#: +0.2; here 2 -> 0 | 2 | 3 with 0.1 | 0.7 | 0.2, mean 0), as a matrix M[i][j]: its
#: intervals lie on a grid of 0.1 (route ``keys``)
_GRID_EXAMPLE = [[1.0, 0.0, 0.0, 0.0, 0.0], [0.5, 0.0, 0.5, 0.0, 0.0],
                 [0.1, 0.0, 0.7, 0.2, 0.0], [0.0, 0.0, 0.3, 0.4, 0.3]]

#: keys are integers in units of 2^-_BITS; sums wrap modulo 2^64, a multiple of 2^_BITS
_BITS = 52
_SCALE = float(2 ** _BITS)
_MASK = np.uint64(2 ** _BITS - 1)
_APPROX = ("the cell key likelihood multiplies each published entry's p-table probability "
           "as if the entries' keys were independent; a total's key is the fractional part "
           "of the sum of its cells' keys, so the keys of a total and of all its cells are "
           "tied (any proper subset of them is independent and uniform); route='keys' "
           "integrates over the keys exactly (one set of disjoint totals, a p-table on a "
           "grid), route='keys_mcmc' by Monte Carlo")


# --- keys -------------------------------------------------------------------------------------


def _units(keys, what: str) -> np.ndarray:
    """Keys in [0, 1) as integers in units of 2^-52 (rounded down)."""
    k = np.asarray(keys)
    if k.dtype == object or not np.issubdtype(k.dtype, np.number) or np.iscomplexobj(k):
        raise TypeError(f"{what} must be numbers in [0, 1), got dtype {k.dtype}")
    k = k.astype(float)
    bad = ~np.isfinite(k) | (k < 0) | (k >= 1)
    if bad.any():
        raise ValueError(f"{what} must lie in [0, 1), got {float(k[bad][0])!r}")
    return np.floor(k * _SCALE).astype(np.uint64)


def _columns(data) -> dict:
    if isinstance(data, dict):
        return {str(c): np.asarray(v) for c, v in data.items()}
    if hasattr(data, "columns") and hasattr(data, "__getitem__"):  # pandas.DataFrame
        return {str(c): np.asarray(data[c]) for c in data.columns}
    raise TypeError(f"records must be a pandas.DataFrame or a dict of columns, got "
                    f"{type(data).__name__}")


def entry_windows(release) -> win.EntryWindows:
    """Every published cell and total: the originals within the p-table's perturbations of
    its published value, with log Pr(published | original).  An entry holding the same
    records as an earlier one (a size-1 dim summed away) gets weight 1 on the same window:
    it is the same cell with the same key.

    Parameters
    ----------
    release : rk.Release
        A cell-key release (its mechanism's ``ptable`` is read).

    Returns
    -------
    riskengine.inference.windows.EntryWindows
        The windows of the interior and of every published total; ``approximation``
        says why the likelihood is approximate when a total is published.
    """
    pt = release.mechanism.ptable
    W = pt.vmax - pt.vmin + 1
    lo, lw, seen = {}, {}, {}
    approx = False
    for keep, val in [(release.dims, release.published), *release.margins.items()]:
        y = np.asarray(val, dtype=np.int64)
        canon = tuple(d for d in keep if release.shape[release.dims.index(d)] > 1)
        first = np.maximum(y - pt.vmax, 0)
        x = first[..., None] + np.arange(W)
        ll = pt._loglik(y[..., None], x)
        if canon in seen:
            ll = np.where(np.isfinite(ll), 0.0, -np.inf)
        else:
            seen[canon] = keep
            approx |= keep != release.dims
        lo[keep], lw[keep] = first, ll
    return win.EntryWindows(release.dims, release.shape, lo, lw, _APPROX if approx else "")


@dataclass(frozen=True)
class KeyIntervals:
    """Each published entry's key interval, on the grid of the p-table's interval ends.

    Parameters
    ----------
    N : int or None
        The grid: every interval end is a multiple of 1/N (None: no grid of at most
        ``MAX_GRID`` segments).
    why : str
        Why there is no grid (empty when there is one).
    lo : dict
        ``{dims kept: first original of each entry's window}`` (the entry windows').
    a, b : dict
        ``{dims kept: array of the block's shape + window}``: for the original ``lo + w``
        the entry is published as it is when its key lies in ``[a/N, b/N)``; ``-1``
        where it cannot be.
    totals : tuple
        The dims of each published total holding other records than any cell and than
        every other total (one name for blocks that hold the same records).
    fa, fb : dict
        The same intervals as the p-table's floats, whatever the grid (``-1``: none).
    """

    N: int | None
    why: str
    lo: dict
    a: dict
    b: dict
    totals: tuple
    fa: dict
    fb: dict


def _grid(pt) -> tuple:
    """``(N, why)``: the smallest N with every interval end of ``pt`` a multiple of 1/N
    (within 1e-12: ends written as decimals), or ``(None, why not)``."""
    N = 1
    for row in pt.ub:
        for u in row.tolist():
            f = Fraction(u).limit_denominator(MAX_GRID)
            if abs(float(f) - u) > 1e-12:
                return None, (f"the p-table's interval end {u!r} is not a fraction with a "
                              f"denominator of at most {MAX_GRID}: the key integration "
                              "needs its intervals on a grid")
            N = math.lcm(N, f.denominator)
            if N > MAX_GRID:
                return None, (f"the p-table's interval ends need a grid of {N} or more "
                              f"segments, more than {MAX_GRID}")
    return N, ""


def interval_ends(pt, N) -> tuple:
    """Per p-table row ``r`` (original ``min(x, top)``) and perturbation ``v``: the key
    interval that publishes ``r + v``, on the grid ``1/N`` and as floats.

    Parameters
    ----------
    pt : PTable
    N : int or None
        The grid of the interval ends (:func:`_grid`; None: the integer ends are not
        used).

    Returns
    -------
    tuple
        ``(A, B, FA, FB)``, each of shape ``(top + 1, vmax - vmin + 1)``: the key
        publishes ``r + v`` when it lies in ``[A/N, B/N)`` (``[FA, FB)``); ``-1`` where
        ``r + v`` cannot be published.
    """
    W = pt.vmax - pt.vmin + 1
    A = np.full((pt.top + 1, W), -1, dtype=np.int64)
    B = np.full((pt.top + 1, W), -1, dtype=np.int64)
    FA = np.full((pt.top + 1, W), -1.0)
    FB = np.full((pt.top + 1, W), -1.0)
    for r in range(pt.top + 1):
        u = np.concatenate([[0.0], pt.ub[r]])
        ends = np.rint(u * (N or 1)).astype(np.int64)
        for k, j in enumerate(pt.j[r].tolist()):
            A[r, j - r - pt.vmin], B[r, j - r - pt.vmin] = ends[k], ends[k + 1]
            FA[r, j - r - pt.vmin], FB[r, j - r - pt.vmin] = u[k], u[k + 1]
    return A, B, FA, FB


def key_intervals(release) -> KeyIntervals:
    """The key interval of every published entry for every original in its window.

    Parameters
    ----------
    release : rk.Release
        A cell-key release.

    Returns
    -------
    KeyIntervals
    """
    pt = release.mechanism.ptable
    N, why = _grid(pt)
    ew = entry_windows(release)
    lo, a, b, fa, fb = {}, {}, {}, {}, {}
    W = pt.vmax - pt.vmin + 1
    A, B, FA, FB = interval_ends(pt, N)
    seen, totals = {}, []
    for keep, val in [(release.dims, release.published), *release.margins.items()]:
        y = np.asarray(val, dtype=np.int64)
        first = ew.lo[keep]
        x = first[..., None] + np.arange(W)
        v = y[..., None] - x
        ok = (v >= pt.vmin) & (v <= pt.vmax)
        r = np.minimum(x, pt.top)
        vi = np.clip(v - pt.vmin, 0, W - 1)
        lo[keep] = first
        a[keep] = np.where(ok, A[r, vi], -1)
        b[keep] = np.where(ok, B[r, vi], -1)
        fa[keep] = np.where(ok, FA[r, vi], -1.0)
        fb[keep] = np.where(ok, FB[r, vi], -1.0)
        canon = tuple(d for d in keep if release.shape[release.dims.index(d)] > 1)
        if canon not in seen:
            seen[canon] = keep
            if keep != release.dims:
                totals.append(keep)
    return KeyIntervals(N, why, lo, a, b, tuple(totals), fa, fb)


@register
class CellKey(Mechanism):
    """The cell key method on a table of counts and every published total.

    Parameters
    ----------
    ptable : PTable, str or path, dict, 2-D array, optional
        The p-table: a :class:`PTable`, a file (tau-Argus or the ptable package,
        :meth:`PTable.read`), ``{i: {j: p}}`` or a matrix (:meth:`PTable.from_matrix`), or
        a :meth:`PTable.to_dict` description.
    D, V, js, pstay, mono, variance
        Instead of ``ptable``: design one by maximum entropy (:meth:`PTable.design`).
    """

    name = "cell_key"
    additive = False              # every total has its own key: the table does not add up
    aliases = ("cellkey", "ckm")
    keyed = True                  # the same records give the same key in every table
    path_parameters = ("ptable",)
    windows = staticmethod(entry_windows)
    set_routes = (KeyCrossingSet(), LinkedDP(), LinkedGibbs())
    routes = (KeyIntegration(), KeyCrossing(), KeyGibbs(), TableDP(), Enumerate3D(), Line(),
              BlockGibbs())

    def inputs(self, release) -> Inputs:
        """The entry ``windows`` and each entry's ``key_intervals`` (:func:`key_intervals`).

        Parameters
        ----------
        release : rk.Release

        Returns
        -------
        Inputs
        """
        return Inputs(windows=lambda: entry_windows(release),
                      key_intervals=lambda: key_intervals(release))

    def __init__(self, ptable=None, D=None, V=None, js=0, pstay=None, mono=True,
                 variance="exact"):
        if ptable is None:
            if D is None or V is None:
                raise ValueError("CellKey needs a p-table: ptable=... (a PTable, a file, a "
                                 "matrix) or the design parameters D and V (js, pstay)")
            ptable = PTable.design(D, V, js, pstay, mono, variance)
        else:
            if D is not None or V is not None or js != 0 or pstay is not None or not mono \
                    or variance != "exact":
                raise ValueError("give either ptable=... or the design parameters D, V, js, "
                                 "pstay, mono, not both")
            if isinstance(ptable, (str, Path)):
                ptable = PTable.read(ptable)
            elif isinstance(ptable, dict) and "ub" in ptable:
                ptable = PTable.from_dict(ptable)
            elif not isinstance(ptable, PTable):
                ptable = PTable.from_matrix(ptable)
        self.ptable = ptable

    @classmethod
    def from_matrix(cls, matrix) -> CellKey:
        """The cell key method with the literal p-table ``matrix`` (:meth:`PTable.from_matrix`).

        Parameters
        ----------
        matrix : 2-D array_like or dict
            ``M[i][j] = Pr(published j | original i)``, i = 0..top (the last row applies
            to every larger count): a 2-D array, or ``{i: {j: p}}``.

        Returns
        -------
        CellKey
        """
        return cls(ptable=PTable.from_matrix(matrix))

    @classmethod
    def design(cls, D, V, js=0, pstay=None, mono=True, variance="exact") -> CellKey:
        """The cell key method with ptable's maximum-entropy p-table (:meth:`PTable.design`).

        Parameters
        ----------
        D : int
            The largest perturbation |published - original| (>= 1).
        V : float
            The perturbation variance (> 0).
        js : int, default 0
            No positive count up to ``js`` is published (>= 0).
        pstay : float, optional
            Lower bound of the probability of keeping the original count, in (0, 1).
        mono : bool, default True
            Probabilities rise from the lowest published value up to the original.
        variance : {"exact", "at_most"}, default "exact"
            Every row has variance V, or at most V (the ptable package's problem).

        Returns
        -------
        CellKey
        """
        return cls(D=D, V=V, js=js, pstay=pstay, mono=mono, variance=variance)

    def _params(self) -> dict:
        return {"ptable": self.ptable.to_dict()}

    def describe(self) -> str:
        return f"CellKey({self.ptable.describe()})"

    @classmethod
    def example(cls, table=None, rng=None) -> Example:
        """The shared 3 x 3 table of small counts with a p-table of D = 2, V = 1; ``rng``:
        D = 1 or 2 and V between 0.3 and 0.6; a 1-D or a 2 x 2 ``table`` (without ``rng``):
        the SDC handbook's p-table with its biased row 2 made unbiased, whose intervals lie
        on a grid (routes ``keys`` and ``keys-crossing``).

        Parameters
        ----------
        table : rk.Table, optional
            The example's table (default: the shared 3 x 3 table).
        rng : numpy.random.Generator, optional
            Draw D and V with it; None: D = 2, V = 1.

        Returns
        -------
        Example
        """
        table = counts_3x3() if table is None else table
        params = {"D": 2, "V": 1.0} if rng is None else {
            "D": int(rng.integers(1, 3)), "V": float(rng.uniform(0.3, 0.6))}
        if rng is None and (len(table.shape) == 1 or tuple(table.shape) == (2, 2)):
            params = {"ptable": _GRID_EXAMPLE}    # the key integrations' own cases
        return Example(cls, table, params)

    # --- protection ----------------------------------------------------------------------
    @staticmethod
    def record_keys(n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` record keys, uniform on [0, 1) (on the 2^-52 grid the keys are held on).

        Parameters
        ----------
        n : int
            Number of keys (>= 0).
        rng : numpy.random.Generator
            The source of randomness.

        Returns
        -------
        ndarray of float64, shape (n,)
            The keys.
        """
        n = V.integer(n, "n", 0)
        return Mechanism._rng(rng).integers(0, 2 ** _BITS, n).astype(float) / _SCALE

    @staticmethod
    def tabulate(records, dims, record_key: str = "record_key", categories: dict | None = None,
                 margins=None) -> tuple:
        """``(table, keys)`` from microdata: the counts of each cell and each cell's key (the
        fractional part of the sum of its records' keys; 0 for an empty cell).

        Parameters
        ----------
        records : pandas.DataFrame or dict of columns
            The microdata, one row per record.
        dims : str or sequence of str
            The columns that classify a record (the table's dims).
        record_key : str, default "record_key"
            The column holding each record's key in [0, 1).
        categories : dict, optional
            ``{dim: [labels in order]}`` (default: the sorted labels of the data).
        margins : optional
            The published totals, as in :class:`~riskengine.Table`.

        Returns
        -------
        table : rk.Table
            The counts of each cell, labelled by the categories.
        keys : ndarray of float64
            Each cell's key, of the table's shape.
        """
        cols = _columns(records)
        dims = (dims,) if isinstance(dims, str) else tuple(str(d) for d in dims)
        if not dims or len(set(dims)) != len(dims):
            raise ValueError(f"dims must name one or more distinct columns, got {dims}")
        missing = [c for c in (*dims, record_key) if c not in cols]
        if missing:
            raise ValueError(f"unknown columns {missing}; the records have columns "
                             f"{sorted(cols)}")
        units = _units(cols[record_key], f"record keys (column {record_key!r})")
        if units.ndim != 1:
            raise ValueError(f"column {record_key!r} must be 1-D, got shape {units.shape}")
        categories = dict(categories or {})
        codes, labels = [], {}
        for d in dims:
            col = np.asarray(cols[d], dtype=object)
            if col.shape != units.shape:
                raise ValueError(f"column {d!r} has {col.size} rows, column {record_key!r} "
                                 f"has {units.size}")
            if d in categories:
                order = list(categories[d])
            else:
                try:
                    order = sorted(set(col.tolist()))
                except TypeError:
                    raise TypeError(f"labels of column {d!r} cannot be sorted (mixed types); "
                                    "give their order in categories=") from None
            pos = {lab: k for k, lab in enumerate(order)}
            try:
                codes.append(np.fromiter((pos[x] for x in col.tolist()), np.int64, col.size))
            except KeyError as exc:
                raise ValueError(f"column {d!r} holds {exc.args[0]!r}, which is not among its "
                                 f"categories {order}") from None
            labels[d] = order
        shape = tuple(len(labels[d]) for d in dims)
        if any(s == 0 for s in shape):
            raise ValueError(f"every dim needs at least one category, got shape {shape}")
        flat = np.ravel_multi_index(tuple(codes), shape)
        counts = np.bincount(flat, minlength=int(np.prod(shape))).reshape(shape)
        acc = np.zeros(int(np.prod(shape)), dtype=np.uint64)
        np.add.at(acc, flat, units)                      # wraps modulo 2^64
        keys = (acc & _MASK).astype(float).reshape(shape) / _SCALE
        return Table(counts, dims=dims, coords=labels, margins=margins), keys

    def protect(self, table, rng: np.random.Generator | None = None, keys=None):
        """Perturb every cell and every published total of ``table`` by its cell key.

        ``keys``: each cell's key in [0, 1) (an array of the table's shape, or a labelled
        DataArray), e.g. from :meth:`tabulate`; an empty cell's key is 0 whatever is
        given (it has no records).  Without ``keys``, each nonempty cell's key is drawn
        from ``rng`` (uniform, as the fractional part of a sum of uniform record keys
        is).  A total's key is the fractional part of the sum of its cells' keys.

        Parameters
        ----------
        table : rk.Table or array_like
            The original table of counts.
        rng : numpy.random.Generator, optional
            Draws the cells' keys when ``keys`` is not given (then it is required).
        keys : array_like or xarray.DataArray, optional
            Each cell's key in [0, 1).

        Returns
        -------
        rk.Release
            The perturbed cells in ``published`` and the perturbed totals in ``margins``.
        """
        from ..table_set import is_structure
        if is_structure(table):
            return self._protect_set(table, rng, keys)
        table = count_table(table, self.describe())
        if keys is None:
            rng = self._rng(rng)
            units = rng.integers(0, 2 ** _BITS, table.shape).astype(np.uint64)
        else:
            units = _units(aligned(keys, table.dims, table.coords, "keys"), "keys")
        units = np.where(table.values > 0, units, np.uint64(0))
        pt = self.ptable
        cells = pt.perturb(table.values, units.astype(float) / _SCALE)
        margins = {}
        for keep, val in table.totals().items():
            axes = tuple(k for k, d in enumerate(table.dims) if d not in keep)
            u = np.asarray(units.sum(axis=axes, dtype=np.uint64)) & _MASK
            margins[keep] = pt.perturb(val, u.astype(float) / _SCALE)
        return Release(published=cells, margins=margins, mechanism=self, dims=table.dims,
                       coords=table.coords, kind="count")

    def _protect_set(self, table, rng, keys):
        """Every published cell of a hierarchical table or a table set, perturbed by its
        cell key: the finest cells' keys (``keys``, of the finest shape, or drawn), and
        every other cell's key the fractional part of the sum of its finest cells' keys
        (the same records give the same key in every table)."""
        from ..table_set import TableSet, TableSetRelease
        ts = table if isinstance(table, TableSet) else TableSet(table)
        s = ts.system
        if ts.kind != "count" or np.isnan(ts.values).any():
            raise ValueError(f"{self.describe()} protects a set of count tables whose "
                             "finest cells are known (TableSet.from_pandas)")
        if keys is None:
            rng = self._rng(rng)
            units = rng.integers(0, 2 ** _BITS, s.n_interior).astype(np.uint64)
        else:
            units = _units(np.asarray(keys, dtype=float), "keys").reshape(-1)
            if units.shape != (s.n_interior,):
                raise ValueError(f"keys must have the finest table's shape {s.shape}, got "
                                 f"{np.shape(keys)}")
        x = np.rint(ts.values).astype(np.int64)
        units = np.where(x[: s.n_interior] > 0, units, np.uint64(0))
        M = s.M.tocsr()
        sums = np.add.reduceat(units[M.indices], M.indptr[:-1]) & _MASK   # mod 2^64 then 2^52
        pub = s.published
        vals = np.full(s.n_var, np.nan)
        vals[pub] = self.ptable.perturb(x[pub], sums[pub].astype(float) / _SCALE)
        return TableSetRelease(ts, vals, self)

    def protect_records(self, records, dims, record_key: str = "record_key",
                        categories: dict | None = None, margins=None):
        """The release of the table of ``records`` (:meth:`tabulate`): the same records give
        the same perturbation in every table they are tabulated into.

        Parameters
        ----------
        records : pandas.DataFrame or dict of columns
            The microdata, one row per record.
        dims : str or sequence of str
            The columns that classify a record.
        record_key : str, default "record_key"
            The column holding each record's key.
        categories : dict, optional
            ``{dim: [labels in order]}`` (default: the sorted labels of the data).
        margins : optional
            The published totals, as in :class:`~riskengine.Table`.

        Returns
        -------
        rk.Release
            :meth:`protect` of the tabulated table with the cells' keys.
        """
        table, keys = self.tabulate(records, dims, record_key, categories, margins)
        return self.protect(table, keys=keys)

    def validate_release(self, release) -> None:
        if release.kind != "count" or release.published is None:
            raise ValueError("a cell-key release publishes a perturbed count table")
        if np.isnan(np.asarray(release.published, dtype=float)).any():
            raise ValueError("a cell-key release has no suppressed (NaN) cells")
        if release.groups:
            raise ValueError("cell-key releases with subtotals are not supported")
        blocks = [(release.dims, np.asarray(release.published)), *release.margins.items()]
        seen = {}
        for keep, val in blocks:
            what = "published" if keep == release.dims else f"margin {keep}"
            canon = tuple(d for d in keep if release.shape[release.dims.index(d)] > 1)
            y = np.asarray(val, dtype=np.int64)
            if canon in seen:
                k0, y0 = seen[canon]
                if not np.array_equal(y0.ravel(), y.ravel()):
                    other = "published" if k0 == release.dims else f"margin {k0}"
                    raise ValueError(
                        f"{what} holds the same records as {other} (the dims summed between "
                        f"them have one category), so the same cell keys and published values;"
                        f" got {y.ravel().tolist()} and {y0.ravel().tolist()}")
                continue
            seen[canon] = (keep, y)
        ew = entry_windows(release)
        for keep, lw in ew.lw.items():
            dead = ~np.isfinite(lw).any(axis=-1)
            if dead.any():
                what = "published" if keep == release.dims else f"margin {keep}"
                at = tuple(int(i) for i in np.argwhere(np.atleast_1d(dead))[0])
                y = np.atleast_1d(np.asarray(release.published if keep == release.dims
                                             else release.margins[keep]))[at]
                raise ValueError(f"{what} value {int(y)} at {at} cannot come from any original "
                                 f"count under this p-table ({self.ptable.describe()})")
