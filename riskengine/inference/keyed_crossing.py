"""The exact cell-key route for published totals that share cells: every candidate table
listed, each weighed by its likelihood integrated over the record keys.

Where the totals cross (the rows, columns and grand total of a 2-D table; 3-D margins;
nested totals) the keys of the totals are sums over overlapping sets of cell keys, and
the chain over the cells of :mod:`.keyed` does not apply.  This route lists every table
whose cells and totals lie in their windows (a search over the cells that prunes on every
total's range), and for each computes Pr(published | table) exactly
(:mod:`kernels.key_carries`): the sum over the cells' grid segments of the joint law of
the totals' carries, which depends only on which nonempty cells each total holds and is
computed once per such pattern.  An entry whose cells are all empty has key 0; entries
that hold the same nonempty cells have one key.

Cost: the candidate tables (listed; at most ``MAX_TABLES`` partial tables), per table a
chain over its nonempty cells whose states are the open totals' segment sums and the
finished totals' masks (at most ``MAX_STATES``), per pattern of nonempty cells the carry
law's chain.  The estimate times one table of each pattern (the probe's results are
kept); ``auto`` passes the route over when the list, a chain or the timed total is too
long (the table then goes to the product of the entries' probabilities, labelled
approximate, or to the Monte Carlo over keys).
"""

from __future__ import annotations

import time

import numpy as np

from kernels import key_carries as kc

from ..protocol import Cost, Route, RouteRefused, RouteResult
from ._plan import prepared
from .linked import LinkedDP, same_keyed_value, unbounded

__all__ = ["KeyCrossing", "KeyCrossingSet", "table_likelihoods"]

#: partial tables the search may keep before the route is passed over
MAX_TABLES = 200_000
#: rows a chain (the carries' law, a table's segment sums) may keep
MAX_STATES = 2_000_000
#: a table's cost in seconds beyond its likelihood (listing, weights)
_PER_TABLE = 2e-5


def _entries(release, ki):
    """Every published entry: ``(keep, block index, cells held (flat), lo, a, b)``."""
    dims, shape = release.dims, release.shape
    idx = np.arange(int(np.prod(shape, dtype=np.int64))).reshape(shape)
    out = []
    for keep in [dims, *release.margins]:
        kept = [dims.index(d) for d in keep]
        other = [i for i in range(len(dims)) if i not in kept]
        blocks = np.transpose(idx, kept + other).reshape(
            int(np.prod([shape[i] for i in kept], dtype=np.int64)), -1)
        lo = np.asarray(ki.lo[keep]).reshape(-1)
        W = ki.a[keep].shape[-1]
        a = np.asarray(ki.a[keep]).reshape(-1, W)
        b = np.asarray(ki.b[keep]).reshape(-1, W)
        for t in range(blocks.shape[0]):
            out.append((keep, t, blocks[t], int(lo[t]), a[t], b[t]))
    return out


def _search(values, logw, entries, n_cells, limit):
    """Every table whose cells take their ``values`` and whose every entry lies in its
    window: ``(tables (n, cells) int64, log prior (n,))``, or None past ``limit``."""
    vmin = np.array([v.min() if v.size else 0 for v in values], np.int64)
    vmax = np.array([v.max() if v.size else -1 for v in values], np.int64)
    if np.any(vmax < vmin):
        return np.zeros((0, n_cells), np.int64), np.zeros(0)
    sums = [e for e in entries if e[2].size > 1]
    member = np.zeros((len(sums), n_cells), bool)
    low = np.empty(len(sums), np.int64)
    high = np.empty(len(sums), np.int64)
    allowed = []
    for t, (_, _, cells, lo, a, _) in enumerate(sums):
        member[t, cells] = True
        ok = np.flatnonzero(a >= 0) + lo
        allowed.append(ok)
        low[t], high[t] = (ok.min(), ok.max()) if ok.size else (1, 0)
    tables = np.zeros((1, 0), np.int64)
    lp = np.zeros(1)
    for i in range(n_cells):
        v = values[i]
        if tables.shape[0] * v.size > 20 * limit:             # before allocating them
            return None
        tables = np.concatenate([np.repeat(tables, v.size, axis=0),
                                 np.tile(v, tables.shape[0])[:, None]], axis=1)
        lp = np.repeat(lp, v.size) + np.tile(logw[i], lp.size)
        if sums:
            done = member[:, :i + 1].astype(np.int64)
            s = tables @ done.T                               # (P, totals)
            rest_lo = member[:, i + 1:] @ vmin[i + 1:]
            rest_hi = member[:, i + 1:] @ vmax[i + 1:]
            keep = np.all((s + rest_lo <= high) & (s + rest_hi >= low), axis=1)
            tables, lp = tables[keep], lp[keep]
        if tables.shape[0] > limit:
            return None
    for t, ok in enumerate(allowed):                          # the exact windows
        s = tables[:, member[t]].sum(axis=1)
        keep = np.isin(s, ok)
        tables, lp = tables[keep], lp[keep]
    return tables, lp


