"""A seeded synthetic population of census blocks, modelled on the 2010 US census.

For reconstruction-attack studies of block-level publications such as the 2010 Summary
File 1: many small blocks, each published in several overlapping tables, so the
person-level records are often pinned down by the tables alone.  :class:`BlockPopulation`
holds the design (geography and shares); :meth:`BlockPopulation.generate` draws one
population (one row per person), :meth:`BlockPopulation.hierarchy` gives the geography
as an :class:`riskengine.Hierarchy` and :meth:`BlockPopulation.tables` /
:meth:`BlockPopulation.hierarchies` a set of SF1-style tables for
:meth:`riskengine.TableSet.from_pandas`.

Notes
-----
The model:

* **Geography.** ``counties`` counties, each with ``tracts`` tracts; a tract has between
  ``blocks=(low, high)`` blocks (uniform, inclusive).  The number of blocks per tract is
  part of the design, not of a population: it is drawn from ``layout_seed`` (default 0)
  when the design is made, so :meth:`~BlockPopulation.hierarchy` needs no generator and
  every population of one design has the same blocks.  Codes nest by prefix, zero-padded
  to the widest: county ``C1``, tract ``C1T03``, block ``C1T03B07``.
* **Block sizes.** Persons per block log-uniform between ``persons=(low, high)``
  (rounded; default 5 and 120, mean about 36): as many blocks of 5-10 persons as of
  60-120, and every block has at least ``low`` >= 1 persons, so each block of the
  hierarchy is in the data.  The default design (20 tracts of 10-40 blocks, about 500
  blocks) holds about 18,000 persons (``layout_seed=0``: 532 blocks; one population of
  them 19,236 persons).  Its :meth:`~BlockPopulation.tables` make a
  :class:`riskengine.TableSet` of 532 x 2 x 23 x 2 x 6 x 2 finest cells (about 670,000
  cells in all), built in about 10 s (the richer ``tables("sf1")``: 427,014 published
  cells, about 25 s and 1.6 GB); a design of a few tracts builds in well under 1 s.
* **Age** in the 23 bands of the 2010 table P12 (:data:`AGE_BANDS`), with about the 2010
  national shares (:data:`AGE_SHARES`; 24 % below 18), the same in every tract; the
  derived ``voting_age`` is ``"<18"`` for the bands below 18, else ``"18+"``.
* **Sex** female with a share rising with age (49 % below 25, 50-51 % from 25 to 64,
  up to 67 % at 85+).
* **Race** in six groups: the five single races of 2010 and ``"Other"``, which folds
  "Some Other Race" and "Two or More Races" together (9.1 %).  Each tract draws its race
  shares from a Dirichlet with mean ``race_shares`` (default the 2010 national shares)
  and concentration ``concentration`` (default 10: the White share of a tract has a
  standard deviation of about 0.13), so tracts differ as segregated neighbourhoods do,
  which makes reconstruction easier; persons draw their race from their tract's shares.
* **Hispanic origin** ``"H"``/``"N"``: each tract draws its Hispanic share from a beta
  with mean ``hispanic_share`` (default 0.163) and the same concentration, independently
  of its race shares; persons draw from it independently of race.

Randomness: :meth:`~BlockPopulation.generate` draws one 128-bit root entropy from the
``rng`` it is given (two 64-bit integers, whatever the design) and derives an independent
stream for each step (block sizes, age and sex, race, Hispanic origin): the same seed
gives the same frame, and changing e.g. ``concentration`` leaves sizes, ages and sexes
unchanged.

Examples
--------
>>> import numpy as np, riskengine as rk
>>> from riskengine.census_blocks import BlockPopulation
>>> pop = BlockPopulation(tracts=2, blocks=(3, 5), persons=(5, 40))
>>> pop.blocks_per_tract
(5, 5)
>>> df = pop.generate(np.random.default_rng(1))
>>> list(df.columns)
['pid', 'county', 'tract', 'block', 'sex', 'age', 'voting_age', 'race', 'hispanic']
>>> df["block"].iloc[0], df["block"].nunique() == pop.n_blocks
('C1T1B1', True)
>>> ts = rk.TableSet.from_pandas(df, pop.tables(), hierarchies=pop.hierarchies())
>>> ts.dims
('block', 'sex', 'age', 'race', 'hispanic')
>>> int(ts.tables["P12_tract_sex_age_race"].values.sum()) == len(df)
True
"""

