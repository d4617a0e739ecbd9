"""A seeded synthetic census: persons in households in a three-level geography.

For studies of census protection (targeted record swapping, the cell key method) on
data with the structure of a real census: persons live in households, households in
small areas, small areas in districts, districts in regions.  :class:`CensusPopulation`
holds the design (sizes and shares); :meth:`CensusPopulation.generate` draws one
population (one row per person), :meth:`CensusPopulation.hierarchy` gives the geography
as an :class:`riskengine.Hierarchy` and :meth:`CensusPopulation.tables` /
:meth:`CensusPopulation.hierarchies` a set of census-style tables for
:meth:`riskengine.TableSet.from_pandas`.

Notes
-----
The model:

* **Geography.** ``regions`` regions, each with ``districts`` districts, each with
  ``areas`` small areas; codes nest by prefix: region ``R1``, district ``R1D03``, small
  area ``R1D03A07``.
* **Area sizes.** The number of households of a small area is log-uniform between the
  bounds ``households=(low, high)`` (rounded; default 15 and 200): as many areas between
  20 and 40 households as between 100 and 200, so populations vary more than tenfold and
  about 7 % of the areas have fewer than 1.2 x ``low`` households -- those small areas
  (about 35-45 persons) carry the uniques of area x sex x age.
* **Household size** 1..k with shares ``household_sizes`` (default close to European
  censuses of the 2010s: 30 % one person, 33 % two, 16 % three, 13 % four, 6 % five,
  2 % six).
* **Household structure.** Every household has a reference person aged 15 or over
  (age band by household size: single-person households lean old, families lean 30-64).
  Households of two or more have a partner (80-85 %; same age band 75 %, else an
  adjacent adult band; opposite sex 98 %) or are lone-parent households (the parent
  female 80 %).  The remaining members are the reference person's children, their age
  band drawn given the parent's (0-14 only below a parent of 65); households of four or
  more hold a grandparent (65+) instead of one child in 6 % of cases.  So no child lives
  without an adult, and the age bands come out near 18 / 20 / 21 / 24 / 18 %.
* **Sex.** Children and grandparents 50 % female; one-person households 45 % female
  below 65, 65 % at 65 and over (widows).
* **A rare characteristic** ``rare`` (0/1, e.g. a long-term limiting illness) with
  overall expected share ``rare_share`` (default 2.5 %), more frequent with age: the
  rate in each age band is proportional to ``rare_age_ratio``
  (default 0.4, 0.6, 0.8, 1.2, 2.0), scaled so the expected share of the drawn
  population is exactly ``rare_share``.

Randomness: :meth:`~CensusPopulation.generate` draws one 128-bit root entropy from the
``rng`` it is given (always two 64-bit integers, whatever the population size) and
derives an independent stream for each step from it (area sizes, households, the rare
characteristic).  The same seed gives the same frame, the caller's generator advances by
the same amount for every design, and changing e.g. ``rare_share`` leaves the
households unchanged.

Examples
--------
>>> import numpy as np, riskengine as rk
>>> from riskengine.census import CensusPopulation
>>> pop = CensusPopulation(regions=1, districts=2, areas=3, households=(5, 20))
>>> df = pop.generate(np.random.default_rng(1))
>>> list(df.columns)
['pid', 'hid', 'region', 'district', 'area', 'sex', 'age', 'hhsize', 'rare']
>>> sorted(df["area"].unique())[:2]
['R1D1A1', 'R1D1A2']
>>> bool((df.groupby("hid")["pid"].count() == df.groupby("hid")["hhsize"].first()).all())
True
>>> ts = rk.TableSet.from_pandas(df, pop.tables(), hierarchies=pop.hierarchies())
>>> int(ts.tables["area_sex_age"].values.sum()) == len(df)
True
"""

from __future__ import annotations

import numbers

import numpy as np
import pandas as pd

from . import _validate as V
from ._seeding import derived_rng, root_entropy
from .hierarchy import Hierarchy

__all__ = ["CensusPopulation"]

