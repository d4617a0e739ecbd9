"""3-D controlled rounding (seed 004, "3-D Controlled Rounding") and 3-D margins-only bounds
(seed 004, "Frechet Bounds" / "Counter examples"): protect, existence, exact inference.

References here are brute force: every up/down pattern of the non-multiple cells (existence,
optimal distortion), and every integer table in the box of cell windows (inference).
"""

import itertools
import math

import numpy as np
import pytest
from scipy import stats

import riskengine as rk
from riskengine.mechanisms import _rounding3d as R3
from tests.reference.cyclic import round_prob

DIMS = ("a", "b", "c")
MARGINS = [(0, 1), (0, 2), (1, 2), (0,), (1,), (2,), ()]     # axes kept, kernel order


def _totals(x):
    """Every total of a 3-D array (or a stack of them: leading axis kept), MARGINS order.
    Summed as one product with 0/1 membership matrices (exact: small integers in float64)."""
    x = np.asarray(x)
    shape = x.shape[-3:]
    lead = x.shape[:-3]
    flat = x.reshape(-1, int(np.prod(shape))).astype(float)
    out = []
    for keep in MARGINS:
        kshape = tuple(shape[a] for a in keep)
        grid = np.indices(shape)
        tid = (np.ravel_multi_index(tuple(grid[a] for a in keep), kshape).ravel() if keep
               else np.zeros(flat.shape[1], np.int64))
        member = np.zeros((flat.shape[1], int(np.prod(kshape))))
        member[np.arange(flat.shape[1]), tid] = 1.0
        out.append(np.rint(flat @ member).astype(np.int64).reshape(lead + kshape))
    return out


def _adjacent(orig, rnd, B):
    """Elementwise: rnd is a multiple of B adjacent to orig (a multiple stays)."""
    return (rnd % B == 0) & (np.abs(rnd - orig) < B) & ((orig % B != 0) | (rnd == orig))


