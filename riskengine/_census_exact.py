"""The intruder's exact posterior of a small census publication under targeted record
swapping (TRS) and the cell key method (CKM), with secret parameters (issue 31, item 3).

Where :mod:`riskengine._census_posterior` reads each cell on its own published value (a
simulation), this route conditions on the whole publication, for an intruder whose prior
is a finite list of candidate original microdata (weights ``prior``) and a finite list of
candidate settings (:class:`~riskengine._census_posterior.Setting`, with weights):

    Pr(m, s | published) ~ prior(m) w(s) sum over swap outcomes o of
                           Pr(o | m, s) Pr(published | tables of o, s),

* **Pr(o | m, s)**, the law of the swapping's outcome (which household takes which
  household's geography), exactly: the swapping's random inputs (the number of swaps,
  rounded at random; its systematic allocation over the lowest areas; the donor orders
  per level and the lowest-level draw orders, weighted orders without replacement,
  Plackett-Luce in the households' risks) take finitely many effective values -- the
  allocation changes only where its start crosses an integer, an order matters only
  through the permutation it induces -- and each is run through the real swapping
  (:func:`riskengine.mechanisms.swapping._run`), levels whose donors are never used and
  the draw order when no area draws left out;
* **Pr(published | tables, s)**, the cell key method's likelihood integrated over the
  record keys: every published cell's key is the fractional part of the sum of its
  records' keys (empty: 0), so the published cells are entries over the finest cells and
  the exact route for crossing totals applies
  (:func:`riskengine.inference.keyed_crossing.table_likelihoods`); without a cell key
  method, 1 when every published cell equals the swapped tables' and 0 otherwise.

The secret settings are updated by the publication (``CensusPosterior.settings``), not
averaged over their prior as in the simulation route.

Cost: per candidate and setting, the runs of the swapping (the product of the orders'
permutations over the levels that need donors: ``h!`` for ``h`` households of positive
risk; refused past ``max_runs``), and per distinct swapped table the keys' likelihood
(refused past its chains' limit).  This is for populations of a few households and a few
tables -- the tests' brute force, a teaching example -- not for a census: the key
integration over every published cell at once passes its limit on the census example's
three tables of three geography levels already at 6 to 10 persons (refused, by name).
"""

from __future__ import annotations

import itertools
import math
import time

import numpy as np
import xarray as xr

from . import _validate as V
from ._census_posterior import CensusPosterior, Setting

__all__ = ["candidate_microdata", "exact_intruder_posterior", "swap_law"]

#: runs of the swapping per candidate microdata and setting
MAX_RUNS = 200_000


def _orders(items, w) -> list:
    """Every order of ``items`` (those of weight > 0) with its probability as a weighted
    order without replacement (each next one with probability its weight over the
    weights left)."""
    items = [int(i) for i in items if w[i] > 0]
    out = []
    for perm in itertools.permutations(items):
        p = 1.0
        for k, i in enumerate(perm):
            p *= w[i] / math.fsum(w[j] for j in perm[k:])
        out.append((perm, p))
    return out


def _too_many(what, max_runs, nh):
    """The refusal past ``max_runs``."""
    return ValueError(
        f"the exact law of the swapping needs {what} (more than max_runs={max_runs:,}) on "
        f"these {nh} households: the exact route is for a few households; use the "
        "simulation route (intruder_posterior)")


def _quota_law(prep, swaprate, max_runs) -> dict:
    """``{quota bytes: (quota, probability)}``: the number of swaps of each lowest-level
    area."""
    from .mechanisms.swapping import _allocate_at
    nh, L = prep.nh, prep.area.shape[0]
    n_area = np.bincount(prep.area[L - 1])
    x = swaprate * nh / 2.0
    fl = math.floor(x)
    if x > 0 and math.factorial(n_area.size) * nh > max_runs:
        raise _too_many(f"{math.factorial(n_area.size) * nh:,} allocations of the swaps "
                        f"over the {n_area.size} areas", max_runs, nh)
    out: dict = {}

    def add(q, p):
        key = q.tobytes()
        out[key] = (q, out.get(key, (q, 0.0))[1] + p)

    for total, pt in ((fl, 1.0 - (x - fl)), (fl + 1, x - fl)):
        if pt <= 0:
            continue
        if total == 0:
            add(np.zeros(n_area.size, np.int64), pt)
            continue
        perms = list(itertools.permutations(range(n_area.size)))
        for perm in perms:
            for i in range(nh):           # the shares change where the start crosses an integer
                add(_allocate_at(n_area, total, np.array(perm, np.int64), i + 0.5),
                    pt / (len(perms) * nh))
    return out