AGE_BANDS = ("0-14", "15-29", "30-44", "45-64", "65+")
SEXES = ("F", "M")
LEVELS = ("region", "district", "area")

# age band (index into AGE_BANDS) of the reference person, by household size
_REF_AGE = {1: (0.0, 0.18, 0.17, 0.27, 0.38),
            2: (0.0, 0.10, 0.13, 0.35, 0.42),
            3: (0.0, 0.08, 0.47, 0.42, 0.03)}          # 3 and more
# age band of a child, given the reference person's band
_CHILD_AGE = np.array([(0.0, 0.0, 0.0, 0.0, 0.0),      # (no reference person is 0-14)
                       (1.0, 0.0, 0.0, 0.0, 0.0),
                       (0.80, 0.20, 0.0, 0.0, 0.0),
                       (0.25, 0.65, 0.10, 0.0, 0.0),
                       (0.0, 0.30, 0.60, 0.10, 0.0)])
_PARTNER = {2: 0.85, 3: 0.80}        # a partner in households of 2 / of 3 and more
_PARTNER_SAME_BAND = 0.75
_OPPOSITE_SEX = 0.98
_LONE_PARENT_FEMALE = 0.80
_SINGLE_FEMALE = (0.45, 0.65)        # one-person households: below 65 / 65+
_GRANDPARENT = 0.06                  # households of 4+: one member is a grandparent

_STREAM_AREAS, _STREAM_HOUSEHOLDS, _STREAM_RARE = 0, 1, 2


def _shares(x, name: str, length: int | None = None) -> np.ndarray:
    try:
        a = np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a sequence of numbers, got {x!r}") from None
    if a.ndim != 1 or a.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-d sequence, got {x!r}")
    if length is not None and a.size != length:
        raise ValueError(f"{name} must have {length} entries (one per age band "
                         f"{', '.join(AGE_BANDS)}), got {a.size}")
    if not np.all(np.isfinite(a)) or np.any(a < 0):
        raise ValueError(f"{name} must be finite and >= 0, got {x!r}")
    return a


def _width(n: int) -> int:
    return len(str(n))


