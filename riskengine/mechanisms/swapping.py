"""Targeted record swapping (TRS) of census microdata, as sdcMicro's ``recordSwap`` does it.

The microdata hold one row per person, a household id, the geography from the highest
level to the lowest (``region > district > area``), risk variables, household-level
similarity variables and carry-along variables.  An *area at level l* is the path of
codes ``(g_0, .., g_l)`` (the C++'s group keys; with ``check_nesting`` every code of a
level must also lie in one code of the level above).

The steps (sdcMicro ``src/recordSwap/recordSwap.cpp``; where this module differs, it
says so):

1. **Risk** (``setRisk``): person ``i`` at level ``l`` has risk ``1 / c``, ``c`` the number
   of persons of its area at level ``l`` with its values of all risk variables; a
   household's risk at each level is the maximum over its members.  Or the user's own
   risk columns (``risk``, one per level; a household gets its members' maximum).
2. **Levels** (``setLevels``): a household must be swapped at the first (highest) level
   where its risk exceeds ``risk_threshold`` (default ``1 / k_anonymity``: count < k).
3. **Number of swaps** (``distributeDraws``): ``swaprate * households / 2`` swaps (one swap
   moves two households), rounded at random; spread over the lowest-level areas in
   proportion to their households, each area's share rounded at random (the totals add
   up).  *Differs*: the C++ rounds the total up or down with probability 1/2 each and gives
   the extra swaps to a uniformly drawn subset of areas; here both roundings are unbiased
   (up with probability equal to the fractional part; the areas that get one more are
   drawn by systematic sampling over a random order, each with probability its
   fractional part), so the expected swap rate is ``swaprate`` area by area.
4. **Swapping**, levels top-down, areas in sorted order of their codes (``recordSwap``):
   at every level but the lowest, the households of the area that must be swapped at
   this level and are not swapped yet; at the lowest level these plus further households
   of the area, up to the area's number of swaps less the households of the area already
   swapped (as the drawing side) at higher levels, drawn without replacement with
   probability proportional to the household's lowest-level risk (``randSample``:
   the largest ``risk / Exp(1)`` keys).  The households that must be swapped come first,
   in order of household id (the C++: the order of an ``unordered_set``), then the drawn
   ones by descending key.
5. **Donors** (``sampleDonor``): at each level one random order of all households, by
   descending ``risk_at_level / Exp(1)`` (weighted sampling without replacement); the donor
   of a household is the first household in that order that is not swapped yet, lies in
   another area *at this level* (anywhere else: not restricted to the same higher-level
   area, as in the C++) and has the same values of the first similarity profile; failing
   that, of the next profile, and so on.  No donor under any profile: the household is
   logged (``attrs["unswapped"]``) and not tried again at lower levels (as the C++: it may
   still serve as a donor to another household later).  *Differs*: the C++ leaves such a
   logged household eligible as a donor even to a household of its own area (its
   exclusion set is the area's pool at the start of the level); here a donor always lies
   in another area.  Households with risk 0 (possible only with ``risk``) are never
   donors or drawn (the C++ keeps one of them, an artefact of its ordered map).
6. **The swap** exchanges the hierarchy columns and the carry-along columns of the two
   households, for all their members (each household's values are those of its first
   row; carry-along columns should be household-level, a warning says when not).

Invariants: every area at every level keeps its number of households; persons per area
stay only if the household size is part of every similarity profile used.

Random numbers, in this order (the protocol ``tests/reference/trs_reference.py`` follows):
one uniform (the total), a permutation of the lowest-level areas and one uniform (their
extra swaps), an ``(households, levels)`` array of Exp(1) (donor orders), ``households``
Exp(1) (the lowest-level draws); households in ascending order of their ids.

Examples
--------
Seven households in two regions of two districts each; with k = 2 households 2 and 7
(ages unique in their region) must be swapped across regions, 4 and 6 across districts:

>>> import numpy as np, pandas as pd, riskengine as rk
>>> df = pd.DataFrame({"hid":      [1, 1, 2, 3, 3, 4, 5, 5, 6, 7],
...                    "region":   [1, 1, 1, 1, 1, 2, 2, 2, 2, 2],
...                    "district": [11, 11, 11, 12, 12, 21, 21, 21, 22, 22],
...                    "age":      [2, 2, 1, 2, 2, 1, 2, 2, 1, 3],
...                    "hsize":    [2, 2, 1, 2, 2, 1, 2, 2, 1, 1]})
>>> trs = rk.TargetedSwapping(["region", "district"], ["age"], [["hsize"]],
...                           swaprate=0.0, k_anonymity=2)
>>> trs.must_swap(df)["level"].tolist()
[None, 'region', None, 'district', None, 'district', 'region']
>>> out = trs.protect(df, np.random.default_rng(1))
>>> pd.DataFrame(out.attrs["swapped"])
   household  donor     level  profile reason
0          2      7    region        0   risk
1          4      6  district        0   risk
>>> out.loc[out.hid.isin([2, 7]), ["hid", "region", "district"]]
   hid  region  district
2    2       2        22
9    7       1        11
"""