def _all_roundings(x, B):
    """Brute force: every up/down pattern of the non-multiple cells; the controlled
    roundings among them (interior and every total adjacent)."""
    x = np.asarray(x, dtype=np.int64)
    nm = np.argwhere(x % B != 0)
    floor = B * (x // B)
    pats = np.array(list(itertools.product((0, 1), repeat=len(nm))), dtype=np.int64)
    tabs = np.repeat(floor[None], len(pats), axis=0)
    for n, idx in enumerate(nm):
        tabs[(slice(None),) + tuple(idx)] += B * pats[:, n]
    ok = np.ones(len(tabs), bool)
    for tx, tr in zip(_totals(x), _totals(tabs)):
        ok &= _adjacent(tx, tr, B).reshape(len(tabs), -1).all(axis=1)
    return tabs[ok]


def _check_cr(x, rel, B):
    """The release is a controlled rounding of x: interior and every published total adjacent,
    and the published totals are the totals of the published interior."""
    R = np.asarray(rel.published, dtype=np.int64)
    assert _adjacent(x, R, B).all()
    for keep, tx, tr in zip(MARGINS, _totals(x), _totals(R)):
        pub = rel.margins[tuple(DIMS[a] for a in keep)]
        assert np.array_equal(pub, tr)
        assert _adjacent(tx, tr, B).all()


# --- protect --------------------------------------------------------------------------------
# Found by a random search over 2 x 2 x 2 tables (base 2), confirmed by brute force below:
# zero-restricted controlled rounding does not exist (Ernst 1989, as cited in seed 004).
NO_ROUNDING = np.array([[[0, 0], [1, 3]], [[1, 3], [1, 2]]])


def test_2x2x2_without_controlled_rounding_raises():
    assert len(_all_roundings(NO_ROUNDING, 2)) == 0
    t = rk.Table(NO_ROUNDING, dims=DIMS)
    for method in ("unbiased", "optimal"):
        with pytest.raises(ValueError, match="no controlled rounding to base 2 exists"):
            rk.ControlledRounding(2, method=method).protect(t, np.random.default_rng(0))


@pytest.mark.parametrize("seed", range(40))
def test_milp_existence_and_optimum_match_brute_force(seed):
    """The HiGHS MILP's verdict equals brute force over all up/down patterns, and its optimum
    attains the brute-force minimum total absolute distortion of the interior."""
    rng = np.random.default_rng(1000 + seed)
    shape = [(2, 2, 2), (2, 2, 3), (2, 3, 2), (3, 2, 2)][seed % 4]
    B = int(rng.integers(2, 5))
    x = rng.integers(0, 2 * B + 1, size=shape) * (rng.random(shape) > 0.2)
    allr = _all_roundings(x, B)
    got = R3.milp_rounding(x, B)
    assert (got is None) == (len(allr) == 0)
    feas = R3.milp_rounding(x, B, objective="none")
    assert (feas is None) == (len(allr) == 0)
    if len(allr):
        assert R3.is_controlled_rounding(x, got, B)
        best = np.abs(allr - x).reshape(len(allr), -1).sum(1).min()
        assert np.abs(got - x).sum() == best
        assert any(np.array_equal(got, r) for r in allr)


@pytest.mark.parametrize("seed", range(16))
def test_protect_3d_outputs_are_controlled_roundings(seed):
    """Random small 3-D tables, bases 2-5, both methods: every release is a controlled rounding
    of the table; a ValueError exactly when brute force finds none."""
    rng = np.random.default_rng(seed)
    shape = [(2, 2, 2), (2, 3, 2), (3, 2, 3), (2, 2, 4)][seed % 4]
    B = int(rng.integers(2, 6))
    x = rng.integers(0, 3 * B, size=shape) * (rng.random(shape) > 0.25)
    exists = len(_all_roundings(x, B)) > 0 if (x % B != 0).sum() <= 14 else None
    t = rk.Table(x, dims=DIMS)
    for method in ("unbiased", "optimal"):
        mech = rk.ControlledRounding(B, method=method)
        try:
            rel = mech.protect(t, np.random.default_rng(seed))
        except ValueError as e:
            assert exists is False or "Ernst's plane stacking" in str(e), str(e)
            continue
        assert exists in (True, None)
        _check_cr(x, rel, B)
        assert rk.Release.from_json(rel.to_json()) == rel


def test_ernst_stacking_is_unbiased_per_entry():
    """Ernst's stacking with Cox's 2-D steps (no conditioning on success): each rounded plane is
    a rounding of (original up to k) - (rounded below), so E[rounded entry] = original.
    1200 draws of a 2 x 3 x 3 table, base 3: every cell mean within 4.5 standard errors."""
    from riskengine.mechanisms._cox import cox_unbiased as _cox_unbiased
    x = np.array([[[4, 1, 7], [2, 5, 0], [8, 3, 1]], [[1, 1, 5], [7, 2, 2], [0, 4, 6]]])
    rng = np.random.default_rng(7)
    draws = np.array([R3.ernst_stack(x, 3, lambda M: _cox_unbiased(M, 3, rng))
                      for _ in range(1200)], dtype=float)
    assert np.all(draws % 3 == 0)
    # the totals plane (sum over the stacking axis) is always a controlled rounding
    assert _adjacent(x.sum(2), draws.sum(3).astype(np.int64), 3).all()
    assert np.all(np.abs(draws - x) < 6)          # Ernst's relaxed rounding: within 2 bases
    mean = draws.mean(0)
    se = draws.std(0, ddof=1) / math.sqrt(len(draws))
    assert np.all(np.abs(mean - x) <= 4.5 * se)   # multiples included: in planes above
    assert np.array_equal(mean[..., 0][x[..., 0] % 3 == 0], x[..., 0][x[..., 0] % 3 == 0])
    # ... the bottom plane keeps its multiples, but higher planes may move them (here: zeros
    # become -3 or 3), which is why the stacked result must be checked
    assert draws[..., 1:].min() < 0


def test_protect_3d_same_seed_same_release_and_errors():
    x = np.array([[[4, 1, 7], [2, 5, 0]], [[1, 1, 5], [7, 2, 2]]])
    t = rk.Table(x, dims=DIMS)
    mech = rk.ControlledRounding(3)
    a = mech.protect(t, np.random.default_rng(3))
    assert a == mech.protect(t, np.random.default_rng(3))
    assert a.info["ernst_draws"] >= 1
    with pytest.raises(ValueError, match="every 2-way and 1-way margin"):
        mech.protect(rk.Table(x, dims=DIMS, margins=[("a", "b")]), np.random.default_rng(0))
    with pytest.raises(TypeError, match="Generator"):
        mech.protect(t, 3)


# --- inference --------------------------------------------------------------------------------
def _brute_posterior(P, margins, B, likelihood, log_prior):
    """Every integer table with cells in [max(0, P-B+1), P+B-1]: planes a = i enumerated cell by
    cell and kept when their own totals (ab, ac, a) lie within B-1 of the published ones; then
    every combination of planes, kept when the remaining totals do.  Weight: prior x
    product over all entries (totals included) of the rounding probability (or 1), looked up
    from the scalar reference ``round_prob``.  ``log_prior`` takes a stack of tables."""
    I, J, K = P.shape
    pubs = [np.asarray(margins[tuple(DIMS[a] for a in keep)]) for keep in MARGINS]

    def near(t, p):
        return np.abs(t - p) <= B - 1

    planes = []
    for i in range(I):
        box = [range(max(0, int(p) - B + 1), int(p) + B) for p in P[i].ravel()]
        cand = np.array(list(itertools.product(*box)), dtype=np.int64).reshape(-1, J, K)
        ok = near(cand.sum(2), pubs[0][i]).all(1)
        ok &= near(cand.sum(1), pubs[1][i]).all(1) & near(cand.sum((1, 2)), pubs[3][i])
        planes.append(cand[ok])
    # combine planes one at a time; partial sums over the planes so far only grow, so a
    # partial jk sum above its window's top can never come back
    T = planes[0][:, None]
    for i in range(1, I):
        a = np.repeat(np.arange(len(T)), len(planes[i]))
        b = np.tile(np.arange(len(planes[i])), len(T))
        T = np.concatenate([T[a], planes[i][b][:, None]], axis=1)
        T = T[(T.sum(1) <= pubs[2] + B - 1).all((1, 2))]
    tt = _totals(T)
    ok = np.ones(len(T), bool)
    for m in (2, 4, 5, 6):
        ok &= near(tt[m], pubs[m]).reshape(len(T), -1).all(1)
    tabs = [T[ok]]
    T = np.concatenate(tabs)
    lw = np.asarray(log_prior(T), dtype=float)
    if likelihood == "unbiased":
        top = int(T.sum(axis=(1, 2, 3)).max()) + B + 1
        table = np.array([[round_prob(t, r, B) for r in range(top + B)] for t in range(top)])
        with np.errstate(divide="ignore"):
            table = np.log(table)
        for t, p in [(T, P)] + list(zip(_totals(T), pubs)):
            lw = lw + table[t, np.broadcast_to(p, t.shape)].reshape(len(T), -1).sum(1)
    keep = np.isfinite(lw)
    T, lw = T[keep], lw[keep]
    ws = np.exp(lw - lw.max()) if len(T) else lw
    return T, ws / ws.sum() if len(T) else ws


def _assert_matches(start, probs, values, ws):
    """Each entry's posterior window equals the brute-force pmf (<= 1e-9).  ``start`` (n,),
    ``probs`` (n, W), ``values`` (N tables, n entries)."""
    for e in range(len(start)):
        want = np.bincount(values[:, e], weights=ws)
        got = np.zeros(max(len(want), start[e] + probs.shape[1]))
        got[start[e]:start[e] + probs.shape[1]] = probs[e]
        want = np.pad(want, (0, len(got) - len(want)))
        assert np.abs(got - want).max() <= 1e-9, e


def _random_release(rng, shape, B, sparse=False):
    """A rounded release: a protected random table when a rounding exists, else a random
    table of multiples (any such table is a valid release); ``sparse``: mostly zeros."""
    x = rng.poisson(float(rng.uniform(0.5, 2.5)) * B / 2, size=shape) * (rng.random(shape) > 0.2)
    R = R3.milp_rounding(x, B) if rng.random() < 0.7 and not sparse else None
    if R is None:
        R = B * rng.integers(0, 3, size=shape) * (rng.random(shape) < (0.4 if sparse else 0.8))
    return R


@pytest.mark.parametrize("seed", range(60))
def test_3d_rounding_posterior_matches_brute_force(seed):
    rng = np.random.default_rng(500 + seed)
    shape = [(2, 2, 2), (3, 2, 2)][seed % 2]
    # 3 x 2 x 2 at base 3 has up to ~1e6 candidates and 2 x 2 x 2 at base 4 ~1e5 (slow brute
    # force): there mostly sparse releases
    B = int(rng.integers(2, 5)) if shape == (2, 2, 2) else 2 + (seed % 10 == 1)
    R = _random_release(rng, shape, B, sparse=B + shape[0] >= 6)
    likelihood = ("feasible", "unbiased")[(seed // 2) % 2]
    mech = rk.ControlledRounding(B, likelihood=likelihood)
    margins = {tuple(DIMS[a] for a in keep): t for keep, t in zip(MARGINS, _totals(R))}
    rel = rk.Release(R, margins=margins, mechanism=mech, dims=DIMS)
    kind = seed % 3
    rate = float(rng.uniform(0.5, 4))
    if kind == 0:
        prior, lp = rk.priors.Uniform(), (lambda T: np.zeros(len(T)))
    elif kind == 1:
        prior = rk.priors.Poisson(rate)
        lp = (lambda T: stats.poisson.logpmf(T, rate).sum((1, 2, 3)))
    else:                              # Poisson plus the knowledge that cell (0, 0, 0) >= 1
        prior = rk.priors.Poisson(rate).at_least([(0, 0, 0)], 1)
        lp = (lambda T: np.where(T[:, 0, 0, 0] >= 1,
                                 stats.poisson.logpmf(T, rate).sum((1, 2, 3)), -np.inf))
    tabs, ws = _brute_posterior(R, margins, B, likelihood, lp)
    if not len(tabs):
        with pytest.raises(ValueError, match="no original table"):
            rk.posterior(rel, prior)
        return
    post = rk.posterior(rel, prior)
    assert post.n_candidates == len(tabs)
    if kind == 0:
        assert rk.count_candidates(rel) == len(tabs)
    assert np.allclose(post.probs.sum(-1), 1.0)
    W = post.probs.shape[-1]
    _assert_matches(post.start.ravel(), post.probs.reshape(-1, W), tabs.reshape(len(tabs), -1),
                    ws)
    for m, keep in enumerate(MARGINS):
        tp = post.totals[tuple(DIMS[a] for a in keep)]
        _assert_matches(np.atleast_1d(tp.start).ravel(), tp.probs.reshape(-1, W),
                        _totals(tabs)[m].reshape(len(tabs), -1), ws)


def test_3d_rounding_posterior_true_table_is_candidate():
    x = np.array([[[4, 1, 2], [2, 5, 0]], [[1, 1, 5], [3, 2, 2]]])
    rel = rk.ControlledRounding(3, method="optimal").protect(rk.Table(x, dims=DIMS))
    post = rk.posterior(rel)
    assert post.prob_exact(x).values.min() > 0
    assert post.attrs["route"] == "enumerate"
    with pytest.raises(ValueError, match="route 'dp' cannot answer .*covers 2-D tables"):
        rk.posterior(rel, route="dp")
    with pytest.raises(ValueError, match="unknown route 'structured'"):
        rk.posterior(rel, route="structured")


# --- seed 004: Fréchet bounds and their failure in 3-D -----------------------------------------
# Seed 004 (Cox, course notes), slides "Counter examples" (after "Frechet Bounds"): each 3-D
# example is printed as its planes (one per value of the last dim), each plane showing only its
# row totals (a, c kept) and column totals (b, c kept), then the "totals plane" (a, b kept).
# The example captions follow their tables in the OCR text; read that way every example has the
# property its caption states (checked below).  Interior values are not printed.
def _ex(planes_rows, planes_cols, ab):
    ac = np.array(planes_rows).T
    bc = np.array(planes_cols).T
    ab = np.array(ab)
    return {("a", "b"): ab, ("a", "c"): ac, ("b", "c"): bc, ("a",): ab.sum(1),
            ("b",): ab.sum(0), ("c",): ac.sum(0), (): ab.sum()}


P3 = [(3, 1, 1), (1, 3, 1), (1, 1, 3)]
P8 = [(2, 2, 0, 0, 2, 2, 0, 0), (2, 0, 2, 0, 2, 0, 2, 0), (0, 2, 0, 2, 0, 2, 0, 2),
      (0, 0, 2, 2, 0, 0, 2, 2)]
P4 = [(1, 1, 0, 0), (1, 0, 1, 0), (0, 1, 0, 1), (0, 0, 1, 1)]
INFEASIBLE = {   # "Example 1(a): Infeasible 3-D Table", "Example 2(a): Infeasible Frechet Consistent"
    "4x4x4": _ex(P4, P4, [[0, 0, 0, 2], [0, 0, 2, 0], [0, 2, 0, 0], [2, 0, 0, 0]]),
    "2x2x2": _ex([(0, 1), (1, 0)], [(1, 0), (0, 1)], [[1, 0], [0, 1]]),
    "8x8x4": _ex(P8, P8, [[0, 0, 0, 2, 0, 0, 0, 2], [0, 0, 2, 0, 0, 0, 2, 0],
                          [0, 2, 0, 0, 0, 2, 0, 0], [2, 0, 0, 0, 2, 0, 0, 0]] * 2),
    "3x3x3": _ex(P3, P3, [[1, 1, 3], [3, 1, 1], [1, 3, 1]]),
}
EX3 = _ex(P3, P3, [[1, 2, 2], [2, 1, 2], [2, 2, 1]])          # Example 3
EX3A = _ex([(3, 1, 1), (1, 3, 1), (1, 2, 3)], [(3, 1, 1), (1, 3, 1), (1, 2, 3)],
           [[1, 1, 3], [3, 2, 1], [1, 3, 1]])                   # Example 3a
EX4 = _ex([(2, 1, 0), (0, 1, 1), (2, 0, 0)], [(2, 1), (1, 1), (1, 1)],
          [[3, 1], [1, 1], [0, 1]])                             # Example 4 (3 x 2 x 3)
EX5 = _ex(P3, P3, [[2, 1, 2], [1, 2, 2], [2, 2, 1]])          # Example 5


def _margins_release(m):
    shape = m[("a", "b")].shape + (m[("a", "c")].shape[1],)
    return rk.Release(None, margins=m, mechanism=rk.MarginsOnly(), dims=DIMS,
                      coords={d: list(range(n)) for d, n in zip(DIMS, shape)})


@pytest.mark.parametrize("name", sorted(INFEASIBLE))
def test_seed004_infeasible_margins(name):
    """Seed 004, 'Example 1/1a: Infeasible 3-D Table' and 'Example 2/2a: Infeasible Frechet
    Consistent 3-D Table': the margins agree on every 1-way total, the Fréchet bounds are
    consistent (lower <= upper), yet no nonnegative table (real or integer) has them."""
    rel = _margins_release(INFEASIBLE[name])
    fb = rk.frechet_bounds(rel)
    if name in ("8x8x4", "3x3x3"):                     # "Frechet consistent"
        assert (fb["lower"] <= fb["upper"]).all()
    for method in ("ilp", "lp"):
        with pytest.raises(ValueError, match="no nonnegative table"):
            rk.exact_bounds(rel, method=method)
    with pytest.raises(ValueError, match="no original table is consistent"):
        rk.posterior(rel)
    assert rk.count_candidates(rel) == 0


@pytest.mark.parametrize("name,m,n_tables", [("3", EX3, 1), ("3a", EX3A, 1), ("4", EX4, 1),
                                             ("5", EX5, 4)])
def test_seed004_feasible_examples_and_exact_bounds(name, m, n_tables):
    """Seed 004, Examples 3, 3a, 4 ('Feasible (unique)') and 5 ('3 df and 4 Integer
    Solutions'): the number of tables (exact), and the exact bounds by enumeration equal those
    by integer programming."""
    rel = _margins_release(m)
    assert rk.count_candidates(rel) == n_tables
    ex_e = rk.exact_bounds(rel, method="enumerate")
    ex_i = rk.exact_bounds(rel, method="ilp")
    assert np.array_equal(ex_e["lower"], ex_i["lower"])
    assert np.array_equal(ex_e["upper"], ex_i["upper"])
    fb = rk.frechet_bounds(rel)
    assert (fb["lower"] <= ex_i["lower"]).all() and (ex_i["upper"] <= fb["upper"]).all()
    if n_tables == 1:
        assert np.array_equal(ex_i["lower"], ex_i["upper"])


def test_seed004_example3_inexact_upper_bounds():
    """Seed 004, 'Example 3: Feasible (unique) 3-D Table with Inexact Upper Bounds': every usual
    upper bound min(n_ab, n_ac, n_bc) is 1, yet 12 of the 27 cells are 0 in the only table."""
    fb = rk.frechet_bounds(_margins_release(EX3))
    ex = rk.exact_bounds(_margins_release(EX3))
    assert (fb["upper"] == 1).all()
    assert int((ex["upper"] < fb["upper"]).sum()) == 12
    assert int(ex["upper"].sum()) == 15 == EX3[()]


def test_seed004_example3a_inexact_upper_bounds():
    """Example 3a: the usual upper bound 2 at cell (1, 1, 2) (n_ab = 2, n_ac = 2, n_bc = 2)
    while that cell is 0 in the only table; the other cells bounded by 2 attain it."""
    fb = rk.frechet_bounds(_margins_release(EX3A))
    ex = rk.exact_bounds(_margins_release(EX3A))
    two = np.argwhere(fb["upper"].values == 2).tolist()
    assert two == [[1, 1, 1], [1, 1, 2], [2, 1, 2]]
    assert [int(ex["upper"].values[tuple(c)]) for c in two] == [2, 0, 2]


def test_seed004_example4_inexact_frechet_bounds():
    """Example 4 (3 x 2 x 3), 'Inexact Frechet Bounds': at cell (0, 0, 0) the Fréchet lower
    bound is 1 but the only table has 2 there; the interval bounds are those of the LP too."""
    rel = _margins_release(EX4)
    fb = rk.frechet_bounds(rel)
    ex = rk.exact_bounds(rel)
    assert int(fb["lower"][0, 0, 0]) == 1 and int(ex["lower"][0, 0, 0]) == 2
    assert int((fb["lower"] < ex["lower"]).sum()) >= 1
    assert int((ex["upper"] < fb["upper"]).sum()) >= 1
    lp = rk.exact_bounds(rel, method="lp")
    assert np.allclose(lp["lower"], ex["lower"]) and np.allclose(lp["upper"], ex["upper"])


def test_seed004_example5_three_df():
    """Example 5: '3 df and 4 integer solutions' — 4 tables (above); the real solution set has
    dimension 3 (number of cells the LP lets be positive minus the rank of their constraints)."""
    rel = _margins_release(EX5)
    lp = rk.exact_bounds(rel, method="lp")
    free = (lp["upper"].values > 1e-9).ravel()
    A = []
    shape = (3, 3, 3)
    for keep in MARGINS[:3]:
        for pos in np.ndindex(*[shape[a] for a in keep]):
            z = np.zeros(shape)
            sl = [slice(None)] * 3
            for a, p in zip(keep, pos):
                sl[a] = p
            z[tuple(sl)] = 1
            A.append(z.ravel())
    A = np.array(A)[:, free]
    assert int(free.sum()) - np.linalg.matrix_rank(A) == 3


@pytest.mark.parametrize("name,m", [("3", EX3), ("3a", EX3A), ("4", EX4), ("5", EX5)])
def test_seed004_feasible_tables_round_correctly(name, m):
    """The tables of seed 004's feasible 3-D examples (recovered exactly from their margins)
    protected at bases 2 and 3, both methods: a controlled rounding (checked against the table
    and all its totals), or a ValueError exactly when brute force over all up/down patterns
    finds none (Ernst's stacking may also give up after its draws: then a rounding exists and
    method='optimal' returns one)."""
    rel = _margins_release(m)
    post = rk.posterior(rel)
    tables = [post.start + np.argmax(post.probs > 0, -1)] if post.n_candidates == 1 else []
    if not tables:                                        # Example 5: walk its 4 tables
        tables = [T.astype(np.int64) for T in _seed_tables(m)]
    assert len(tables) == post.n_candidates
    for x in tables:
        for B in (2, 3):
            exists = len(_all_roundings(x, B)) > 0
            for method in ("unbiased", "optimal"):
                try:
                    out = rk.ControlledRounding(B, method=method).protect(
                        rk.Table(x, dims=DIMS), np.random.default_rng(11))
                except ValueError as e:
                    assert not exists or (method == "unbiased" and "Ernst" in str(e))
                    continue
                assert exists
                _check_cr(x, out, B)


def _seed_tables(m):
    """Every table with the 2-way margins m: cell-by-cell recursion, each value at most what is
    left of the margins through the cell, the last cell of each (a, b) line taking what is left
    of it; every leaf checked in full."""
    ab, ac, bc = m[("a", "b")], m[("a", "c")], m[("b", "c")]
    shape = ab.shape + (ac.shape[1],)
    cells = list(np.ndindex(*shape))
    T = np.zeros(shape, np.int64)
    out = []

    def rec(n):
        if n == len(cells):
            if (np.array_equal(T.sum(2), ab) and np.array_equal(T.sum(1), ac)
                    and np.array_equal(T.sum(0), bc)):
                out.append(T.copy())
            return
        i, j, k = cells[n]
        room = min(ab[i, j] - T[i, j].sum(), ac[i, k] - T[i, :, k].sum(),
                   bc[j, k] - T[:, j, k].sum())
        values = range(int(room) + 1)
        if k == shape[2] - 1:
            values = [int(ab[i, j] - T[i, j].sum())] if ab[i, j] - T[i, j].sum() <= room else []
        for v in values:
            T[i, j, k] = v
            rec(n + 1)
        T[i, j, k] = 0

    rec(0)
    return out


@pytest.mark.parametrize("seed", range(6))
def test_exact_bounds_2d_equal_frechet(seed):
    """2-D margins-only releases: integer programming, LP and the DP support all give the
    Fréchet bounds (sharp in 2-D)."""
    rng = np.random.default_rng(seed)
    x = rng.poisson(2.0, size=(2 + seed % 2, 3))
    rel = rk.MarginsOnly().protect(rk.Table(x, dims=("v", "w")))
    fb = rk.frechet_bounds(rel)
    for method in ("ilp", "lp", "enumerate"):
        eb = rk.exact_bounds(rel, method=method)
        assert np.allclose(eb["lower"], fb["lower"]) and np.allclose(eb["upper"], fb["upper"])


def test_exact_bounds_bad_input():
    rel = _margins_release(EX3)
    with pytest.raises(ValueError, match="unknown method"):
        rk.exact_bounds(rel, method="guess")
    with pytest.raises(TypeError, match="rk.Release"):
        rk.exact_bounds(EX3)
    x = np.array([[[4, 1], [2, 5]], [[1, 1], [7, 2]]])
    rounded = rk.ControlledRounding(3, method="optimal").protect(rk.Table(x, dims=DIMS))
    with pytest.raises(TypeError, match="margins-only"):
        rk.exact_bounds(rounded)