def _runs(prep, quota, max_runs) -> tuple:
    """The effective random inputs for ``quota``: per level the donor orders to run
    (None where no donor is needed: one fixed order) and the draw orders per area (None
    where no area draws), and their count; the lists are not built past ``max_runs``."""
    nh, L = prep.nh, prep.area.shape[0]
    needed = [bool((prep.level == j).any()) or (j == L - 1 and bool(quota.any()))
              for j in range(L)]
    low = prep.area[L - 1]
    areas = [np.flatnonzero(low == a) for a in range(int(low.max()) + 1)]
    n = math.prod(math.factorial(int((prep.w[:, j] > 0).sum()))
                  for j in range(L) if needed[j])
    if quota.any():
        n *= math.prod(math.factorial(int((prep.w[h, L - 1] > 0).sum())) for h in areas)
    if n > max_runs:
        return None, None, n
    levels = [_orders(range(nh), prep.w[:, j]) if needed[j] else None for j in range(L)]
    per_area = ([_orders(h, prep.w[:, L - 1]) for h in areas] if quota.any() else None)
    return levels, per_area, n


def _keys(prep, levels, per_area, choice_levels, choice_areas):
    """Donor and draw keys that realise the chosen orders (descending keys)."""
    nh, L = prep.nh, prep.area.shape[0]
    donor = np.array(prep.w, dtype=float)            # a level not needed: any order
    for j, ch in enumerate(choice_levels):
        if ch is not None:
            col = np.zeros(nh)
            col[list(ch)] = nh - np.arange(len(ch))
            donor[:, j] = col
    sel = np.zeros(nh)
    if choice_areas is None:
        sel[:] = prep.w[:, L - 1]
    else:
        for ch in choice_areas:
            sel[list(ch)] = nh - np.arange(len(ch))
    return donor, sel