class CensusPopulation:
    """The design of a synthetic census population (see the module docstring).

    Parameters
    ----------
    regions : int, default 1
        The number of regions (>= 1).
    districts : int, default 10
        Districts per region (>= 1).
    areas : int, default 10
        Small areas per district (>= 1).
    households : int or (int, int), default (15, 200)
        Households per small area: ``(low, high)`` bounds of a log-uniform draw (each
        area independently, rounded), or one int for equal areas; ``1 <= low <= high``.
    household_sizes : sequence of float, default (0.30, 0.33, 0.16, 0.13, 0.06, 0.02)
        The shares of households of 1, 2, ..., k persons (>= 0, summing to 1 within
        1e-6).
    rare_share : float, default 0.025
        The expected share of persons with the rare characteristic, in (0, 0.5].
    rare_age_ratio : sequence of 5 float, default (0.4, 0.6, 0.8, 1.2, 2.0)
        The relative rate of the rare characteristic in each age band
        (``0-14, 15-29, 30-44, 45-64, 65+``), > 0 somewhere; the rates are
        ``rare_share * ratio / mean ratio of the persons``, capped at 1.

    Attributes
    ----------
    age_bands : tuple of str
        ``("0-14", "15-29", "30-44", "45-64", "65+")``.
    n_areas : int
        ``regions * districts * areas``.

    Examples
    --------
    >>> pop = CensusPopulation(regions=2, districts=3, areas=4, households=(10, 50))
    >>> pop
    CensusPopulation(regions=2, districts=3, areas=4, households=(10, 50))
    >>> pop.n_areas, pop.area_codes()[:2]
    (24, ['R1D1A1', 'R1D1A2'])
    >>> pop.hierarchy(level="district").leaves
    ('R1D1', 'R1D2', 'R1D3', 'R2D1', 'R2D2', 'R2D3')
    """

    name = "census"
    age_bands = AGE_BANDS

    def __init__(self, regions: int = 1, districts: int = 10, areas: int = 10,
                 households=(15, 200),
                 household_sizes=(0.30, 0.33, 0.16, 0.13, 0.06, 0.02),
                 rare_share: float = 0.025,
                 rare_age_ratio=(0.4, 0.6, 0.8, 1.2, 2.0)):
        self.regions = V.integer(regions, "regions", 1)
        self.districts = V.integer(districts, "districts", 1)
        self.areas = V.integer(areas, "areas", 1)
        if isinstance(households, numbers.Real) and not isinstance(households, bool):
            households = (households, households)
        try:
            low, high = households
        except (TypeError, ValueError):
            raise ValueError("households must be an int or a pair (low, high) of "
                             f"households per small area, got {households!r}") from None
        low = V.integer(low, "households low bound", 1)
        high = V.integer(high, "households high bound", 1)
        if high < low:
            raise ValueError(f"households=(low, high) needs low <= high, got {households!r}")
        self.households = (low, high)
        sizes = _shares(household_sizes, "household_sizes")
        if abs(sizes.sum() - 1.0) > 1e-6:
            raise ValueError(f"household_sizes must sum to 1, got sum {sizes.sum()!r}")
        self.household_sizes = tuple(float(s) for s in sizes / sizes.sum())
        if isinstance(rare_share, bool) or not isinstance(rare_share, numbers.Real):
            raise TypeError(f"rare_share must be a real number, got {rare_share!r}")
        if not 0.0 < float(rare_share) <= 0.5:
            raise ValueError(f"rare_share must be in (0, 0.5], got {rare_share!r}")
        self.rare_share = float(rare_share)
        ratio = _shares(rare_age_ratio, "rare_age_ratio", len(AGE_BANDS))
        if not ratio.any():
            raise ValueError("rare_age_ratio must be > 0 in at least one age band")
        self.rare_age_ratio = tuple(float(r) for r in ratio)

    # --- geography -----------------------------------------------------------------

    @property
    def n_areas(self) -> int:
        """The number of small areas, ``regions * districts * areas``."""
        return self.regions * self.districts * self.areas

    def _tree(self) -> dict:
        wr, wd, wa = _width(self.regions), _width(self.districts), _width(self.areas)
        tree = {}
        for r in range(1, self.regions + 1):
            rc = f"R{r:0{wr}d}"
            tree[rc] = {}
            for d in range(1, self.districts + 1):
                dc = f"{rc}D{d:0{wd}d}"
                tree[rc][dc] = {f"{dc}A{a:0{wa}d}": {} for a in range(1, self.areas + 1)}
        return tree

    def area_codes(self) -> list:
        """The small areas' codes, in order.

        Returns
        -------
        list of str
            ``n_areas`` codes such as ``"R1D03A07"`` (numbers zero-padded to the width of
            the largest).
        """
        return [a for r in self._tree().values() for d in r.values() for a in d]

    def hierarchy(self, level: str = "area", total="Total") -> Hierarchy:
        """The geography as a hierarchy of codes, down to ``level``.

        Parameters
        ----------
        level : {"area", "district", "region"}, default "area"
            The leaves: small areas (regions > districts > areas), districts
            (regions > districts) or regions.
        total : hashable, default "Total"
            The code of the root.

        Returns
        -------
        riskengine.Hierarchy
            ``{region: {district: {area: {}}}}`` (cut at ``level``), named ``"area"``
            when its leaves are small areas, else after ``level``.
        """
        V.choice(level, "level", LEVELS)
        depth = LEVELS.index(level)

        def cut(t, k):
            return {c: (cut(sub, k - 1) if k else {}) for c, sub in t.items()}
        return Hierarchy(cut(self._tree(), depth), total=total, name=level)

    # --- tables --------------------------------------------------------------------

    def tables(self) -> dict:
        """Census-style table definitions for :meth:`riskengine.TableSet.from_pandas`.

        The geography of every table is the ``area`` column; the district table is cut
        at district level by its hierarchy (:meth:`hierarchies`), so its cells are the
        district subtotals of the area tables -- the same cells, one set of equations.
        (``hierarchies={"area": pop.hierarchy()}`` would publish that table at area
        detail; a table on the ``district`` column instead works too, but as a variable
        of its own, unlinked to the area tables' subtotals.)

        Returns
        -------
        dict
            ``{"area_sex_age": ["area", "sex", "age"], "area_hhsize": ["area",
            "hhsize"], "district_rare_age": ["area", "rare", "age"]}``.
        """
        return {"area_sex_age": ["area", "sex", "age"],
                "area_hhsize": ["area", "hhsize"],
                "district_rare_age": ["area", "rare", "age"]}

    def hierarchies(self, total="Total") -> dict:
        """The per-table hierarchies of :meth:`tables`, for ``TableSet.from_pandas``.

        Parameters
        ----------
        total : hashable, default "Total"
            The code of the root.

        Returns
        -------
        dict
            ``{table: {"area": rk.Hierarchy}}``: the full geography for the area tables,
            the geography down to districts for ``district_rare_age``.
        """
        full = self.hierarchy("area", total=total)
        district = self.hierarchy("district", total=total)
        return {name: {"area": district if name.startswith("district_") else full}
                for name in self.tables()}

    # --- drawing -------------------------------------------------------------------

    def generate(self, rng) -> pd.DataFrame:
        """One population: a row per person, households in areas in code order.

        Parameters
        ----------
        rng : numpy.random.Generator or int
            The source of randomness (an int: a seed).  Exactly one 128-bit entropy is
            drawn from a generator (two 64-bit integers, whatever the design), so the
            same seed gives the same frame and the caller's later draws do not depend on
            the population's size.

        Returns
        -------
        pandas.DataFrame
            Columns ``pid`` (int, 1..n), ``hid`` (int, 1..households), ``region``,
            ``district``, ``area`` (nested codes, str), ``sex`` (``"F"``/``"M"``),
            ``age`` (one of :attr:`age_bands`), ``hhsize`` (int, the number of persons
            of the household) and ``rare`` (int, 0/1).
        """
        if isinstance(rng, numbers.Integral) and not isinstance(rng, bool):
            rng = np.random.default_rng(int(rng))
        entropy = root_entropy(rng)       # raises TypeError for anything else

        # households per area: log-uniform between the bounds
        low, high = self.households
        g = derived_rng(entropy, _STREAM_AREAS)
        n_hh_area = np.rint(np.exp(g.uniform(np.log(low), np.log(high + 0.5),
                                             self.n_areas))).astype(np.int64)
        n_hh_area = np.clip(n_hh_area, low, high)
        n_hh = int(n_hh_area.sum())

        g = derived_rng(entropy, _STREAM_HOUSEHOLDS)
        k = len(self.household_sizes)
        size = g.choice(np.arange(1, k + 1), size=n_hh, p=self.household_sizes)
        age, female, hh = self._members(g, size)

        g = derived_rng(entropy, _STREAM_RARE)
        ratio = np.asarray(self.rare_age_ratio)
        mean = ratio[age].mean()
        p = np.minimum(self.rare_share * ratio[age] / mean, 1.0) if mean > 0 else \
            np.zeros(len(age))
        rare = (g.random(len(age)) < p).astype(np.int64)

        codes = self.area_codes()
        area_of_hh = np.repeat(np.arange(self.n_areas), n_hh_area)
        area = np.asarray(codes, dtype=object)[area_of_hh[hh]]
        wr, wd = 1 + _width(self.regions), 1 + _width(self.regions) + 1 + _width(
            self.districts)
        area_s = pd.Series(area, dtype=object)
        return pd.DataFrame({
            "pid": np.arange(1, len(age) + 1, dtype=np.int64),
            "hid": hh.astype(np.int64) + 1,
            "region": area_s.str[:wr].astype(object),
            "district": area_s.str[:wd].astype(object),
            "area": area_s,
            "sex": np.where(female, "F", "M").astype(object),
            "age": np.asarray(AGE_BANDS, dtype=object)[age],
            "hhsize": size[hh].astype(np.int64),
            "rare": rare,
        })

    @staticmethod
    def _members(g: np.random.Generator, size: np.ndarray):
        """The persons of households of the given sizes: (age band index, female,
        household index), one entry per person, households in order, the reference
        person first."""
        n = len(size)
        bands = np.arange(len(AGE_BANDS))
        # the reference person's age band, by household size (1, 2, 3+)
        ref = np.empty(n, dtype=np.int64)
        for s, probs in _REF_AGE.items():
            m = (size == s) if s < 3 else (size >= 3)
            ref[m] = g.choice(bands, size=int(m.sum()), p=probs)
        partner = np.zeros(n, dtype=bool)
        m2, m3 = size == 2, size >= 3
        partner[m2] = g.random(int(m2.sum())) < _PARTNER[2]
        partner[m3] = g.random(int(m3.sum())) < _PARTNER[3]
        # sexes of the reference person
        u = g.random(n)
        ref_female = np.where(size == 1,
                              u < np.where(ref == 4, _SINGLE_FEMALE[1], _SINGLE_FEMALE[0]),
                              np.where(partner, u < 0.5, u < _LONE_PARENT_FEMALE))
        # the partner: same band or an adjacent adult band; mostly the opposite sex
        step = np.where(g.random(n) < 0.5, -1, 1)
        p_band = np.where(g.random(n) < _PARTNER_SAME_BAND, ref,
                          np.clip(ref + step, 1, 4))
        p_female = np.where(g.random(n) < _OPPOSITE_SEX, ~ref_female, ref_female)
        # a grandparent in households of 4+ (when the reference person is below 65)
        grand = (size >= 4) & (ref < 4) & (g.random(n) < _GRANDPARENT)

        # persons: slot 0 the reference person, slot 1 the partner if any, then children
        # (the last slot the grandparent if any)
        hh = np.repeat(np.arange(n), size)
        start = np.concatenate(([0], np.cumsum(size)[:-1]))
        slot = np.arange(len(hh)) - start[hh]
        n_adults = 1 + partner.astype(np.int64)
        is_ref = slot == 0
        is_partner = (slot == 1) & partner[hh]
        is_grand = grand[hh] & (slot == size[hh] - 1) & (slot >= n_adults[hh])
        # children's bands given the parent's: inverse-cdf on one uniform each
        u = g.random(len(hh))
        cdf = np.cumsum(_CHILD_AGE, axis=1)
        child_band = np.minimum((u[:, None] >= cdf[ref[hh]]).sum(axis=1), 4)
        age = np.select([is_ref, is_partner, is_grand], [ref[hh], p_band[hh], 4],
                        child_band)
        female = np.select([is_ref, is_partner], [ref_female[hh], p_female[hh]],
                           g.random(len(hh)) < 0.5)
        return age.astype(np.int64), female.astype(bool), hh

    # --- description ----------------------------------------------------------------

    def to_dict(self) -> dict:
        """The design as plain JSON-able data.

        Returns
        -------
        dict
            ``{"name": "census", "regions": ..., "districts": ..., "areas": ...,
            "households": [low, high], "household_sizes": [...], "rare_share": ...,
            "rare_age_ratio": [...]}``.
        """
        return {"name": self.name, "regions": self.regions, "districts": self.districts,
                "areas": self.areas, "households": list(self.households),
                "household_sizes": list(self.household_sizes),
                "rare_share": self.rare_share, "rare_age_ratio": list(self.rare_age_ratio)}

    def describe(self) -> str:
        """A short name with the geography (for reports and ``repr``).

        Returns
        -------
        str
            E.g. ``CensusPopulation(regions=1, districts=10, areas=10,
            households=(15, 200))``.
        """
        return (f"CensusPopulation(regions={self.regions}, districts={self.districts}, "
                f"areas={self.areas}, households={self.households})")

    def __repr__(self) -> str:
        return self.describe()
