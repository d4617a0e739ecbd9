"""Statistics of whole tables, evaluated on many tables at once.

Every statistic takes an array of tables ``(..., *shape)`` (leading dims: draws, chains)
and returns one value per table, or an array per table (proportions, model
coefficients).  They are what an analyst computes on a contingency table; evaluated on
posterior draws of the original table (:meth:`riskengine.Posterior.sample`) they give the
posterior of the analysis (seed 003: "perform statistical analyses on the set of possible
true tables"), evaluated on the published table the naive plug-in analysis.

Built in (names for :func:`get`, the CLI's ``--statistic``):

``chi2`` / ``chi2_pvalue``
    Pearson X^2 of independence (k-D: mutual independence), expected counts from the
    margins, cells with expected count 0 left out; p-value from the chi-square
    distribution with df = prod(l) - 1 - sum(l - 1), l the number of nonempty levels of
    each dim (0 df: p-value 1).
``g2`` / ``g2_pvalue``
    The likelihood-ratio statistic 2 sum o log(o / e) (0 log 0 = 0), same df.
``cramers_v``
    sqrt(X^2 / (n (min(shape) - 1))).
``log_odds_ratio:DIM=A,B;DIM=C,D``
    log((x_AC + a)(x_BD + a) / ((x_AD + a)(x_BC + a))) of the 2 x 2 sub-table at labels
    A, B of the first dim and C, D of the second (other dims of a k-D table summed out),
    with a = 0.5 added to every cell (Haldane-Anscombe; ``LogOddsRatio(..., add=0)`` for
    the raw ratio, infinite when a cell is 0).
``row_proportions`` / ``col_proportions``
    x_ij / x_i+ and x_ij / x_+j of a 2-D table (an error when a draw has an empty row or
    column: the proportion is undefined there).
``loglinear``
    Coefficients of the log-linear model of independence (2-D) or of no three-way
    interaction (3-D), effect coding (each term sums to 0 over each of its dims), fitted
    by maximum likelihood (closed form in 2-D, iterative proportional fitting in 3-D, to
    1e-10) to the table plus 0.5 in every cell (without it a zero margin makes a
    coefficient infinite): ``intercept``, the main effects and (3-D) the two-way terms.

A user function of one table (NumPy array of the table's shape) returning a number or an
array is a statistic too (:class:`UserStatistic`, named after the function).

Examples
--------
>>> import numpy as np
>>> from riskengine import statistics as S
>>> t = np.array([[[10, 0], [0, 10]], [[5, 5], [5, 5]]])      # two tables
>>> S.get("chi2").values(t, ("v", "w"), {}).round(6).tolist()
[20.0, 0.0]
>>> float(S.get("cramers_v").values(t[0], ("v", "w"), {}))
1.0
"""

from __future__ import annotations

import numbers
import re

import numpy as np
import xarray as xr
from scipy import stats as _st

__all__ = [
    "BUILTIN",
    "G2",
    "Chi2",
    "CramersV",
    "LogLinear",
    "LogOddsRatio",
    "Proportions",
    "Statistic",
    "UserStatistic",
    "get",
    "of_draws",
    "parse",
]


def _axes(x: np.ndarray, ndim: int) -> tuple:
    return tuple(range(x.ndim - ndim, x.ndim))


def _expected(x: np.ndarray, ndim: int) -> tuple:
    """Expected counts under (mutual) independence and the total, per table."""
    ax = _axes(x, ndim)
    n = x.sum(axis=ax, keepdims=True)
    e = np.broadcast_to(n, x.shape).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        for k in ax:
            m = x.sum(axis=tuple(a for a in ax if a != k), keepdims=True) / n
            e = e * m
    return np.nan_to_num(e, nan=0.0), n.reshape(x.shape[:x.ndim - ndim])


def _df(x: np.ndarray, ndim: int) -> np.ndarray:
    """Degrees of freedom of (mutual) independence over the nonempty levels."""
    ax = _axes(x, ndim)
    levels = [(x.sum(axis=tuple(a for a in ax if a != k)) > 0).sum(axis=-1) for k in ax]
    prod = np.ones_like(levels[0])
    for lv in levels:
        prod = prod * lv
    return np.maximum(prod - 1 - sum(lv - 1 for lv in levels), 0)