from __future__ import annotations

import numbers

import numpy as np
import pandas as pd

from . import _validate as V
from ._seeding import derived_rng, root_entropy
from .hierarchy import Hierarchy

__all__ = ["BlockPopulation"]

SEXES = ("F", "M")
AGE_BANDS = ("0-4", "5-9", "10-14", "15-17", "18-19", "20", "21", "22-24", "25-29",
             "30-34", "35-39", "40-44", "45-49", "50-54", "55-59", "60-61", "62-64",
             "65-66", "67-69", "70-74", "75-79", "80-84", "85+")
# about the 2010 national shares (per cent) of the P12 bands
AGE_SHARES = tuple(np.array([6.5, 6.6, 6.7, 4.2, 2.9, 1.4, 1.4, 4.1, 6.8, 6.5, 6.5, 6.8,
                             7.4, 7.2, 6.4, 2.4, 3.1, 1.7, 2.3, 3.0, 2.4, 1.9, 1.8]) / 100)
_MINOR_BANDS = 4                                   # 0-4 .. 15-17 are below 18
# the female share of each band
_FEMALE = np.array([0.49] * 4 + [0.49] * 4 + [0.50] * 4 + [0.51] * 5 + [0.53] * 2
                   + [0.55, 0.58, 0.62, 0.67])
RACES = ("White", "Black", "AIAN", "Asian", "NHPI", "Other")
RACE_SHARES = (0.724, 0.126, 0.009, 0.048, 0.002, 0.091)      # 2010; Other incl. two+
HISPANIC = ("H", "N")
VOTING_AGE = ("18+", "<18")
LEVELS = ("county", "tract", "block")
PUBLICATIONS = ("basic", "sf1")
# the "sf1" publication: each definition and the 2010 SF1 tables it stands for
_SF1 = {"P1_block_total": ["block"],
        "P3_block_race": ["block", "race"],
        "P4_block_hisp": ["block", "hispanic"],
        "P5_block_hisp_race": ["block", "race", "hispanic"],
        "P10_block_votingage_race": ["block", "age", "race"],
        "P11_block_votingage_race_hisp": ["block", "age", "race", "hispanic"],
        "P12_block_sex_age": ["block", "sex", "age"],
        "P12AF_block_sex_age_race": ["block", "sex", "age", "race"],
        "P12H_block_sex_age_hisp": ["block", "sex", "age", "hispanic"],
        "PCT12_tract_sex_age_race_hisp": ["block", "sex", "age", "race", "hispanic"]}
SF1_TABLES = {"P1_block_total": ("P1",), "P3_block_race": ("P3",),
              "P4_block_hisp": ("P4",), "P5_block_hisp_race": ("P5",),
              "P10_block_votingage_race": ("P10",),
              "P11_block_votingage_race_hisp": ("P11",),
              "P12_block_sex_age": ("P12",),
              "P12AF_block_sex_age_race": ("P12A", "P12B", "P12C", "P12D", "P12E", "P12F"),
              "P12H_block_sex_age_hisp": ("P12H",),
              "PCT12_tract_sex_age_race_hisp": ("PCT12H", "PCT12I", "PCT12J", "PCT12K",
                                                "PCT12L", "PCT12M", "PCT12N")}

_STREAM_SIZES, _STREAM_AGE_SEX, _STREAM_RACE, _STREAM_HISPANIC = 0, 1, 2, 3
_STREAM_LAYOUT = 0


def _pair(x, name: str, what: str) -> tuple:
    """``(low, high)`` integers, ``1 <= low <= high``, from a pair or one int."""
    if isinstance(x, numbers.Real) and not isinstance(x, bool):
        x = (x, x)
    try:
        low, high = x
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be an int or a pair (low, high) of {what}, "
                         f"got {x!r}") from None
    low = V.integer(low, f"{name} low bound", 1)
    high = V.integer(high, f"{name} high bound", 1)
    if high < low:
        raise ValueError(f"{name}=(low, high) needs low <= high, got {x!r}")
    return low, high