def swap_law(swapping, microdata, max_runs: int = MAX_RUNS) -> list:
    """The exact law of the swapping's outcome on ``microdata``.

    Parameters
    ----------
    swapping : rk.TargetedSwapping
    microdata : pandas.DataFrame
        One row per person (as :meth:`rk.TargetedSwapping.protect` takes it).
    max_runs : int, default MAX_RUNS
        Refuse when the effective random inputs are more than this.

    Returns
    -------
    list
        ``[(probability, src)]`` over the distinct outcomes: ``src[h]`` is the household
        (index in ascending id) whose geography household ``h`` takes (itself when not
        swapped).  The probabilities add up to 1.

    Examples
    --------
    Household 1, unique by age in its area, must be swapped; of the other area's two,
    only household 2 has its size:

    >>> import pandas as pd, riskengine as rk
    >>> from riskengine._census_exact import swap_law
    >>> df = pd.DataFrame({"hid": [1, 2, 3], "area": ["a", "b", "b"],
    ...                    "age": [1, 2, 2], "size": [1, 1, 2]})
    >>> trs = rk.TargetedSwapping(["area"], ["age"], [["size"]], swaprate=0.0,
    ...                           k_anonymity=2)
    >>> [(float(p), src.tolist()) for p, src in swap_law(trs, df)]
    [(1.0, [1, 0, 2])]

    With a swap rate the number of swaps (0.75 on average), the area that draws and the
    household it draws are random; household 3 finds no donor of its size:

    >>> trs = rk.TargetedSwapping(["area"], ["age"], [["size"]], swaprate=0.5,
    ...                           k_anonymity=1)
    >>> [(round(float(p), 4), src.tolist()) for p, src in swap_law(trs, df)]
    [(0.5, [0, 1, 2]), (0.5, [1, 0, 2])]
    """
    from .mechanisms.swapping import _Prepared, _run
    max_runs = V.integer(max_runs, "max_runs", 1)
    left = max_runs
    prep = _Prepared(swapping, microdata)
    nh = prep.nh
    if nh == 0:
        return [(1.0, np.zeros(0, np.int64))]
    plans = []
    for q, pq in _quota_law(prep, swapping.swaprate, max_runs).values():
        levels, per_area, n = _runs(prep, q, left)
        left -= n
        if left < 0:
            raise _too_many(f"at least {max_runs - left:,} runs (the orders of the "
                            "households at each level that needs donors)", max_runs, nh)
        plans.append((q, pq, levels, per_area))
    out: dict = {}
    ident = np.arange(nh, dtype=np.int64)
    for q, pq, levels, per_area in plans:
        lv = [o if o is not None else [(None, 1.0)] for o in levels]
        ar = ([[(ch, p) for ch, p in (o or [((), 1.0)])] for o in per_area]
              if per_area is not None else None)
        for combo in itertools.product(*lv):
            p_lev = math.prod(p for _, p in combo)
            area_combos = itertools.product(*ar) if ar is not None else [None]
            for ac in area_combos:
                p = pq * p_lev * (math.prod(pp for _, pp in ac) if ac is not None else 1.0)
                donor, sel = _keys(prep, levels, per_area, [c for c, _ in combo],
                                   None if ac is None else [c for c, _ in ac])
                s, d = _run(prep, q, donor, sel)[:2]
                src = ident.copy()
                src[s], src[d] = d, s
                key = src.tobytes()
                out[key] = (out[key][0] + p, src) if key in out else (p, src)
    return sorted(out.values(), key=lambda t: (-round(t[0], 12), t[1].tolist()))


def candidate_microdata(people, unknown: dict, units=None, household: str | None = None,
                        max_candidates: int = 10_000) -> list:
    """The intruder's candidates for the original microdata: ``people`` with the values of
    the ``unknown`` columns of some persons (or households) replaced in every combination.

    Parameters
    ----------
    people : pandas.DataFrame
        What the intruder takes for known (one row per person); never modified.
    unknown : dict
        ``{column: values}``, or ``{(column, column, ...): [tuples]}`` for columns that go
        together (a geography path such as ``("district", "area")``).
    units : sequence, optional
        The row labels (or, with ``household``, the household ids) whose values are
        unknown (default: every row / household).
    household : str, optional
        The household column: each household's members take one value together.
    max_candidates : int, default 10,000
        Refuse beyond this many candidates.

    Returns
    -------
    list of pandas.DataFrame
        Every combination, the first equal to ``people`` when its values are among the
        candidates' (duplicates dropped).

    Examples
    --------
    >>> import pandas as pd
    >>> from riskengine._census_exact import candidate_microdata
    >>> people = pd.DataFrame({"hid": [1, 1, 2], "area": ["a", "a", "b"], "sex": list("FMF")})
    >>> cands = candidate_microdata(people, {"area": ["a", "b"]}, units=[2], household="hid")
    >>> [c.area.tolist() for c in cands]
    [['a', 'a', 'b'], ['a', 'a', 'a']]
    """
    import pandas as pd
    if not isinstance(people, pd.DataFrame):
        raise TypeError(f"people must be a pandas DataFrame, got {type(people).__name__}")
    if not unknown:
        raise ValueError("unknown must name at least one column and its values")
    groups = []
    for cols, values in unknown.items():
        cols = (cols,) if isinstance(cols, str) else tuple(cols)
        missing = [c for c in cols if c not in people.columns]
        if missing:
            raise KeyError(f"unknown names columns {missing} not in people (columns: "
                           f"{list(people.columns)})")
        vals = [tuple(v) if len(cols) > 1 else (v,) for v in values]
        if any(len(v) != len(cols) for v in vals):
            raise ValueError(f"every value of {cols} must give {len(cols)} values")
        if not vals:
            raise ValueError(f"no values given for {cols}")
        groups.append((list(cols), vals))
    if household is not None:
        ids = people[household]
        units = list(pd.unique(ids)) if units is None else list(units)
        bad = [u for u in units if not (ids == u).any()]
        rows_of = [np.flatnonzero((ids == u).to_numpy()) for u in units]
    else:
        units = list(people.index) if units is None else list(units)
        bad = [u for u in units if u not in people.index]
        rows_of = [np.flatnonzero(people.index == u) for u in units]
    if bad:
        raise KeyError(f"units {bad[:5]} are not in people")
    n = math.prod(len(v) for _, v in groups) ** len(units)
    if n > max_candidates:
        raise ValueError(f"{n:,} candidates ({len(units)} units x {len(groups)} unknown "
                         f"column groups), more than max_candidates={max_candidates:,}")
    slots = [(r, cols, vals) for r in rows_of for cols, vals in groups]
    truth = tuple(tuple(people.iloc[r[0]][c] for c in cols) if r.size else None
                  for r, cols, _ in slots)
    combos = list(itertools.product(*[vals for _, _, vals in slots]))
    combos.sort(key=lambda c: c != truth)             # the original first, when present
    out, seen = [], set()
    for combo in combos:
        df = people.copy()
        for (r, cols, _), v in zip(slots, combo):
            for c, x in zip(cols, v):
                df.iloc[r, df.columns.get_loc(c)] = x
        key = pd.util.hash_pandas_object(df, index=True).values.tobytes()
        if key not in seen:
            seen.add(key)
            out.append(df)
    return out


