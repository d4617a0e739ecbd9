"""Linear sensitivity measures (seed 004, "Defining and measuring statistical disclosure").

A cell X with contributions ``x_1 >= x_2 >= ... >= x_LAST >= 0`` is a *disclosure*
(sensitive) cell under a rule when its sensitivity ``S(X) > 0``.  The standard
rules are *linear sensitivity measures*, ``S(X) = sum_i w_i x_i`` with weights by
rank (``w_1 = 1``; Cox 1981):

* (n,k)-dominance: the n largest contribute more than k % of the cell value,
  ``S = (x_1 + ... + x_n) - (k / (100 - k)) x_(n+1)+`` (weights 1, ..., 1, -k/(100-k));
* p-percent: the second largest can estimate the largest within p %,
  ``S = x_1 - (100 / p) x_3+`` (weights 1, 0, -100/p, ...);
* pq (prior ambiguity): as p % when every respondent can estimate the others within
  q %, ``S = x_1 - (q / p) x_3+`` (q = 100 gives the p % rule);
* combinations: ``Sum`` (``S = S_1 + S_2``, again linear) and ``Max``
  (``S = max(S_1, S_2)``).

**Protection required** (seed 004, "Measuring disclosure"): ``P(X) = S(X) / |w_LAST|``,
the amount by which the tail (the contributions with the last weight) would have
to grow for the cell to be safe; this is the protection level that suppression and
CTA must give the cell.  ``w_LAST`` is the *tail weight* of the rule (the weight of
every contribution after the n largest, resp. after the two largest), used whatever
the number of contributions (a cell with a single contribution has ``S = x_1``).
For ``Sum`` the tail weight is the sum of the tail weights; for ``Max`` the
protection is the largest protection of its rules (the amount that makes every
rule safe).  For a safe cell ``P(X) <= 0`` and ``-P(X)`` is the inherent protection
the cell gives its respondents.

Seed 004's example (x = 70, 15, 5 and a tail of 10): (3,80)-dominance S = 50,
P = 12.5; 20 % rule S = -5; 20 %/50 % pq rule S = 32.5, P = 13.

**The threshold (minimum frequency) rule**, :class:`Frequency`, is not a linear measure:
a cell is sensitive when fewer than ``n`` units contribute to it (the count of a count
table, the number of contributors of a magnitude cell), and the protection is a share of
the cell value with a floor (tau-Argus's FREQ rule).  It combines with the others through
``Max`` (e.g. frequency and dominance on magnitude microdata), and :func:`assess` takes a
count table with it.
"""

from __future__ import annotations

import numbers

import numpy as np
import xarray as xr

from ..table import Table
from ..tabular import tabular_system
from .contributions import Contributions

__all__ = [
    "PQ",
    "Dominance",
    "Frequency",
    "Max",
    "PPercent",
    "Rule",
    "Sum",
    "assess",
    "cell_vector",
    "nk_dominance",
    "p_percent",
    "pq",
    "protection",
]