class _Listing:
    """The candidate tables of a release (or of a set's finest table), and their
    likelihoods (on demand).

    ``entries``: every published entry as ``(keep, index, cells held (flat), lo, a, b)``;
    ``values`` / ``lws``: per cell the values it may take and their log prior weights.
    """

    def __init__(self, N, entries, values, lws):
        self.N = int(N)
        self.entries = entries
        self.values = values
        found = _search(values, lws, entries, len(values), MAX_TABLES)
        self.tables, self.log_prior = (None, None) if found is None else found
        self.laws: dict = {}
        self.L = None if self.tables is None else np.full(self.tables.shape[0], np.nan)
        self.too_long = ""
        self.seconds = 0.0

    @classmethod
    def of_release(cls, plan):
        release = plan.release
        ki = plan.inputs["key_intervals"]
        dims = release.dims
        lo = np.asarray(ki.lo[dims]).reshape(-1)
        W = ki.a[dims].shape[-1]
        x = np.asarray(ki.lo[dims])[..., None] + np.arange(W)
        with np.errstate(invalid="ignore"):
            logw = plan.prior.log_weights(x, dims, release.coords)
        logw = np.where((ki.a[dims] >= 0) & ~np.isnan(logw), logw, -np.inf).reshape(-1, W)
        values = [lo[i] + np.flatnonzero(np.isfinite(logw[i])) for i in range(lo.size)]
        lws = [logw[i][np.isfinite(logw[i])] for i in range(lo.size)]
        return cls(ki.N, _entries(release, ki), values, lws)

    @classmethod
    def of_set(cls, plan):
        """The finest table of a set of cell-key releases: a finest cell published on its
        own takes its entries' values, any other 0 to the least top of the entries that
        hold it."""
        rset = plan.release
        kis = plan.inputs["key_intervals"]
        n = int(np.prod(rset.shape, dtype=np.int64))
        entries = []
        first: dict = {}
        for e in rset.entries:
            e0 = first.setdefault(e.cells.tobytes(), e)
            same_keyed_value(rset, e0, e, rset.releases[e0.release].mechanism)
            ki = kis[e.release]
            W = ki.a[e.keep].shape[-1]
            entries.append((e.keep, e.index, np.asarray(e.cells, np.int64),
                            int(np.asarray(ki.lo[e.keep])[e.index]),
                            np.asarray(ki.a[e.keep])[e.index].reshape(W),
                            np.asarray(ki.b[e.keep])[e.index].reshape(W)))
        allowed: list = [None] * n
        top = np.full(n, np.iinfo(np.int64).max)
        for _, _, cells, lo, a, _ in entries:
            ok = lo + np.flatnonzero(a >= 0)
            if cells.size == 1:
                c = int(cells[0])
                allowed[c] = ok if allowed[c] is None else np.intersect1d(allowed[c], ok)
            if ok.size:
                top[cells] = np.minimum(top[cells], ok.max())
        for c in range(n):
            if allowed[c] is None:
                if top[c] == np.iinfo(np.int64).max:
                    raise unbounded(rset, c)
                allowed[c] = np.arange(int(top[c]) + 1)
        lo = np.array([v.min() if v.size else 0 for v in allowed], np.int64)
        width = int(max((v.max() - v.min() + 1 for v in allowed if v.size), default=1))
        x = (lo[:, None] + np.arange(width)).reshape(rset.shape + (width,))
        with np.errstate(invalid="ignore"):
            plw = plan.prior.log_weights(x, rset.dims, rset.coords).reshape(n, width)
        values, lws = [], []
        for c in range(n):
            v = allowed[c]
            w = plw[c, v - lo[c]] if v.size else np.zeros(0)
            fin = np.isfinite(w) & ~np.isnan(w)
            values.append(v[fin])
            lws.append(w[fin])
        return cls(kis[0].N, entries, values, lws)

    @classmethod
    def of_tables(cls, N, entries, tables):
        """Given tables (no search): ``entries`` as in the class, ``tables`` an array of
        the candidate tables (one row each, flat)."""
        self = cls.__new__(cls)
        self.N, self.entries, self.values = int(N), entries, None
        self.tables = np.asarray(tables, np.int64).reshape(len(tables), -1)
        self.log_prior = np.zeros(self.tables.shape[0])
        self.laws = {}
        self.L = np.full(self.tables.shape[0], np.nan)
        self.too_long, self.seconds = "", 0.0
        return self

    def law(self, members):
        """The carries' law of ``members`` and a memo of its mask vectors' weights (once
        per call and structure)."""
        key = (members.shape, members.tobytes())
        if key not in self.laws:
            carries, probs, _ = kc.carry_law(members, max_states=MAX_STATES)
            self.laws[key] = (carries, probs, {})
        return self.laws[key]

    def likelihood(self, r: int) -> float:
        """Table ``r``'s likelihood integrated over the keys (kept)."""
        if np.isnan(self.L[r]):
            self.L[r] = _likelihood(self, self.tables[r])
        return float(self.L[r])

    def probe(self) -> None:
        """Time a few tables of each pattern of nonempty cells (its carries' law
        included; the first table fills the memo of mask vectors the others reuse):
        ``seconds`` for the whole list, or ``too_long`` when a chain passes its limit."""
        if self.tables is None or not self.tables.shape[0]:
            return
        pats, inv = np.unique(self.tables > 0, axis=0, return_inverse=True)
        inv = inv.ravel()
        total = _PER_TABLE * self.tables.shape[0]
        for p in range(pats.shape[0]):
            rows = np.flatnonzero(inv == p)
            try:
                t0 = time.perf_counter()
                args = _setup(self, self.tables[rows[0]])
                if args is not None:
                    self.law(args[3])                  # once per pattern
                t1 = time.perf_counter()
                self.likelihood(int(rows[0]))
                t2 = time.perf_counter()
                for r in rows[1:4]:
                    self.likelihood(int(r))
                t3 = time.perf_counter()
            except kc.CarryLawError as exc:
                self.too_long = f"a table's likelihood: {exc}"
                return
            later = (t3 - t2) / (min(rows.size, 4) - 1) if rows.size > 1 else 0.0
            total += (t1 - t0) + (t2 - t1) + (t3 - t2) + max(rows.size - 4, 0) * later
        self.seconds = total


