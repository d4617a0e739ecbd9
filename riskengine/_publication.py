"""A census publication protected the way the 2021 round protected it: targeted record
swapping (TRS) on the microdata, then the cell key method (CKM) on every table, with one
record key per record (the same records give the same perturbation in every table) --
and the measures of risk and utility the ESS guidelines ask for, computed for a proposed
parameter setting so that a board can choose by numbers rather than by trial and error.

:func:`protect_publication` runs the pipeline (either step may be left out);
:func:`publication_measures` compares the published set with the original one, cell by
cell and record by record.  These are the measures an agency can compute knowing the
original (empirical, for one protected publication; average them over seeds for their
expectation); the intruder's posterior under TRS + CKM with secret parameters is in
:mod:`riskengine._census_posterior`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import xarray as xr

__all__ = ["Publication", "additive_relations", "differencing_measures", "protect_publication",
           "publication_measures"]


@dataclass(frozen=True)
class Publication:
    """A protected census publication and what produced it.

    Parameters
    ----------
    original : rk.TableSet
        Every table of the set from the original microdata.
    release : rk.TableSetRelease
        What is published: the tables of the swapped microdata, each cell perturbed by its
        cell key (or exact when no cell key method is applied).
    swapped : pandas.DataFrame
        The microdata after swapping (the original when no swapping), with the record keys
        (column ``record_key``) when the cell key method was applied.
    tables : dict
        ``{name: dims}``: the table definitions (public).
    public : dict
        What the agency publishes about the protection (the table definitions, the
        p-table when ``publish_ptable``).
    secret : dict
        What it keeps secret (swap rate, k, similarity profiles; the p-table's D and V
        when not published; the record keys).
    people : pandas.DataFrame
        The original records (confidential: the agency's view, for the measures).
    """

    original: object
    release: object
    swapped: pd.DataFrame
    tables: dict
    people: pd.DataFrame | None = None
    public: dict = field(default_factory=dict)
    secret: dict = field(default_factory=dict)


def protect_publication(people, tables, hierarchies=None, swapping=None, cell_key=None,
                        rng=None, publish_ptable: bool = False) -> Publication:
    """Protect a census publication: swapping on the records, then the cell key method on
    every cell of every table.

    Parameters
    ----------
    people : pandas.DataFrame
        One row per person (``rk.census.CensusPopulation().generate(rng)`` or real data),
        with a household id column when ``swapping`` is given.
    tables : dict
        ``{name: dims}``: the publication's tables (columns of ``people``).
    hierarchies : dict, optional
        As :meth:`riskengine.TableSet.from_pandas` takes them (one per dim, or per table).
    swapping : rk.TargetedSwapping, optional
        Targeted record swapping applied first (None: none).
    cell_key : rk.CellKey, optional
        The cell key method applied to every cell (None: the swapped tables are published
        exactly).
    rng : numpy.random.Generator
        Draws the swaps and the record keys.
    publish_ptable : bool, default False
        Whether the p-table is public (the guidelines advise keeping D secret).

    Returns
    -------
    Publication
        The original set, the release, the swapped records and what is public / secret.

    Examples
    --------
    >>> import numpy as np, riskengine as rk
    >>> from riskengine._publication import protect_publication
    >>> pop = rk.census.CensusPopulation(districts=2, areas=3)
    >>> people = pop.generate(np.random.default_rng(1))
    >>> trs = rk.TargetedSwapping(["region", "district", "area"], ["sex", "age"],
    ...                           [["hhsize"]], swaprate=0.05, k_anonymity=3)
    >>> pub = protect_publication(people, pop.tables(), pop.hierarchies(), trs,
    ...                           rk.CellKey(D=2, V=1.0), np.random.default_rng(2))
    >>> bool(np.isfinite(pub.release.values[pub.release.system.published]).all())
    True
    """
    from .mechanisms.cell_key import CellKey
    from .table_set import TableSet, TableSetRelease

    if not isinstance(people, pd.DataFrame):
        raise TypeError(f"people must be a pandas DataFrame (one row per person), got "
                        f"{type(people).__name__}")
    if rng is None and (swapping is not None or cell_key is not None):
        raise ValueError("rng is required: the swaps and the record keys are drawn from it")
    tables = {str(k): list(v) for k, v in dict(tables).items()}
    original = TableSet.from_pandas(people, tables, hierarchies=hierarchies)
    swapped = swapping.protect(people, rng) if swapping is not None else people.copy()
    published = TableSet.from_pandas(swapped, tables, hierarchies=hierarchies)
    if published.system.n_var != original.system.n_var:
        raise ValueError("the swapped records give another structure than the original "
                         "(a category disappeared?): give hierarchies / categories so that "
                         "every code is kept")
    public = {"tables": tables, "swapping": "targeted record swapping"
              if swapping is not None else None,
              "cell_key": "cell key method" if cell_key is not None else None}
    secret = {}
    if swapping is not None:
        secret["swapping"] = swapping.to_dict()
        secret["swap_rate_realised"] = float(swapped.attrs.get("swap_rate", np.nan))
    if cell_key is not None:
        keys = CellKey.record_keys(len(swapped), rng)
        swapped = swapped.copy()
        swapped["record_key"] = keys
        finest = _finest_keys(swapped, published)
        release = cell_key.protect(published, keys=finest)
        (public if publish_ptable else secret)["ptable"] = cell_key.to_dict()
        secret["record_keys"] = "one per record (column record_key)"
    else:
        s = published.system
        release = TableSetRelease(published, np.where(s.published, published.values, np.nan),
                                  _Exact())
    return Publication(original=original, release=release, swapped=swapped, tables=tables,
                       people=people, public=public, secret=secret)


class _Exact:
    """The swapped tables published as they are (no cell perturbation)."""

    name = "exact"
    structure_routes = ()

    def describe(self) -> str:
        return "published exactly (after swapping)"

    def to_dict(self) -> dict:
        return {"mechanism": "exact"}


def _as_codes(records, ts):
    """``records`` with every finest dim's column of the type of the set's codes."""
    s = ts.system
    out = records
    for d in s.dims:
        codes = list(s.coords[d])
        if codes and len(out) and not isinstance(out[d].iloc[0], type(codes[0])):
            out = out.assign(**{d: out[d].astype(type(codes[0]))})
    return out


def _finest_keys(records, ts) -> np.ndarray:
    """Each finest cell's key: the fractional part of the sum of its records' keys."""
    from .mechanisms.cell_key import CellKey
    s = ts.system
    cats = {d: list(s.coords[d]) for d in s.dims}
    _, keys = CellKey.tabulate(_as_codes(records, ts), list(s.dims), categories=cats)
    return keys


def _finest_cell(records, ts) -> np.ndarray:
    """Every record's finest cell (the system's first cells are the finest)."""
    s = ts.system
    records = _as_codes(records, ts)
    idx = []
    for d in s.dims:
        pos = {c: i for i, c in enumerate(s.coords[d])}
        try:
            idx.append(np.fromiter((pos[c] for c in records[d].tolist()), np.int64,
                                   len(records)))
        except KeyError as exc:
            raise ValueError(f"a record's {d!r} code {exc.args[0]!r} is not among the set's "
                             "codes") from None
    return np.ravel_multi_index(tuple(idx), s.shape)


def publication_measures(pub: Publication, small=(1, 2)) -> xr.Dataset:
    """Risk and utility of a protected publication against its original, per table and over
    the set (the measures of the ESS census guidelines, chapter 5, and more).

    Parameters
    ----------
    pub : Publication
        From :func:`protect_publication`.
    small : sequence of int, default (1, 2)
        The small published counts whose exactness is measured.

    Returns
    -------
    xarray.Dataset
        Over ``table`` (each table, and ``"all"``: every cell of the set once):

        - ``cells``: published cells;
        - ``share_equal``: share of cells published at their original value (the simple
          measure in use);
        - ``exact_ones``: share of original 1-cells published as 1 whose one person is the
          original person (not a person swapped in): the cell an intruder reads as
          "exactly one such person here" really is that person;
        - ``ones_kept``: share of original 1-cells still published as 1 (real or not);
        - ``prob_equal_small_<v>``: among cells published as ``v``, the share whose
          original is ``v`` (the empirical Pr(original = published | published = v));
        - ``mean_abs_dev``: mean absolute deviation of published from original;
        - ``share_changed``: share of cells whose published value differs;
        - ``hellinger``: Hellinger distance between the original and published cell
          distributions (finest cells of each table);
        - ``cramers_v_change``: |V(published) - V(original)| of Cramér's V of the table's
          published margin of its first two dims (NaN over the set).
    """
    orig_ts = pub.original
    rel = pub.release
    s = orig_ts.system
    x0 = orig_ts.values
    y = rel.values
    pub_cells = s.published
    names = list(s.grids)
    rows = {}
    orig = pub.people if pub.people is not None and "pid" in pub.people else None
    for name in names + ["all"]:
        if name == "all":
            sel = pub_cells.copy()
        else:
            _, _, ids = s.grids[name]
            sel = np.zeros(s.n_var, bool)
            sel[np.unique(ids[ids >= 0])] = True
            sel &= pub_cells
        a, b = x0[sel], y[sel]
        r = {"cells": int(sel.sum()), "share_equal": float(np.mean(a == b)),
             "mean_abs_dev": float(np.mean(np.abs(a - b))),
             "share_changed": float(np.mean(a != b))}
        ones = a == 1
        r["ones_kept"] = float(np.mean(b[ones] == 1)) if ones.any() else np.nan
        r["exact_ones"] = _exact_ones(pub, orig, sel, x0, y) if orig is not None else np.nan
        for v in small:
            at_v = b == v
            r[f"prob_equal_small_{v}"] = float(np.mean(a[at_v] == v)) if at_v.any() \
                else np.nan
        pa = np.clip(a, 0, None)
        pb = np.clip(b, 0, None)
        if pa.sum() > 0 and pb.sum() > 0:
            r["hellinger"] = float(np.sqrt(0.5 * np.sum((np.sqrt(pa / pa.sum())
                                                         - np.sqrt(pb / pb.sum())) ** 2)))
        else:
            r["hellinger"] = np.nan
        r["cramers_v_change"] = (_cramers_v_change(pub, name) if name != "all"
                                 else np.nan)
        rows[name] = r
    df = pd.DataFrame(rows).T
    ds = xr.Dataset({c: ("table", df[c].to_numpy(dtype=float)) for c in df.columns},
                    coords={"table": list(df.index)})
    ds["cells"] = ds["cells"].astype(int)
    ds.attrs.update({"swapping": str(pub.secret.get("swapping", "none")),
                     "cell_key": "yes" if "record_keys" in pub.secret else "no",
                     "note": "empirical measures of one protected publication against its "
                     "original (average over seeds for their expectation)"})
    return ds


def _cramers_v_change(pub, name) -> float:
    """|V(published) - V(original)| of table ``name``'s published margin of its first two
    dims (their leaf codes, every other dim at its total; NaN for a 1-dim table): the
    association a user reads, before and after protection."""
    from .measures import cramers_v
    dims = pub.tables[name]
    if len(dims) < 2:
        return np.nan
    s = pub.original.system
    tab = pub.original.tables[name]
    d0, d1 = dims[0], dims[1]
    c0, c1 = list(tab.coords[d0]), list(tab.coords[d1])
    rest = {d: "Total" for d in dims[2:]}
    ids = np.array([[s.find(table=name, **{d0: a, d1: b}, **rest) for b in c1] for a in c0])
    return abs(cramers_v(pub.release.values[ids]) - cramers_v(pub.original.values[ids]))


def _exact_ones(pub, orig, sel, x0, y) -> float:
    """Share of original 1-cells (among ``sel``) published as 1 whose person is the
    original one (same ``pid`` in the cell after swapping)."""
    s = pub.original.system
    M = s.M.tocsr()
    fin_orig = _finest_cell(orig, pub.original)
    fin_new = _finest_cell(pub.swapped, pub.original)
    pid_o = orig["pid"].to_numpy()
    pid_n = pub.swapped["pid"].to_numpy()
    new_pos = {p: i for i, p in enumerate(pid_n)}
    # persons of each finest cell, originally
    order = np.argsort(fin_orig, kind="stable")
    ones = np.flatnonzero(sel & (x0 == 1))
    if ones.size == 0:
        return np.nan
    starts = np.searchsorted(fin_orig[order], np.arange(s.n_interior))
    ends = np.searchsorted(fin_orig[order], np.arange(s.n_interior), side="right")
    real = 0
    for j in ones:
        if y[j] != 1:
            continue
        members = M.indices[M.indptr[j]:M.indptr[j + 1]]      # finest cells of cell j
        persons = np.concatenate([order[starts[f]:ends[f]] for f in members])
        if persons.size != 1:
            continue
        p = pid_o[persons[0]]
        i = new_pos.get(p)
        if i is not None and int(fin_new[i]) in set(members.tolist()):
            real += 1
    return real / ones.size


def additive_relations(system) -> list:
    """Every additive relation among published cells an intruder can difference: a
    published cell and published cells that split it along one dim (its codes on every
    other dim the same), the largest such cells, disjoint and covering it -- within a
    table, or across tables (a cell several tables publish is one cell of the set).

    Parameters
    ----------
    system : riskengine.cell_system.CellSystem

    Returns
    -------
    list
        ``[(parent cell, array of child cells)]`` (indices of the system's cells), each
        relation once.

    Notes
    -----
    Cost: one sparse product of the published cells' memberships per dim (only cells
    that share finest cells meet: a cell and its ancestors along the dim), so a dim of
    thousands of codes costs no dense square.
    """
    cells = system.cells
    pub = np.flatnonzero(system.published)
    M = system.M.tocsr()[pub].astype(np.int64)
    size = np.diff(M.indptr)
    dims = list(system.dims)
    codes = cells[dims].iloc[pub].astype(str).to_numpy()
    over = (M @ M.T).tocoo()
    inner = (over.data == size[over.col]) & (size[over.col] < size[over.row])
    I, J0 = over.row[inner], over.col[inner]          # J0 strictly inside I
    out, seen = [], set()
    for k in range(len(dims)):
        others = np.delete(codes, k, axis=1)
        if others.shape[1]:
            group = pd.MultiIndex.from_arrays(others.T).codes
            group = np.ravel_multi_index(tuple(group), tuple(int(c.max()) + 1 for c in group))
        else:
            group = np.zeros(pub.size, np.int64)
        keep = group[I] == group[J0]                  # the same codes on every other dim
        i, j = I[keep], J0[keep]
        order = np.lexsort((j, i))
        i, j = i[order], j[order]
        anc: dict = {}                                 # each cell's ancestors along dim k
        for q, c in zip(i.tolist(), j.tolist()):
            anc.setdefault(c, set()).add(q)
        starts = np.flatnonzero(np.r_[True, i[1:] != i[:-1]]) if i.size else np.zeros(0, int)
        for a, b in zip(starts, np.r_[starts[1:], i.size]):
            p, J = int(i[a]), j[a:b]
            if J.size < 2:
                continue
            Jset = set(J.tolist())
            top = [c for c in J.tolist() if not (anc.get(c, set()) & Jset)]
            if len(top) < 2 or int(size[top].sum()) != int(size[p]):
                continue
            sub = M[top]
            if int(sub.sum(axis=0).max()) > 1:           # overlapping children
                continue
            rel = (int(pub[p]), tuple(sorted(int(pub[c]) for c in top)))
            if rel not in seen:
                seen.add(rel)
                out.append((rel[0], np.array(rel[1], np.int64)))
    return out


def differencing_measures(pub: Publication, small: int = 1) -> dict:
    """What differencing across the publication's additive relations gives an intruder,
    measured against the original (the agency's view, one protected publication).

    For every relation of :func:`additive_relations` and every child cell, the value the
    intruder derives for it: the parent's published value less its siblings' published
    values.  Published exactly (swapping alone) every derived value equals the published
    one; under the cell key method each published cell is perturbed by its own key and a
    derived value is another reading of the cell.

    Parameters
    ----------
    pub : Publication
    small : int, default 1
        The small count whose disclosure is measured.

    Returns
    -------
    dict
        ``relations`` (number), ``derived`` ((cell, relation) pairs), ``pub_small``
        (cells published as ``small``), ``derived_equal``
        (share of derived values equal to the cell's original), ``published_equal``
        (share of those cells' published values equal to the original), ``prob_small``
        (Pr(original = small | published = small), over published cells),
        ``prob_small_confirmed`` (the same among cells published as ``small`` with some
        derived value ``small``), ``confirmed`` (how many such cells), ``prob_small_derived``
        (Pr(original = small | a derived value = small), over (cell, relation) pairs).
    """
    s = pub.release.system
    y = np.asarray(pub.release.values, float)
    x0 = np.asarray(pub.original.values, float)
    rels = additive_relations(s)
    cell, der = [], []
    for p, kids in rels:
        rest = y[p] - y[kids].sum()
        cell.append(kids)
        der.append(rest + y[kids])
    cell = np.concatenate(cell) if cell else np.zeros(0, np.int64)
    der = np.concatenate(der) if der else np.zeros(0)
    pubc = np.flatnonzero(s.published)
    at = pubc[y[pubc] == small]
    conf = np.unique(cell[(der == small) & (y[cell] == small)])

    def share(mask_num, mask_den):
        return float(mask_num.sum() / mask_den.sum()) if mask_den.sum() else np.nan

    return {"relations": len(rels), "derived": int(cell.size), "pub_small": int(at.size),
            "derived_equal": share(der == x0[cell], np.ones(cell.size, bool)),
            "published_equal": share(y[cell] == x0[cell], np.ones(cell.size, bool)),
            "prob_small": share(x0[at] == small, np.ones(at.size, bool)),
            "prob_small_confirmed": share(x0[conf] == small, np.ones(conf.size, bool)),
            "confirmed": int(conf.size),
            "prob_small_derived": share(x0[cell[der == small]] == small,
                                        np.ones(int((der == small).sum()), bool))}