class Statistic:
    """A function of a table: ``values(tables, dims, coords)`` -> array ``(..., *out)``
    for tables ``(..., *shape)``, and the labels of its own output dims
    (``out_dims(dims, coords) -> (dims, coords)``)."""

    name = "statistic"
    description = ""

    def values(self, tables: np.ndarray, dims: tuple, coords: dict) -> np.ndarray:
        """The statistic of every table in ``tables``.

        Parameters
        ----------
        tables : numpy.ndarray
            Tables, shape ``(..., *shape)``: leading dims (draws, chains) then the table's.
        dims : tuple of str
            The table's dims (the last ``len(dims)`` axes of ``tables``).
        coords : dict
            The table's labels per dim.

        Returns
        -------
        numpy.ndarray
            Float array ``(..., *out)``: one value (``out`` empty) or one array of the
            statistic's own dims (:meth:`out_dims`) per table.
        """
        raise NotImplementedError

    def out_dims(self, dims: tuple, coords: dict) -> tuple:
        """The dims and labels of the statistic's own output (none for a number).

        Parameters
        ----------
        dims : tuple of str
            The table's dims.
        coords : dict
            The table's labels per dim.

        Returns
        -------
        out_dims : tuple of str
            The names of the output's dims, ``()`` for one number per table.
        out_coords : dict
            Their labels (a dim without labels is left out).
        """
        return (), {}

    def check(self, dims: tuple, coords: dict) -> None:
        """ValueError when the statistic does not apply to tables with these dims.

        Parameters
        ----------
        dims : tuple of str
            The table's dims.
        coords : dict
            The table's labels per dim.

        Raises
        ------
        ValueError
            If the statistic is undefined for such tables (naming the rule).
        """

    def __repr__(self) -> str:
        return f"<statistic {self.name}>"


class Chi2(Statistic):
    """Pearson X^2 of (mutual) independence (``pvalue``: its chi-square p-value).

    Parameters
    ----------
    pvalue : bool, default False
        Give the p-value of the chi-square test instead of X^2.
    """

    def __init__(self, pvalue: bool = False):
        self.pvalue = pvalue
        self.name = "chi2_pvalue" if pvalue else "chi2"
        self.description = ("p-value of " if pvalue else "") + (
            "Pearson X^2 of (mutual) independence, cells with expected count 0 left out")

    def check(self, dims, coords):
        if len(dims) < 2:
            raise ValueError(f"{self.name} needs a table of 2 or more dims, got dims {dims}")

    def values(self, tables, dims, coords):
        x = np.asarray(tables, dtype=float)
        e, _ = _expected(x, len(dims))
        with np.errstate(invalid="ignore", divide="ignore"):
            t = np.where(e > 0, (x - e) ** 2 / np.where(e > 0, e, 1.0), 0.0)
        stat = t.sum(axis=_axes(x, len(dims)))
        if not self.pvalue:
            return stat
        df = _df(x, len(dims))
        return np.where(df > 0, _st.chi2.sf(stat, np.maximum(df, 1)), 1.0)


class G2(Statistic):
    """The likelihood-ratio statistic G^2 of (mutual) independence (or its p-value).

    Parameters
    ----------
    pvalue : bool, default False
        Give the p-value of the chi-square test instead of G^2.
    """

    def __init__(self, pvalue: bool = False):
        self.pvalue = pvalue
        self.name = "g2_pvalue" if pvalue else "g2"
        self.description = ("p-value of " if pvalue else "") + (
            "likelihood-ratio G^2 = 2 sum o log(o / e) of (mutual) independence")

    check = Chi2.check

    def values(self, tables, dims, coords):
        x = np.asarray(tables, dtype=float)
        e, _ = _expected(x, len(dims))
        with np.errstate(invalid="ignore", divide="ignore"):
            t = np.where(x > 0, x * np.log(np.where(x > 0, x, 1.0) / np.where(e > 0, e, 1.0)),
                         0.0)
        stat = 2.0 * t.sum(axis=_axes(x, len(dims)))
        stat = np.maximum(stat, 0.0)          # rounding: G^2 >= 0
        if not self.pvalue:
            return stat
        df = _df(x, len(dims))
        return np.where(df > 0, _st.chi2.sf(stat, np.maximum(df, 1)), 1.0)


