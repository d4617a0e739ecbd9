"""Whole-table draws, route by route: ``rk.posterior(release, prior, route=r).sample(n, rng)``
against the exact posterior over explicitly listed candidate tables.

References (no riskengine code): tests/reference/tables.py and numerics.py list the
candidates (tables in windows, 3-D tables with 2-way margins, the one- and two-parameter
families at large counts), rounding.py, cyclic.py, numerics.py and draws.py give the
likelihoods and numerics.log_prior the priors (scipy.stats); draws.py normalises prior x
likelihood over the listed tables and marginalises it to cells, pairs of cells and sums.

Every case (:func:`_check_draws`) checks that

1. each cell's draw frequencies fit the route's exact pmf ``post.pmf`` (itself equal to the
   brute force's to ``tol``), and each total's frequencies fit ``post.totals``;
2. the joint of two cells -- the most uncertain cell with the most uncertain cell of its
   row, of its column (of each line, in 3-D) and one differing in every index -- fits the
   brute-force joint, and the whole tables fit the brute-force posterior;
3. every draw is a candidate: in the brute-force support, and consistent with the release
   by the mechanism's definition (:func:`_consistent`: exact totals equal, rounding
   windows, published cells, subtotals, quality intervals);
4. the draws carry the release's dims and labels (non-sorted labels throughout), and the
   same seed gives the same draws;
5. each draw's sums have positive mass in ``post.totals`` (every total the route reports).

Statistics: Pearson's chi-square goodness of fit, the bins whose expected count is below 5
pooled (smallest first; :func:`tests.reference.agreement.gof_pvalue`), p-value from the chi-square law with (bins - 1)
degrees of freedom.  A check fails when p < ALPHA = 1e-5.  For a correct sampler each
check raises a false alarm with probability about 1e-5; the file makes about 700 checks,
so a fresh choice of seeds would false-alarm somewhere with probability below 1 %.  The
seeds are fixed: the outcome is reproducible.  A sampler drawing from a wrong law (rows
swapped, a transposed table, a few percent of a cell's mass misplaced) gives p-values far
below ALPHA with 20000 draws.
"""

import math
import zlib

import numpy as np
import pytest
import xarray as xr

import riskengine as rk
from kernels.checkpoints import checkpoint_plan
from riskengine.inference import table_dp as dp
from riskengine.inference.resolve import plan
from tests.reference import draws as ref
from tests.reference import numerics as num
from tests.reference import tables as tab
from tests.reference.agreement import gof_pvalue
from tests.reference.cyclic import cyclic_brute
from tests.reference.rounding import MARGINS_3D, rounding_log_likelihood_2d, rounding_posterior_3d

ALPHA = 1e-5
N_DRAWS = 20000

LABELS = {"v": ["south", "north", "east", "west", "centre", "islands"],
          "w": ["k3", "k1", "k2", "k0", "k5", "k4"],
          "u": ["z", "x", "y"]}


# --- statistics ------------------------------------------------------------------------------


def _gof(observed, expected: dict, what: str):
    p = gof_pvalue(observed, expected)
    assert p > ALPHA, f"{what}: the draws do not fit the exact pmf (chi-square p = {p:.3g})"


def _entropy(pmf: dict) -> float:
    q = np.array([x for x in pmf.values() if x > 0])
    return float(-(q * np.log(q)).sum())


# --- exact posteriors to compare with -----------------------------------------------------------


class _Tables:
    """The exact posterior as a list of tables with probabilities."""

    def __init__(self, T, p):
        self.T, self.p = T, p
        self.tables = ref.table_pmf(T, p)

    def cell(self, idx):
        return ref.cell_pmf(self.T, self.p, idx)

    def pair(self, a, b):
        return ref.pair_pmf(self.T, self.p, a, b)

    def candidate(self, D):
        return np.array([d.tobytes() in self.tables for d in D])

    def top(self):
        return max(self.tables.values())

    def sums(self, axes):
        return ref.sum_support(self.T, self.p, axes)


class _Cells:
    """Cells independent a posteriori (the independent-cells route's model): per-cell
    pmfs; joints are products."""

    tables = None

    def __init__(self, marginals):
        self.marginals = marginals

    def cell(self, idx):
        return self.marginals[idx]

    def pair(self, a, b):
        return {(x, y): p * q for x, p in self.marginals[a].items()
                for y, q in self.marginals[b].items()}

    def candidate(self, D):
        ok = np.ones(len(D), bool)
        for idx, pm in self.marginals.items():
            ok &= np.isin(D[(slice(None), *idx)], [v for v, q in pm.items() if q > 0])
        return ok

    def sums(self, axes):
        return None

    def top(self):
        return float(np.prod([max(pm.values()) for pm in self.marginals.values()]))


def _tables(T, logw) -> _Tables:
    return _Tables(*ref.normalised(T, logw))


# --- the checks ------------------------------------------------------------------------------


def _route_cell(post, idx) -> dict:
    s = int(post.start[idx])
    return {s + j: float(q) for j, q in enumerate(post.probs[idx]) if q > 0}


