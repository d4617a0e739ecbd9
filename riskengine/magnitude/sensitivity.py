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
    "Holdings",
    "Max",
    "PPercent",
    "Request",
    "Rule",
    "Sum",
    "Zero",
    "assess",
    "assess_summary",
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

    #: how many of a cell's largest contributions the rule reads (table input must give
    #: at least as many top scores, :func:`assess_summary`)
    n_top = 0

    def _coef(self, start: np.ndarray, width: np.ndarray) -> np.ndarray:
        """The integral of the rank weight over units ``[start, start + width)``: the
        coefficient of a contribution covering those units (unweighted: ``w_pos``)."""
        start = np.asarray(start, float)
        width = np.asarray(width, float)
        if np.all(width == 1) and np.all(start == np.round(start)):
            return self.weights(start.astype(np.int64))
        raise NotImplementedError(f"{self.describe()} has no weights for weighted units")

    def _s(self, v) -> np.ndarray:
        return np.bincount(v.cell, weights=self._coef(v.start, v.width) * v.values,
                           minlength=v.n)

    def _p(self, v, s) -> np.ndarray:
        return s / abs(self.tail_weight)

    #: True when the protection below a cell's value may differ from the protection above
    #: it (:class:`Frequency`: a cell can never be shown below 0); :func:`assess` then adds
    #: ``protection_lower``
    asymmetric = False

    def _p_lower(self, v, p) -> np.ndarray:
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
        v = _View.single(_sorted(x))
        return float(self._s(v)[0])

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
        v = _View.single(_sorted(x))
        return float(self._p(v, self._s(v))[0])

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
    def n_top(self) -> int:
        return self.n

    def _coef(self, start, width):
        return _piecewise(start, width, [self.n], [1.0, self.tail_weight])

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
    n : int, default 1
        The size of the coalition of intruders: the ``n`` largest contributions after
        the first pool their knowledge (tau-Argus's ``P(p, n)`` / ``P(p, q, n)``,
        ``CDataCell::GetPQCell``: ``S = x_1 - (q / p) (x_(n+2) + ...)``).

    Examples
    --------
    >>> PQ(20, 50).sensitivity([70, 15, 5, 5, 5]), PQ(20, 50).protection([70, 15, 5, 5, 5])
    (32.5, 13.0)
    >>> PQ(20, 50, n=2).sensitivity([70, 15, 5, 5, 5])
    45.0
    """

    def __init__(self, p: float, q: float = 100.0, n: int = 1):
        p, q = _real(p, "p"), _real(q, "q")
        if not p > 0:
            raise ValueError(f"p must be > 0, got p={p}")
        if not 0 < q <= 100:
            raise ValueError(f"q must be a percentage in (0, 100], got q={q}")
        if isinstance(n, bool) or not isinstance(n, numbers.Integral):
            raise TypeError(f"n must be an integer, got {n!r}")
        if n < 1:
            raise ValueError(f"n (the intruders' coalition) must be >= 1, got n={n}")
        self.p, self.q, self.n = p, q, int(n)

    def weights(self, pos):
        pos = np.asarray(pos)
        return np.where(pos == 0, 1.0, np.where(pos <= self.n, 0.0, self.tail_weight))

    @property
    def n_top(self) -> int:
        return self.n + 1

    def _coef(self, start, width):
        return _piecewise(start, width, [1, self.n + 1], [1.0, 0.0, self.tail_weight])

    @property
    def tail_weight(self) -> float:
        return -self.q / self.p

    def describe(self) -> str:
        return f"PQ(p={self.p:g}, q={self.q:g}" + (f", n={self.n})" if self.n != 1 else ")")

    def to_dict(self) -> dict:
        d = {"rule": "pq", "p": self.p, "q": self.q}
        if self.n != 1:
            d["n"] = self.n
        return d


class PPercent(PQ):
    """p-percent rule: the second largest can estimate the largest within ``p`` %.

    Parameters
    ----------
    p : float
        The precision the cell must keep, in percent, > 0.
    n : int, default 1
        The size of the coalition of intruders (see :class:`PQ`).

    Examples
    --------
    >>> PPercent(20).sensitivity([70, 15, 5, 5, 5])
    -5.0
    """

    def __init__(self, p: float, n: int = 1):
        super().__init__(p, 100.0, n)

    def describe(self) -> str:
        return f"PPercent(p={self.p:g}" + (f", n={self.n})" if self.n != 1 else ")")

    def to_dict(self) -> dict:
        d = {"rule": "p_percent", "p": self.p}
        if self.n != 1:
            d["n"] = self.n
        return d


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
            if isinstance(r, (Max, Frequency, Zero, Request, Holdings)):
                raise TypeError(f"Sum adds linear measures; {r.describe()} is not one "
                                "(combine it with Max)")

    def weights(self, pos):
        return sum(r.weights(pos) for r in self.rules)

    def _coef(self, start, width):
        return sum(r._coef(start, width) for r in self.rules)

    @property
    def n_top(self) -> int:
        return max(r.n_top for r in self.rules)

    @property
    def tail_weight(self) -> float:
        return float(sum(r.tail_weight for r in self.rules))

    def describe(self) -> str:
        return "Sum(" + ", ".join(r.describe() for r in self.rules) + ")"

    def to_dict(self) -> dict:
        return {"rule": "sum", "rules": [r.to_dict() for r in self.rules]}


class Max(Rule):
    """``S = max(S_1, S_2, ...)``; protection: the largest protection of the rules.

    A cell is sensitive when *any* rule says so (``S > 0`` for some rule), which is how
    tau-Argus combines the rules of a safety rule (``CTable::ComputeCellSafeCode``
    returns unsafe at the first rule that fails).  tau-Argus gives a cell unsafe by a
    dominance / p % rule only the protection of those rules (``SetProtectionLevelCell``,
    status ``CS_UNSAFE_RULE``, checked before the frequency rule); ``Max`` gives the
    largest protection of every rule that finds the cell sensitive (never less).

    Parameters
    ----------
    *rules : Rule
        Two or more rules.
    """

    def __init__(self, *rules: Rule):
        self.rules = _rules(rules)

    def _s(self, v):
        return np.max([r._s(v) for r in self.rules], axis=0)

    def _p(self, v, s):
        return np.max([r._p(v, r._s(v)) for r in self.rules], axis=0)

    @property
    def asymmetric(self) -> bool:
        return any(r.asymmetric for r in self.rules)

    @property
    def n_top(self) -> int:
        return max(r.n_top for r in self.rules)

    def _p_lower(self, v, p):
        lows = []
        for r in self.rules:
            pr = r._p(v, r._s(v))
            lows.append(r._p_lower(v, pr))
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
    weighted : bool, default False
        Count the sum of the sampling weights of a cell's rows instead of its
        contributors (tau-Argus with weights, ``CTable::UnsafeCellMinRec``:
        ``GetWeight() < SafeMinRec``); needs contributions built with ``weight=``.
        On a :class:`Holdings` level the count is the number of holdings.

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
                 min_protection: float = 1.0, weighted: bool = False):
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
        if not isinstance(weighted, (bool, np.bool_)):
            raise TypeError(f"weighted must be True or False, got {weighted!r}")
        self.n, self.zeros = int(n), bool(zeros)
        self.safety_range, self.min_protection = safety_range, min_protection
        self.weighted = bool(weighted)

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

    def _s(self, v):
        count = v.count.astype(float)
        if self.weighted:
            if v.wsum is None:
                raise ValueError(f"{self.describe()} counts the sum of the weights: build "
                                 "the contributions with weight=")
            count = np.where(v.count == 0, 0.0, v.wsum)
        s = self.n - count
        return np.where(v.count == 0, float(self.n) if self.zeros else 0.0, s)

    def _p(self, v, s):
        return np.where(s > 0, self._level(v.total), 0.0)

    def _p_lower(self, v, p):
        return _cap_lower(v, p)

    def describe(self) -> str:
        return (f"Frequency(n={self.n}" + (", zeros=True" if self.zeros else "")
                + f", safety_range={self.safety_range:g}"
                + (f", min_protection={self.min_protection:g}"
                   if self.min_protection != 1 else "")
                + (", weighted=True)" if self.weighted else ")"))

    def to_dict(self) -> dict:
        d = {"rule": "frequency", "n": self.n, "zeros": self.zeros,
             "safety_range": self.safety_range, "min_protection": self.min_protection}
        if self.weighted:
            d["weighted"] = True
        return d


class Zero(Rule):
    """tau-Argus's zero rule (``ZERO(range)``): a cell whose value is 0 while some unit
    contributes to it is sensitive (``CTable::ComputeCellSafeCode``, status
    ``CS_UNSAFE_ZERO``: ``Resp == 0 && Freq > 0``).

    Its protection (``CTable::SetProtectionLevelCell`` for a cell of value 0): ``range``
    above the value and nothing below.  ``S`` is 1 for a sensitive cell, else 0.  A
    value counts as 0 when ``|value| <= 1e-12 * sum |x_i|`` (signed contributions that
    cancel up to rounding).

    Parameters
    ----------
    safety_range : float
        The protection above a sensitive cell, in units of the cell value, > 0.

    Examples
    --------
    >>> Zero(5).sensitivity([0.0, 0.0]), Zero(5).protection([0.0, 0.0])
    (1.0, 5.0)
    >>> Zero(5).sensitivity([]), Zero(5).sensitivity([1.0])
    (0.0, 0.0)
    """

    asymmetric = True

    def __init__(self, safety_range: float):
        safety_range = _real(safety_range, "safety_range")
        if not safety_range > 0:
            raise ValueError(f"the zero rule's safety_range must be > 0, got "
                             f"safety_range={safety_range:g}")
        self.safety_range = safety_range

    def weights(self, pos):
        raise TypeError("Zero is not a linear measure: it has no weights by rank")

    @property
    def tail_weight(self) -> float:
        raise AttributeError("Zero is not a linear measure: it has no tail weight")

    def _s(self, v):
        scale = np.bincount(v.cell, weights=v.values * v.width, minlength=v.n)
        zero = (v.count > 0) & (np.abs(v.total) <= 1e-12 * scale)
        return zero.astype(float)

    def _p(self, v, s):
        return np.where(s > 0, self.safety_range, 0.0)

    def _p_lower(self, v, p):
        return np.zeros_like(p)

    def describe(self) -> str:
        return f"Zero(safety_range={self.safety_range:g})"

    def to_dict(self) -> dict:
        return {"rule": "zero", "safety_range": self.safety_range}


class Request(Rule):
    """tau-Argus's request rule (``REQ(p1, p2, min_freq, safety_range)``): respondents
    who asked for protection (request code 1 or 2, ``contributions(request=...)``) make
    a cell sensitive when one of them contributes more than ``p1`` % (code 1) or
    ``p2`` % (code 2) of the cell value, or when the cell holds a requesting
    respondent and fewer than ``min_freq`` contributors (libtauargus
    ``CTable::UnsafeCellPeep``).

    The contribution compared is the respondent's own, unweighted, and the cell value
    the (weighted) rules' total, as tau-Argus compares ``PeepCell`` with the shadow value.
    tau-Argus tests only the *largest* requesting contribution of a cell (with its own
    code's percentage); here every requesting contribution is tested against its code's
    percentage, so a cell tau-Argus finds sensitive is sensitive here too (the two differ
    only when a smaller code-2 contribution exceeds ``p2`` while the largest, of code 1,
    stays below ``p1``).  A percentage of 0 switches its code off.

    Protection (``SetProtectionLevelCell``, status ``CS_UNSAFE_PEEP``): ``safety_range``
    % of the cell value on both sides, at least ``min_protection``; capped below at the
    value on a nonnegative table.  ``S`` is the largest excess ``x_i - p/100 T`` of a
    requesting contribution, or ``min_freq - count`` when that is larger.

    Parameters
    ----------
    p1 : float
        The share of the cell value (percent, [0, 100]) a code-1 respondent may have.
    p2 : float, default 0
        The same for code 2 (0: code 2 not used).
    min_freq : int, default 0
        Cells with a requesting respondent and fewer contributors are sensitive.
    safety_range : float, default 10
        Protection as a percentage of the cell value, in [0, 100].
    min_protection : float, default 1
        The smallest protection of a sensitive cell, > 0.

    Examples
    --------
    >>> rule = Request(30)
    >>> rule.sensitivity_of([60.0, 30.0, 10.0], [0, 1, 0]) > 0     # 30 % is not > 30 %
    False
    >>> rule.sensitivity_of([60.0, 30.0, 10.0], [1, 0, 0]) > 0
    True
    """

    asymmetric = True

    def __init__(self, p1: float, p2: float = 0.0, min_freq: int = 0,
                 safety_range: float = 10.0, min_protection: float = 1.0):
        p1, p2 = _real(p1, "p1"), _real(p2, "p2")
        for name, x in (("p1", p1), ("p2", p2)):
            if not 0 <= x <= 100:
                raise ValueError(f"{name} must be a percentage in [0, 100], got {name}={x:g}")
        if isinstance(min_freq, bool) or not isinstance(min_freq, numbers.Integral):
            raise TypeError(f"min_freq must be an integer, got {min_freq!r}")
        if min_freq < 0:
            raise ValueError(f"min_freq must be >= 0, got min_freq={min_freq}")
        if p1 == 0 and p2 == 0 and min_freq == 0:
            raise ValueError("a request rule needs p1, p2 or min_freq > 0")
        safety_range = _real(safety_range, "safety_range")
        if not 0 <= safety_range <= 100:
            raise ValueError(f"safety_range must be a percentage in [0, 100], got "
                             f"safety_range={safety_range:g}")
        min_protection = _real(min_protection, "min_protection")
        if not min_protection > 0:
            raise ValueError(f"min_protection must be > 0, got min_protection={min_protection:g}")
        self.p1, self.p2, self.min_freq = p1, p2, int(min_freq)
        self.safety_range, self.min_protection = safety_range, min_protection

    def weights(self, pos):
        raise TypeError("Request is not a linear measure: it has no weights by rank")

    @property
    def tail_weight(self) -> float:
        raise AttributeError("Request is not a linear measure: it has no tail weight")

    def sensitivity_of(self, x, request) -> float:
        """``S`` of one cell from its contributions and their request codes.

        Parameters
        ----------
        x : array-like
            The cell's contributions (nonnegative, finite).
        request : array-like of int
            The request code (0, 1 or 2) of each contribution.

        Returns
        -------
        float
            The sensitivity; > 0 means the cell is sensitive.
        """
        x = np.asarray(x, float)
        r = np.asarray(request, np.int8)
        if r.shape != x.shape:
            raise ValueError("request must give one code per contribution")
        v = _View.single(x)
        v.request = r
        return float(self._s(v)[0])

    def _s(self, v):
        if v.request is None:
            raise ValueError(f"{self.describe()} needs the request codes of the "
                             "contributions: build them with contributions(request=...)")
        total = np.bincount(v.cell, weights=v.values * v.width, minlength=v.n)
        share = np.where(v.request == 1, self.p1, np.where(v.request == 2, self.p2, 0.0))
        on = (v.request > 0) & (share > 0)
        excess = np.full(v.n, -np.inf)
        np.maximum.at(excess, v.cell[on], (v.values - share / 100.0 * total[v.cell])[on])
        has = np.zeros(v.n, bool)
        has[v.cell[v.request > 0]] = True
        freq = np.where(has & (self.min_freq > 0), float(self.min_freq) - v.count, -np.inf)
        s = np.maximum(excess, freq)
        return np.where(np.isfinite(s), s, 0.0)

    def _p(self, v, s):
        lvl = np.maximum(np.abs(v.total) * self.safety_range / 100.0, self.min_protection)
        return np.where(s > 0, lvl, 0.0)

    def _p_lower(self, v, p):
        return _cap_lower(v, p)

    def describe(self) -> str:
        return (f"Request(p1={self.p1:g}, p2={self.p2:g}, min_freq={self.min_freq}, "
                f"safety_range={self.safety_range:g})")

    def to_dict(self) -> dict:
        return {"rule": "request", "p1": self.p1, "p2": self.p2, "min_freq": self.min_freq,
                "safety_range": self.safety_range, "min_protection": self.min_protection}


class Holdings(Rule):
    """A rule evaluated on holdings (enterprise groups): one contribution per holding and
    cell, the sum of the holding's contributions (``contributions(holding=...)``).

    tau-Argus's holding rules (its 3rd and 4th ``NK`` / ``P`` rules, 2nd ``FREQ`` and
    ``REQ``; libtauargus ``DominanceNumberHolding_1``, ``PQ_NHolding_1``,
    ``SafeMinHoldings``, ``MaxScoreHolding``): ``Holdings(Dominance(1, 50))`` is the
    (1, 50) dominance rule on the holdings' sums, ``Holdings(Frequency(3))`` asks for 3
    holdings.  Combine with the individual rules through :class:`Max`.

    Parameters
    ----------
    rule : Rule
        The rule to evaluate at holding level.
    """

    def __init__(self, rule: Rule):
        self.rule = _rule(rule)
        if isinstance(rule, Holdings):
            raise TypeError("Holdings(Holdings(...)): a rule is at holding level once")

    @property
    def asymmetric(self) -> bool:
        return self.rule.asymmetric

    @property
    def n_top(self) -> int:
        return self.rule.n_top

    def weights(self, pos):
        return self.rule.weights(pos)

    @property
    def tail_weight(self) -> float:
        return self.rule.tail_weight

    def _h(self, v):
        if v.holdings is None:
            raise ValueError(f"{self.describe()} needs holding-level contributions: build "
                             "them with contributions(holding=...)")
        return v.holdings

    def _s(self, v):
        return self.rule._s(self._h(v))

    def _p(self, v, s):
        return self.rule._p(self._h(v), s)

    def _p_lower(self, v, p):
        return self.rule._p_lower(self._h(v), p)

    def describe(self) -> str:
        return f"Holdings({self.rule.describe()})"

    def to_dict(self) -> dict:
        return {"rule": "holdings", "of": self.rule.to_dict()}


def _cap_lower(v, p):
    """Protection below a cell: capped at the value on a nonnegative table."""
    if v.signed:
        return p
    return np.minimum(p, np.maximum(v.total, 0.0))


def _piecewise(start, width, breaks, levels) -> np.ndarray:
    """The integral over ``[start, start + width)`` of the step function equal to
    ``levels[j]`` on ``[breaks[j-1], breaks[j])`` (``breaks[-1] = 0``, last to infinity)."""
    start = np.asarray(start, float)
    end = start + np.asarray(width, float)
    out = np.zeros(np.broadcast(start, end).shape)
    lo = 0.0
    for j, lev in enumerate(levels):
        hi = breaks[j] if j < len(breaks) else np.inf
        overlap = np.clip(np.minimum(end, hi) - np.maximum(start, lo), 0.0, None)
        out = out + lev * overlap
        lo = hi
    return out


class _View:
    """What the rules read of a table's cells: the ranked contributions (``cell``,
    ``start``/``width`` on the axis of units, ``values``), per cell ``count``, ``total``
    (the signed cell value), ``wsum`` (weighted frequency), per contribution ``request``,
    and the holding level."""

    def __init__(self, cell, start, width, values, n, count, total, wsum=None,
                 request=None, holdings=None, signed=False):
        self.cell, self.start, self.width, self.values = cell, start, width, values
        self.n, self.count, self.total, self.wsum = n, count, total, wsum
        self.request, self.holdings, self.signed = request, holdings, signed

    @classmethod
    def single(cls, x):
        x = np.asarray(x, float)
        m = x.size
        return cls(np.zeros(m, np.int64), np.arange(m, dtype=float), np.ones(m), x, 1,
                   np.array([m]), np.array([float(x.sum())]))

    @classmethod
    def of(cls, c: Contributions):
        cell, _ = c.rank()
        start, width = c.units()
        hold = cls.of(c.holdings) if c.holdings is not None else None
        return cls(cell, start, width, c.values, c.n_cells, c.counts(),
                   np.asarray(c.cell_values(), float), c.weight_sums, c.request, hold,
                   c.signed)


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
        ``S_total_region``.  For contributions over a cell system (``hierarchies=`` /
        ``system=``), or whose table has negative cells: the same variables over one
        dim ``"cell"`` in the system's cell order (so ``ds.sensitive.values`` and
        ``ds.protection.values`` are the vectors suppression takes), with the codes of
        every dim and ``published`` as coordinates.  A rule whose protection below a cell may be smaller than
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
        v = _View.of(contribs)
        t, system = contribs.table, contribs.system
        s = rule._s(v)
        p = rule._p(v, s)
        p_low = rule._p_lower(v, p) if rule.asymmetric else None
        method = ("linear sensitivity measure (seed 004)" if not rule.asymmetric else
                  "sensitivity rules on contributions (threshold rule: tau-Argus FREQ)")
        if contribs.hierarchical or t is None:
            return _cell_dataset(system, s, p, p_low, rule, method)
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


def _cell_dataset(system, s, p, p_low, rule, method) -> xr.Dataset:
    sens = s > 0
    data = {"S": ("cell", s), "sensitive": ("cell", sens),
            "protection": ("cell", np.where(sens, p, 0.0))}
    if p_low is not None:
        data["protection_lower"] = ("cell", np.where(sens, p_low, 0.0))
    coords = {"cell": np.arange(len(s))}
    cells = getattr(system, "cells", None)
    if cells is not None and not callable(cells):
        for d in system.dims:
            coords[d] = ("cell", cells[d].astype(str).to_numpy())
        coords["published"] = ("cell", cells["published"].to_numpy(bool))
    else:
        coords["label"] = ("cell", np.asarray(system.labels(), dtype=object).astype(str))
    ds = xr.Dataset(data, coords=coords)
    ds.attrs.update(rule=rule.describe(), structure="cell system", method=method)
    return ds


def assess_summary(value, freq, top, rule: Rule, *, wsum=None) -> xr.Dataset:
    """Sensitivity from tabular input: each cell's value, number of contributors and its
    largest contributions (tau-Argus table input with ``<MAXSCORE>`` columns,
    ``TauArgus::SetInTable``; no microdata).

    The linear rules (:class:`Dominance`, :class:`PQ`, :class:`PPercent`, ``Sum``) read
    the ``n_top`` largest contributions of a cell and the rest of the cell value
    (``value - sum(top)``) as the tail, which gives the same ``S`` and protection as the
    microdata would (``CDataCell::GetDominancePercCell``, ``GetPQCell``,
    ``CTable::SetProtectionLevelCell``: ``100 / k * top_n - value`` for dominance,
    ``p / q * x_1 + top_(n+1) - value`` for pq).  A rule needing more top contributions
    than ``top`` has columns is refused, naming the rule and the count.
    :class:`Frequency` reads ``freq`` (``wsum`` with ``weighted=True``), :class:`Zero`
    the value and ``freq``; ``Max`` combines them.  :class:`Request` and
    :class:`Holdings` need microdata (tau-Argus table input has no request codes and no
    holdings, ``TauArgus::SetTableSafetyInfo``).  Unlike tau-Argus, which turns a given
    frequency of 0 into 1 (``TauArgus::FillInTable``), a frequency of 0 is an empty
    cell.

    Parameters
    ----------
    value : array-like
        The cell values (nonnegative; any shape; one entry per cell).
    freq : array-like of int
        The number of contributors of every cell (same shape).
    top : array-like
        The largest contributions of every cell, shape ``value.shape + (m,)``, largest
        first along the last axis; NaN or 0 where a cell has fewer contributors.
    rule : Rule
        The rule (or ``Max`` of rules) to evaluate.
    wsum : array-like, optional
        The weighted frequency of every cell (for ``Frequency(weighted=True)``).

    Returns
    -------
    xarray.Dataset
        ``S``, ``sensitive`` and ``protection`` (and ``protection_lower`` for the
        asymmetric rules) over dims ``dim_0, ...`` of ``value``'s shape.

    Examples
    --------
    >>> ds = assess_summary([100.0, 90.0], [5, 3], [[70, 15, 5], [40, 30, 20]],
    ...                     Dominance(3, 80))
    >>> ds.S.values.tolist(), ds.protection.values.tolist()
    ([50.0, 90.0], [12.5, 22.5])
    """
    rule = _rule(rule)
    val = np.asarray(value, dtype=float)
    shape = val.shape
    f = np.asarray(freq)
    if f.shape != shape:
        raise ValueError(f"freq must have the shape of value {shape}, got {f.shape}")
    tp = np.asarray(top, dtype=float)
    if tp.ndim != val.ndim + 1 or tp.shape[:-1] != shape:
        raise ValueError(f"top must have shape {shape} + (m,) (the m largest contributions "
                         f"of every cell), got {tp.shape}")
    m = tp.shape[-1]
    for r in _leaves(rule):
        if isinstance(r, (Request, Holdings)):
            raise TypeError(f"{r.describe()} needs microdata (rk.contributions): a table "
                            "gives no request codes and no holdings")
        if r.n_top > m:
            raise ValueError(f"rule {r.describe()} needs the {r.n_top} largest contributions "
                             f"of every cell; the table gives {m} (<MAXSCORE> columns)")
    val = val.reshape(-1)
    f = f.reshape(-1).astype(float)
    if not np.all(np.isfinite(val)) or np.any(val < 0):
        raise ValueError("cell values must be finite and nonnegative")
    if not np.all(np.isfinite(f)) or np.any(f < 0) or np.any(f != np.round(f)):
        raise ValueError("freq must hold nonnegative whole numbers")
    tp = np.nan_to_num(tp.reshape(val.size, m), nan=0.0)
    if np.any(tp < 0):
        raise ValueError("top contributions must be nonnegative")
    if np.any(np.diff(tp, axis=1) > 0):
        raise ValueError("top contributions must be sorted largest first in every cell")
    rest = val - tp.sum(axis=1)
    if np.any(rest < -1e-9 * np.maximum(val, 1.0)):
        i = int(np.flatnonzero(rest < -1e-9 * np.maximum(val, 1.0))[0])
        raise ValueError(f"cell {i}: its top contributions sum to {tp[i].sum():g}, more "
                         f"than its value {val[i]:g}")
    rest = np.maximum(rest, 0.0)
    nc = val.size
    cell = np.concatenate([np.repeat(np.arange(nc), m), np.arange(nc)])
    start = np.concatenate([np.tile(np.arange(m, dtype=float), nc), np.full(nc, float(m))])
    vals = np.concatenate([tp.reshape(-1), rest])
    ws = None if wsum is None else np.asarray(wsum, float).reshape(-1)
    v = _View(cell, start, np.ones(cell.size), vals, nc, f, val, ws)
    s = rule._s(v)
    p = rule._p(v, s)
    sens = s > 0
    dims = tuple(f"dim_{i}" for i in range(len(shape)))
    ds = xr.Dataset({"S": (dims, s.reshape(shape)), "sensitive": (dims, sens.reshape(shape)),
                     "protection": (dims, np.where(sens, p, 0.0).reshape(shape))})
    if rule.asymmetric:
        ds["protection_lower"] = (dims, np.where(sens, rule._p_lower(v, p), 0.0).reshape(shape))
    ds.attrs.update(rule=rule.describe(), method="rules from tabular input (top-n)")
    return ds


def _leaves(rule):
    if isinstance(rule, (Max, Sum)):
        for r in rule.rules:
            yield from _leaves(r)
    else:
        yield rule


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
    if "cell" in ds.dims:
        return np.asarray(ds[name].values)
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