class CramersV(Statistic):
    """Cramér's V = sqrt(X^2 / (n (min(shape) - 1)))."""

    name = "cramers_v"
    description = "Cramer's V = sqrt(X^2 / (n (min(shape) - 1)))"

    check = Chi2.check

    def values(self, tables, dims, coords):
        x = np.asarray(tables, dtype=float)
        k = min(x.shape[x.ndim - len(dims):])
        if k < 2:
            raise ValueError(f"cramers_v needs at least 2 levels in every dim, got shape "
                             f"{x.shape[x.ndim - len(dims):]}")
        chi = Chi2().values(x, dims, coords)
        n = x.sum(axis=_axes(x, len(dims)))
        with np.errstate(invalid="ignore", divide="ignore"):
            v = np.sqrt(chi / (n * (k - 1)))
        return np.where(n > 0, v, 0.0)


def _label_index(dim: str, coords: dict, label) -> int:
    labels = [str(v) for v in coords.get(dim, [])]
    if str(label) in labels:
        return labels.index(str(label))
    raise ValueError(f"label {label!r} is not in dim {dim!r} (labels: {labels})")


class LogOddsRatio(Statistic):
    """Log odds ratio of the 2 x 2 sub-table ``{dim_a: [A, B], dim_b: [C, D]}`` (labels of
    the table's coords; other dims summed out), ``add`` added to each of its cells.

    Parameters
    ----------
    cells : dict
        Two dims, each with two labels: ``{dim_a: [A, B], dim_b: [C, D]}``.
    add : float, default 0.5
        Added to each cell of the 2 x 2 sub-table (Haldane-Anscombe), >= 0; 0 gives the
        raw ratio, infinite when a cell is 0.
    """

    def __init__(self, cells: dict, add: float = 0.5):
        if not isinstance(cells, dict) or len(cells) != 2 or \
                any(len(v) != 2 for v in cells.values()):
            raise ValueError("log_odds_ratio needs two dims with two labels each, e.g. "
                             "{'sex': ['M', 'F'], 'admit': ['yes', 'no']}, got "
                             f"{cells!r}")
        if not isinstance(add, numbers.Real) or not add >= 0:
            raise ValueError(f"add must be a number >= 0, got add={add!r}")
        self.cells = {str(k): [str(a) for a in v] for k, v in cells.items()}
        self.add = float(add)
        (da, (a, b)), (db, (c, d)) = self.cells.items()
        self.name = f"log_odds_ratio:{da}={a},{b};{db}={c},{d}"
        self.description = (f"log odds ratio of {da} in ({a}, {b}) by {db} in ({c}, {d})"
                            + (f", {self.add:g} added to each cell" if self.add else ""))

    def check(self, dims, coords):
        for d, labels in self.cells.items():
            if d not in dims:
                raise ValueError(f"{self.name}: dim {d!r} is not a dim of the table {dims}")
            for lab in labels:
                _label_index(d, coords, lab)

    def values(self, tables, dims, coords):
        self.check(dims, coords)
        x = np.asarray(tables, dtype=float)
        lead = x.ndim - len(dims)
        (da, la), (db, lb) = self.cells.items()
        ia, ib = dims.index(da), dims.index(db)
        other = tuple(lead + k for k in range(len(dims)) if k not in (ia, ib))
        y = x.sum(axis=other) if other else x
        if ia > ib:                                  # the remaining axes in dims order
            y = np.swapaxes(y, -1, -2)
        ra = [_label_index(da, coords, v) for v in la]
        rb = [_label_index(db, coords, v) for v in lb]
        q = y[..., ra, :][..., rb] + self.add
        with np.errstate(divide="ignore", invalid="ignore"):
            return (np.log(q[..., 0, 0]) + np.log(q[..., 1, 1]) - np.log(q[..., 0, 1])
                    - np.log(q[..., 1, 0]))


