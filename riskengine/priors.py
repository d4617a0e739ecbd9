"""Priors over original tables: per-cell log-weights plus hard knowledge.

Every prior is a product over cells of ``exp(lw[cell, value])`` times the
indicator of its hard knowledge (per-cell bounds: an intruder in the survey
knows their cell is at least 1; known cells).  Kernels receive it as plain
arrays: ``log_weights(values)`` evaluated on each cell's window of values.

Intruder and user priors are the same type; they differ in what they encode.

Examples
--------
>>> import riskengine as rk
>>> p = rk.priors.Poisson(2.0).at_least([(0, 1)], 1)
>>> p.describe()
'Poisson(rate=2.0)+knowledge'
"""

from __future__ import annotations

import numbers

import numpy as np
import xarray as xr
from scipy.special import gammaln

from . import _validate as V
from .table import Table, aligned

__all__ = ["Flat", "Historical", "NegativeBinomial", "Poisson", "Prior", "Uniform", "parse"]


class Prior:
    """Base class: subclasses define ``_logpmf(values, shape, dims, coords)`` (log-weights of
    ``values``, shape ``(*table shape, W)``; ``dims``/``coords`` of the release, to match
    labelled per-cell parameters) and ``_params()``."""

    name = "Prior"

    def __init__(self):
        self._knowledge: tuple = ()

    # --- knowledge ---------------------------------------------------------------
    def _with(self, item) -> Prior:
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new._knowledge = self._knowledge + (item,)
        return new

    def at_least(self, cells, k: int = 1) -> Prior:
        """Knowledge that each of ``cells`` is >= k (e.g. the intruder's own cell >= 1).

        Parameters
        ----------
        cells : tuple, list of tuples, bool array or dict
            One cell index, a list of cell indices, a boolean mask of the table's shape, or
            one cell by its labels (``{dim: label}``).
        k : int, default 1
            The lower bound, >= 0.

        Returns
        -------
        Prior
            A copy of this prior with the knowledge added.
        """
        return self._with(("at_least", _cells_spec(cells), V.integer(k, "k", 0)))

    def at_most(self, cells, k: int) -> Prior:
        """Knowledge that each of ``cells`` is <= k.

        Parameters
        ----------
        cells : tuple, list of tuples, bool array or dict
            One cell index, a list of cell indices, a boolean mask of the table's shape, or
            one cell by its labels (``{dim: label}``).
        k : int
            The upper bound, >= 0.

        Returns
        -------
        Prior
            A copy of this prior with the knowledge added.
        """
        return self._with(("at_most", _cells_spec(cells), V.integer(k, "k", 0)))

    def known(self, cells, values) -> Prior:
        """Knowledge of the exact value of ``cells`` (one value, or one per cell).

        Parameters
        ----------
        cells : tuple, list of tuples, bool array or dict
            One cell index, a list of cell indices, a boolean mask of the table's shape, or
            one cell by its labels (``{dim: label}``).
        values : int or sequence of int
            One value for every cell, or one per cell (in the order of ``cells``; a mask's
            cells in C order).

        Returns
        -------
        Prior
            A copy of this prior with the knowledge added.
        """
        spec = _cells_spec(cells)
        vals = np.atleast_1d(V.count_array(values, "known values"))
        return self._with(("known", spec, tuple(int(v) for v in vals)))

    def bounds(self, shape, dims=None, coords=None):
        """(lower, upper) int64 arrays of the hard knowledge; upper = -1 means none.

        Parameters
        ----------
        shape : tuple of int
            The table's shape.
        dims : tuple of str, optional
            The table's dims (needed only for knowledge of cells given by labels).
        coords : dict, optional
            The table's labels per dim (idem).

        Returns
        -------
        lower, upper : numpy.ndarray
            int64 arrays of ``shape``: each cell's lower bound (0 without knowledge) and
            upper bound (-1 without knowledge).

        Raises
        ------
        ValueError
            If the knowledge contradicts itself (a lower bound above an upper bound).
        """
        lo = np.zeros(shape, dtype=np.int64)
        hi = np.full(shape, -1, dtype=np.int64)
        for kind, spec, val in self._knowledge:
            mask = _resolve(spec, shape, dims, coords)
            if kind == "at_least":
                lo[mask] = np.maximum(lo[mask], val)
            elif kind == "at_most":
                hi[mask] = np.where(hi[mask] < 0, val, np.minimum(hi[mask], val))
            else:
                idx = np.argwhere(mask)
                if len(val) not in (1, len(idx)):
                    raise ValueError(f"known(): {len(idx)} cells but {len(val)} values")
                for n, i in enumerate(map(tuple, idx)):
                    v = val[0] if len(val) == 1 else val[n]
                    lo[i] = max(lo[i], v)
                    hi[i] = v if hi[i] < 0 else min(hi[i], v)
        clash = (hi >= 0) & (lo > hi)
        if clash.any():
            i = tuple(int(x) for x in np.argwhere(clash)[0])
            raise ValueError(f"prior knowledge contradicts itself at cell {i}: "
                             f"lower bound {lo[i]} > upper bound {hi[i]}")
        return lo, hi

    # --- evaluation -----------------------------------------------------------------
    def log_weights(self, values: np.ndarray, dims=None, coords=None) -> np.ndarray:
        """Log-weights of ``values`` (int array, shape ``(*table_shape, W)``); -inf off support.

        Parameters
        ----------
        values : array-like of int
            Candidate values of each cell, shape ``(*table_shape, W)``.
        dims : tuple of str, optional
            The release's dims, to match labelled per-cell parameters and knowledge.
        coords : dict, optional
            The release's labels per dim (idem).

        Returns
        -------
        numpy.ndarray
            Float array of the shape of ``values``: each value's log-weight, ``-inf`` for a
            negative value or one the hard knowledge excludes.
        """
        values = np.asarray(values, dtype=np.int64)
        shape = values.shape[:-1]
        with np.errstate(divide="ignore", invalid="ignore"):
            lw = np.asarray(self._logpmf(values, shape, dims, coords), dtype=float)
        lw = np.broadcast_to(lw, values.shape).copy()
        lo, hi = self.bounds(shape, dims, coords)
        off = (values < 0) | (values < lo[..., None]) | ((hi[..., None] >= 0) & (values > hi[..., None]))
        lw[off] = -np.inf
        lw[np.isnan(lw)] = -np.inf
        return lw

    @property
    def uniform_over_tables(self) -> bool:
        return False


    @property
    def cell_invariant(self) -> bool:
        """True when every cell has the same prior (routes may then work per distinct value)."""
        return not self._knowledge and all(np.ndim(v) == 0 for v in self._params().values()
                                           if not isinstance(v, (str, type(None))))

    def describe(self) -> str:
        """A short name of the prior.

        Returns
        -------
        str
            The prior's name with its parameters, ``+knowledge`` appended when it carries
            hard knowledge.
        """
        return self.name + ("+knowledge" if self._knowledge else "")

    def __repr__(self) -> str:
        return self.describe()

    def to_dict(self) -> dict:
        """The prior as plain JSON-able data.

        Returns
        -------
        dict
            ``{"prior": class name, its parameters..., "knowledge": [...]}``.
        """
        return {"prior": type(self).__name__, **self._params(),
                "knowledge": [[k, _spec_json(s), v] for k, s, v in self._knowledge]}