def _pairs(exact, shape):
    H = {idx: _entropy(exact.cell(idx)) for idx in np.ndindex(*shape)}
    a = max(H, key=H.get)
    if H[a] == 0.0:
        return []
    out = []
    k = len(shape)
    for ax in range(k):       # differs from a in axis ax only: same row / column / line
        cand = [b for b in H if all((b[i] != a[i]) == (i == ax) for i in range(k))]
        if cand:
            out.append((a, max(cand, key=H.get)))
    cand = [b for b in H if all(b[i] != a[i] for i in range(k))]
    if cand:
        out.append((a, max(cand, key=H.get)))
    return out


def _sums(rel, D, keep):
    axes = tuple(i + 1 for i, d in enumerate(rel.dims) if d not in keep)
    return D.sum(axis=axes) if axes else D


def _consistent(rel, D):
    """Each draw agrees with the release by the mechanism's definition (DESIGN.md)."""
    mech = rel.mechanism
    n = len(D)
    assert D.min() >= 0
    entries = [(k, np.asarray(v, float)) for k, v in rel.margins.items()]
    if rel.published is not None and not isinstance(mech, rk.CyclicPerturbation):
        entries.insert(0, (rel.dims, np.asarray(rel.published, float)))
    if isinstance(mech, (rk.MarginsOnly, rk.CellSuppression, rk.CyclicPerturbation)):
        # published entries (not NaN) exactly; cyclic perturbation: its totals
        for keep, val in entries:
            x = _sums(rel, D, keep).reshape(n, -1)
            v = val.reshape(-1)
            known = ~np.isnan(v)
            assert (x[:, known] == v[known]).all(), f"entry {keep} differs from the release"
        for g, parts in rel.groups.items():     # subtotals along the grouped dim
            ax = rel.dims.index(g) + 1
            for k, members in enumerate(parts):
                part = np.take(D, list(members), axis=ax).sum(axis=ax)
                want = np.take(rel.subtotals[rel.dims], k, axis=ax - 1)
                assert (part == want).all(), f"subtotal of group {k} differs"
                assert (part.reshape(n, -1).sum(1) == rel.subtotals[(g,)][k]).all()
    elif isinstance(mech, (rk.ControlledRounding, rk.RandomRounding)):
        B = mech.base
        exact_law = isinstance(mech, rk.RandomRounding) or mech.likelihood == "unbiased"
        for keep, val in entries:          # within B - 1 of every published entry
            x = _sums(rel, D, keep)
            assert (np.abs(x - val) <= B - 1).all(), f"entry {keep} outside its window"
            if exact_law:                  # a multiple of B is published as itself
                assert ((x % B != 0) | (x == val)).all(), f"entry {keep}: multiple moved"
    elif isinstance(mech, (rk.Bootstrap, rk.BinomialPerturbation)):
        N = int(rel.margins[()])
        P = np.asarray(rel.published)
        for idx in np.ndindex(*rel.shape):  # published value in the quality interval
            for x in np.unique(D[(slice(None), *idx)]).tolist():
                lo, hi = num.quality_interval(x, N, mech.S)
                assert lo <= P[idx] <= hi, f"cell {idx} = {x} cannot publish {P[idx]}"
    # NoisyCounts: every nonnegative table has positive likelihood


def _check_labels(draws, rel, n):
    assert draws.dims == ("draw", *rel.dims)
    assert draws.shape == (n, *rel.shape)
    assert draws.dtype == np.int64
    for d in rel.dims:
        assert list(draws.coords[d].values) == list(rel.coords[d])


def _check_draws(post, rel, exact, seed, *, n=N_DRAWS, tol=1e-9):
    """Checks 1-5 of the module docstring (``exact`` None: against the route's own
    marginals only)."""
    draws = post.sample(n, np.random.default_rng(seed))
    _check_labels(draws, rel, n)
    D = draws.values
    # 4. the same seed, the same draws; another seed, other draws (when no table has half
    # the mass, 64 draws agree by chance with probability below 2^-64)
    again = [post.sample(64, np.random.default_rng(seed + k)).values for k in (1, 1, 2)]
    np.testing.assert_array_equal(again[0], again[1])
    if exact is not None and exact.top() < 0.5:
        assert not np.array_equal(again[0], again[2])
    # 3. candidates
    if exact is not None:
        ok = exact.candidate(D)
        assert ok.all(), f"a draw that is not a candidate:\n{D[~ok][0]}"
    _consistent(rel, D)
    # 1. cells against the route's pmf (and that against the brute force)
    for idx in np.ndindex(*rel.shape):
        want = _route_cell(post, idx)
        if exact is not None:
            bf = exact.cell(idx)
            for v in set(want) | set(bf):
                assert want.get(v, 0.0) == pytest.approx(bf.get(v, 0.0), abs=tol), (idx, v)
        _gof(D[(slice(None), *idx)].tolist(), want, f"cell {idx}")
    # 2. pairs of cells and whole tables
    if exact is not None:
        for a, b in _pairs(exact, rel.shape):
            _gof(list(zip(D[(slice(None), *a)].tolist(), D[(slice(None), *b)].tolist())),
                 exact.pair(a, b), f"cells {a} and {b}")
        if exact.tables is not None:
            _gof([d.tobytes() for d in D], exact.tables, "whole tables")
    # 5. totals
    for keep, tp in post.totals.items():
        axes = tuple(i for i, d in enumerate(rel.dims) if d not in keep)
        S = _sums(rel, D, keep).reshape(n, -1)
        start = np.asarray(tp.start).reshape(-1)
        probs = tp.probs.reshape(start.size, -1)
        j = S - start
        inside = (j >= 0) & (j < probs.shape[1])
        mass = probs[np.arange(start.size), np.clip(j, 0, probs.shape[1] - 1)]
        assert (inside & (mass > 0)).all(), f"a draw's total {keep} has no posterior mass"
        if exact is not None and exact.sums(axes) is not None:
            assert {tuple(r) for r in S.tolist()} <= exact.sums(axes)
        for e in range(start.size):
            pm = {int(start[e]) + k: float(q) for k, q in enumerate(probs[e]) if q > 0}
            if len(pm) > 1:
                _gof(S[:, e].tolist(), pm, f"total {keep} entry {e}")
    return D