def _setup(listing, x):
    """Table ``x``'s plain inputs to :func:`kernels.key_carries.likelihood`: ``(N,
    cell_ok, total_ok, members)``, or None when an entry whose cells are all empty (key 0)
    cannot be published as it is."""
    N = listing.N
    E = np.flatnonzero(x > 0)
    pos = {int(c): j for j, c in enumerate(E)}
    ok: dict = {}
    for _, _, cells, lo, a, b in listing.entries:
        w = int(x[cells].sum()) - lo
        A, B = int(a[w]), int(b[w])
        held = tuple(sorted(pos[int(c)] for c in cells if x[c] > 0))
        if not held:                          # every cell empty: key 0
            if not (A == 0 < B):
                return None
            continue
        seg = ok.get(held)
        if seg is None:
            seg = ok[held] = np.ones(N, bool)
        seg[:A] = False
        seg[B:] = False
    every = np.ones(N, bool)                  # a cell no entry publishes alone: any key
    cell_ok = np.array([ok.get((j,), every) for j in range(E.size)]).reshape(E.size, N)
    sets = sorted(h for h in ok if len(h) > 1)
    members = np.zeros((len(sets), E.size), bool)
    for t, held in enumerate(sets):
        members[t, list(held)] = True
    total_ok = np.array([ok[h] for h in sets]).reshape(len(sets), N)
    return N, cell_ok, total_ok, members


def _likelihood(listing, x) -> float:
    """Pr(the published entries | table ``x``) integrated over the keys."""
    args = _setup(listing, x)
    if args is None:
        return 0.0
    carries, probs, memo = listing.law(args[3])
    return kc.likelihood(*args, carries, probs, max_states=MAX_STATES, memo=memo)


