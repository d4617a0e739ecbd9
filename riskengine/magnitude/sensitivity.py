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
"""

from __future__ import annotations

import numbers

import numpy as np
import xarray as xr

from .contributions import Contributions

__all__ = [
    "PQ",
    "Dominance",
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
    def tail_weight(self) -> float:
        raise AttributeError("Max is not a linear measure: it has no single tail weight")

    def describe(self) -> str:
        return "Max(" + ", ".join(r.describe() for r in self.rules) + ")"

    def to_dict(self) -> dict:
        return {"rule": "max", "rules": [r.to_dict() for r in self.rules]}


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
    contribs : Contributions
        From :func:`riskengine.contributions`.
    rule : Rule
        ``Dominance(n, k)``, ``PPercent(p)``, ``PQ(p, q)``, ``Sum(...)``, ``Max(...)``.

    Returns
    -------
    xarray.Dataset
        ``S``, ``sensitive`` (S > 0) and ``protection`` (P(X) where sensitive, else 0)
        over the table dims, and for every published total the same three variables
        suffixed ``_total_<dims kept>`` (``_total`` for the grand total), e.g.
        ``S_total_region``.  ``attrs``: rule, structure.

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
    """
    if not isinstance(contribs, Contributions):
        raise TypeError("assess needs a Contributions object (rk.contributions(...)), "
                        f"got {type(contribs).__name__}")
    rule = _rule(rule)
    cell, pos = contribs.rank()
    n = contribs.n_cells
    s = rule._s(cell, pos, contribs.values, n)
    p = rule._p(s, cell, pos, contribs.values, n)
    sens = s > 0
    prot = np.where(sens, p, 0.0)
    t = contribs.table
    ds = xr.Dataset(coords=t.coords)
    n_int = contribs.system.n_interior
    n_tot = int(sens[n_int:].sum())
    for b in contribs.system.blocks:
        suffix = "" if b.is_interior else ("_total" + "".join("_" + d for d in b.keep))
        for name, arr in (("S", s), ("sensitive", sens), ("protection", prot)):
            attrs = {}
            if b.is_interior:
                # the interior variables alone do not cover the totals: say how many
                # sensitive totals the assessment found (readers refuse to drop them)
                attrs = {SENSITIVE_TOTALS: n_tot}
            ds[name + suffix] = xr.DataArray(arr[b.slice].reshape(b.shape), dims=b.keep,
                                             attrs=attrs)
    ds.attrs.update(rule=rule.describe(), structure=repr(list(t.margins)),
                    method="linear sensitivity measure (seed 004)")
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
                        f"PQ(p, q), Sum(...), Max(...)), got {rule!r}")
    return rule


def _rules(rules) -> tuple:
    if len(rules) < 2:
        raise ValueError(f"a combination needs at least two rules, got {len(rules)}")
    return tuple(_rule(r) for r in rules)