class Uniform(Prior):
    """Uniform over candidate original tables (every nonnegative table equally likely)."""

    name = "Uniform()"

    def _logpmf(self, values, shape, dims=None, coords=None):
        return np.zeros(values.shape)

    @property
    def uniform_over_tables(self) -> bool:
        return not self._knowledge

    def _params(self):
        return {}


class Flat(Prior):
    """Per-cell flat prior on the integers ``low..high`` (``high=None``: unbounded).

    Parameters
    ----------
    low : int, default 0
        The smallest value a cell may take, >= 0.
    high : int, optional
        The largest value a cell may take, >= ``low``; None: unbounded.
    """

    def __init__(self, low: int = 0, high: int | None = None):
        super().__init__()
        self.low = V.integer(low, "low", 0)
        self.high = None if high is None else V.integer(high, "high", self.low)
        self.name = f"Flat(low={self.low}, high={self.high})"

    def _logpmf(self, values, shape, dims=None, coords=None):
        ok = values >= self.low
        if self.high is not None:
            ok &= values <= self.high
        return np.where(ok, 0.0, -np.inf)

    def _params(self):
        return {"low": self.low, "high": self.high}


class Poisson(Prior):
    """Independent Poisson(rate) cells; ``rate`` scalar, per-cell array, or labelled per-cell
    (``rk.Table`` / DataArray: matched to the release by dim names and labels), > 0.

    Parameters
    ----------
    rate : float, array-like, Table or xarray.DataArray
        The Poisson mean of every cell (scalar), of each cell (an array broadcast to the
        table's shape by position), or of each labelled cell; finite and > 0.
    """

    def __init__(self, rate):
        super().__init__()
        self._rate = _param(rate)
        r = np.asarray(_values(self._rate), dtype=float)
        if not np.all(np.isfinite(r)) or np.any(r <= 0):
            raise ValueError(f"Poisson rate must be finite and > 0, got {rate!r}")
        self.rate = r
        self.name = f"Poisson(rate={_short(r)})"

    def _logpmf(self, values, shape, dims=None, coords=None):
        r = _cellwise(self._rate, shape, "rate", dims, coords).astype(float)
        return values * np.log(r)[..., None] - r[..., None] - gammaln(values + 1.0)

    def _params(self):
        return {"rate": self.rate.tolist()}


