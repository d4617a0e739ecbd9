"""The intruder's posterior under targeted record swapping (TRS) followed by the cell key
method (CKM), with secret parameters: a simulation-based route (issue 31, item 3).

Swapping is data-dependent (households at risk are always moved, donors are drawn by
risk), so Pr(published | original) is not a product over cells and no exact route over
a census-size publication exists.  What an intruder can do, and what this computes, is to
run the real mechanism many times on populations drawn from a model of the population
(the intruder's prior: a :class:`riskengine.census.CensusPopulation`, whose shape the
agency's publication reveals) with secret parameters drawn from a prior over candidate
settings (swap rates, k, p-tables: ``settings``), and to read off, for every kind of cell
and published value, how the original values fell:

    Pr(original = x | published = y, kind) ~= (simulated cells of that kind published as y
    with original x) / (simulated cells of that kind published as y),

a likelihood-free (approximate Bayesian computation) estimate of the per-cell posterior,
exact in the limit of many simulations for an intruder whose prior is the population
model and the settings' prior.  A cell's *kind* is its table, the level of its geography
code (total, region, district, area) and the set of its other dims at their totals: cells
of one kind are exchangeable under the model.  Also estimated: Pr(a published 1 is one
real person of that area with those characteristics) -- original 1 and the person not
swapped out.

What it is not (named in ``attrs["approximation"]`` of the result):

* each cell is conditioned on its own published value and kind only, not on every other
  published cell (the whole publication's likelihood is what TRS makes intractable
  beyond a few households; :mod:`riskengine._census_exact` computes it for those); the
  secret parameters are averaged over their prior, not updated by the publication;
* the answer is only as good as the population model (a wrong model, a wrong prior);
* Monte Carlo: every estimate comes with its cluster-robust standard error over the
  simulations (cells of one simulated publication are not independent), and a (kind,
  value) with fewer than ``min_cells`` simulated cells is left NaN rather than guessed.

Validation (tests/uses/test_census_posterior.py): with the cell key method alone the
per-cell posterior is known exactly -- the simulated prior of the kind's cells times the
p-table's row (a cell's key is uniform whatever the other cells hold) -- and the route
agrees with it within its standard errors; over 500 freshly simulated publications its
claimed Pr(original = published) is calibrated (|z| <= 3, :func:`riskengine._simulate.
calibration`'s cluster-robust statistic).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import xarray as xr

from . import _validate as V

__all__ = [
    "CensusPosterior",
    "Setting",
    "cell_kinds",
    "census_verdict",
    "intruder_posterior",
    "simulate_cells",
]


@dataclass(frozen=True)
class Setting:
    """One candidate of the secret protection: a swapping (or None), a cell key method (or
    None) and its prior weight.

    Parameters
    ----------
    swapping : rk.TargetedSwapping or None
    cell_key : rk.CellKey or None
    weight : float, default 1.0
        Prior weight (> 0; the weights are normalised).
    """

    swapping: object = None
    cell_key: object = None
    weight: float = 1.0

    def describe(self) -> str:
        """A one-line description.

        Returns
        -------
        str
        """
        sw = "no swapping" if self.swapping is None else (
            f"TRS swaprate {self.swapping.swaprate:g}, k {self.swapping.k_anonymity}")
        ck = "no cell key" if self.cell_key is None else self.cell_key.describe()
        return f"{sw}; {ck} (weight {self.weight:g})"


@dataclass(frozen=True)
class CensusPosterior:
    """The simulation-based posterior of a census publication (:func:`intruder_posterior`).

    Attributes
    ----------
    cells : xarray.Dataset
        Over ``cell`` (every published cell of the publication; coords ``label``,
        ``kind``): ``published``; ``prob_exact`` = Pr(original = published) and its
        ``prob_exact_se``; ``mean`` (posterior mean of the original) and ``mean_se``;
        ``prob_real_one`` (published 1 only: Pr(one original person, not swapped out))
        and its ``prob_real_one_se``; ``n_similar``: simulated cells of the same kind
        published at the same value.  NaN where fewer than ``min_cells`` were simulated.
    pmf : xarray.Dataset
        ``count`` over ``(kind, published, original)``: the simulated cells; ``n`` over
        ``(kind, published)`` (the exact route, :func:`riskengine._census_exact.
        exact_intruder_posterior`: ``prob`` over ``(cell, original)``).
    candidates : xarray.DataArray or None
        The exact route's posterior of each candidate original microdata.
    settings : xarray.DataArray or None
        The exact route's posterior of each candidate setting.
    """

    cells: xr.Dataset
    pmf: xr.Dataset
    candidates: xr.DataArray | None = None
    settings: xr.DataArray | None = None

    @property
    def attrs(self) -> dict:
        """The result's labels (``approximate``, ``approximation``, ``route``, ``sims``,
        ``settings``, ...): ``cells.attrs``."""
        return self.cells.attrs

    def risk_table(self, small=(1, 2)) -> pd.DataFrame:
        """Per kind and small published value: cells of the publication, mean
        Pr(original = published) and mean Pr(real one).

        Parameters
        ----------
        small : sequence of int, default (1, 2)

        Returns
        -------
        pandas.DataFrame
        """
        c = self.cells
        df = pd.DataFrame({"kind": c["kind"].values, "published": c["published"].values,
                           "prob_exact": c["prob_exact"].values,
                           "prob_real_one": c["prob_real_one"].values})
        df = df[df["published"].isin(list(small))]
        return (df.groupby(["kind", "published"])
                .agg(cells=("prob_exact", "size"), prob_exact=("prob_exact", "mean"),
                     prob_real_one=("prob_real_one", "mean")).reset_index())

    def expected_disclosures(self, small=(1, 2)) -> pd.DataFrame:
        """Per table and over the set: the cells published at a ``small`` count, the
        expected number of them whose original equals the published value (the sum of
        their Pr(original = published)), and the expected number of published 1s that are
        one real person.

        The standard error is conservative: cells of one kind and published value share
        one estimate, and the estimates' errors are added linearly (an upper bound whatever
        their correlation); 0 for the exact route.  NaN where a cell has no estimate.

        Parameters
        ----------
        small : sequence of int, default (1, 2)

        Returns
        -------
        pandas.DataFrame
            Columns ``table``, ``cells``, ``expected_exact``, ``expected_exact_se``,
            ``expected_real_ones``; the last row is ``"all"``.
        """
        c = self.cells
        y = c["published"].values
        sel = np.isin(y, list(small))
        df = pd.DataFrame({"table": [str(k).split("|")[0] for k in c["kind"].values[sel]],
                           "p": c["prob_exact"].values[sel],
                           "se": c["prob_exact_se"].values[sel],
                           "one": np.where(y[sel] == 1, c["prob_real_one"].values[sel], 0.0)})
        rows = []
        for name, g in [*df.groupby("table", sort=True), ("all", df)]:
            rows.append({"table": name, "cells": len(g),
                         "expected_exact": float(g.p.sum(skipna=False)),
                         "expected_exact_se": float(g.se.sum(skipna=False)),
                         "expected_real_ones": float(g.one.sum(skipna=False))})
        return pd.DataFrame(rows, columns=["table", "cells", "expected_exact",
                                           "expected_exact_se", "expected_real_ones"])


# --- the kinds of cells ------------------------------------------------------------------
def _levels(population) -> dict:
    """``{geography code: level}``: 0 the total, 1 regions, 2 districts, 3 areas."""
    out = {}
    tree = population._tree()

    def walk(t, k):
        for code, sub in t.items():
            out[code] = k
            walk(sub, k + 1)
    walk(tree, 1)
    return out


def cell_kinds(system, population, geo: str = "area") -> np.ndarray:
    """Every cell's kind: ``table|geo level|dims not at their totals`` (an object array
    over the cells; ``""`` for cells no table publishes).

    Parameters
    ----------
    system : riskengine.cell_system.CellSystem
    population : rk.census.CensusPopulation
    geo : str, default "area"
        The geography dim.

    Returns
    -------
    numpy.ndarray
    """
    cells = system.cells
    levels = _levels(population)
    names = ["total", "region", "district", "area"]
    out = np.full(len(cells), "", dtype=object)
    pub = cells["published"].to_numpy(bool)
    first = np.array([t[0] if t else "" for t in cells["tables"]], dtype=object)
    for table in system.grids:
        rows = np.flatnonzero(pub & (first == table))
        if not rows.size:
            continue
        tdims = system.grids[table][0]
        tot = system.totals[table]
        lev = ([names[levels.get(code, 0)] for code in cells[geo].to_numpy()[rows]]
               if geo in tdims else ["-"] * rows.size)
        off = [np.where(cells[d].to_numpy()[rows] != tot[d], d, "") for d in tdims
               if d != geo]
        others = ["x".join(p for p in combo if p) or "total" for combo in zip(*off)] \
            if off else ["total"] * rows.size
        out[rows] = [f"{table}|{g}|{o}" for g, o in zip(lev, others)]
    return out


# --- simulations -------------------------------------------------------------------------
def _real_ones(pub) -> np.ndarray:
    """Per cell: the original count is 1 and that person is still in the cell after
    swapping (same ``pid`` in one of the cell's finest cells)."""
    from ._publication import _finest_cell
    s = pub.original.system
    M = s.M.tocsc()
    x0 = pub.original.values
    f_o = _finest_cell(pub.people, pub.original)
    new_of = dict(zip(pub.swapped["pid"].to_numpy().tolist(), range(len(pub.swapped))))
    f_n_all = _finest_cell(pub.swapped, pub.original)
    f_n = np.array([f_n_all[new_of[p]] for p in pub.people["pid"].to_numpy().tolist()],
                   np.int64)
    A_o = M[:, f_o]
    A_n = M[:, f_n]
    stay = np.asarray(A_o.multiply(A_n).sum(axis=1)).ravel()
    return (x0 == 1) & (stay == 1)


def simulate_cells(population, tables, settings, sims: int, rng, geo: str = "area",
                   progress=None) -> pd.DataFrame:
    """Run the protection ``sims`` times on fresh populations: one row per published cell
    of every simulated publication.

    Parameters
    ----------
    population : rk.census.CensusPopulation
    tables : dict
        ``{name: dims}`` (the publication's tables).
    settings : sequence of Setting
        Candidate settings; each simulation draws one by weight.
    sims : int
        Simulated publications.
    rng : numpy.random.Generator
    geo : str, default "area"
    progress : callable(done, total), optional

    Returns
    -------
    pandas.DataFrame
        Columns ``sim``, ``setting``, ``kind``, ``original``, ``published``,
        ``real_one``.
    """
    from ._publication import protect_publication
    w = np.array([s.weight for s in settings], float)
    w = w / w.sum()
    hier = population.hierarchies()
    frames = []
    for k in range(sims):
        g = int(rng.choice(len(settings), p=w))
        st = settings[g]
        people = population.generate(rng)
        try:
            pub = protect_publication(people, tables, hier, st.swapping, st.cell_key, rng)
        except ValueError as e:
            raise ValueError(f"simulation {k}: {e} (give the population model categories "
                             "that every draw holds)") from None
        s = pub.original.system
        kinds = cell_kinds(s, population, geo)
        sel = s.published
        real = _real_ones(pub)
        frames.append(pd.DataFrame({"sim": k, "setting": g, "kind": kinds[sel],
                                    "original": pub.original.values[sel].astype(np.int64),
                                    "published": np.rint(pub.release.values[sel])
                                    .astype(np.int64),
                                    "real_one": real[sel]}))
        if progress is not None:
            progress(k + 1, sims)
    return pd.concat(frames, ignore_index=True)


def _ratio(num: pd.DataFrame, den: pd.DataFrame):
    """Ratio estimates ``sum num / sum den`` per group (columns: the groups, rows: the
    simulations) and their cluster-robust standard errors over the simulations."""
    N = den.sum(axis=0)
    q = num.sum(axis=0) / N.where(N > 0)
    resid = num - den * q
    se = np.sqrt((resid ** 2).sum(axis=0)) / N.where(N > 0)
    return q, se


def intruder_posterior(pub, population, settings, sims: int = 200, rng=None,
                       min_cells: int = 30, geo: str = "area", progress=None,
                       simulated: pd.DataFrame | None = None) -> CensusPosterior:
    """The intruder's per-cell posterior of a census publication protected by TRS and /
    or the cell key method with secret parameters, by simulation (see the module).

    Parameters
    ----------
    pub : Publication
        From :func:`riskengine._publication.protect_publication` (its release is what is
        read; the original in it is never used).
    population : rk.census.CensusPopulation
        The intruder's model of the population.
    settings : sequence of Setting
        The intruder's prior over the secret settings.
    sims : int, default 200
        Simulated publications.
    rng : numpy.random.Generator
    min_cells : int, default 30
        A (kind, published value) needs at least this many simulated cells.
    geo : str, default "area"
    progress : callable(done, total), optional
    simulated : pandas.DataFrame, optional
        :func:`simulate_cells`' output to reuse (``sims`` and ``rng`` are then unused).

    Returns
    -------
    CensusPosterior

    Examples
    --------
    >>> import numpy as np, riskengine as rk
    >>> from riskengine._publication import protect_publication
    >>> from riskengine._census_posterior import Setting, intruder_posterior
    >>> pop = rk.census.CensusPopulation(districts=2, areas=2, households=(5, 15))
    >>> ck = rk.CellKey(D=2, V=1.0)
    >>> pub = protect_publication(pop.generate(np.random.default_rng(0)), pop.tables(),
    ...                           pop.hierarchies(), None, ck, np.random.default_rng(1))
    >>> post = intruder_posterior(pub, pop, [Setting(cell_key=ck)], sims=20,
    ...                           rng=np.random.default_rng(2), min_cells=5)
    >>> post.attrs["approximate"], post.cells.sizes["cell"] == int(
    ...     pub.release.system.published.sum())
    (1, True)
    """
    settings = list(settings)
    if not settings or not all(isinstance(s, Setting) for s in settings):
        raise TypeError("settings must be a non-empty sequence of Setting (the intruder's "
                        "candidates for the secret swapping and cell key parameters)")
    if any(not (np.isfinite(s.weight) and s.weight > 0) for s in settings):
        raise ValueError("every Setting's weight must be a positive finite number, got "
                         f"{[s.weight for s in settings]}")
    min_cells = V.integer(min_cells, "min_cells", 1)
    if simulated is None:
        sims = V.integer(sims, "sims", 1)
        if rng is None:
            raise ValueError("rng is required: the simulated populations and protections "
                             "are drawn from it")
        simulated = simulate_cells(population, pub.tables, settings, sims, rng, geo,
                                   progress)
    n_sims = int(simulated["sim"].nunique())
    sim = simulated
    # per (kind, published) and simulation: cells, cells with original = published, sum
    # of originals, real ones
    key = ["kind", "published"]
    grp = sim.assign(hit=(sim["original"] == sim["published"]).astype(float),
                     one=sim["real_one"].astype(float), cnt=1.0)
    agg = grp.groupby(key + ["sim"])[["cnt", "hit", "original", "one"]].sum()
    wide = {c: agg[c].unstack(level=key).fillna(0.0) for c in ("cnt", "hit", "original",
                                                                "one")}
    den = wide["cnt"]
    p_hit, se_hit = _ratio(wide["hit"], den)
    mean, se_mean = _ratio(wide["original"], den)
    p_one, se_one = _ratio(wide["one"], den)
    N = den.sum(axis=0)
    enough = N >= min_cells

    s = pub.release.system
    kinds = cell_kinds(s, population, geo)
    sel = np.flatnonzero(s.published)
    y = np.rint(pub.release.values[sel]).astype(np.int64)
    idx = pd.MultiIndex.from_arrays([kinds[sel], y], names=key)

    def look(series, ones_only=False):
        v = series.where(enough).reindex(idx).to_numpy(dtype=float)
        if ones_only:
            v = np.where(y == 1, v, np.nan)
        return v

    labels = np.asarray(s.labels(), dtype=object)[sel]
    approx = ("simulation-based (likelihood-free) per-cell posterior: each cell conditioned "
              "on its own published value and kind (table, geography level, dims at their "
              "totals), not on every other published cell; the secret settings averaged "
              "over their prior, not updated by the publication; the population model is "
              "the intruder's prior; Monte Carlo standard errors over "
              f"{n_sims} simulated publications")
    cells = xr.Dataset(
        {"published": ("cell", y),
         "prob_exact": ("cell", look(p_hit)), "prob_exact_se": ("cell", look(se_hit)),
         "mean": ("cell", look(mean)), "mean_se": ("cell", look(se_mean)),
         "prob_real_one": ("cell", look(p_one, True)),
         "prob_real_one_se": ("cell", look(se_one, True)),
         "n_similar": ("cell", N.reindex(idx).fillna(0).to_numpy(dtype=np.int64))},
        coords={"cell": np.arange(sel.size), "label": ("cell", labels),
                "kind": ("cell", kinds[sel].astype(str))},
        attrs={"approximate": 1, "exact": 0, "approximation": approx,
               "route": "census-simulation", "sims": n_sims, "min_cells": min_cells,
               "settings": "; ".join(f"[{i}] {st.describe()}"
                                     for i, st in enumerate(settings)),
               "population": population.describe(),
               "cells_without_estimate": int(np.isnan(look(p_hit)).sum())})
    counts = sim.groupby(key + ["original"]).size()
    pmf = counts.to_xarray().fillna(0).astype(np.int64).rename("count").to_dataset()
    pmf["n"] = N.to_xarray().fillna(0).astype(np.int64)
    pmf.attrs.update({"sims": n_sims})
    return CensusPosterior(cells=cells, pmf=pmf)


def census_verdict(post: CensusPosterior, threshold: float = 0.5, small=(1, 2),
                   sigmas: float = 2.0) -> tuple:
    """PASS / FAIL / UNDECIDED for a census publication from its simulation-based
    posterior: a cell published at a ``small`` count FAILs when its Pr(original =
    published) is at or above ``threshold`` by more than ``sigmas`` Monte Carlo standard
    errors; the verdict is UNDECIDED when some such cell is within ``sigmas`` s.e. of the
    threshold or has no estimate (too few simulated cells), and PASS otherwise.

    Parameters
    ----------
    post : CensusPosterior
    threshold : float, default 0.5
    small : sequence of int, default (1, 2)
    sigmas : float, default 2.0

    Returns
    -------
    tuple
        ``(label, reasons)``: ``"PASS"``, ``"FAIL"`` or ``"UNDECIDED"``, and a list of
        sentences.
    """
    c = post.cells
    y = c["published"].values
    judged = np.isin(y, list(small))
    p = c["prob_exact"].values[judged]
    se = c["prob_exact_se"].values[judged]
    labels = c["label"].values[judged]
    missing = ~np.isfinite(p)
    fail = np.isfinite(p) & (p - sigmas * np.nan_to_num(se) >= threshold)
    near = np.isfinite(p) & ~fail & (p + sigmas * np.nan_to_num(se) >= threshold)
    reasons = [(f"{int(judged.sum())} cells published at {list(small)} judged against "
               f"Pr(original = published) >= {threshold:g} (Monte Carlo margin {sigmas:g} "
               f"s.e.; simulation-based, approximate)")]
    if fail.any():
        worst = np.argsort(-p[fail])[:5]
        reasons.append(f"{int(fail.sum())} cells at or above the threshold, e.g. " + ", ".join(
            f"{labels[fail][i]} {p[fail][i]:.3f}" for i in worst))
        return "FAIL", reasons
    if near.any() or missing.any():
        if near.any():
            reasons.append(f"{int(near.sum())} cells within {sigmas:g} s.e. of the "
                           "threshold (more simulations decide them)")
        if missing.any():
            reasons.append(f"{int(missing.sum())} cells without an estimate (fewer than "
                           f"{post.attrs['min_cells']} similar simulated cells)")
        return "UNDECIDED", reasons
    reasons.append(f"the largest Pr(original = published) is {np.nanmax(p):.3f}"
                   if p.size else "no cell is published at a small count")
    return "PASS", reasons