from __future__ import annotations

import math
import numbers
import warnings

import numpy as np
import pandas as pd

from kernels.swap_kernels import swap_level

__all__ = ["TargetedSwapping"]


# --- parameters ------------------------------------------------------------------------


def _columns(x, name: str, allow_empty: bool = False) -> list:
    """A list of column names (a single name: a list of one); no duplicates."""
    if isinstance(x, (str, int)) and not isinstance(x, bool):
        x = [x]
    if x is None:
        x = []
    if not isinstance(x, (list, tuple)):
        raise TypeError(f"{name} must be a list of column names, got {x!r}")
    x = list(x)
    for c in x:
        if isinstance(c, (list, tuple, set, dict)) or c is None:
            raise TypeError(f"{name} must be a list of column names, got the entry {c!r}")
    if not x and not allow_empty:
        raise ValueError(f"{name} must name at least one column, got {name}=[]")
    dup = [c for i, c in enumerate(x) if c in x[:i]]
    if dup:
        raise ValueError(f"{name} names the column {dup[0]!r} twice")
    return x


def _profiles(similar) -> list:
    """Similarity profiles: a name -> [[name]]; a list of names -> one profile; a list of
    lists -> the profiles, in order."""
    if isinstance(similar, str):
        return [[similar]]
    if not isinstance(similar, (list, tuple)):
        raise TypeError(f"similar must be a list of similarity profiles (lists of column "
                        f"names), got {similar!r}")
    if not similar:
        raise ValueError("similar must hold at least one similarity profile, got similar=[]")
    if all(not isinstance(p, (list, tuple)) for p in similar):
        similar = [similar]
    out = []
    for i, p in enumerate(similar):
        if not isinstance(p, (list, tuple)):
            raise TypeError(f"similar[{i}] must be a list of column names, got {p!r} (mix "
                            f"no bare names with lists)")
        if not p:
            raise ValueError(f"similar[{i}] is an empty similarity profile: every profile "
                             f"must name at least one column (use a constant column to "
                             f"let any household be a donor)")
        out.append(_columns(list(p), f"similar[{i}]"))
    return out


def _real(x, name: str) -> float:
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise TypeError(f"{name} must be a number, got {name}={x!r}")
    x = float(x)
    if math.isnan(x):
        raise ValueError(f"{name} must be a number, got {name}=nan")
    return x