class Proportions(Statistic):
    """Row (``axis=0``: x_ij / x_i+) or column (``axis=1``: x_ij / x_+j) proportions.

    Parameters
    ----------
    axis : {0, 1}
        0: each cell's share of its row; 1: of its column.
    """

    def __init__(self, axis: int):
        self.axis = axis
        self.name = "row_proportions" if axis == 0 else "col_proportions"
        self.description = ("x_ij / x_i+ (share of each column within its row)" if axis == 0
                            else "x_ij / x_+j (share of each row within its column)")

    def check(self, dims, coords):
        if len(dims) != 2:
            raise ValueError(f"{self.name} needs a 2-D table, got dims {dims}")

    def out_dims(self, dims, coords):
        return tuple(dims), {d: coords[d] for d in dims if d in coords}

    def values(self, tables, dims, coords):
        self.check(dims, coords)
        x = np.asarray(tables, dtype=float)
        tot = x.sum(axis=-1 if self.axis == 0 else -2, keepdims=True)
        if (tot == 0).any():
            which = np.argwhere(np.moveaxis(tot, -1 if self.axis == 0 else -2, -1)[..., 0] == 0)
            lab = dims[self.axis]
            k = int(which[0][-1])
            names = coords.get(lab, list(range(x.shape[x.ndim - 2 + self.axis])))
            raise ValueError(f"{self.name}: {lab} {names[k]!r} has total 0 in "
                             f"{int((tot == 0).sum())} table(s): its proportions are "
                             "undefined there")
        return x / tot


def _effects(logm: np.ndarray, ndim: int) -> list:
    """Effect-coded ANOVA decomposition of log fitted values up to two-way terms:
    [(term dims as axis tuple, array)], intercept first."""
    ax = _axes(logm, ndim)
    lead = logm.ndim - ndim
    out = [((), logm.mean(axis=ax))]
    mu = logm.mean(axis=ax, keepdims=True)
    mains = {}
    for k in range(ndim):
        rest = tuple(lead + a for a in range(ndim) if a != k)
        mains[k] = logm.mean(axis=rest, keepdims=True) - mu
        out.append(((k,), np.squeeze(mains[k], axis=rest)))
    if ndim == 3:
        for a in range(3):
            for b in range(a + 1, 3):
                c = 3 - a - b
                t = logm.mean(axis=lead + c, keepdims=True) - mains[a] - mains[b] - mu
                out.append(((a, b), np.squeeze(t, axis=lead + c)))
    return out


class LogLinear(Statistic):
    """Coefficients of the log-linear model of independence (2-D) or no three-way
    interaction (3-D), effect coding, fitted to the table plus ``add`` in every cell.

    Parameters
    ----------
    add : float, default 0.5
        Added to every cell before fitting (without it a zero margin makes a coefficient
        infinite).
    tol : float, default 1e-10
        Convergence tolerance of iterative proportional fitting (3-D), relative to the
        largest cell.
    max_iter : int, default 10000
        Iterations of iterative proportional fitting before it gives up.
    """

    name = "loglinear"

    def __init__(self, add: float = 0.5, tol: float = 1e-10, max_iter: int = 10_000):
        self.add, self.tol, self.max_iter = float(add), tol, max_iter
        self.description = ("log-linear model coefficients (effect coding; 2-D independence, "
                            f"3-D no three-way interaction), {self.add:g} added to each cell")

    def check(self, dims, coords):
        if len(dims) not in (2, 3):
            raise ValueError(f"loglinear needs a 2-D or 3-D table, got dims {dims}")

    def _terms(self, dims):
        names = ["intercept"] + [f"{d}" for d in dims]
        if len(dims) == 3:
            names += [f"{dims[a]}:{dims[b]}" for a in range(3) for b in range(a + 1, 3)]
        return names

    def out_dims(self, dims, coords):
        # one array per statistic: the terms flattened into a "coefficient" dim labelled
        # "intercept", "dim=level", "dim:dim=level,level"
        return ("coefficient",), {"coefficient": self._labels(dims, coords)}

    def _labels(self, dims, coords):
        out = ["intercept"]
        for d in dims:
            out += [f"{d}={v}" for v in coords[d]]
        if len(dims) == 3:
            for a in range(3):
                for b in range(a + 1, 3):
                    out += [f"{dims[a]}:{dims[b]}={u},{v}" for u in coords[dims[a]]
                            for v in coords[dims[b]]]
        return out

    def fitted(self, x: np.ndarray, ndim: int) -> np.ndarray:
        """Maximum-likelihood fitted values of the model (x already has ``add``).

        Parameters
        ----------
        x : numpy.ndarray
            Tables, shape ``(..., *shape)``, ``add`` already added.
        ndim : {2, 3}
            The number of table dims (the last axes of ``x``).

        Returns
        -------
        numpy.ndarray
            The fitted values, the shape of ``x``.

        Raises
        ------
        RuntimeError
            If iterative proportional fitting does not converge in ``max_iter`` iterations.
        """
        if ndim == 2:
            e, _ = _expected(x, 2)
            return e
        lead = x.ndim - 3
        m = np.ones_like(x)
        for _ in range(self.max_iter):
            old = m
            for k in range(3):
                a = lead + k
                tgt = x.sum(axis=a, keepdims=True)
                cur = m.sum(axis=a, keepdims=True)
                m = m * tgt / cur
            if np.max(np.abs(m - old)) <= self.tol * max(1.0, float(np.max(x))):
                return m
        raise RuntimeError(f"iterative proportional fitting did not converge in "
                           f"{self.max_iter} iterations")

    def values(self, tables, dims, coords):
        self.check(dims, coords)
        nd = len(dims)
        x = np.asarray(tables, dtype=float) + self.add
        if self.add == 0 and (x == 0).any():
            pass                        # log 0: infinite coefficients, as the model says
        with np.errstate(divide="ignore"):
            logm = np.log(self.fitted(x, nd))
        lead = x.shape[:x.ndim - nd]
        parts = [arr.reshape(lead + (-1,)) for _, arr in _effects(logm, nd)]
        return np.concatenate(parts, axis=-1)