class NegativeBinomial(Prior):
    """Independent negative binomial cells with mean ``mean`` and size ``dispersion``.

    Variance = mean + mean**2 / dispersion; ``dispersion -> inf`` is Poisson.

    Parameters
    ----------
    mean : float, array-like, Table or xarray.DataArray
        The mean of every cell, of each cell, or of each labelled cell (as Poisson's
        ``rate``); finite and > 0.
    dispersion : float, array-like, Table or xarray.DataArray
        The size parameter, likewise scalar or per cell; finite and > 0.
    """

    def __init__(self, mean, dispersion):
        super().__init__()
        self._mean, self._disp = _param(mean), _param(dispersion)
        mu = np.asarray(_values(self._mean), dtype=float)
        r = np.asarray(_values(self._disp), dtype=float)
        if not np.all(np.isfinite(mu)) or np.any(mu <= 0):
            raise ValueError(f"NegativeBinomial mean must be finite and > 0, got {mean!r}")
        if not np.all(np.isfinite(r)) or np.any(r <= 0):
            raise ValueError(f"NegativeBinomial dispersion must be finite and > 0, got {dispersion!r}")
        self.mean, self.dispersion = mu, r
        self.name = f"NegativeBinomial(mean={_short(mu)}, dispersion={_short(r)})"

    def _logpmf(self, values, shape, dims=None, coords=None):
        mu = _cellwise(self._mean, shape, "mean", dims, coords).astype(float)[..., None]
        r = _cellwise(self._disp, shape, "dispersion", dims, coords).astype(float)[..., None]
        return (gammaln(values + r) - gammaln(r) - gammaln(values + 1.0)
                + r * np.log(r / (r + mu)) + values * np.log(mu / (r + mu)))

    def _params(self):
        return {"mean": self.mean.tolist(), "dispersion": self.dispersion.tolist()}


class Historical(Prior):
    """Centred on an earlier table: Poisson (or negative binomial with ``dispersion``)
    with mean ``max(table, floor)`` cell by cell.

    Parameters
    ----------
    table : array-like, Table or xarray.DataArray
        The earlier table's counts (a labelled one is matched to the release by labels).
    dispersion : float or array-like, optional
        The negative binomial size parameter (scalar or per cell); None: Poisson.
    floor : float, default 0.5
        The smallest mean, > 0 (so that a cell that was 0 may be nonzero now).
    """

    def __init__(self, table, dispersion=None, floor: float = 0.5):
        super().__init__()
        self._table = _param(table)
        vals = V.count_array(_values(self._table), "historical table")
        if not float(floor) > 0:
            raise ValueError(f"floor must be > 0, got floor={floor!r}")
        self.table = np.asarray(vals)
        self.floor = float(floor)
        self.dispersion = dispersion
        self._disp = None if dispersion is None else _param(dispersion)
        if dispersion is not None:
            NegativeBinomial(np.maximum(self.table, self.floor), _values(self._disp))  # checks
        self.name = f"Historical(dispersion={dispersion}, floor={self.floor})"

    def _logpmf(self, values, shape, dims=None, coords=None):
        mean = np.maximum(_cellwise(self._table, shape, "historical table", dims,
                                         coords).astype(float),
                          self.floor)
        if self._disp is None:
            return values * np.log(mean)[..., None] - mean[..., None] - gammaln(values + 1.0)
        r = _cellwise(self._disp, shape, "dispersion", dims, coords).astype(float)[..., None]
        mu = mean[..., None]
        return (gammaln(values + r) - gammaln(r) - gammaln(values + 1.0)
                + r * np.log(r / (r + mu)) + values * np.log(mu / (r + mu)))

    def _params(self):
        return {"table": self.table.tolist(), "dispersion": self.dispersion, "floor": self.floor}

    @property
    def cell_invariant(self) -> bool:
        return False


# --- helpers ------------------------------------------------------------------------

def _short(a: np.ndarray):
    return float(a) if a.ndim == 0 else f"array{a.shape}"


def _param(a):
    """A per-cell prior parameter: labelled ones (rk.Table, DataArray) are kept labelled."""
    if isinstance(a, Table):
        return a.data
    if isinstance(a, xr.DataArray):
        return a
    return np.asarray(a)


def _values(a) -> np.ndarray:
    return a.values if isinstance(a, xr.DataArray) else np.asarray(a)