class TargetedSwapping:
    """Targeted record swapping of households across the areas of a geography hierarchy.

    Parameters
    ----------
    hierarchy : list of str
        The geography columns, highest level first (``["region", "district", "area"]``).
    risk_variables : list of str or None
        The columns whose combination, counted within an area, gives the risk
        (ignored with ``risk``; else required).
    similar : list of list of str
        Similarity profiles, tried in order: a donor must share the values of every
        column of the profile with the household (household-level columns).  A single
        list of names is one profile.
    swaprate : float in [0, 1], default 0.05
        The share of households to swap (one swap moves two households).
    k_anonymity : int >= 1, default 3
        A household whose count (persons of its area with its risk values) is below k
        at some level must be swapped at the highest such level (1: none must).
    risk_threshold : float >= 0, optional
        Must swap when the household's risk exceeds it (default ``1 / k_anonymity``).
    carry_along : list of str, optional
        Further columns exchanged with the geography (household-level).
    household : str, default "hid"
        The household id column.
    risk : list of str, optional
        Columns of the user's own risk, one per hierarchy level (sdcMicro's ``risk``):
        replace the counts.
    check_nesting : bool, default True
        Refuse geography where a code of a level lies in two codes of the level above
        (False: codes are read as relative to their parent, as the C++ does).

    Examples
    --------
    >>> import riskengine as rk
    >>> rk.TargetedSwapping(["region", "district"], ["age", "sex"], [["hsize"]], 0.1)
    TargetedSwapping(hierarchy=['region', 'district'], risk_variables=['age', 'sex'], similar=[['hsize']], swaprate=0.1, k_anonymity=3, household=hid)
    """

    name = "targeted_swapping"

    def __init__(self, hierarchy, risk_variables, similar, swaprate: float = 0.05,
                 k_anonymity: int = 3, *, risk_threshold: float | None = None,
                 carry_along=(), household: str = "hid", risk=None,
                 check_nesting: bool = True):
        self.hierarchy = _columns(hierarchy, "hierarchy")
        self.risk = None if risk is None else _columns(risk, "risk")
        if self.risk is not None and len(self.risk) != len(self.hierarchy):
            raise ValueError(f"risk must name one column per hierarchy level: "
                             f"{len(self.hierarchy)} levels, got {len(self.risk)} columns")
        if risk_variables is None and self.risk is None:
            raise ValueError("risk_variables must name at least one column (or give the "
                             "risk columns), got risk_variables=None")
        self.risk_variables = (None if risk_variables is None
                               else _columns(risk_variables, "risk_variables"))
        self.similar = _profiles(similar)
        self.swaprate = _real(swaprate, "swaprate")
        if not 0.0 <= self.swaprate <= 1.0:
            raise ValueError(f"swaprate must lie in [0, 1], got swaprate={self.swaprate}")
        if isinstance(k_anonymity, bool) or not isinstance(k_anonymity, numbers.Integral):
            raise TypeError(f"k_anonymity must be an integer, got k_anonymity={k_anonymity!r}")
        self.k_anonymity = int(k_anonymity)
        if self.k_anonymity < 1:
            raise ValueError(f"k_anonymity must be >= 1 (1: no household must be swapped), "
                             f"got k_anonymity={self.k_anonymity}")
        if risk_threshold is not None:
            risk_threshold = _real(risk_threshold, "risk_threshold")
            if risk_threshold < 0:
                raise ValueError(f"risk_threshold must be >= 0, got "
                                 f"risk_threshold={risk_threshold}")
        self.risk_threshold = risk_threshold
        self.carry_along = _columns(carry_along, "carry_along", allow_empty=True)
        if not isinstance(household, str) and (isinstance(household, bool) or
                                               not isinstance(household, int)):
            raise TypeError(f"household must be a column name, got household={household!r}")
        self.household = household
        if household in self.hierarchy:
            raise ValueError(f"the household column {household!r} is also in hierarchy")
        if household in self.carry_along:
            raise ValueError(f"the household column {household!r} cannot be carried along: "
                             f"households keep their ids")
        # carried-along hierarchy columns are swapped once (as sdcMicro's R front end)
        self.carry_along = [c for c in self.carry_along if c not in self.hierarchy]
        if not isinstance(check_nesting, (bool, np.bool_)):
            raise TypeError(f"check_nesting must be True or False, got {check_nesting!r}")
        self.check_nesting = bool(check_nesting)

    # --- description -----------------------------------------------------------------

    @property
    def threshold(self) -> float:
        """The risk above which a household must be swapped (``risk_threshold`` or 1/k)."""
        if self.risk_threshold is not None:
            return self.risk_threshold
        return 1.0 / self.k_anonymity

    def _params(self) -> dict:
        return {"hierarchy": list(self.hierarchy),
                "risk_variables": (None if self.risk_variables is None
                                   else list(self.risk_variables)),
                "similar": [list(p) for p in self.similar], "swaprate": self.swaprate,
                "k_anonymity": self.k_anonymity, "risk_threshold": self.risk_threshold,
                "carry_along": list(self.carry_along), "household": self.household,
                "risk": None if self.risk is None else list(self.risk),
                "check_nesting": self.check_nesting}

    def to_dict(self) -> dict:
        """The mechanism's name and parameters.

        Returns
        -------
        dict
            ``{"name": "targeted_swapping", **parameters}``; :meth:`from_dict` reads it.
        """
        return {"name": self.name, **self._params()}

    @classmethod
    def from_dict(cls, d: dict) -> TargetedSwapping:
        """The mechanism :meth:`to_dict` describes.

        Parameters
        ----------
        d : dict
            ``{"name": "targeted_swapping", **parameters}``.

        Returns
        -------
        TargetedSwapping
        """
        d = dict(d)
        name = d.pop("name", cls.name)
        if name != cls.name:
            raise ValueError(f"not a {cls.__name__} description: name={name!r}")
        return cls(**d)

    def describe(self) -> str:
        """One line naming the mechanism and its main parameters.

        Returns
        -------
        str
        """
        p = self._params()
        keep = ["hierarchy", "risk_variables", "similar", "swaprate", "k_anonymity"]
        parts = [f"{k}={p[k]}" for k in keep if p[k] is not None]
        for k in ("risk_threshold", "risk"):
            if p[k] is not None:
                parts.append(f"{k}={p[k]}")
        if p["carry_along"]:
            parts.append(f"carry_along={p['carry_along']}")
        parts.append(f"household={self.household}")
        return f"{type(self).__name__}({', '.join(parts)})"

    def __repr__(self) -> str:
        return self.describe()

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and other._params() == self._params()

    def __hash__(self) -> int:
        return hash(repr(self._params()))

    # --- protection ------------------------------------------------------------------

    def must_swap(self, microdata: pd.DataFrame) -> pd.DataFrame:
        """The deterministic part: each household's risk per level and its swap level.

        Parameters
        ----------
        microdata : pandas.DataFrame
            One row per person (see :meth:`protect`).

        Returns
        -------
        pandas.DataFrame
            One row per household (ascending id): the household id, its risk at each
            level (``risk_<column>``) and ``level`` (object dtype), the hierarchy column
            it must be swapped across (None: need not be swapped).
        """
        prep = _Prepared(self, microdata)
        out = {self.household: prep.ids}
        for j, col in enumerate(self.hierarchy):
            out[f"risk_{col}"] = prep.w[:, j]
        names = np.array(self.hierarchy + [None], dtype=object)
        out["level"] = pd.Series(names[prep.level], dtype=object)
        return pd.DataFrame(out)

    def protect(self, microdata: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
        """Swap households' geography (and carry-along columns) across areas.

        Parameters
        ----------
        microdata : pandas.DataFrame
            One row per person: the household column, the hierarchy columns (constant
            within a household), the risk variables, the similarity and carry-along
            columns; no missing values in them.  Never modified.
        rng : numpy.random.Generator
            The source of randomness (same generator state: same output).

        Returns
        -------
        pandas.DataFrame
            A new frame, same index, columns and dtypes; the hierarchy and carry-along
            columns of the swapped households exchanged.  ``attrs``: ``"swapped"``
            (columns ``household``, ``donor``, ``level`` (the hierarchy column the swap
            crossed), ``profile`` (index of the similarity profile used), ``reason``
            (``"risk"``: had to be swapped, ``"swaprate"``: drawn)), ``"unswapped"``
            (``household``, ``level``, ``reason``: had to be swapped, found no donor),
            both read-only dicts of tuples (``pandas.DataFrame(out.attrs["swapped"])``),
            and
            ``"swap_rate"``, the share of households swapped.
        """
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"rng must be a numpy.random.Generator "
                            f"(numpy.random.default_rng(seed)), got {type(rng).__name__}")
        prep = _Prepared(self, microdata)
        out = microdata.copy(deep=True)
        if prep.nh == 0:
            out.attrs.update(swapped=_log(household=(), donor=(), level=(), profile=(),
                                          reason=()),
                             unswapped=_log(household=(), level=(), reason=()), swap_rate=0.0)
            return out
        s, d, p, lev, fs, flev = _swap(prep, self.swaprate, rng)
        _exchange(out, microdata, prep, s, d, self.hierarchy + self.carry_along)
        names = self.hierarchy
        ids = prep.ids
        swapped = _log(household=ids[s].tolist(), donor=ids[d].tolist(),
                       level=[names[j] for j in lev.tolist()], profile=p.tolist(),
                       reason=np.where(prep.level[s] == lev, "risk", "swaprate").tolist())
        unswapped = _log(household=ids[fs].tolist(),
                         level=[names[j] for j in flev.tolist()],
                         reason=[f"no unswapped household outside its {names[j]!r} area "
                                 f"matches any similarity profile" for j in flev.tolist()])
        out.attrs.update(swapped=swapped, unswapped=unswapped,
                         swap_rate=2.0 * len(s) / prep.nh)
        return out


