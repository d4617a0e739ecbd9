"""The lattice of a fiber route's candidates (:mod:`.fiber`): a 2-D release with every total
exact, its published cells fixed, its free cells the edges of a bipartite graph; a
spanning forest leaves at most two of them as parameters ``(s, t)`` and every other free
cell is ``base + a s + b t`` (peeled from the leaves), grouped by the factor it moves
with (``s``, ``t`` or ``s + t``).  :func:`build` makes the :class:`FiberPlan`;
:func:`log_concave` says from a prior's form whether the walk may sum only the points
near the maximum.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["FiberPlan", "build", "log_concave"]


class _Refusal(Exception):
    """The route does not apply (the message says why)."""


class _NoCandidate(Exception):
    """No table is consistent with the release under the prior."""


@dataclass
class FiberPlan:
    """The lattice of a release's candidates (:func:`build`).

    ``fixed`` (r, c) int64: published cells (free cells hold 0); ``cells`` (n, 2): the free
    cells; ``group`` (n,): the factor each moves with (0: ``s``, 1: ``t``, 2: ``u = s +
    t``, -1: none: its value is ``base``), ``base`` and ``mult`` (n,): its value is ``base
    + mult * (s, t or u)``; ``LF``, ``LG``, ``LH``: the factors' log-weights over ``s =
    smin ..``, ``t = tmin ..``, ``u = umin ..`` (``-inf`` outside their support, each
    maximum taken out into ``const``); ``hs``: 1 when there is a third factor (else ``LH``
    is one 0 at ``u = 0``); ``d``: free dimensions; ``kind``: ``"flat"``, ``"concave"`` or
    ``"any"``; ``const``: log-weight of every table besides the factors (published cells,
    totals, the maxima); ``totals``: the published totals ``{dims kept: values}``.
    """

    dims: tuple
    shape: tuple
    fixed: np.ndarray
    cells: np.ndarray
    group: np.ndarray
    base: np.ndarray
    mult: np.ndarray
    LF: np.ndarray
    LG: np.ndarray
    LH: np.ndarray
    smin: int
    tmin: int
    umin: int
    hs: int
    d: int
    kind: str
    const: float
    totals: dict

    @property
    def n_rows(self) -> int:
        return int(self.LF.shape[0])

    def args(self) -> tuple:
        """``(LF, LG, LH, smin, tmin, umin, hs)`` for the kernels."""
        return self.LF, self.LG, self.LH, self.smin, self.tmin, self.umin, self.hs


def _contiguous(lw) -> tuple:
    """``(first, last)`` finite value of each window; raises _Refusal on a hole."""
    fin = np.isfinite(lw)
    first = np.argmax(fin, axis=-1)
    last = lw.shape[-1] - 1 - np.argmax(fin[..., ::-1], axis=-1)
    span = np.arange(lw.shape[-1])
    inside = (span >= first[..., None]) & (span <= last[..., None])
    if np.any(inside & ~fin):
        raise _Refusal("the fiber route needs every cell's possible values to be an "
                       "interval (a window has a hole)")
    return first, last


def _peel(cells, res, r, c, params):
    """Every free cell as ``base + coef . (s, t)``: the parameters' own, then the forest's
    from the leaves (each the residual of its row or column minus the others)."""
    n = len(cells)
    base = np.zeros(n, np.int64)
    coef = np.zeros((n, 2), np.int64)
    known = np.zeros(n, bool)
    for k, e in enumerate(params):
        coef[e, k] = 1
        known[e] = True
    node_cells = [[] for _ in range(r + c)]
    for e, (i, j) in enumerate(cells):
        node_cells[int(i)].append(e)
        node_cells[r + int(j)].append(e)
    open_ = [sum(not known[e] for e in cs) for cs in node_cells]
    queue = [v for v in range(r + c) if open_[v] == 1]
    while queue:
        v = queue.pop()
        if open_[v] != 1:
            continue
        e = next(f for f in node_cells[v] if not known[f])
        others = [f for f in node_cells[v] if f != e]
        base[e] = int(res[v]) - sum(int(base[f]) for f in others)
        coef[e] = -np.sum(coef[others], axis=0) if others else 0
        known[e] = True
        for w in (int(cells[e][0]), r + int(cells[e][1])):
            open_[w] -= 1
            if open_[w] == 1:
                queue.append(w)
    if not known.all():        # pragma: no cover - a forest always peels
        raise RuntimeError("internal error: the fiber's forest did not peel")
    for v in range(r + c):     # every residual sum must hold for every parameter value
        cs = node_cells[v]
        if cs and np.any(coef[cs].sum(axis=0) != 0):    # pragma: no cover
            raise RuntimeError("internal error: a forest cell's expression does not cancel")
        if int(base[cs].sum()) != int(res[v]):
            raise _NoCandidate("the published cells and totals leave no table")
    return base, coef


def _factor(vals, members, base, mult, lo, lw):
    """Sum over ``members`` of their log-weights at ``base + mult * vals`` (-inf outside
    a window)."""
    out = np.zeros(vals.shape)
    for e in members:
        v = base[e] + mult[e] * vals - lo[e]
        ok = (v >= 0) & (v < lw.shape[1])
        got = np.full(vals.shape, -np.inf)
        got[ok] = lw[e, v[ok]]
        out = out + got
    return out


def _support(L):
    """First and last index of the finite entries of ``L`` (None: none)."""
    fin = np.flatnonzero(np.isfinite(L))
    return (int(fin[0]), int(fin[-1])) if fin.size else None


def build(ew, concave: bool = False) -> FiberPlan:
    """The lattice of the candidates of trimmed entry windows ``ew`` (with the prior) of a
    2-D table with every total exact.

    Parameters
    ----------
    ew : riskengine.inference.windows.EntryWindows
        Trimmed windows (the prior added) of a 2-D release.
    concave : bool
        The caller knows every cell's log-weights to be concave in the value
        (:func:`log_concave`): the walk may then sum only the points near the maximum.
        Rounding hides mild convexity at large counts, so it is not read off the numbers.

    Returns
    -------
    FiberPlan

    Raises
    ------
    _Refusal
        When the route does not apply (a total not exact, a hole, more than two free
        dimensions).
    _NoCandidate
        When no table fits the windows.
    """
    d0, d1 = ew.dims
    r, c = ew.shape
    totals = {}
    const = float(ew.shift)
    for keep in ((d0,), (d1,), ()):
        if keep not in ew.lo:
            raise _Refusal(f"the fiber route needs every total published; missing {keep}")
        lw = np.asarray(ew.lw[keep], float)
        if lw.shape[-1] != 1:
            raise _Refusal("the fiber route needs every total published exactly (a total "
                           "is a window of several values)")
        totals[keep] = np.asarray(ew.lo[keep], np.int64)
        const += float(lw.sum())
    clo, clw = ew.interior
    clo = np.asarray(clo, np.int64)
    clw = np.asarray(clw, float)
    first, last = _contiguous(clw)
    vlo = clo + first
    free = last > first
    fixed = np.where(free, 0, vlo).astype(np.int64)
    fixed_lw = np.take_along_axis(clw, first[..., None], axis=-1)[..., 0]
    const += float(fixed_lw[~free].sum())
    R, C, N = totals[(d0,)], totals[(d1,)], int(totals[()])
    if int(R.sum()) != N or int(C.sum()) != N:
        raise _NoCandidate("the published totals do not add up")
    res = np.concatenate([R - fixed.sum(axis=1), C - fixed.sum(axis=0)]).astype(np.int64)
    cells = np.argwhere(free)
    width = (last - first)[free]
    # a spanning forest of the free cells, widest first: the narrow ones are parameters
    parent = list(range(r + c))

    def root(a):
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    params = []
    for e in np.argsort(-width, kind="stable"):
        a, b = root(int(cells[e][0])), root(r + int(cells[e][1]))
        if a == b:
            params.append(int(e))
        else:
            parent[a] = b
    d = len(params)
    if d > 2:
        raise _Refusal(f"the fiber route walks at most two free dimensions; this release's "
                       f"candidates have {d}")
    base, coef = _peel(cells, res, r, c, params)
    lo = vlo[free].astype(np.int64)
    W = int(width.max(initial=0)) + 1
    idx = first[free][:, None] + np.arange(W)
    lw = np.take_along_axis(clw[free], np.minimum(idx, clw.shape[-1] - 1), axis=-1)
    lw = np.where(np.arange(W)[None, :] <= width[:, None], lw, -np.inf)
    # rows: the parameter with fewer values; t's sign makes every two-way cell move
    # with s + t
    rng = [(int(lo[e]), int(lo[e] + width[e])) for e in params] + [(0, 0)] * (2 - d)
    if d == 2 and rng[1][1] - rng[1][0] < rng[0][1] - rng[0][0]:
        rng, coef = rng[::-1], coef[:, ::-1].copy()
    both = (coef[:, 0] != 0) & (coef[:, 1] != 0)
    if both.any():
        sig = coef[both, 0] * coef[both, 1]
        if np.any(sig != sig[0]):     # pragma: no cover - two cycles share one path
            raise RuntimeError("internal error: cells move with s + t and s - t")
        if sig[0] < 0:
            coef[:, 1] = -coef[:, 1]
            rng[1] = (-rng[1][1], -rng[1][0])
    group = np.where(both, 2, np.where(coef[:, 0] != 0, 0, np.where(coef[:, 1] != 0, 1, -1)))
    mult = np.where(group == 1, coef[:, 1], coef[:, 0]).astype(np.int64)
    hs = int(both.any())
    (smin, smax), (tmin, tmax) = rng
    svals = np.arange(smin, smax + 1, dtype=np.int64)
    tvals = np.arange(tmin, tmax + 1, dtype=np.int64)
    umin = smin + tmin if hs else 0
    uvals = np.arange(umin, smax + tmax + 1, dtype=np.int64) if hs else np.zeros(1, np.int64)
    LF = _factor(svals, np.flatnonzero(group == 0), base, mult, lo, lw)
    LG = _factor(tvals, np.flatnonzero(group == 1), base, mult, lo, lw)
    LH = _factor(uvals, np.flatnonzero(group == 2), base, mult, lo, lw)
    for e in np.flatnonzero(group == -1):        # moves with neither: one value
        v = int(base[e] - lo[e])
        if not 0 <= v <= width[e]:
            raise _NoCandidate("a free cell is fixed outside its window")
        const += float(lw[e, v])
    flat = bool(np.all(np.where(np.isfinite(lw), lw == lw[:, :1], True)))
    # each factor's support, cut to its finite range (rows shift with it)
    sup = [_support(L) for L in (LF, LG, LH)]
    if any(x is None for x in sup):
        raise _NoCandidate("a factor of the fiber has no possible value")
    (fa, fb), (ga, gb), (ha, hb) = sup
    LF, smin = LF[fa:fb + 1], smin + fa
    LG, tmin = LG[ga:gb + 1], tmin + ga
    if hs:
        LH, umin = LH[ha:hb + 1], umin + ha
    for L in (LF, LG, LH):                       # maxima out: each factor peaks at 0
        top = float(L.max())
        L -= top
        const += top
    if flat:
        LF, LG, LH = (np.where(np.isfinite(L), 0.0, -np.inf) for L in (LF, LG, LH))
    kind = "flat" if flat else "concave" if concave else "any"
    return FiberPlan(ew.dims, (r, c), fixed, cells.astype(np.int64), group.astype(np.int64),
                     base, mult, np.ascontiguousarray(LF), np.ascontiguousarray(LG),
                     np.ascontiguousarray(LH), int(smin), int(tmin), int(umin), hs, d, kind,
                     const, totals)


def log_concave(prior) -> bool:
    """Whether every cell's prior log-weight is concave in the value, known from the
    prior's form (not read off its numbers): Uniform and Flat (flat), Poisson (second
    difference ``-log((x + 2) / (x + 1))``), negative binomial with every dispersion
    ``r >= 1`` (second difference ``log((x + r + 1) / (x + r)) - log((x + 2) / (x + 1))``),
    Historical likewise; knowledge only cuts windows.

    Parameters
    ----------
    prior : rk.priors.Prior

    Returns
    -------
    bool
    """
    from .. import priors as P
    if type(prior) in (P.Uniform, P.Flat, P.Poisson):
        return True
    if type(prior) is P.NegativeBinomial:
        return bool(np.all(np.asarray(prior.dispersion, float) >= 1.0))
    if type(prior) is P.Historical:
        return prior.dispersion is None or bool(
            np.all(np.asarray(P._values(prior._disp), float) >= 1.0))
    return False


def _flat_cells(windows) -> bool:
    """The mechanism's own log-likelihood is flat over each cell's window (margins only,
    suppression): the prior alone shapes the weights."""
    lw = np.asarray(windows.interior[1], float)
    fin = np.isfinite(lw)
    top = np.max(np.where(fin, lw, -np.inf), axis=-1, keepdims=True)
    return bool(np.all(np.where(fin, lw == top, True)))