# --- cases ---------------------------------------------------------------------------------------


def _coords(dims, shape):
    return {d: LABELS[d][:s] for d, s in zip(dims, shape)}


def _labelled(a, dims, coords):
    """A per-cell parameter as a DataArray with every dim's labels reversed and the dims in
    reverse order: the prior must match it to the release by names and labels."""
    da = xr.DataArray(np.asarray(a), dims=dims, coords={d: coords[d] for d in dims})
    return da.isel({d: np.arange(len(coords[d]))[::-1] for d in dims}).transpose(*dims[::-1])


def _prior(spec, dims, coords):
    kind = spec["kind"]
    if kind == "uniform":
        p = rk.priors.Uniform()
    elif kind == "flat":
        p = rk.priors.Flat(spec["low"], spec["high"])
    elif kind == "poisson":
        r = spec["rate"]
        p = rk.priors.Poisson(float(r) if np.ndim(r) == 0 else _labelled(r, dims, coords))
    elif kind == "negbin":
        p = rk.priors.NegativeBinomial(spec["mean"], spec["dispersion"])
    else:
        p = rk.priors.Historical(_labelled(spec["table"], dims, coords), floor=spec["floor"])
    for cell, k in spec.get("at_least", ()):
        p = p.at_least([cell], k)
    for cell, v in spec.get("known", ()):
        p = p.known([cell], v)
    return p


def _logp(spec, T):
    return num.log_prior(spec, np.asarray(T))


def _table(T, dims=("v", "w")):
    T = np.asarray(T)
    return rk.Table(T, dims=dims, coords=_coords(dims, T.shape))


def _poisson_table(seed, shape, lam, low=0):
    return low + np.random.default_rng(seed).poisson(lam, size=shape)


def _cell_rates(seed, shape):
    return np.random.default_rng(seed + 77).uniform(0.3, 5.0, size=shape)


def _windows_2d(rel, lo, hi, rows, cols, grand):
    out = list(tab.tables_with_windows(lo, hi, rows, cols, grand))
    return np.array(out).reshape((-1,) + rel.shape)


def _margins_only(T, spec, route="dp"):
    rel = rk.MarginsOnly().protect(_table(T))
    R, C, N = T.sum(1), T.sum(0), T.sum()
    cand = _windows_2d(rel, np.zeros_like(T), np.minimum(R[:, None], C[None, :]),
                       [(x, x) for x in R], [(x, x) for x in C], (N, N))
    return rel, spec, route, _tables(cand, _logp(spec, cand))


def _rounding_2d(rel, spec, law):
    """Controlled or random rounding: every entry within B - 1 of its published value;
    ``law`` "feasible" (flat) or "unbiased" (the product of rounding probabilities, which
    is random rounding's exact likelihood)."""
    B = rel.mechanism.base
    P = rel.published
    d0, d1 = rel.dims

    def win(a):
        return np.maximum(np.asarray(a) - B + 1, 0), np.asarray(a) + B - 1

    lo, hi = win(P)
    cand = _windows_2d(rel, lo, hi, [win(v) for v in rel.margins[(d0,)]],
                       [win(v) for v in rel.margins[(d1,)]], win(rel.margins[()]))
    lw = _logp(spec, cand)
    if law == "unbiased":
        lw = lw + np.array([rounding_log_likelihood_2d(t, P, rel.margins[(d0,)],
                                                       rel.margins[(d1,)], rel.margins[()], B)
                            for t in cand])
    return _tables(cand, lw)