def _likelihoods(listing, progress=None) -> np.ndarray:
    """Every listed table's likelihood integrated over the keys (a chain past its limit:
    :class:`RouteRefused`)."""
    n = listing.tables.shape[0]
    t0 = time.perf_counter()
    for r in range(n):
        if progress is not None and time.perf_counter() - t0 > 0.5:
            progress(r, n)
            t0 = time.perf_counter()
        try:
            listing.likelihood(r)
        except kc.CarryLawError as exc:
            raise RouteRefused(f"route 'keys-crossing': {exc}") from None
    return listing.L


def table_likelihoods(N, entries, tables) -> np.ndarray:
    """Pr(every published entry | table) integrated over the record keys, for given tables
    of the finest cells (the exact likelihood this route weighs its candidates by).

    Parameters
    ----------
    N : int
        The grid of the p-table's interval ends.
    entries : list
        One per published entry: ``(name, index, finest cells held (flat int array), lo,
        a, b)``; for the original ``lo + w`` the entry is published as it is when its key
        lies in ``[a[w]/N, b[w]/N)`` (``-1``: it cannot be); every table's sum over the
        held cells must lie in ``lo .. lo + len(a) - 1``.
    tables : array_like of int, shape (tables, finest cells)

    Returns
    -------
    numpy.ndarray
        One likelihood per table.

    Raises
    ------
    RouteRefused
        When a chain (the carries' law, a table's segment sums) passes ``MAX_STATES``.
    """
    return _likelihoods(_Listing.of_tables(N, entries, tables))


def _structure(plan):
    """Why the route does not apply (None: it does)."""
    release = plan.release
    if release.kind != "count" or release.groups:
        return "the key integration needs a count table without subtotals"
    if "key_intervals" not in plan.inputs:
        return ("the key integration needs the p-table's key intervals (the cell key "
                "method)")
    ki = plan.inputs["key_intervals"]
    if ki.N is None:
        return ki.why
    if len(ki.totals) < 2:
        return ("no two published totals share cells: the key integration over disjoint "
                "totals (route 'keys') answers")
    return None


class KeyCrossing(Route):
    """Exact route of the cell key method for tables whose published totals share cells
    (rows and columns of a 2-D table, 3-D margins): every candidate table listed and
    weighed by its likelihood integrated over the record keys
    (:mod:`kernels.key_carries`).

    Reads ``plan.inputs["key_intervals"]``.
    """

    name = "keys-crossing"
    reads = "key_intervals"
    #: counts under the likelihood integrated over the keys (not the entries' product)
    integrates_keys = True
    needs = ("the p-table's key intervals on a grid; published totals that share cells; "
             "candidate tables few enough to list")

    def applies(self, plan):
        return _structure(plan)

    def _listing(self, plan, probe=False) -> _Listing:
        listing = prepared(plan, "keys-crossing", lambda: self._make(plan))
        if probe and listing.tables is not None and not listing.seconds \
                and not listing.too_long:
            listing.probe()
        return listing

    def estimate(self, plan, what="posterior"):
        listing = self._listing(plan, probe=True)
        if listing.tables is None:
            return Cost(8.0 * MAX_TABLES * len(listing.values), "the candidate tables",
                        f"more than {MAX_TABLES:,} partial tables to list",
                        seconds=float("inf"))
        n = listing.tables.shape[0]
        # the probe timed up to four tables of each pattern of nonempty cells
        return Cost(8.0 * listing.tables.size + 48.0 * MAX_STATES,
                    f"{n} candidate tables, each one's keys summed on a grid of {listing.N}",
                    listing.too_long, seconds=0.01 + listing.seconds)

    @staticmethod
    def _make(plan) -> _Listing:
        return _Listing.of_release(plan)

    def _positive(self, plan):
        """The listing and which of its tables have positive likelihood."""
        listing = self._listing(plan)
        if listing.tables is None:
            raise RouteRefused(f"route 'keys-crossing': more than {MAX_TABLES:,} partial "
                               "tables to list")
        return listing, _likelihoods(listing, plan.progress) > 0

    def _weighed(self, plan):
        """``(tables, posterior weights, log evidence)`` of the tables of positive
        likelihood."""
        listing, keep = self._positive(plan)
        tables = listing.tables[keep]
        if tables.shape[0] == 0:
            raise ValueError(f"no original table is consistent with this "
                             f"{plan.release.mechanism.name} release under this prior")
        lw = listing.log_prior[keep] + np.log(listing.L[keep])
        top = float(lw.max())
        w = np.exp(lw - top)
        Z = float(w.sum())
        return tables, w / Z, top + float(np.log(Z))

    def count(self, plan):
        return int(np.count_nonzero(self._positive(plan)[1]))

    def run(self, plan, *, count=True):
        release = plan.release
        tables, w, log_z = self._weighed(plan)
        ki = plan.inputs["key_intervals"]
        dims, shape = release.dims, release.shape
        start = np.asarray(ki.lo[dims])
        W = ki.a[dims].shape[-1]
        probs = _pmfs(tables, w, start.reshape(-1), W)
        cube = tables.reshape((-1,) + shape)
        totals = {}
        for k in {(), *release.margins}:
            axes = tuple(1 + i for i, d in enumerate(dims) if d not in k)
            s = cube.sum(axis=axes).reshape(cube.shape[0], -1)
            lo = s.min(axis=0)
            p = _pmfs(s, w, lo, int((s.max(axis=0) - lo).max()) + 1)
            bshape = tuple(shape[dims.index(d)] for d in k)
            totals[k] = (lo.reshape(bshape), p.reshape(bshape + (p.shape[-1],)))
        return RouteResult(start=start, probs=probs.reshape(shape + (W,)),
                           log_evidence=log_z,
                           n_candidates=int(tables.shape[0]) if count else None,
                           totals=totals, sampler=_sampler(cube, w),
                           notes={"key_grid": int(self._listing(plan).N)})