def _swapped(swapping, microdata, src):
    """The microdata after the outcome ``src``."""
    from .mechanisms.swapping import _exchange, _Prepared
    prep = _Prepared(swapping, microdata)
    h = np.arange(prep.nh)
    s = h[(src != h) & (h < src)]
    out = microdata.copy(deep=True)
    _exchange(out, microdata, prep, s, src[s], swapping.hierarchy + swapping.carry_along)
    return out


def _entries(release, pub_rows, y, n_max, cell_key):
    """The published cells as entries over the finest cells (:func:`keyed_crossing.
    table_likelihoods`), on the p-table's grid."""
    from .mechanisms.cell_key import _grid, interval_ends
    pt = cell_key.ptable
    N, why = _grid(pt)
    if N is None:
        raise ValueError(f"the exact route integrates over the record keys on the grid of "
                         f"the p-table's interval ends: {why}")
    A, B = interval_ends(pt, N)[:2]
    M = release.system.M.tocsr()
    w = np.arange(n_max + 1)
    out = []
    for r, yr in zip(pub_rows.tolist(), y.tolist()):
        cells = M.indices[M.indptr[r]:M.indptr[r + 1]].astype(np.int64)
        v = yr - w
        ok = (v >= pt.vmin) & (v <= pt.vmax)
        rr = np.minimum(w, pt.top)
        vi = np.clip(v - pt.vmin, 0, pt.vmax - pt.vmin)
        out.append(("cell", r, cells, 0, np.where(ok, A[rr, vi], -1),
                    np.where(ok, B[rr, vi], -1)))
    return N, out