def _suppressed_2d(T, supp, spec, hide_row=None, groups=None):
    """A suppression release (NaN cells, optionally a hidden row total, optionally subtotals
    along one dim) and its completions."""
    rel_t = _table(T)
    dims = rel_t.dims
    R, C, N = T.sum(1), T.sum(0), T.sum()
    rows = R.astype(float)
    if hide_row is not None:
        rows[hide_row] = np.nan
    sub = None
    if groups:
        (g, parts), = groups.items()
        ax = dims.index(g)
        blocks = [np.take(T, p, axis=ax).sum(axis=ax) for p in parts]
        sub = {dims: np.stack(blocks, axis=ax), (g,): np.array([b.sum() for b in blocks])}
    rel = rk.Release(np.where(supp, np.nan, T), margins={("v",): rows, ("w",): C, (): N},
                     mechanism=rk.CellSuppression(suppress_totals=hide_row is not None),
                     dims=dims, coords=rel_t.coords, groups=groups, subtotals=sub)
    lo = np.where(supp, 0, T)
    hi = np.where(supp, np.minimum(np.where(np.isnan(rows), N, rows)[:, None], C[None, :]), T)
    row_rng = [(0, N) if np.isnan(x) else (int(x), int(x)) for x in rows]
    cand = _windows_2d(rel, lo, hi.astype(np.int64), row_rng, [(x, x) for x in C], (N, N))
    if groups:
        keep = np.ones(len(cand), bool)
        for k, p in enumerate(parts):
            part = np.take(cand, p, axis=ax + 1).sum(axis=ax + 1)
            keep &= (part == np.take(sub[dims], k, axis=ax)).all(axis=1)
        cand = cand[keep]
    return rel, _tables(cand, _logp(spec, cand))


def _noise_2d(T, mech, spec, seed, h):
    """Noisy counts: the candidates truncated to cells within ``h`` of their published
    value (the posterior mass left out is below 1e-7 here: the tolerance says so)."""
    rel = mech.protect(_table(T), np.random.default_rng(seed))
    P = rel.published
    lo = np.maximum(P - h, 0)
    hi = np.maximum(P, 0) + h
    cand = num.tables_in_windows(lo, hi)
    entries = [(tuple(i for i, d in enumerate(rel.dims) if d not in k), v)
               for k, v in [(rel.dims, P), *rel.margins.items()]]
    ll = ref.noise_log_likelihood(cand, entries, mech.distribution, mech.scale, mech.clip)
    return rel, _tables(cand, _logp(spec, cand) + ll)


def _rounding_3d(rel, spec, law):
    pubs = [np.asarray(rel.margins[tuple(rel.dims[a] for a in keep)]) for keep in MARGINS_3D]
    T, w = rounding_posterior_3d(np.asarray(rel.published), pubs, rel.mechanism.base, law,
                                 lambda t: _logp(spec, t))
    return _Tables(T, w)


def _three_d(T, spec):
    dims = ("v", "w", "u")
    return rk.Table(T, dims=dims, coords=_coords(dims, T.shape))


def _cyclic(T, C, alpha, beta, rule, spec, seed):
    dims = ("v", "w", "u")[:T.ndim]
    mech = rk.CyclicPerturbation(C, alpha=alpha, beta=beta, rule=rule)
    rel = mech.protect(rk.Table(T, dims=dims, coords=_coords(dims, T.shape)),
                       np.random.default_rng(seed))
    post, _, _ = cyclic_brute(rel.published, C, alpha, beta, rule,
                              lambda t: float(_logp(spec, t[None])[0]))
    T_ = np.array([t for t, _ in post.values()])
    p = np.array([q for _, q in post.values()])
    return rel, spec, "structured", _Tables(T_, p)