def _pmfs(values, w, lo, width) -> np.ndarray:
    """Per column of ``values`` (tables, columns), the weighted pmf from ``lo``."""
    out = np.zeros((values.shape[1], width))
    for j in range(values.shape[1]):
        out[j] = np.bincount(values[:, j] - lo[j], weights=w, minlength=width)[:width]
    return out


def _sampler(cube, w):
    def sampler(n, rng):
        return cube[rng.choice(cube.shape[0], size=n, p=w)].copy()
    return sampler


def _set_structure(plan):
    """Why the set route does not apply (None: it does)."""
    rset = plan.release
    if not hasattr(rset, "entries") or not hasattr(rset, "releases"):
        return "the set route answers sets of releases (rk.ReleaseSet)"
    if "key_intervals" not in plan.inputs:
        return "every release of the set must be under the cell key method"
    mechs = [r.mechanism for r in rset.releases]
    if any(m.to_dict() != mechs[0].to_dict() for m in mechs[1:]):
        return ("the releases' p-tables differ: one record key cannot give both "
                "perturbations (the key integration needs one p-table)")
    kis = plan.inputs["key_intervals"]
    if kis[0].N is None:
        return kis[0].why
    return None


class KeyCrossingSet(KeyCrossing):
    """Exact route for a set of cell-key releases of the same records (one record key per
    record, one p-table): every candidate finest table listed and weighed by the
    likelihood of every published entry of every release integrated over the keys."""

    needs = ("a ReleaseSet of cell-key releases under one p-table on a grid; candidate "
             "finest tables few enough to list")

    def applies(self, plan):
        return _set_structure(plan)

    @staticmethod
    def _make(plan) -> _Listing:
        return _Listing.of_set(plan)

    def run(self, plan, *, count=True):
        rset = plan.release
        tables, w, log_z = self._weighed(plan)
        start = tables.min(axis=0)
        probs = _pmfs(tables, w, start, int((tables.max(axis=0) - start).max()) + 1)
        of_cells = {}
        for e in rset.entries:
            if e.cells.size > 1 and e.cells.tobytes() not in of_cells:
                s = tables[:, e.cells].sum(axis=1)
                lo = int(s.min())
                of_cells[e.cells.tobytes()] = (lo, _pmfs(s[:, None], w, [lo],
                                                         int(s.max()) - lo + 1)[0])
        cube = tables.reshape((-1,) + tuple(rset.shape))
        return RouteResult(start=start.reshape(rset.shape),
                           probs=probs.reshape(tuple(rset.shape) + (probs.shape[-1],)),
                           log_evidence=log_z,
                           n_candidates=int(tables.shape[0]) if count else None,
                           sampler=_sampler(cube, w),
                           parts=tuple(LinkedDP._parts(rset, start, probs, of_cells)),
                           notes={"key_grid": int(self._listing(plan).N)})