class UserStatistic(Statistic):
    """Any function of one table (a NumPy array of the table's shape) returning a number
    or an array of a fixed shape; named after the function.

    Parameters
    ----------
    fn : callable
        The function of one table; its docstring's first line describes the statistic.
    name : str, optional
        The statistic's name (default: the function's ``__name__``, ``user_statistic``
        for a lambda).
    """

    def __init__(self, fn, name: str | None = None):
        if not callable(fn):
            raise TypeError(f"a statistic must be a name or a callable, got {fn!r}")
        self.fn = fn
        self.name = name or getattr(fn, "__name__", "statistic")
        if self.name == "<lambda>":
            self.name = "user_statistic"
        self.description = (getattr(fn, "__doc__", None) or "user function").strip() \
            .splitlines()[0]
        self._shape = None

    def out_dims(self, dims, coords):
        shape = self._shape or ()
        return tuple(f"{self.name}_dim_{k}" for k in range(len(shape))), {}

    def values(self, tables, dims, coords):
        x = np.asarray(tables)
        lead = x.shape[:x.ndim - len(dims)]
        flat = x.reshape((-1,) + x.shape[x.ndim - len(dims):])
        vals = [np.asarray(self.fn(t), dtype=float) for t in flat]
        shapes = {v.shape for v in vals}
        if len(shapes) != 1:
            raise ValueError(f"statistic {self.name!r} returned values of shapes "
                             f"{sorted(shapes)}; it must return one shape for every table")
        self._shape = vals[0].shape
        return np.stack(vals).reshape(lead + self._shape)


_SIMPLE = {
    "chi2": lambda: Chi2(), "chi2_pvalue": lambda: Chi2(pvalue=True),
    "g2": lambda: G2(), "g2_pvalue": lambda: G2(pvalue=True),
    "cramers_v": lambda: CramersV(),
    "row_proportions": lambda: Proportions(0), "col_proportions": lambda: Proportions(1),
    "loglinear": lambda: LogLinear(),
}
#: names of the built-in statistics (``log_odds_ratio`` takes its 2 x 2 sub-table)
BUILTIN = tuple(_SIMPLE) + ("log_odds_ratio",)
_ALIASES = {"chisq": "chi2", "x2": "chi2", "cramer_v": "cramers_v", "oddsratio": "log_odds_ratio",
            "odds_ratio": "log_odds_ratio", "log_linear": "loglinear"}