def _case(name):
    """(release, prior spec, route, exact posterior, tolerance on the marginals)."""
    s = zlib.crc32(name.encode())
    tol = 1e-9
    # --- table DP: margins only (both orientations, zeros, extreme priors) ---
    if name == "dp/margins 2x3 uniform":
        out = _margins_only(np.array([[2, 0, 3], [1, 4, 2]]), {"kind": "uniform"})
    elif name == "dp/margins 3x2 zero row poisson":
        out = _margins_only(np.array([[0, 0], [3, 1], [2, 4]]), {"kind": "poisson", "rate": 1.5})
    elif name == "dp/margins 2x5 per-cell rates":
        out = _margins_only(_poisson_table(s, (2, 5), 1.5),
                            {"kind": "poisson", "rate": _cell_rates(s, (2, 5))})
    elif name == "dp/margins 5x2 negative binomial":
        out = _margins_only(_poisson_table(s, (5, 2), 1.5),
                            {"kind": "negbin", "mean": 2.0, "dispersion": 0.3})
    elif name == "dp/margins 3x3 rate 0.01":
        out = _margins_only(_poisson_table(s, (3, 3), 2.5), {"kind": "poisson", "rate": 0.01})
    elif name == "dp/margins 2x4 rate 300":
        out = _margins_only(_poisson_table(s, (2, 4), 2.0), {"kind": "poisson", "rate": 300.0})
    elif name == "dp/margins 3x4 knowledge":
        T = _poisson_table(s, (3, 4), 1.2)
        T[0, 1] = max(T[0, 1], 1)
        out = _margins_only(T, {"kind": "uniform", "at_least": [((0, 1), 1)],
                                "known": [((2, 0), int(T[2, 0]))]})
    elif name == "dp/margins 2x3 all zero":
        out = _margins_only(np.zeros((2, 3), np.int64), {"kind": "poisson", "rate": 2.0})
    elif name == "dp/margins 6x2 historical":
        T = _poisson_table(s, (6, 2), 1.0)
        out = _margins_only(T, {"kind": "historical", "table": _poisson_table(s + 1, (6, 2), 1.0),
                                "floor": 0.5})
    # --- table DP: controlled rounding ---
    elif name.startswith("dp/controlled"):
        shape, B, method, law, spec = {
            "dp/controlled 2x3 B3 feasible uniform": ((2, 3), 3, "unbiased", "feasible",
                                                      {"kind": "uniform"}),
            "dp/controlled 3x2 B2 unbiased poisson": ((3, 2), 2, "optimal", "unbiased",
                                                      {"kind": "poisson", "rate": 2.5}),
            "dp/controlled 2x2 B5 unbiased per-cell rates": (
                (2, 2), 5, "unbiased", "unbiased",
                {"kind": "poisson", "rate": _cell_rates(s, (2, 2))}),
        }[name]
        mech = rk.ControlledRounding(B, method=method, likelihood=law)
        rel = mech.protect(_table(_poisson_table(s, shape, 3.0)), np.random.default_rng(s))
        out = rel, spec, "dp", _rounding_2d(rel, spec, law)
    # --- table DP: cell suppression ---
    elif name == "dp/suppression 3x3 poisson":
        T = _poisson_table(s, (3, 3), 3.0)
        supp = np.zeros((3, 3), bool)
        supp[np.ix_([0, 2], [0, 2])] = True
        spec = {"kind": "poisson", "rate": 3.0}
        rel, exact = _suppressed_2d(T, supp, spec)
        out = rel, spec, "dp", exact
    elif name == "dp/suppression 2x4 hidden row total":
        T = _poisson_table(s, (2, 4), 4.0)
        supp = np.zeros((2, 4), bool)
        supp[:, 1:] = True
        spec = {"kind": "uniform"}
        rel, exact = _suppressed_2d(T, supp, spec, hide_row=0)
        out = rel, spec, "dp", exact
    # --- table DP: random rounding ---
    elif name.startswith("dp/random rounding"):
        shape, B, spec = {
            "dp/random rounding 2x2 B2 poisson": ((2, 2), 2, {"kind": "poisson", "rate": 3.0}),
            "dp/random rounding 2x3 B2 uniform": ((2, 3), 2, {"kind": "uniform"}),
            "dp/random rounding 3x2 B3 per-cell rates": (
                (3, 2), 3, {"kind": "poisson", "rate": _cell_rates(s, (3, 2))}),
        }[name]
        rel = rk.RandomRounding(B).protect(_table(_poisson_table(s, shape, 2.5)),
                                           np.random.default_rng(s))
        out = rel, spec, "dp", _rounding_2d(rel, spec, "unbiased")
    # --- table DP: noisy counts ---
    elif name == "dp/noise 2x2 geometric":
        spec = {"kind": "poisson", "rate": 3.0}
        rel, exact = _noise_2d(_poisson_table(s, (2, 2), 3.0),
                               rk.NoisyCounts("geometric", scale=0.5, clip=False), spec, s,
                               h=8)
        out, tol = (rel, spec, "dp", exact), 1e-6
    elif name == "dp/noise 2x2 discrete gaussian clipped":
        spec = {"kind": "poisson", "rate": _cell_rates(s, (2, 2))}
        rel, exact = _noise_2d(np.array([[0, 1], [4, 0]]),
                               rk.NoisyCounts("discrete_gaussian", scale=0.8, clip=True),
                               spec, s, h=6)
        out, tol = (rel, spec, "dp", exact), 1e-6
    # --- half split (margins only, 3-4 rows either way round; draws through the DP) ---
    elif name == "halves/3x3 uniform":
        out = _margins_only(_poisson_table(s, (3, 3), 3.0), {"kind": "uniform"}, "halves")
    elif name == "halves/4x3 flat low 1":
        out = _margins_only(_poisson_table(s, (4, 3), 0.8, low=1),
                            {"kind": "flat", "low": 1, "high": None}, "halves")
    elif name == "halves/5x3 knowledge":
        T = _poisson_table(s, (5, 3), 0.9)
        T[0, 0] = max(T[0, 0], 2)
        out = _margins_only(T, {"kind": "uniform", "at_least": [((0, 0), 2)]}, "halves")
    elif name == "halves/4x4 uniform":
        out = _margins_only(_poisson_table(s, (4, 4), 0.6), {"kind": "uniform"}, "halves")
    # --- grouped subtotals ---
    elif name == "grouped/3x3 margins, groups along v":
        T = _poisson_table(s, (3, 3), 2.0)
        spec = {"kind": "poisson", "rate": 2.0}
        rel, exact = _suppressed_2d(T, np.ones((3, 3), bool), spec,
                                    groups={"v": [[0, 2], [1]]})
        out = rel, spec, "grouped-dp", exact
    elif name == "grouped/3x4 suppression, groups along w":
        T = _poisson_table(s, (3, 4), 2.0)
        supp = np.ones((3, 4), bool)
        supp[1, 1] = False
        spec = {"kind": "poisson", "rate": _cell_rates(s, (3, 4))}
        rel, exact = _suppressed_2d(T, supp, spec, groups={"w": [[0, 2], [1, 3]]})
        out = rel, spec, "grouped-dp", exact
    # --- 3-D enumerator ---
    elif name in ("3d/margins 2x2x3 poisson", "3d/margins 3x2x2 uniform"):
        shape, spec = {"3d/margins 2x2x3 poisson": ((2, 2, 3), {"kind": "poisson", "rate": 1.5}),
                       "3d/margins 3x2x2 uniform": ((3, 2, 2), {"kind": "uniform"})}[name]
        T = _poisson_table(s, shape, 5.0 if shape == (2, 2, 3) else 4.0)
        rel = rk.MarginsOnly().protect(_three_d(T, spec))
        cand = np.array(tab.tables_with_2way_margins(T.sum(2), T.sum(1), T.sum(0)))
        out = rel, spec, "enumerate", _tables(cand, _logp(spec, cand))
    elif name == "3d/controlled rounding 2x2x2 B2":
        spec = {"kind": "poisson", "rate": 2.0}
        mech = rk.ControlledRounding(2, likelihood="unbiased")
        rel = mech.protect(_three_d(_poisson_table(s, (2, 2, 2), 2.0), spec),
                           np.random.default_rng(s))
        out = rel, spec, "enumerate", _rounding_3d(rel, spec, "unbiased")
    elif name == "3d/random rounding 2x2x2 B3":
        spec = {"kind": "poisson", "rate": _cell_rates(s, (2, 2, 2))}
        rel = rk.RandomRounding(3).protect(_three_d(_poisson_table(s, (2, 2, 2), 2.0), spec),
                                           np.random.default_rng(s))
        out = rel, spec, "enumerate", _rounding_3d(rel, spec, "unbiased")
    elif name == "3d/suppression 2x3x2":
        T = _poisson_table(s, (2, 3, 2), 2.0)
        supp = np.zeros(T.shape, bool)
        supp[np.ix_([0, 1], [0, 2], [0, 1])] = True
        spec = {"kind": "uniform"}
        t = _three_d(T, spec)
        rel = rk.Release(np.where(supp, np.nan, T), margins=t.totals(),
                         mechanism=rk.CellSuppression(), dims=t.dims, coords=t.coords)
        cand = np.array(tab.tables_with_2way_margins(T.sum(2), T.sum(1), T.sum(0)))
        cand = cand[(cand == T)[:, ~supp].all(axis=1)]
        out = rel, spec, "enumerate", _tables(cand, _logp(spec, cand))
    elif name == "3d/noise 1x2x2 discrete gaussian":
        # every cell lies in 8 published entries: wide noise keeps the posterior wide; the
        # candidates within 9 of the published cells hold all but ~1e-19 of its mass
        spec = {"kind": "poisson", "rate": 3.0}
        T = _poisson_table(s, (1, 2, 2), 3.0)
        rel = rk.NoisyCounts("discrete_gaussian", scale=2.0, clip=False).protect(
            _three_d(T, spec), np.random.default_rng(s))
        P = rel.published
        cand = num.tables_in_windows(np.maximum(P - 9, 0), np.maximum(P, 0) + 9)
        entries = [(tuple(i for i, d in enumerate(rel.dims) if d not in k), v)
                   for k, v in [(rel.dims, P), *rel.margins.items()]]
        ll = ref.noise_log_likelihood(cand, entries, "discrete_gaussian", 2.0, False)
        out = rel, spec, "enumerate", _tables(cand, _logp(spec, cand) + ll)
    # --- independent cells ---
    elif name.startswith("cells/"):
        T = np.array([[3, 5, 0], [7, 2, 9]])
        if name == "cells/bootstrap 2x3 uniform":
            mech, spec = rk.Bootstrap(M=3, S=2.0), {"kind": "uniform"}
        elif name == "cells/binomial 2x3 per-cell rates":
            mech, spec = rk.BinomialPerturbation(S=2.0), {"kind": "poisson",
                                                          "rate": _cell_rates(s, (2, 3))}
        else:
            mech, spec = rk.RandomRounding(3), {"kind": "poisson", "rate": 4.0}
        rel = mech.protect(_table(T), np.random.default_rng(s))
        if isinstance(mech, rk.RandomRounding):          # no total published
            rel = rk.Release(rel.published, margins={}, mechanism=mech, dims=rel.dims,
                             coords=rel.coords)
            values = np.arange(0, int(rel.published.max()) + 3)

            def lik(k, x):
                return float(num.round_log_prob(x, k, 3))
        else:
            N = int(rel.margins[()])
            values = np.arange(0, N + 1)
            if isinstance(mech, rk.Bootstrap):
                def lik(k, x):
                    return num.bootstrap_log_lik(k, x, N, mech.M, mech.S)
            else:
                def lik(k, x):
                    return num.binomial_log_lik(k, x, N, mech.S)
        marg = ref.independent_cells(rel.published, values, lik,
                                     lambda idx, x: float(num.cell_log_prior(spec, idx, [x])[0]))
        # random rounding without totals: whichever route the mechanism offers for it
        out = rel, spec, ("auto" if isinstance(mech, rk.RandomRounding) else "cells"), \
            _Cells(marg)
    # --- cyclic perturbation, clique tree ---
    elif name == "structured/diagonal 3x3 poisson":
        out = _cyclic(_poisson_table(s, (3, 3), 2.0), rk.cycles.diagonal(3), 0.25, 0.25,
                      "negative", {"kind": "poisson", "rate": 2.0}, s)
    elif name == "structured/2x3 moves, any_zero, uniform":
        C = rk.cycles.elementary_moves((2, 3), 8, np.random.default_rng(s))
        out = _cyclic(_poisson_table(s, (2, 3), 4.0), C, 0.3, 0.3, "any_zero",
                      {"kind": "uniform"}, s)
    elif name == "structured/2x2x2 moves, per-cell rates":
        C = rk.cycles.elementary_moves((2, 2, 2), 3, np.random.default_rng(s))
        out = _cyclic(_poisson_table(s, (2, 2, 2), 2.0), C, 0.35, 0.35, "negative",
                      {"kind": "poisson", "rate": _cell_rates(s, (2, 2, 2))}, s)
    elif name == "structured/diagonal 4x4 flat low 1":
        out = _cyclic(_poisson_table(s, (4, 4), 3.0, low=1), rk.cycles.diagonal(4), 0.3, 0.3,
                      "negative", {"kind": "flat", "low": 1, "high": None}, s)
    else:
        raise KeyError(name)
    return (*out, tol)