class _Log(dict):
    """A read-only dict of tuples (a log in ``attrs``): pandas deep-copies ``attrs`` on
    every derived frame, this one is shared instead (it cannot change)."""

    def _refuse(self, *args, **kwargs):
        raise TypeError("the swap log is read-only (copy it: dict(log))")

    __setitem__ = __delitem__ = update = pop = popitem = clear = setdefault = _refuse

    def __deepcopy__(self, memo):
        return self

    def __copy__(self):
        return self

    def __reduce__(self):
        return (_Log, (dict(self),))


def _log(**cols) -> _Log:
    out = _Log()
    for k, v in cols.items():
        dict.__setitem__(out, k, tuple(v))
    return out


# --- preparation: households, areas, risks ---------------------------------------------


def _py(x):
    """A NumPy scalar as the Python value (for messages)."""
    return x.item() if isinstance(x, np.generic) else x


def _codes(values, name: str) -> np.ndarray:
    """Integer codes of a column, in sorted order of its values (missing: an error)."""
    codes, _ = pd.factorize(values, sort=True, use_na_sentinel=True)
    if (codes < 0).any():
        row = int(np.flatnonzero(codes < 0)[0])
        raise ValueError(f"column {name!r} has a missing value (row position {row}): "
                         f"targeted swapping needs every value")
    return codes.astype(np.int64)