class Rule:
    """A sensitivity rule: ``S(X)`` from the sorted contributions of a cell."""

    def weights(self, pos: np.ndarray) -> np.ndarray:
        """The weight of the contribution at rank ``pos`` (0 = largest).

        Parameters
        ----------
        pos : array-like of int
            Ranks of contributions within their cell, 0 for the largest.

        Returns
        -------
        numpy.ndarray
            Float weight of each rank (the rank's ``w_i``).
        """
        raise NotImplementedError

    def describe(self) -> str:
        """A short name of the rule with its parameters.

        Returns
        -------
        str
            E.g. ``Dominance(n=3, k=80)``.
        """
        raise NotImplementedError

    def to_dict(self) -> dict:
        """The rule as plain JSON-able data.

        Returns
        -------
        dict
            ``{"rule": name, its parameters...}`` (combinations: ``"rules": [...]``).
        """
        raise NotImplementedError

    @property
    def tail_weight(self) -> float:
        raise NotImplementedError

    def _s(self, cell: np.ndarray, pos: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
        return np.bincount(cell, weights=self.weights(pos) * values, minlength=n)

    def _p(self, s: np.ndarray, cell, pos, values, n) -> np.ndarray:
        return s / abs(self.tail_weight)

    #: True when the protection below a cell's value may differ from the protection above
    #: it (:class:`Frequency`: a cell can never be shown below 0); :func:`assess` then adds
    #: ``protection_lower``
    asymmetric = False

    def _p_lower(self, p: np.ndarray, cell, pos, values, n) -> np.ndarray:
        return p

    def sensitivity(self, x) -> float:
        """``S(X)`` for one cell's contributions (any order).

        Parameters
        ----------
        x : array-like
            One cell's contributions (nonnegative, finite, any order).

        Returns
        -------
        float
            The sensitivity; > 0 means the cell is sensitive.
        """
        x = _sorted(x)
        return float(self._s(np.zeros(x.size, np.int64), np.arange(x.size), x, 1)[0])

    def protection(self, x) -> float:
        """``P(X) = S(X) / |w_LAST|`` for one cell (negative: the cell is safe).

        Parameters
        ----------
        x : array-like
            One cell's contributions (nonnegative, finite, any order).

        Returns
        -------
        float
            The protection the cell needs (<= 0: the protection it has).
        """
        x = _sorted(x)
        cell, pos = np.zeros(x.size, np.int64), np.arange(x.size)
        s = self._s(cell, pos, x, 1)
        return float(self._p(s, cell, pos, x, 1)[0])

    def __repr__(self) -> str:
        return self.describe()

    def __eq__(self, other):
        return type(self) is type(other) and self.to_dict() == other.to_dict()

    __hash__ = None


class Dominance(Rule):
    """(n,k)-dominance: the ``n`` largest contributions exceed ``k`` % of the cell value.

    Parameters
    ----------
    n : int
        The number of largest contributions, >= 1.
    k : float
        The percentage of the cell value, in (0, 100).

    Examples
    --------
    >>> x = [70, 15, 5, 5, 5]
    >>> Dominance(3, 80).sensitivity(x), Dominance(3, 80).protection(x)
    (50.0, 12.5)
    """

    def __init__(self, n: int, k: float):
        if isinstance(n, bool) or not isinstance(n, numbers.Integral):
            raise TypeError(f"n must be an integer, got {n!r}")
        if n < 1:
            raise ValueError(f"n must be >= 1, got n={n}")
        k = _real(k, "k")
        if not 0 < k < 100:
            raise ValueError(f"k must be a percentage in (0, 100), got k={k}")
        self.n, self.k = int(n), k

    def weights(self, pos):
        return np.where(np.asarray(pos) < self.n, 1.0, self.tail_weight)

    @property
    def tail_weight(self) -> float:
        return -self.k / (100.0 - self.k)

    def describe(self) -> str:
        return f"Dominance(n={self.n}, k={self.k:g})"

    def to_dict(self) -> dict:
        return {"rule": "dominance", "n": self.n, "k": self.k}


class PQ(Rule):
    """pq rule: the second largest, knowing every contribution within ``q`` %, can
    estimate the largest within ``p`` %.

    Parameters
    ----------
    p : float
        The precision the cell must keep, in percent, > 0.
    q : float, default 100
        How well every respondent knows the others' contributions before publication,
        in percent, in (0, 100]; 100 gives the p-percent rule.

    Examples
    --------
    >>> PQ(20, 50).sensitivity([70, 15, 5, 5, 5]), PQ(20, 50).protection([70, 15, 5, 5, 5])
    (32.5, 13.0)
    """

    def __init__(self, p: float, q: float = 100.0):
        p, q = _real(p, "p"), _real(q, "q")
        if not p > 0:
            raise ValueError(f"p must be > 0, got p={p}")
        if not 0 < q <= 100:
            raise ValueError(f"q must be a percentage in (0, 100], got q={q}")
        self.p, self.q = p, q

    def weights(self, pos):
        pos = np.asarray(pos)
        return np.where(pos == 0, 1.0, np.where(pos == 1, 0.0, self.tail_weight))

    @property
    def tail_weight(self) -> float:
        return -self.q / self.p

    def describe(self) -> str:
        return f"PQ(p={self.p:g}, q={self.q:g})"

    def to_dict(self) -> dict:
        return {"rule": "pq", "p": self.p, "q": self.q}


class PPercent(PQ):
    """p-percent rule: the second largest can estimate the largest within ``p`` %.

    Parameters
    ----------
    p : float
        The precision the cell must keep, in percent, > 0.

    Examples
    --------
    >>> PPercent(20).sensitivity([70, 15, 5, 5, 5])
    -5.0
    """

    def __init__(self, p: float):
        super().__init__(p, 100.0)

    def describe(self) -> str:
        return f"PPercent(p={self.p:g})"

    def to_dict(self) -> dict:
        return {"rule": "p_percent", "p": self.p}


class Sum(Rule):
    """``S = S_1 + S_2 + ...``: a linear measure with the summed weights.

    Parameters
    ----------
    *rules : Rule
        Two or more linear rules.
    """

    def __init__(self, *rules: Rule):
        self.rules = _rules(rules)
        for r in self.rules:
            if isinstance(r, (Max, Frequency)):
                raise TypeError(f"Sum adds linear measures; {r.describe()} is not one "
                                "(combine it with Max)")

    def weights(self, pos):
        return sum(r.weights(pos) for r in self.rules)

    @property
    def tail_weight(self) -> float:
        return float(sum(r.tail_weight for r in self.rules))

    def describe(self) -> str:
        return "Sum(" + ", ".join(r.describe() for r in self.rules) + ")"

    def to_dict(self) -> dict:
        return {"rule": "sum", "rules": [r.to_dict() for r in self.rules]}


class Max(Rule):
    """``S = max(S_1, S_2, ...)``; protection: the largest protection of the rules.

    Parameters
    ----------
    *rules : Rule
        Two or more rules.
    """

    def __init__(self, *rules: Rule):
        self.rules = _rules(rules)

    def _s(self, cell, pos, values, n):
        return np.max([r._s(cell, pos, values, n) for r in self.rules], axis=0)

    def _p(self, s, cell, pos, values, n):
        return np.max([r._p(r._s(cell, pos, values, n), cell, pos, values, n)
                       for r in self.rules], axis=0)

    @property
    def asymmetric(self) -> bool:
        return any(r.asymmetric for r in self.rules)

    def _p_lower(self, p, cell, pos, values, n):
        lows = []
        for r in self.rules:
            pr = r._p(r._s(cell, pos, values, n), cell, pos, values, n)
            lows.append(r._p_lower(pr, cell, pos, values, n))
        return np.max(lows, axis=0)

    @property
    def tail_weight(self) -> float:
        raise AttributeError("Max is not a linear measure: it has no single tail weight")

    def describe(self) -> str:
        return "Max(" + ", ".join(r.describe() for r in self.rules) + ")"

    def to_dict(self) -> dict:
        return {"rule": "max", "rules": [r.to_dict() for r in self.rules]}


class Frequency(Rule):
    """The threshold (minimum frequency) rule: a cell to which fewer than ``n`` units
    contribute is sensitive; with ``zeros=True`` an empty cell is too.

    The count is the cell value of a count table, and the number of contributors of a
    magnitude cell (:class:`~riskengine.magnitude.contributions.Contributions`: rows of
    the microdata, or respondents with a ``respondent`` column).  A cell is sensitive when
    ``0 < count < n`` (tau-Argus's FREQ rule and its "minimum number of contributors";
    sdcTable's ``freq`` rule with ``maxN = n - 1``), and with ``zeros=True`` also when
    ``count == 0`` (sdcTable's ``allowZeros``: an empty cell tells that nobody in the
    group has the attribute, a group disclosure).

    **Protection levels** follow tau-Argus (libtauargus ``CTable::SetProtectionLevelCell``,
    cell status ``CS_UNSAFE_FREQ``): a cell unsafe by the frequency rule needs
    ``max(value * safety_range / 100, min_protection)`` below and above its value, where
    ``safety_range`` is the rule's "frequency safety range" (the second parameter of
    tau-Argus's ``FREQ(MinFreq, FrequencyRange)``) and ``min_protection`` the smallest
    protection level (tau-Argus's ``MinLPL``: 1 for a frequency table, one unit of the last
    decimal for a magnitude table).  The protection below is capped at the value (no
    nonnegative table puts a cell below 0), so an empty cell needs ``min_protection``
    above it and nothing below.  Defaults: ``safety_range=10`` (the 10 % interval that
    rtauargus applies by default, ``MAN(10)``, and its ``FREQ(3,10)`` example) and
    ``min_protection=1``: on a count table with ``n <= 11`` every sensitive count ``c``
    then needs 1 on both sides, so the suppressed cell's feasible interval must contain
    ``c - 1`` and ``c + 1``: a count of 1 must reach 0 (an intruder cannot tell that the
    group has a member at all) and a count of 2 must reach 1 and 3 -- the same
    requirement as GaussSuppression's ``protectionIntervals`` for small counts (upper
    bound at least 1 above the count, width at least 2).  On magnitude microdata the
    protection is 10 % of the cell value.

    ``S(X) = n - count`` for a non-empty cell (> 0: fewer than ``n`` contributors); an
    empty cell has ``S = n`` with ``zeros=True``, else ``S = 0`` (not sensitive).  The
    protection of a safe cell is 0 (the rule has no measure of the protection a safe
    cell has), so that ``Max`` with a linear rule takes that rule's protection.

    Parameters
    ----------
    n : int
        The threshold, >= 1: cells with fewer than ``n`` units (and more than 0) are
        sensitive (``n = 1``: none, unless ``zeros``).
    zeros : bool, default False
        Empty cells are sensitive too.
    safety_range : float, default 10
        Protection as a percentage of the cell value, in [0, 100].
    min_protection : float, default 1
        The smallest protection a sensitive cell needs, > 0 (units of the cell value).

    Examples
    --------
    >>> import numpy as np
    >>> rule = Frequency(3)
    >>> rule.sensitive(np.array([[0, 1, 2], [3, 7, 2]])).tolist()
    [[False, True, True], [False, False, True]]
    >>> Frequency(3, zeros=True).sensitive([0, 1, 5]).tolist()
    [True, True, False]
    >>> lower, upper = Frequency(3, zeros=True).protection_levels([0, 2, 5])
    >>> lower.tolist(), upper.tolist()
    ([0.0, 1.0, 0.0], [1.0, 1.0, 0.0])
    >>> Frequency(3).sensitivity([120.0, 30.0]), Frequency(3).protection([120.0, 30.0])
    (1.0, 15.0)
    """

    asymmetric = True

    def __init__(self, n: int, zeros: bool = False, safety_range: float = 10.0,
                 min_protection: float = 1.0):
        if isinstance(n, bool) or not isinstance(n, numbers.Integral):
            raise TypeError(f"n must be an integer, got {n!r}")
        if n < 1:
            raise ValueError(f"n must be >= 1 (cells with fewer than n units are sensitive), "
                             f"got n={n}")
        if not isinstance(zeros, (bool, np.bool_)):
            raise TypeError(f"zeros must be True or False, got {zeros!r}")
        safety_range = _real(safety_range, "safety_range")
        if not 0 <= safety_range <= 100:
            raise ValueError(f"safety_range must be a percentage in [0, 100], got "
                             f"safety_range={safety_range:g}")
        min_protection = _real(min_protection, "min_protection")
        if not min_protection > 0:
            raise ValueError(f"min_protection must be > 0, got min_protection={min_protection:g}")
        self.n, self.zeros = int(n), bool(zeros)
        self.safety_range, self.min_protection = safety_range, min_protection

    # --- count tables ----------------------------------------------------------------
    def sensitive(self, counts) -> np.ndarray:
        """Which cells of a count array are sensitive: ``0 < count < n`` (and
        ``count == 0`` with ``zeros``).

        Parameters
        ----------
        counts : array-like, rk.Table or xarray.DataArray
            Nonnegative whole numbers, any shape.

        Returns
        -------
        numpy.ndarray
            Boolean, of the shape of ``counts``.
        """
        c = _counts(counts)
        return self._sens(c)

    def protection_levels(self, counts) -> tuple:
        """``(lower, upper)``: the protection each cell of a count array needs below and
        above its count (0 on the cells that are not sensitive).

        Parameters
        ----------
        counts : array-like, rk.Table or xarray.DataArray
            Nonnegative whole numbers, any shape.

        Returns
        -------
        lower, upper : numpy.ndarray
            Float arrays of the shape of ``counts``; ``lower <= count``.
        """
        c = _counts(counts)
        sens = self._sens(c)
        upper = np.where(sens, self._level(c), 0.0)
        return np.minimum(upper, c), upper

    def _sens(self, count: np.ndarray) -> np.ndarray:
        return ((count > 0) | self.zeros) & (count < self.n)

    def _level(self, value: np.ndarray) -> np.ndarray:
        return np.maximum(np.abs(value) * (self.safety_range / 100.0), self.min_protection)

    # --- the Rule interface (contributions) ------------------------------------------
    def weights(self, pos):
        raise TypeError("Frequency is not a linear measure: it has no weights by rank")

    @property
    def tail_weight(self) -> float:
        raise AttributeError("Frequency is not a linear measure: it has no tail weight")

    def _s(self, cell, pos, values, n):
        count = np.bincount(cell, minlength=n)
        s = (self.n - count).astype(float)
        return np.where(count == 0, float(self.n) if self.zeros else 0.0, s)

    def _p(self, s, cell, pos, values, n):
        value = np.bincount(cell, weights=values, minlength=n)
        return np.where(s > 0, self._level(value), 0.0)

    def _p_lower(self, p, cell, pos, values, n):
        return np.minimum(p, np.bincount(cell, weights=values, minlength=n))

    def describe(self) -> str:
        return (f"Frequency(n={self.n}" + (", zeros=True" if self.zeros else "")
                + f", safety_range={self.safety_range:g}"
                + (f", min_protection={self.min_protection:g})"
                   if self.min_protection != 1 else ")"))

    def to_dict(self) -> dict:
        return {"rule": "frequency", "n": self.n, "zeros": self.zeros,
                "safety_range": self.safety_range, "min_protection": self.min_protection}


# --- functional forms -----------------------------------------------------------------------
def nk_dominance(contributions, n: int, k: float) -> float:
    """``S(X)`` of the (n,k)-dominance rule for one cell's contributions.

    Parameters
    ----------
    contributions : array-like
        One cell's contributions (nonnegative, finite, any order).
    n : int
        The number of largest contributions, >= 1.
    k : float
        The percentage of the cell value, in (0, 100).

    Returns
    -------
    float
        The sensitivity; > 0 means the cell is sensitive.

    Examples
    --------
    >>> nk_dominance([70, 15, 5, 5, 5], n=3, k=80)
    50.0
    """
    return Dominance(n, k).sensitivity(contributions)


def p_percent(contributions, p: float) -> float:
    """``S(X)`` of the p-percent rule for one cell's contributions.

    Parameters
    ----------
    contributions : array-like
        One cell's contributions (nonnegative, finite, any order).
    p : float
        The precision the cell must keep, in percent, > 0.

    Returns
    -------
    float
        The sensitivity; > 0 means the cell is sensitive.

    Examples
    --------
    >>> p_percent([70, 15, 5, 5, 5], p=20)
    -5.0
    """
    return PPercent(p).sensitivity(contributions)


def pq(contributions, p: float, q: float) -> float:
    """``S(X)`` of the pq rule for one cell's contributions.

    Parameters
    ----------
    contributions : array-like
        One cell's contributions (nonnegative, finite, any order).
    p : float
        The precision the cell must keep, in percent, > 0.
    q : float
        How well every respondent knows the others' contributions, in percent, in
        (0, 100].

    Returns
    -------
    float
        The sensitivity; > 0 means the cell is sensitive.

    Examples
    --------
    >>> pq([70, 15, 5, 5, 5], p=20, q=50)
    32.5
    """
    return PQ(p, q).sensitivity(contributions)


def protection(contributions, rule: Rule) -> float:
    """``P(X) = S(X) / |w_LAST|`` of ``rule`` for one cell (negative: safe).

    Parameters
    ----------
    contributions : array-like
        One cell's contributions (nonnegative, finite, any order).
    rule : Rule
        The sensitivity rule.

    Returns
    -------
    float
        The protection the cell needs (<= 0: the protection it has).

    Examples
    --------
    >>> protection([70, 15, 5, 5, 5], Dominance(3, 80))
    12.5
    """
    return _rule(rule).protection(contributions)


#: attr of an assessment's interior variables: the number of sensitive totals it found
SENSITIVE_TOTALS = "sensitive_totals_elsewhere"


def assess(contribs, rule: Rule) -> xr.Dataset:
    """Sensitivity of every cell of a table, totals included.

    Parameters
    ----------
    contribs : Contributions, or a count table (rk.Table, array or xarray.DataArray)
        From :func:`riskengine.contributions`; or a table of counts (its ``margins`` are
        the published totals), which only the :class:`Frequency` rule can assess (a count
        is the number of units of its cell; a count table has no contributions).
    rule : Rule
        ``Dominance(n, k)``, ``PPercent(p)``, ``PQ(p, q)``, ``Frequency(n)``, ``Sum(...)``,
        ``Max(...)``.

    Returns
    -------
    xarray.Dataset
        ``S``, ``sensitive`` (S > 0) and ``protection`` (P(X) where sensitive, else 0)
        over the table dims, and for every published total the same three variables
        suffixed ``_total_<dims kept>`` (``_total`` for the grand total), e.g.
        ``S_total_region``.  A rule whose protection below a cell may be smaller than
        above it (:class:`Frequency`, or a ``Max`` with one) adds ``protection_lower``
        (``protection`` is then the protection above).  ``attrs``: rule, structure.

    Examples
    --------
    >>> import riskengine as rk
    >>> c = rk.contributions({"r": ["a"] * 5 + ["b"] * 3,
    ...                       "v": [70, 15, 5, 5, 5, 40, 30, 30]}, dims=["r"], value="v")
    >>> ds = rk.sensitivity.assess(c, rk.sensitivity.Dominance(3, 80))
    >>> ds.sensitive.values.tolist(), ds.protection.values.tolist()
    ([True, True], [12.5, 25.0])
    >>> bool(ds.sensitive_total)
    False
    >>> counts = rk.Table([[1, 4], [5, 6]], dims=("v", "w"))
    >>> ds = rk.sensitivity.assess(counts, rk.sensitivity.Frequency(3))
    >>> ds.sensitive.values.tolist(), ds.protection.values.tolist()
    ([[True, False], [False, False]], [[1.0, 0.0], [0.0, 0.0]])
    """
    rule = _rule(rule)
    if isinstance(contribs, Contributions):
        cell, pos = contribs.rank()
        n = contribs.n_cells
        values = contribs.values
        t, system = contribs.table, contribs.system
        s = rule._s(cell, pos, values, n)
        p = rule._p(s, cell, pos, values, n)
        p_low = rule._p_lower(p, cell, pos, values, n) if rule.asymmetric else None
        method = ("linear sensitivity measure (seed 004)" if not rule.asymmetric else
                  "sensitivity rules on contributions (threshold rule: tau-Argus FREQ)")
    elif isinstance(contribs, (Table, xr.DataArray, np.ndarray, list, tuple)):
        if not isinstance(rule, Frequency):
            raise TypeError(f"rule {rule.describe()} needs a Contributions object (the "
                            "microdata, rk.contributions(...)): a table has no "
                            "contributions; a count table is assessed by the threshold "
                            "rule, Frequency(n)")
        t = contribs if isinstance(contribs, Table) else Table(contribs)
        if t.kind != "count":
            raise ValueError("the threshold rule counts units: assess takes a table of "
                             "counts or a Contributions object (rk.contributions(...)); "
                             "this table holds magnitudes: build it with rk.contributions "
                             "from the microdata")
        system = tabular_system(t.dims, t.shape, t.margins, coords=t.coords)
        counts = system.vector(t.values).astype(float)
        s = np.where(counts == 0, float(rule.n) if rule.zeros else 0.0, rule.n - counts)
        p_low, p = rule.protection_levels(counts)
        method = "threshold rule on counts"
    else:
        raise TypeError("assess needs a Contributions object (rk.contributions(...)) or a "
                        f"count table (rk.Table), got {type(contribs).__name__}")
    sens = s > 0
    prot = np.where(sens, p, 0.0)
    data = {"S": s, "sensitive": sens, "protection": prot}
    if p_low is not None:
        data["protection_lower"] = np.where(sens, p_low, 0.0)
    ds = xr.Dataset(coords=t.coords)
    n_tot = int(sens[system.n_interior:].sum())
    for b in system.blocks:
        suffix = "" if b.is_interior else ("_total" + "".join("_" + d for d in b.keep))
        for name, arr in data.items():
            attrs = {}
            if b.is_interior:
                # the interior variables alone do not cover the totals: say how many
                # sensitive totals the assessment found (readers refuse to drop them)
                attrs = {SENSITIVE_TOTALS: n_tot}
            ds[name + suffix] = xr.DataArray(arr[b.slice].reshape(b.shape), dims=b.keep,
                                             attrs=attrs)
    ds.attrs.update(rule=rule.describe(), structure=repr(list(t.margins)), method=method)
    return ds


def cell_vector(ds: xr.Dataset, name: str, system) -> np.ndarray:
    """Variable ``name`` of an :func:`assess` Dataset as a vector over ``system``'s cells
    (a total missing from the Dataset is an error).

    Parameters
    ----------
    ds : xarray.Dataset
        An :func:`assess` Dataset.
    name : str
        The variable (``"S"``, ``"sensitive"`` or ``"protection"``).
    system : riskengine.tabular.TabularSystem
        The system whose cell order to use.

    Returns
    -------
    numpy.ndarray
        One value per cell of ``system``, block by block.
    """
    out = []
    for b in system.blocks:
        key = name if b.is_interior else name + "_total" + "".join("_" + d for d in b.keep)
        if key not in ds:
            raise ValueError(f"the Dataset has no variable {key!r} for {b.label}")
        out.append(np.asarray(ds[key].transpose(*b.keep).values).ravel())
    return np.concatenate(out)


def _sorted(x) -> np.ndarray:
    a = np.asarray(x)
    if a.dtype == object or not (np.issubdtype(a.dtype, np.number) or a.dtype == bool):
        raise TypeError(f"contributions must be numeric, got dtype {a.dtype}")
    a = np.atleast_1d(a.astype(float))
    if a.ndim != 1:
        raise ValueError(f"contributions of one cell must be 1-D, got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"contributions must be finite, got {a[~np.isfinite(a)][0]}")
    if np.any(a < 0):
        raise ValueError(f"contributions must be nonnegative, got {a[a < 0][0]:g}")
    return -np.sort(-a)


def _counts(counts) -> np.ndarray:
    """A count array (any shape) as floats, refusing what is not a nonnegative whole number."""
    if isinstance(counts, (Table, xr.DataArray)):
        counts = counts.values
    a = np.asarray(counts)
    if a.dtype == object or a.dtype == bool or not np.issubdtype(a.dtype, np.number):
        raise TypeError(f"counts must be numbers (not a mask), got dtype {a.dtype}")
    a = a.astype(float)
    bad = ~np.isfinite(a) | (a < 0) | (a != np.round(a))
    if bad.any():
        raise ValueError(f"counts must be nonnegative whole numbers, got "
                         f"{a[bad].ravel()[0]:g}")
    return a


def _real(x, name: str) -> float:
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {x!r}")
    x = float(x)
    if not np.isfinite(x):
        raise ValueError(f"{name} must be finite, got {name}={x}")
    return x


def _rule(rule) -> Rule:
    if not isinstance(rule, Rule):
        raise TypeError("rule must be a sensitivity rule (Dominance(n, k), PPercent(p), "
                        f"PQ(p, q), Frequency(n), Sum(...), Max(...)), got {rule!r}")
    return rule


def _rules(rules) -> tuple:
    if len(rules) < 2:
        raise ValueError(f"a combination needs at least two rules, got {len(rules)}")
    return tuple(_rule(r) for r in rules)