CASES = [
    "dp/margins 2x3 uniform", "dp/margins 3x2 zero row poisson", "dp/margins 2x5 per-cell rates",
    "dp/margins 5x2 negative binomial", "dp/margins 3x3 rate 0.01", "dp/margins 2x4 rate 300",
    "dp/margins 3x4 knowledge", "dp/margins 2x3 all zero", "dp/margins 6x2 historical",
    "dp/controlled 2x3 B3 feasible uniform", "dp/controlled 3x2 B2 unbiased poisson",
    "dp/controlled 2x2 B5 unbiased per-cell rates",
    "dp/suppression 3x3 poisson", "dp/suppression 2x4 hidden row total",
    "dp/random rounding 2x2 B2 poisson", "dp/random rounding 2x3 B2 uniform",
    "dp/random rounding 3x2 B3 per-cell rates",
    "dp/noise 2x2 geometric", "dp/noise 2x2 discrete gaussian clipped",
    "halves/3x3 uniform", "halves/4x3 flat low 1", "halves/5x3 knowledge", "halves/4x4 uniform",
    "grouped/3x3 margins, groups along v", "grouped/3x4 suppression, groups along w",
    "3d/margins 2x2x3 poisson", "3d/margins 3x2x2 uniform", "3d/controlled rounding 2x2x2 B2",
    "3d/random rounding 2x2x2 B3", "3d/suppression 2x3x2", "3d/noise 1x2x2 discrete gaussian",
    "cells/bootstrap 2x3 uniform", "cells/binomial 2x3 per-cell rates",
    "cells/random rounding without totals",
    "structured/diagonal 3x3 poisson", "structured/2x3 moves, any_zero, uniform",
    "structured/2x2x2 moves, per-cell rates", "structured/diagonal 4x4 flat low 1",
]