def exact_intruder_posterior(release, candidates, settings, prior=None,
                             max_runs: int = MAX_RUNS, progress=None) -> CensusPosterior:
    """The intruder's exact posterior of a small census publication protected by targeted
    record swapping and / or the cell key method with secret parameters (see the module).

    Parameters
    ----------
    release : rk.TableSetRelease
        What is published (``Publication.release``): the tables' structure and the
        published cells.
    candidates : sequence of pandas.DataFrame
        The intruder's candidates for the original microdata (one row per person, the
        columns the swapping and the tables use).
    settings : sequence of Setting
        The intruder's candidates for the secret protection, with prior weights.
    prior : sequence of float, optional
        Prior weights of the candidates (default: equal).
    max_runs : int, default MAX_RUNS
        Per candidate and setting, the most runs of the swapping enumerated.
    progress : callable(done, total), optional
        Called over the (candidate, setting) pairs.

    Returns
    -------
    CensusPosterior
        ``cells`` as the simulation route's (standard errors 0, ``n_similar`` absent,
        ``kind`` the cell's table),
        ``pmf["prob"]`` over ``(cell, original)``: each published cell's posterior;
        ``candidates`` and ``settings``: the posterior of each candidate and setting;
        ``attrs["exact"] = 1``.

    Raises
    ------
    ValueError
        When no candidate under any setting can give the publication, when the swapping
        needs more than ``max_runs`` runs, or the p-table's intervals are on no grid.

    Examples
    --------
    Three persons in two areas, the areas' sizes published exactly; the intruder's two
    candidates differ in where the third person lives:

    >>> import numpy as np, pandas as pd, riskengine as rk
    >>> from riskengine._census_posterior import Setting
    >>> from riskengine._census_exact import exact_intruder_posterior
    >>> from riskengine._publication import protect_publication
    >>> a = pd.DataFrame({"hid": [1, 2, 3], "area": ["x", "x", "y"], "sex": ["F", "M", "F"]})
    >>> b = a.assign(area=["x", "y", "y"])
    >>> pub = protect_publication(a, {"t": ["area"]})
    >>> post = exact_intruder_posterior(pub.release, [a, b], [Setting()])
    >>> post.candidates.values.tolist()
    [1.0, 0.0]
    """
    from ._publication import _finest_cell
    from .inference.keyed_crossing import table_likelihoods
    from .protocol import RouteRefused
    from .table_set import TableSetRelease
    if not isinstance(release, TableSetRelease):
        raise TypeError(f"release must be an rk.TableSetRelease (Publication.release), got "
                        f"{type(release).__name__}")
    candidates = list(candidates)
    if not candidates:
        raise ValueError("candidates must hold at least one candidate microdata")
    settings = list(settings)
    if not settings or not all(isinstance(s, Setting) for s in settings):
        raise TypeError("settings must be a non-empty sequence of Setting")
    wset = np.array([s.weight for s in settings], float)
    if not (np.isfinite(wset).all() and (wset > 0).all()):
        raise ValueError(f"every Setting's weight must be positive and finite, got "
                         f"{wset.tolist()}")
    prior = np.ones(len(candidates)) if prior is None else np.asarray(prior, float)
    if prior.shape != (len(candidates),) or not (np.isfinite(prior).all()
                                                 and (prior >= 0).all() and prior.sum() > 0):
        raise ValueError(f"prior must hold one weight >= 0 per candidate ({len(candidates)}), "
                         "not all 0")
    s = release.system
    pub_rows = np.flatnonzero(s.published)
    yv = np.asarray(release.values, float)[pub_rows]
    if not np.isfinite(yv).all() or (yv != np.rint(yv)).any() or (yv < 0).any():
        bad = int(np.flatnonzero(~np.isfinite(yv) | (yv != np.rint(yv)) | (yv < 0))[0])
        raise ValueError(f"published cell {s.labels()[pub_rows[bad]]!r} holds {yv[bad]!r}; "
                         "a census release publishes counts")
    y = yv.astype(np.int64)
    M = s.M.tocsc()
    Mr = s.M.tocsr()
    n_fin = s.n_interior
    n_max = max(len(c) for c in candidates)
    entries = {}
    for k, st in enumerate(settings):
        if st.cell_key is not None:
            entries[k] = _entries(release, pub_rows, y, n_max, st.cell_key)

    t0 = time.perf_counter()
    W = np.zeros((len(candidates), len(settings)))
    X0 = np.zeros((len(candidates), pub_rows.size), np.int64)
    ones = np.zeros(pub_rows.size)                   # joint weight of a real one, per cell
    total = len(candidates) * len(settings)
    for m, df in enumerate(candidates):
        f0 = _finest_cell(df, release.tableset)
        x0 = np.bincount(f0, minlength=n_fin)
        X0[m] = Mr[pub_rows] @ x0
        one0 = X0[m] == 1
        A_o = M[:, f0][pub_rows]
        for k, st in enumerate(settings):
            if progress is not None:
                progress(m * len(settings) + k, total)
            if prior[m] == 0:
                continue
            law = ([(1.0, None)] if st.swapping is None
                   else swap_law(st.swapping, df, max_runs))
            xs, stays = [], []
            for _, src in law:
                out = df if src is None else _swapped(st.swapping, df, src)
                fn = _finest_cell(out, release.tableset)
                xs.append(np.bincount(fn, minlength=n_fin))
                A_n = M[:, fn][pub_rows]
                stays.append(np.asarray(A_o.multiply(A_n).sum(axis=1)).ravel())
            xs = np.array(xs, np.int64)
            if st.cell_key is None:
                L = np.all(xs @ Mr[pub_rows].T.toarray() == y, axis=1).astype(float)
            else:
                N, ent = entries[k]
                uniq, inv = np.unique(xs, axis=0, return_inverse=True)
                try:
                    L = table_likelihoods(N, ent, uniq)[inv.ravel()]
                except RouteRefused as exc:
                    raise ValueError(
                        f"candidate {m}, setting {k}: the cell key likelihood over the "
                        f"record keys of all {pub_rows.size} published cells at once passes "
                        f"its limit ({exc}): the exact route is for publications of a few "
                        "tables with few crossing totals; use the simulation route "
                        "(intruder_posterior)") from None
            ps = np.array([p for p, _ in law])
            jw = prior[m] / prior.sum() * wset[k] / wset.sum() * ps * L
            W[m, k] = jw.sum()
            for j in np.flatnonzero(jw > 0):
                ones += jw[j] * (one0 & (stays[j] == 1))
    if progress is not None:
        progress(total, total)
    Z = W.sum()
    if not Z > 0:
        raise ValueError("no candidate microdata under any setting can give this "
                         "publication (every likelihood is 0): the candidates or the "
                         "settings do not hold what was published")
    pm = W.sum(axis=1) / Z
    vmax = int(X0.max()) if X0.size else 0
    pmf = np.zeros((pub_rows.size, vmax + 1))
    for m in np.flatnonzero(pm > 0):
        pmf[np.arange(pub_rows.size), X0[m]] += pm[m]
    labels = np.asarray(s.labels(), dtype=object)[pub_rows]
    zeros = np.zeros(pub_rows.size)
    real_one = np.where(y == 1, ones / Z, np.nan)
    cell = {"cell": np.arange(pub_rows.size), "label": ("cell", labels),
            "kind": ("cell", [str(lab).split("(")[0] for lab in labels])}   # the table
    cells = xr.Dataset(
        {"published": ("cell", y),
         "prob_exact": ("cell", pmf[np.arange(pub_rows.size), np.minimum(y, vmax)]
                        * (y <= vmax)),
         "prob_exact_se": ("cell", zeros), "mean": ("cell", pm @ X0),
         "mean_se": ("cell", zeros), "prob_real_one": ("cell", real_one),
         "prob_real_one_se": ("cell", np.where(y == 1, 0.0, np.nan))},
        coords=cell,
        attrs={"approximate": 0, "exact": 1, "approximation": "", "route": "census-exact",
               "candidates": len(candidates), "min_cells": 0,
               "settings": "; ".join(f"[{i}] {st.describe()}"
                                     for i, st in enumerate(settings)),
               "seconds": round(time.perf_counter() - t0, 3)})
    pmf_ds = xr.Dataset({"prob": (("cell", "original"), pmf)},
                        coords={**cell, "original": np.arange(vmax + 1)})
    return CensusPosterior(
        cells=cells, pmf=pmf_ds,
        candidates=xr.DataArray(pm, dims="candidate", name="posterior",
                                coords={"candidate": np.arange(len(candidates))}),
        settings=xr.DataArray(W.sum(axis=0) / Z, dims="setting", name="posterior",
                              coords={"setting": np.arange(len(settings)),
                                      "describe": ("setting",
                                                   [st.describe() for st in settings])}))