def _combine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Codes of the pairs ``(a, b)`` in lexicographic order."""
    key = a * (int(b.max()) + 1 if b.size else 1) + b
    return np.unique(key, return_inverse=True)[1].astype(np.int64).ravel()


class _Prepared:
    """Households (ascending id), their areas, similarity codes, risks and levels."""

    def __init__(self, mech: TargetedSwapping, df):
        if not isinstance(df, pd.DataFrame):
            raise TypeError(f"microdata must be a pandas.DataFrame (one row per person), "
                            f"got {type(df).__name__}")
        if not df.columns.is_unique:
            dup = df.columns[df.columns.duplicated()][0]
            raise ValueError(f"microdata has two columns named {dup!r}")
        need = {"household": [mech.household], "hierarchy": mech.hierarchy,
                "risk_variables": mech.risk_variables if mech.risk is None else [],
                "carry_along": mech.carry_along, "risk": mech.risk or []}
        for i, prof in enumerate(mech.similar):
            need[f"similar[{i}]"] = prof
        for what, cols in need.items():
            for c in cols:
                if c not in df.columns:
                    raise KeyError(f"{what} names the column {c!r}, not in the microdata "
                                   f"(columns: {list(df.columns)})")
        n = len(df)
        hid = _codes(df[mech.household].to_numpy(), mech.household)
        self.ids = np.asarray(pd.factorize(df[mech.household].to_numpy(), sort=True)[1])
        self.nh = nh = len(self.ids)
        self.inv = hid
        order = np.argsort(hid, kind="stable")
        starts = np.searchsorted(hid[order], np.arange(nh))
        self.first = order[starts] if n else np.zeros(0, np.int64)   # first row of each
        self.order, self.starts = order, starts
        L = len(mech.hierarchy)
        if nh == 0:
            self.area = np.zeros((L, 0), np.int64)
            self.sim = np.zeros((len(mech.similar), 0), np.int64)
            self.w = np.zeros((0, L))
            self.level = np.zeros(0, np.int64)
            return

        def household_level(col, what, strict=True):
            c = _codes(df[col].to_numpy(), col)
            bad = c != c[self.first[hid]]
            if bad.any():
                row = int(np.flatnonzero(bad)[0])
                h = _py(self.ids[hid[row]])
                msg = (f"{what} column {col!r} differs within household {h!r} (rows "
                       f"{int(self.first[hid[row]])} and {row}, positions)")
                if strict:
                    raise ValueError(msg + ": it must be constant within a household")
                warnings.warn(msg + ": each swapped household takes its first row's value",
                              UserWarning, stacklevel=4)
            return c[self.first]

        # areas: the path of codes down to each level, in lexicographic order
        geo = [household_level(c, "hierarchy") for c in mech.hierarchy]
        if mech.check_nesting:
            for j in range(1, L):
                pairs = np.unique(np.stack([geo[j], geo[j - 1]], axis=1), axis=0)
                child, cnt = np.unique(pairs[:, 0], return_counts=True)
                if (cnt > 1).any():
                    c = child[np.flatnonzero(cnt > 1)[0]]
                    parents = pairs[pairs[:, 0] == c, 1][:2]
                    vals = _py(df[mech.hierarchy[j]].to_numpy()[self.first][geo[j] == c][0])
                    pv = [_py(df[mech.hierarchy[j - 1]].to_numpy()[self.first][geo[j - 1] == q][0])
                          for q in parents]
                    raise ValueError(
                        f"geography is not nested: {mech.hierarchy[j]}={vals!r} lies in "
                        f"{mech.hierarchy[j - 1]}={pv[0]!r} and in "
                        f"{mech.hierarchy[j - 1]}={pv[1]!r} (codes relative to their parent: "
                        f"check_nesting=False)")
        area = np.empty((L, nh), np.int64)
        area[0] = geo[0]
        for j in range(1, L):
            area[j] = _combine(area[j - 1], geo[j])
        self.area = area

        # similarity codes per profile (household-level)
        self.sim = np.empty((len(mech.similar), nh), np.int64)
        hl = {}
        for i, prof in enumerate(mech.similar):
            code = None
            for c in prof:
                if c not in hl:
                    hl[c] = household_level(c, "similarity")
                code = hl[c] if code is None else _combine(code, hl[c])
            self.sim[i] = np.unique(code, return_inverse=True)[1].ravel()
        for c in mech.carry_along:
            _codes(df[c].to_numpy(), c)       # missing values
            household_level(c, "carry-along", strict=False)

        # risk per household and level
        if mech.risk is None:
            key = None
            for c in mech.risk_variables:
                rc = _codes(df[c].to_numpy(), c)
                key = rc if key is None else _combine(key, rc)
            w = np.empty((nh, L))
            for j in range(L):
                cell = _combine(area[j][hid], key)
                count = np.bincount(cell)[cell]
                # household: its smallest count (risk = 1/count, the maximum)
                cmin = np.minimum.reduceat(count[order], starts)
                w[:, j] = 1.0 / cmin
        else:
            w = np.empty((nh, L))
            for j, c in enumerate(mech.risk):
                col = df[c]
                if not pd.api.types.is_numeric_dtype(col) or pd.api.types.is_bool_dtype(col):
                    raise TypeError(f"risk column {c!r} must be numeric, got {col.dtype}")
                v = col.to_numpy(dtype=float, na_value=np.nan)
                if np.isnan(v).any() or (v < 0).any() or np.isinf(v).any():
                    row = int(np.flatnonzero(~(v >= 0) | np.isinf(v) | np.isnan(v))[0])
                    raise ValueError(f"risk column {c!r} must hold finite values >= 0, got "
                                     f"{_py(v[row])!r} at row position {row}")
                w[:, j] = np.maximum.reduceat(v[order], starts)
        self.w = w
        risky = w > mech.threshold
        self.level = np.where(risky.any(axis=1), np.argmax(risky, axis=1), L).astype(np.int64)


# --- the swapping itself -----------------------------------------------------------------


def _allocate(n_area: np.ndarray, total: int, rng) -> np.ndarray:
    """``total`` swaps over areas in proportion to ``n_area``, each share rounded at random
    (up with probability its fractional part; systematic over a random order: the shares
    add up to ``total``)."""
    perm = rng.permutation(len(n_area))
    return _allocate_at(n_area, total, perm, rng.random() * int(n_area.sum()))


def _allocate_at(n_area: np.ndarray, total: int, perm: np.ndarray, u: float) -> np.ndarray:
    """:func:`_allocate` for the areas' order ``perm`` and the systematic start ``u`` in
    [0, households): the shares change only where ``u`` crosses an integer."""
    nh = int(n_area.sum())
    prod = n_area.astype(np.int64) * total
    quota, rem = prod // nh, prod % nh
    c = np.cumsum(rem[perm]).astype(float)
    extra = np.ceil((c - u) / nh) - np.ceil((c - rem[perm] - u) / nh)
    quota[perm] += extra.astype(np.int64)
    return quota


def _start(codes: np.ndarray, n: int) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(np.bincount(codes, minlength=n))]).astype(np.int64)


def _swap(prep: _Prepared, swaprate: float, rng):
    """Run the levels; returns the swaps (household, donor, profile, level) and the
    households logged without a donor (household, level), as household indices."""
    nh, L = prep.nh, prep.area.shape[0]
    x = swaprate * nh / 2.0
    total = math.floor(x) + int(rng.random() < x - math.floor(x))
    low = prep.area[L - 1]
    n_low = int(low.max()) + 1
    quota = _allocate(np.bincount(low, minlength=n_low), total, rng)
    donor_key = prep.w / rng.standard_exponential((nh, L))
    sel_key = prep.w[:, L - 1] / rng.standard_exponential(nh)
    return _run(prep, quota, donor_key, sel_key)


def _run(prep: _Prepared, quota: np.ndarray, donor_key: np.ndarray, sel_key: np.ndarray):
    """The levels for drawn random inputs: each lowest-level area's number of swaps
    (``quota``), the donor keys ``(households, levels)`` (each level's donors in
    descending key; 0: never a donor) and the lowest-level draw keys (0: never drawn)."""
    nh, L = prep.nh, prep.area.shape[0]
    P = prep.sim.shape[0]
    idx = np.arange(nh)
    used = np.zeros(nh, np.bool_)
    failed = np.zeros(nh, np.bool_)
    out_s = np.empty(nh, np.int64)
    out_d = np.empty(nh, np.int64)
    out_p = np.empty(nh, np.int64)
    fail_s = np.empty(nh, np.int64)
    n_out = n_fail = 0
    lev_out, lev_fail = [], []
    n_codes = prep.sim.max(axis=1) + 1
    for j in range(L):
        area = prep.area[j]
        n_area = int(area.max()) + 1
        area_hh = np.argsort(area, kind="stable").astype(np.int64)
        area_start = _start(area, n_area)
        must = prep.level == j
        last = j == L - 1
        if last:
            before = np.bincount(area[out_s[:n_out]], minlength=n_area)
            q = np.maximum(quota - before, 0).astype(np.int64)
            ok = sel_key > 0
            sel = np.lexsort((idx, -sel_key, area))
            sel = sel[ok[sel]]
            sel_start = _start(area[sel], n_area)
        else:
            q = np.zeros(n_area, np.int64)
            sel = np.zeros(0, np.int64)
            sel_start = np.zeros(n_area + 1, np.int64)
        key = donor_key[:, j]
        elig = key > 0
        donor_ord = np.zeros((P, nh), np.int64)
        donor_len = np.zeros(P, np.int64)
        sim_start = np.zeros((P, int(n_codes.max()) + 1), np.int64)
        for p in range(P):
            o = np.lexsort((idx, -key, prep.sim[p]))
            o = o[elig[o]]
            donor_ord[p, :len(o)] = o
            donor_len[p] = len(o)
            sim_start[p, :n_codes[p] + 1] = _start(prep.sim[p][o], int(n_codes[p]))
            sim_start[p, n_codes[p] + 1:] = len(o)
        parent = np.tile(np.arange(nh + 1, dtype=np.int64), (P, 1))
        n0, f0 = n_out, n_fail
        n_out, n_fail = swap_level(last, area, area_hh, area_start, must, q,
                                   sel.astype(np.int64), sel_start, prep.sim, donor_ord,
                                   donor_len, sim_start, parent, used, failed,
                                   out_s, out_d, out_p, n_out, fail_s, n_fail)
        lev_out += [j] * (n_out - n0)
        lev_fail += [j] * (n_fail - f0)
    return (out_s[:n_out], out_d[:n_out], out_p[:n_out], np.array(lev_out, np.int64),
            fail_s[:n_fail], np.array(lev_fail, np.int64))


def _exchange(out: pd.DataFrame, df: pd.DataFrame, prep: _Prepared, s, d, columns) -> None:
    """Give every member of each swapped household the other household's values."""
    if len(s) == 0:
        return
    src = np.arange(prep.nh)
    src[s], src[d] = d, s
    take = np.arange(len(df))
    moved = src[prep.inv] != prep.inv
    take[moved] = prep.first[src[prep.inv[moved]]]
    for c in columns:
        col = df[c]
        out[c] = pd.Series(col.array.take(take), index=out.index, name=c)