@pytest.mark.parametrize("name", [n if n in (  # one case per route family
    "dp/margins 2x3 uniform", "dp/controlled 3x2 B2 unbiased poisson",
    "dp/suppression 3x3 poisson", "dp/random rounding 2x3 B2 uniform",
    "dp/noise 2x2 discrete gaussian clipped", "halves/3x3 uniform",
    "grouped/3x3 margins, groups along v", "3d/controlled rounding 2x2x2 B2",
    "cells/bootstrap 2x3 uniform", "structured/diagonal 3x3 poisson",
) else pytest.param(n, marks=pytest.mark.slow) for n in CASES])
def test_draws_match_the_exact_posterior(name):
    rel, spec, route, exact, tol = _case(name)
    prior = _prior(spec, rel.dims, rel.coords)
    post = rk.posterior(rel, prior, route=route)
    assert route == "auto" or post.attrs["route"] == route
    _check_draws(post, rel, exact, zlib.crc32(name.encode()) % 2 ** 31, tol=tol)


def test_the_table_dp_runs_in_either_orientation():
    """The DP puts the dim with the fewest stored states on its rows: a 2 x 5 release runs
    as it is, a 5 x 2 one transposed (both drawn in the release's orientation above)."""
    seen = []
    for name in ("dp/margins 2x5 per-cell rates", "dp/margins 5x2 negative binomial"):
        rel, spec, _, _, _ = _case(name)
        route = next(r for r in rel.mechanism.routes if r.name == "dp")
        ew = route.orientation(plan(rel, _prior(spec, rel.dims, rel.coords)), "posterior")[0]
        seen.append(ew.dims != rel.dims)
    assert seen == [False, True]