def parse(text: str) -> Statistic:
    """A statistic from its name; ``log_odds_ratio:DIM=A,B;DIM=C,D`` (alias ``oddsratio``)
    names the 2 x 2 sub-table by labels.

    Parameters
    ----------
    text : str
        A name of :data:`BUILTIN` or an alias (not case-sensitive), with its argument
        after a colon for ``log_odds_ratio``.

    Returns
    -------
    Statistic
        The statistic.

    Raises
    ------
    ValueError
        For an unknown name (listing the known ones) or a malformed argument.
    """
    name, _, arg = str(text).strip().partition(":")
    key = _ALIASES.get(name.strip().lower(), name.strip().lower())
    if key in _SIMPLE:
        if arg:
            raise ValueError(f"statistic {key!r} takes no argument, got {text!r}")
        return _SIMPLE[key]()
    if key == "log_odds_ratio":
        parts = [p for p in re.split(r"[;/]", arg) if p.strip()]
        cells = {}
        for p in parts:
            dim, eq, labels = p.partition("=")
            ls = [v.strip() for v in labels.split(",") if v.strip()]
            if not eq or len(ls) != 2:
                raise ValueError(f"log_odds_ratio needs DIM=A,B;DIM=C,D (two dims, two labels "
                                 f"each), got {text!r}")
            cells[dim.strip()] = ls
        if len(cells) != 2:
            raise ValueError(f"log_odds_ratio needs DIM=A,B;DIM=C,D (two dims, two labels "
                             f"each), got {text!r}")
        return LogOddsRatio(cells)
    raise ValueError(f"unknown statistic {text!r}; known: {', '.join(BUILTIN)} "
                     "(log_odds_ratio:DIM=A,B;DIM=C,D), or a function of the table")


def get(stat) -> Statistic:
    """A :class:`Statistic` from a name (:func:`parse`), a Statistic, or a callable.

    Parameters
    ----------
    stat : str, Statistic or callable
        A name, a statistic (returned as it is), or a function of one table
        (:class:`UserStatistic`).

    Returns
    -------
    Statistic
        The statistic.
    """
    if isinstance(stat, Statistic):
        return stat
    if isinstance(stat, str):
        return parse(stat)
    return UserStatistic(stat)


def of_draws(draws: xr.DataArray, statistics) -> dict:
    """``{name: DataArray}``: each statistic of every table in ``draws`` (a DataArray
    whose last dims are the table's and whose leading dims are draws / chains), labelled
    with the leading dims and the statistic's own dims.

    Parameters
    ----------
    draws : xarray.DataArray
        Tables: leading dims ``chain`` and/or ``draw``, then the table's dims.
    statistics : sequence
        Statistics as :func:`get` takes them (names, Statistic objects or callables);
        each name at most once.

    Returns
    -------
    dict
        ``{statistic name: DataArray}`` over the leading dims and the statistic's own
        dims, its description in ``attrs``.
    """
    stats = [get(s) for s in (statistics or ())]
    names = [s.name for s in stats]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"statistics named twice: {dup}")
    table_dims = tuple(d for d in draws.dims if d not in ("chain", "draw"))
    lead = tuple(d for d in draws.dims if d in ("chain", "draw"))
    coords = {d: list(draws.coords[d].values) for d in table_dims if d in draws.coords}
    for d in table_dims:
        coords.setdefault(d, list(range(draws.sizes[d])))
    x = draws.transpose(*lead, *table_dims).values
    out = {}
    for s in stats:
        s.check(table_dims, coords)
        vals = np.asarray(s.values(x, table_dims, coords), dtype=float)
        odims, ocoords = s.out_dims(table_dims, coords)
        if vals.shape[len(lead):] != tuple(len(ocoords[d]) if d in ocoords else
                                           vals.shape[len(lead) + k]
                                           for k, d in enumerate(odims)):
            raise RuntimeError(f"internal error: statistic {s.name} returned shape "
                               f"{vals.shape}")
        c = {d: draws.coords[d].values for d in lead if d in draws.coords}
        c.update(ocoords)
        out[s.name] = xr.DataArray(vals, dims=lead + odims, coords=c, name=s.name,
                                   attrs={"description": s.description})
    return out