def _positive(x, name: str) -> float:
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {x!r}")
    if not (np.isfinite(float(x)) and float(x) > 0):
        raise ValueError(f"{name} must be finite and > 0, got {name}={x!r}")
    return float(x)


def _width(n: int) -> int:
    return len(str(n))


class BlockPopulation:
    """The design of a synthetic block-level population (see the module docstring).

    Parameters
    ----------
    counties : int, default 1
        The number of counties (>= 1).
    tracts : int, default 20
        Tracts per county (>= 1).
    blocks : int or (int, int), default (10, 40)
        Blocks per tract: ``(low, high)`` bounds of a uniform draw (inclusive, each tract
        independently, from ``layout_seed``), or one int for equal tracts;
        ``1 <= low <= high``.
    persons : int or (int, int), default (5, 120)
        Persons per block: ``(low, high)`` bounds of a log-uniform draw (each block
        independently, rounded, from :meth:`generate`'s ``rng``), or one int;
        ``1 <= low <= high``.
    race_shares : sequence of 6 float, default :data:`RACE_SHARES`
        The mean race shares of a tract (``White, Black, AIAN, Asian, NHPI, Other``),
        >= 0, summing to 1 within 1e-6.
    hispanic_share : float, default 0.163
        The mean Hispanic share of a tract, in (0, 1).
    concentration : float, default 10.0
        The concentration of the tracts' Dirichlet (race) and beta (Hispanic) draws,
        > 0: small values make tracts differ more (more segregation), large values make
        them all close to the mean shares.
    layout_seed : int, default 0
        The seed (>= 0) of the number of blocks per tract.

    Attributes
    ----------
    blocks_per_tract : tuple of int
        The number of blocks of each tract, in code order.
    n_blocks, n_tracts : int
        The numbers of blocks and of tracts.
    age_bands, races : tuple of str
        :data:`AGE_BANDS` and :data:`RACES`.

    Examples
    --------
    >>> pop = BlockPopulation(counties=2, tracts=3, blocks=(2, 12))
    >>> pop
    BlockPopulation(counties=2, tracts=3, blocks=(2, 12), persons=(5, 120))
    >>> pop.n_tracts, pop.block_codes()[:2]
    (6, ['C1T1B01', 'C1T1B02'])
    >>> pop.hierarchy(level="tract").leaves
    ('C1T1', 'C1T2', 'C1T3', 'C2T1', 'C2T2', 'C2T3')

    The default design and one population of it:

    >>> pop = BlockPopulation()
    >>> pop.n_tracts, pop.n_blocks, len(pop.generate(np.random.default_rng(2010)))
    (20, 532, 19236)
    """

    name = "census_blocks"
    age_bands = AGE_BANDS
    races = RACES

    def __init__(self, counties: int = 1, tracts: int = 20, blocks=(10, 40),
                 persons=(5, 120), race_shares=RACE_SHARES, hispanic_share: float = 0.163,
                 concentration: float = 10.0, layout_seed: int = 0):
        self.counties = V.integer(counties, "counties", 1)
        self.tracts = V.integer(tracts, "tracts", 1)
        self.blocks = _pair(blocks, "blocks", "blocks per tract")
        self.persons = _pair(persons, "persons", "persons per block")
        try:
            shares = np.asarray(race_shares, dtype=float)
        except (TypeError, ValueError):
            raise TypeError("race_shares must be a sequence of numbers, "
                            f"got {race_shares!r}") from None
        if shares.shape != (len(RACES),):
            raise ValueError(f"race_shares must have {len(RACES)} entries (one per race "
                             f"{', '.join(RACES)}), got {race_shares!r}")
        if not np.all(np.isfinite(shares)) or np.any(shares < 0):
            raise ValueError(f"race_shares must be finite and >= 0, got {race_shares!r}")
        if abs(shares.sum() - 1.0) > 1e-6:
            raise ValueError(f"race_shares must sum to 1, got sum {shares.sum()!r}")
        self.race_shares = tuple(float(s) for s in shares / shares.sum())
        h = _positive(hispanic_share, "hispanic_share")
        if not h < 1.0:
            raise ValueError(f"hispanic_share must be in (0, 1), got {hispanic_share!r}")
        self.hispanic_share = h
        self.concentration = _positive(concentration, "concentration")
        self.layout_seed = V.integer(layout_seed, "layout_seed", 0)
        low, high = self.blocks
        g = derived_rng(self.layout_seed, _STREAM_LAYOUT)
        self.blocks_per_tract = tuple(int(b) for b in
                                      g.integers(low, high + 1, self.n_tracts))

    # --- geography -----------------------------------------------------------------

    @property
    def n_tracts(self) -> int:
        """The number of tracts, ``counties * tracts``."""
        return self.counties * self.tracts

    @property
    def n_blocks(self) -> int:
        """The number of blocks, ``sum(blocks_per_tract)``."""
        return sum(self.blocks_per_tract)

    def _tree(self) -> dict:
        wc, wt, wb = _width(self.counties), _width(self.tracts), _width(self.blocks[1])
        tree, k = {}, 0
        for c in range(1, self.counties + 1):
            cc = f"C{c:0{wc}d}"
            tree[cc] = {}
            for t in range(1, self.tracts + 1):
                tc = f"{cc}T{t:0{wt}d}"
                tree[cc][tc] = {f"{tc}B{b:0{wb}d}": {}
                                for b in range(1, self.blocks_per_tract[k] + 1)}
                k += 1
        return tree

    def block_codes(self) -> list:
        """The blocks' codes, in order.

        Returns
        -------
        list of str
            ``n_blocks`` codes such as ``"C1T03B07"`` (numbers zero-padded to the width
            of ``counties``, ``tracts`` and the ``blocks`` high bound).
        """
        return [b for c in self._tree().values() for t in c.values() for b in t]

    def hierarchy(self, level: str = "block", total="Total") -> Hierarchy:
        """The geography as a hierarchy of codes, down to ``level``.

        Parameters
        ----------
        level : {"block", "tract", "county"}, default "block"
            The leaves: blocks (counties > tracts > blocks), tracts (counties > tracts)
            or counties.
        total : hashable, default "Total"
            The code of the root.

        Returns
        -------
        riskengine.Hierarchy
            ``{county: {tract: {block: {}}}}`` (cut at ``level``), named after
            ``level``; its blocks are those of every population of the design.
        """
        V.choice(level, "level", LEVELS)
        depth = LEVELS.index(level)

        def cut(t, k):
            return {c: (cut(sub, k - 1) if k else {}) for c, sub in t.items()}
        return Hierarchy(cut(self._tree(), depth), total=total, name=level)

    # --- tables --------------------------------------------------------------------

    def tables(self, publication: str = "basic") -> dict:
        """SF1-style table definitions for :meth:`riskengine.TableSet.from_pandas`.

        Parameters
        ----------
        publication : {"basic", "sf1"}, default "basic"
            Which publication (:data:`PUBLICATIONS`).

            ``"basic"`` (5 definitions, 10 SF1 tables): ``P1`` (total population) and
            ``P12`` (sex by age) by block; ``P11`` by block (Hispanic origin by race for
            the population 18 and over); by tract ``P12A-F`` (sex by age for each race,
            here six groups, as one definition) and ``P12H`` (sex by age, Hispanic, with
            its non-Hispanic complement).

            ``"sf1"`` (10 definitions, 21 SF1 tables; :data:`SF1_TABLES` maps each
            definition to the 2010 tables it stands for): by block ``P1``, ``P3``
            (race), ``P4`` (Hispanic origin), ``P5`` (Hispanic origin by race),
            ``P10`` (race, 18 and over, with its under-18 complement), ``P11``, ``P12``,
            ``P12A-F`` (six tables as one definition: sex by age by race) and ``P12H``;
            by tract ``PCT12H-N`` (sex by age by race by Hispanic origin: the
            Hispanic table and one non-Hispanic table per race, as one definition; the
            2010 tables count single years of age, here the 23 bands).  This is the
            block-level detail the 2010 reconstruction attack used (Abowd et al. 2023:
            P12A-I at block level, PCT12 at tract level).

        The geography of every table is the ``block`` column; the tract tables are cut
        at tract level by their hierarchy (:meth:`hierarchies`), so their cells are the
        tract subtotals of the same records as the block tables' -- one set of
        equations linking block and tract cells.  Voting age is a grouping of ``age``,
        not a variable of its own: the P12 tables' age hierarchy groups the 23 bands
        into ``"<18"`` and ``"18+"``, and P10/P11 count ages at that level (their cells
        are those subtotals), so the finest cells have no structural zeros.  The
        categories of sex, race and Hispanic origin are those of the data
        (``from_pandas``): a small population may lack e.g. ``"NHPI"``.

        Returns
        -------
        dict
            ``{name: [columns]}``; for ``"basic"``: ``{"P1_block_total": ["block"],
            "P12_block_sex_age": ["block", "sex", "age"],
            "P11_block_votingage_race_hisp": ["block", "age", "race", "hispanic"],
            "P12_tract_sex_age_race": ["block", "sex", "age", "race"],
            "P12_tract_sex_age_hisp": ["block", "sex", "age", "hispanic"]}``.

        Examples
        --------
        >>> pop = BlockPopulation(tracts=1, blocks=2)
        >>> len(pop.tables("sf1")), sum(len(v) for v in SF1_TABLES.values())
        (10, 21)
        """
        V.choice(publication, "publication", PUBLICATIONS)
        if publication == "sf1":
            return {name: list(cols) for name, cols in _SF1.items()}
        return {"P1_block_total": ["block"],
                "P12_block_sex_age": ["block", "sex", "age"],
                "P11_block_votingage_race_hisp": ["block", "age", "race", "hispanic"],
                "P12_tract_sex_age_race": ["block", "sex", "age", "race"],
                "P12_tract_sex_age_hisp": ["block", "sex", "age", "hispanic"]}

    def age_hierarchy(self, voting_age_only: bool = False, total="Total") -> Hierarchy:
        """Age: the 23 bands grouped into ``"<18"`` and ``"18+"`` (voting age).

        Parameters
        ----------
        voting_age_only : bool
            The two groups as leaves (P11's age).
        total : hashable, default "Total"

        Returns
        -------
        riskengine.Hierarchy
        """
        minor, adult = AGE_BANDS[:_MINOR_BANDS], AGE_BANDS[_MINOR_BANDS:]
        if voting_age_only:
            return Hierarchy({"<18": {}, "18+": {}}, total=total, name="age")
        return Hierarchy({"<18": {a: {} for a in minor}, "18+": {a: {} for a in adult}},
                         total=total, name="age")

    def hierarchies(self, total="Total", publication: str = "basic") -> dict:
        """The per-table hierarchies of :meth:`tables`, for ``TableSet.from_pandas``.

        Parameters
        ----------
        total : hashable, default "Total"
            The code of the root.
        publication : {"basic", "sf1"}, default "basic"
            As for :meth:`tables`.

        Returns
        -------
        dict
            ``{table: {"block": rk.Hierarchy, "age": rk.Hierarchy}}``: the full
            geography for the block tables, the geography down to tracts for the tract
            tables (``_tract_`` in the name); age by band under voting age for the P12
            tables, voting age alone for P10 and P11.
        """
        full = self.hierarchy("block", total=total)
        tract = self.hierarchy("tract", total=total)
        out = {}
        for name, cols in self.tables(publication).items():
            h = {"block": tract if "_tract_" in name else full}
            if "age" in cols:
                h["age"] = self.age_hierarchy(name.startswith(("P10", "P11")), total=total)
            out[name] = h
        return out

    # --- drawing -------------------------------------------------------------------

    def generate(self, rng) -> pd.DataFrame:
        """One population: a row per person, blocks in code order.

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
            Columns ``pid`` (int, 1..n), ``county``, ``tract``, ``block`` (nested codes,
            str; every block of :meth:`block_codes` has at least one person), ``sex``
            (``"F"``/``"M"``), ``age`` (one of :data:`AGE_BANDS`), ``voting_age``
            (``"18+"``/``"<18"``, from ``age``), ``race`` (one of :data:`RACES`) and
            ``hispanic`` (``"H"``/``"N"``).
        """
        if isinstance(rng, numbers.Integral) and not isinstance(rng, bool):
            rng = np.random.default_rng(int(rng))
        entropy = root_entropy(rng)       # raises TypeError for anything else

        # persons per block: log-uniform between the bounds
        low, high = self.persons
        g = derived_rng(entropy, _STREAM_SIZES)
        size = np.rint(np.exp(g.uniform(np.log(low), np.log(high + 0.5),
                                        self.n_blocks))).astype(np.int64)
        size = np.clip(size, low, high)
        block_of = np.repeat(np.arange(self.n_blocks), size)
        tract_of_block = np.repeat(np.arange(self.n_tracts), self.blocks_per_tract)
        tract_of = tract_of_block[block_of]
        n = len(block_of)

        g = derived_rng(entropy, _STREAM_AGE_SEX)
        age = g.choice(len(AGE_BANDS), size=n, p=np.asarray(AGE_SHARES) / sum(AGE_SHARES))
        female = g.random(n) < _FEMALE[age]

        # race: tract shares from a Dirichlet around the mean, persons by inverse cdf
        g = derived_rng(entropy, _STREAM_RACE)
        mean = np.asarray(self.race_shares)
        shares = np.zeros((self.n_tracts, len(RACES)))
        pos = mean > 0
        shares[:, pos] = g.dirichlet(self.concentration * mean[pos], self.n_tracts)
        cdf = np.cumsum(shares, axis=1)
        cdf[:, np.flatnonzero(pos)[-1]:] = 1.0        # no rounding past the last group
        race = (g.random(n)[:, None] >= cdf[tract_of]).sum(axis=1)

        g = derived_rng(entropy, _STREAM_HISPANIC)
        c, h = self.concentration, self.hispanic_share
        hisp_share = g.beta(c * h, c * (1 - h), self.n_tracts)
        hispanic = g.random(n) < hisp_share[tract_of]

        tree = self._tree()
        counties = np.asarray([cc for cc, t in tree.items() for _ in t], dtype=object)
        tracts = np.asarray([tc for t in tree.values() for tc in t], dtype=object)
        blocks = np.asarray(self.block_codes(), dtype=object)
        return pd.DataFrame({
            "pid": np.arange(1, n + 1, dtype=np.int64),
            "county": counties[tract_of],
            "tract": tracts[tract_of],
            "block": blocks[block_of],
            "sex": np.where(female, "F", "M").astype(object),
            "age": np.asarray(AGE_BANDS, dtype=object)[age],
            "voting_age": np.where(age < _MINOR_BANDS, "<18", "18+").astype(object),
            "race": np.asarray(RACES, dtype=object)[race],
            "hispanic": np.where(hispanic, "H", "N").astype(object),
        })

    # --- description ----------------------------------------------------------------

    def to_dict(self) -> dict:
        """The design as plain JSON-able data.

        Returns
        -------
        dict
            ``{"name": "census_blocks", "counties": ..., "tracts": ..., "blocks": [low,
            high], "persons": [low, high], "race_shares": [...], "hispanic_share": ...,
            "concentration": ..., "layout_seed": ...}``.
        """
        return {"name": self.name, "counties": self.counties, "tracts": self.tracts,
                "blocks": list(self.blocks), "persons": list(self.persons),
                "race_shares": list(self.race_shares),
                "hispanic_share": self.hispanic_share,
                "concentration": self.concentration, "layout_seed": self.layout_seed}

    def describe(self) -> str:
        """A short name with the geography (for reports and ``repr``).

        Returns
        -------
        str
            E.g. ``BlockPopulation(counties=1, tracts=20, blocks=(10, 40),
            persons=(5, 120))``.
        """
        return (f"BlockPopulation(counties={self.counties}, tracts={self.tracts}, "
                f"blocks={self.blocks}, persons={self.persons})")

    def __repr__(self) -> str:
        return self.describe()