# --- realistic counts: one or two free cells, brute force at any count ---------------------------


def _big(name):
    dims = ("v", "w")
    if name == "2x2 margins 1e4 uniform":
        T = np.array([[1800, 1200], [2700, 4300]])
        spec = {"kind": "uniform"}
    elif name == "2x2 margins 1e4 historical":
        T = np.array([[2500, 3500], [1500, 2500]])
        spec = {"kind": "historical", "table": np.array([[2400, 3700], [1450, 2450]]),
                "floor": 0.5}
    elif name == "2x3 margins in the hundreds, per-cell rates":
        T = np.array([[120, 200, 80], [300, 150, 250]])
        spec = {"kind": "poisson", "rate": 1.3 * T[::-1, ::-1] + 7.0}
    else:                                       # controlled rounding to base 10 at 1e4
        T = np.array([[4321, 2789], [1234, 987]])
        spec = {"kind": "poisson", "rate": T * np.array([[1.1, 0.9], [1.0, 1.2]])}
        mech = rk.ControlledRounding(10, likelihood="unbiased")
        rel = mech.protect(_table(T, dims), np.random.default_rng(3))
        B = 10
        P = rel.published
        cand = num.tables_in_windows(np.maximum(P - B + 1, 0), P + B - 1)
        rows, cols, grand = num.all_totals_2d(cand)
        ok = ((np.abs(rows - rel.margins[("v",)]) < B).all(1)
              & (np.abs(cols - rel.margins[("w",)]) < B).all(1)
              & (np.abs(grand - rel.margins[()]) < B))
        cand, rows, cols, grand = cand[ok], rows[ok], cols[ok], grand[ok]
        lw = _logp(spec, cand) + (
            num.round_log_prob(cand, P, B).reshape(len(cand), -1).sum(1)
            + num.round_log_prob(rows, rel.margins[("v",)], B).sum(1)
            + num.round_log_prob(cols, rel.margins[("w",)], B).sum(1)
            + num.round_log_prob(grand, rel.margins[()], B))
        return rel, spec, _tables(cand, lw)
    rel = rk.MarginsOnly().protect(_table(T, dims))
    cand = num.tables_2xc(T.sum(1), T.sum(0))
    return rel, spec, _tables(cand, _logp(spec, cand))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["2x2 margins 1e4 uniform", "2x2 margins 1e4 historical",
                                  "2x3 margins in the hundreds, per-cell rates",
                                  "2x2 controlled rounding B10 at 1e4"])
def test_draws_at_realistic_counts(name):
    rel, spec, exact = _big(name)
    post = rk.posterior(rel, _prior(spec, rel.dims, rel.coords), route="dp")
    _check_draws(post, rel, exact, zlib.crc32(name.encode()) % 2 ** 31, tol=1e-9)


# --- checkpoints --------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["margins", "rounding"])
def test_draws_with_checkpoints(kind):
    """With a memory budget below the forward pass the draws keep checkpoints and recompute
    each segment (kernels.table_dp.checkpoint_plan): the same draws as with every stage
    kept (the recomputed stages are the same numbers), and they fit the posterior."""
    T = _poisson_table(11, (3, 5), 4.0)
    mech = rk.MarginsOnly() if kind == "margins" else rk.ControlledRounding(3, "optimal")
    rel = mech.protect(_table(T))
    prior = rk.priors.Poisson(3.0)
    route = next(r for r in mech.routes if r.name == "dp")
    _, win, _, _ = route.orientation(plan(rel, prior), "posterior")
    need = math.ceil(dp.memory(win, "posterior")[0])
    w, _ = dp._largest_row_last(win.trimmed())
    per = dp._args(w)[2].stage_states()
    keep, _ = checkpoint_plan(per, need / 8)
    assert not keep.all()                       # the draws below do recompute segments
    small = rk.posterior(rel, prior, route="dp", count=False, memory=need)
    full = rk.posterior(rel, prior, route="dp", count=False)
    a = small.sample(4000, np.random.default_rng(5)).values
    b = full.sample(4000, np.random.default_rng(5)).values
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(dp.sample(win, 300, np.random.default_rng(6),
                                            max_states=need / 8),
                                  dp.sample(win, 300, np.random.default_rng(6)))
    _check_draws(small, rel, None, 17, n=N_DRAWS)