def _cellwise(a, shape, name: str, dims=None, coords=None) -> np.ndarray:
    """A parameter over the table's cells: a labelled one matched by dim names and labels
    (``dims``/``coords`` of the release), a plain one broadcast by position."""
    if isinstance(a, xr.DataArray):
        if dims is None or coords is None:
            raise ValueError(f"prior {name} is labelled (dims {tuple(a.dims)}): it needs the "
                             "release's dims and labels to be matched to its cells")
        return aligned(a, dims, coords, f"prior {name}")
    try:
        return np.broadcast_to(a, shape)
    except ValueError:
        raise ValueError(f"prior {name} has shape {a.shape}, which does not broadcast to the "
                         f"table shape {tuple(shape)}") from None


def _cells_spec(cells):
    if isinstance(cells, dict):
        return ("labels", tuple(sorted(cells.items())))
    a = np.asarray(cells)
    if a.dtype == bool:
        return ("mask", a.copy())
    if a.ndim == 1 and all(isinstance(c, numbers.Integral) for c in a.tolist()):
        return ("index", (tuple(int(x) for x in a),))
    if a.ndim == 2:
        return ("index", tuple(tuple(int(x) for x in row) for row in a))
    raise TypeError("cells must be an index tuple, a list of index tuples, a boolean mask, "
                    f"or a dict {{dim: label}}; got {cells!r}")


def _spec_json(spec):
    kind, val = spec
    if kind == "mask":
        return [kind, val.tolist()]
    return [kind, [list(x) for x in val]]


def _resolve(spec, shape, dims, coords) -> np.ndarray:
    kind, val = spec
    mask = np.zeros(shape, dtype=bool)
    if kind == "mask":
        if val.shape != tuple(shape):
            raise ValueError(f"knowledge mask has shape {val.shape}, table has shape {tuple(shape)}")
        return val
    if kind == "index":
        for idx in val:
            if len(idx) != len(shape) or any(not (-n <= i < n) for i, n in zip(idx, shape)):
                raise ValueError(f"cell {idx} is not a valid index for a table of shape {tuple(shape)}")
            mask[idx] = True
        return mask
    if dims is None or coords is None:
        raise ValueError("label-based cells need the table's dims and coords")
    idx = []
    lab = dict(val)
    unknown = [d for d in lab if d not in dims]
    if unknown:
        raise ValueError(f"cell labels {lab} name dims {unknown} the table does not have "
                         f"(dims: {tuple(dims)})")
    for d in dims:
        if d not in lab:
            raise ValueError(f"cell labels {lab} miss dim {d!r}")
        if lab[d] not in coords[d]:
            raise ValueError(f"label {lab[d]!r} not in dim {d!r} (labels: {coords[d]})")
        idx.append(coords[d].index(lab[d]))
    mask[tuple(idx)] = True
    return mask


_PARSERS = {
    "uniform": lambda a: Uniform(),
    "flat": lambda a: Flat(*[int(x) for x in a]),
    "poisson": lambda a: Poisson(float(a[0])),
    "negbin": lambda a: NegativeBinomial(float(a[0]), float(a[1])),
}


#: name -> (fewest, most values after the colon, the form)
_FORMS = {"uniform": (0, 0, "uniform"), "flat": (0, 2, "flat[:LOW[,HIGH]]"),
          "poisson": (1, 1, "poisson:RATE"), "negbin": (2, 2, "negbin:MEAN,DISPERSION")}


def parse(text: str) -> Prior:
    """A prior from a short spec: ``uniform``, ``flat:LOW[,HIGH]``, ``poisson:RATE``,
    ``negbin:MEAN,DISPERSION``.

    Parameters
    ----------
    text : str
        The spec (the command line's ``--prior``); the name is not case-sensitive.

    Returns
    -------
    Prior
        The prior it names.

    Raises
    ------
    ValueError
        For an unknown name (listing the known ones) or a wrong number of values.

    Examples
    --------
    >>> import riskengine as rk
    >>> rk.priors.parse("poisson:2.0").describe()
    'Poisson(rate=2.0)'
    """
    name, _, args = text.partition(":")
    name = name.strip().lower()
    if name not in _PARSERS:
        raise ValueError(f"unknown prior {text!r}; known: {', '.join(_PARSERS)} "
                         "(e.g. 'poisson:2.0', 'flat:1')")
    vals = [x for x in args.split(",") if x.strip()] if args else []
    lo, hi, form = _FORMS[name]
    if not lo <= len(vals) <= hi:
        raise ValueError(f"bad prior spec {text!r}: {name} takes {form} ({lo}"
                         f"{'' if lo == hi else f' to {hi}'} value{'' if hi == 1 else 's'} "
                         f"after the colon), got {len(vals)}")
    try:
        return _PARSERS[name](vals)
    except (IndexError, ValueError, TypeError) as exc:
        raise ValueError(f"bad prior spec {text!r}: {exc}") from None
