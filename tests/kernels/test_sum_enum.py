"""kernels.sum_enum against brute force (tests/reference/sum_enum.py) and closed forms.

Random small systems (1..8 cells, windows 1..5 wide from lo 0..3, impossible values,
log-weights up to +-700; rows at random, as a 2-D table with its margins, as a hierarchy
of subtotals, or mixed; targets from a true assignment, some shifted off it): the count
exactly, ``log_z`` and every cell's pmf to 1e-9 relative, under three decision orders,
the kept candidates equal to the brute-force set.  Realistic sizes: a 2 x 4 table with
totals in the hundreds (84,971 tables: inclusion-exclusion count, a DP over the columns
for the weights), a 3 x 4 table (DP over the columns) and a hierarchy (product of
binomials).  Then keep / max_leaves / max_nodes, degenerate systems and bad input.
"""

from __future__ import annotations

import itertools
import math

import numba as nb
import numpy as np
import pytest
from scipy.special import logsumexp

from kernels.sum_enum import enumerate_sums, suggest_order
from tests.reference.sum_enum import brute_force

# --- helpers -----------------------------------------------------------------------------

def _csr(rows):
    indptr = np.zeros(len(rows) + 1, dtype=np.int64)
    indptr[1:] = np.cumsum([len(r) for r in rows])
    indices = np.array([c for r in rows for c in r], dtype=np.int64)
    return indptr, indices


def _run(lo, W, lw, indptr, indices, target, order, keep=0, max_leaves=0, max_nodes=0):
    """The kernel with every argument given (one compiled specialisation for all tests)."""
    out = enumerate_sums(np.asarray(lo, np.int64), np.asarray(W, np.int64),
                         np.asarray(lw, np.float64), indptr, indices,
                         np.asarray(target, np.int64), np.asarray(order, np.int64),
                         int(keep), int(max_leaves), int(max_nodes))
    names = ("count", "overflow", "n_leaves", "n_nodes", "complete", "log_z", "probs",
             "kept", "kept_lw", "all_kept")
    return dict(zip(names, out))


def _check_structure(res, lo, W, lw):
    """Invariants every result holds: no NaN, pmfs on the supports, summing to 1 (or all
    0 when there is no candidate), an integral count."""
    probs = res["probs"]
    assert probs.shape == lw.shape
    assert not np.isnan(probs).any() and (probs >= 0).all()
    for i in range(len(lo)):
        assert (probs[i, W[i]:] == 0).all()
        assert (probs[i, :W[i]][~np.isfinite(lw[i, :W[i]])] == 0).all()
    assert res["count"] == int(res["count"]) >= 0
    assert not np.isnan(res["log_z"])
    if res["count"] > 0:
        assert np.isfinite(res["log_z"])
        np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-12)
    else:
        assert res["log_z"] == -np.inf
        assert (probs == 0).all()
    kept = res["kept"]
    assert kept.shape == (res["kept_lw"].size, len(lo))


def _close_log(a, b, rtol=1e-9):
    if b == -np.inf:
        return a == -np.inf
    return abs(a - b) <= rtol * max(1.0, abs(b))


# --- random small systems ------------------------------------------------------------------

def _table_rows(rng, R, C):
    rows = []
    for i in range(R):
        if rng.random() < 0.7:
            rows.append([i * C + j for j in range(C)])
    for j in range(C):
        if rng.random() < 0.7:
            rows.append([i * C + j for i in range(R)])
    if rng.random() < 0.6:
        rows.append(list(range(R * C)))
    return rows


def _hierarchy_rows(rng, n):
    """Leaves 0..n-1 cut into groups (subtotals), groups of groups, and the total."""
    cuts = np.flatnonzero(rng.random(n - 1) < 0.5) + 1
    groups = [g.tolist() for g in np.split(np.arange(n), cuts)]
    rows = [g for g in groups if rng.random() < 0.9]
    if len(groups) > 2 and rng.random() < 0.5:
        k = int(rng.integers(1, len(groups)))
        rows.append([c for g in groups[:k] for c in g])
    if rng.random() < 0.8:
        rows.append(list(range(n)))
    return rows


def _random_rows(rng, n):
    rows = []
    for _ in range(int(rng.integers(0, 4))):
        size = int(rng.integers(1, n + 1))
        rows.append(sorted(rng.choice(n, size, replace=False).tolist()))
    return rows


def _random_case(rng):
    kind = rng.choice(["random", "table", "hierarchy", "mixed"])
    if kind in ("table", "mixed") and rng.random() < 0.7:
        R = int(rng.integers(2, 4))
        C = int(rng.integers(1, 8 // R + 1))
        n = R * C
        rows = _table_rows(rng, R, C)
    else:
        n = int(rng.integers(1, 9))
        rows = _hierarchy_rows(rng, n) if kind != "random" else _random_rows(rng, n)
    if kind == "mixed":
        rows += _random_rows(rng, n)[:2]
    W = rng.choice(np.arange(1, 6), n, p=[0.1, 0.15, 0.2, 0.25, 0.3])
    while np.prod(W) > 20_000:
        W[np.argmax(W)] -= 1
    Wmax = int(W.max()) + int(rng.integers(0, 2))
    lo = rng.integers(0, 4, n)
    scale = rng.choice(["small", "large", "huge"], p=[0.5, 0.3, 0.2])
    if scale == "huge":
        lw = rng.uniform(-700, 700, (n, Wmax))
    else:
        lw = rng.normal(size=(n, Wmax)) * (3.0 if scale == "small" else 60.0)
    lw[rng.random((n, Wmax)) < 0.2] = -np.inf
    for i in range(n):
        lw[i, W[i]:] = rng.choice([0.0, 5.0, np.nan])      # ignored: past the window
        if not np.isfinite(lw[i, :W[i]]).any():
            lw[i, rng.integers(W[i])] = rng.normal()
        if rng.random() < 0.02:
            lw[i, :W[i]] = -np.inf                          # a cell that can take nothing
    truth = np.array([lo[i] + (rng.choice(np.flatnonzero(np.isfinite(lw[i, :W[i]])))
                               if np.isfinite(lw[i, :W[i]]).any() else 0)
                      for i in range(n)])
    rows = [rows[k] for k in rng.permutation(len(rows))]
    rows = [[r[k] for k in rng.permutation(len(r))] for r in rows]
    if rng.random() < 0.05:
        rows.append([])                                      # an empty row: target 0
    target = np.array([int(truth[r].sum()) for r in rows], dtype=np.int64)
    if len(rows) and rng.random() < 0.15:                    # off the truth: often infeasible
        target[rng.integers(len(rows))] += int(rng.choice([-2, -1, 1, 2]))
    indptr, indices = _csr(rows)
    return lo, W, lw, indptr, indices, target


@pytest.mark.parametrize("seed", range(360))
def test_against_brute_force(seed):
    rng = np.random.default_rng(seed)
    lo, W, lw, indptr, indices, target = _random_case(rng)
    n = len(lo)
    count, log_z, probs, x, logw = brute_force(lo, W, lw, indptr, indices, target)
    suggested = suggest_order(indptr, indices, n)
    assert np.array_equal(np.sort(suggested), np.arange(n))
    orders = {"given": rng.permutation(n), "suggested": suggested,
              "reversed": suggested[::-1].copy()}
    for name, order in orders.items():
        keep = count + 1 if name == "suggested" else 0
        res = _run(lo, W, lw, indptr, indices, target, order, keep=keep)
        _check_structure(res, lo, W, lw)
        assert res["complete"] and not res["overflow"]
        assert res["count"] == count, name
        assert _close_log(res["log_z"], log_z), (name, res["log_z"], log_z)
        np.testing.assert_allclose(res["probs"], probs, rtol=1e-9, atol=1e-290, err_msg=name)
        if keep:
            assert res["all_kept"] and res["n_leaves"] == count
            got = sorted(zip(map(tuple, res["kept"]), res["kept_lw"]))
            want = sorted(zip(map(tuple, x), logw))
            assert [g[0] for g in got] == [w[0] for w in want]
            np.testing.assert_allclose([g[1] for g in got], [w[1] for w in want],
                                       rtol=1e-12, atol=1e-9)


# --- realistic sizes ---------------------------------------------------------------------

def _count_box_sum(r, caps):
    """Number of integer vectors with 0 <= x_j <= caps[j] summing to r (inclusion-exclusion
    over the caps exceeded: sum over S of (-1)^|S| C(r - sum_S (c_j + 1) + n - 1, n - 1))."""
    n = len(caps)
    total = 0
    for k in range(n + 1):
        for S in itertools.combinations(range(n), k):
            top = r - sum(caps[j] + 1 for j in S) + n - 1
            if top >= n - 1:
                total += (-1) ** k * math.comb(top, n - 1)
    return total


def _poisson_lw(rng, size, width):
    mu = rng.uniform(5, 60, size)
    x = np.arange(width)
    return x[None, :] * np.log(mu)[:, None] - np.array([math.lgamma(v + 1) for v in x])[None, :]


def test_two_by_n_table_with_margins():
    """The whole 2 x 4 table hidden, its row, column and grand totals published: the tables
    are the x in the box [0, c_j] with sum r0 (the second row follows), counted by
    inclusion-exclusion; weights and marginals by a forward-backward DP over columns."""
    rng = np.random.default_rng(7)
    c = [60, 45, 70, 40]
    r0, r1 = 90, sum(c) - 90
    J = len(c)
    rows = [list(range(J)), list(range(J, 2 * J))] + [[j, J + j] for j in range(J)]
    rows.append(list(range(2 * J)))
    indptr, indices = _csr(rows)
    target = np.array([r0, r1, *c, r0 + r1])
    Wmax = max(c) + 1
    lw = np.full((2 * J, Wmax), -np.inf)
    base = _poisson_lw(rng, 2 * J, Wmax)
    W = np.array(c + c) + 1
    for i in range(2 * J):
        lw[i, :W[i]] = base[i, :W[i]]
    lo = np.zeros(2 * J, dtype=np.int64)
    # DP on the first row's partial sum; column j at a weighs h_j(a) = lw(0j, a) + lw(1j, c_j - a)
    h = [np.array([lw[j, a] + lw[J + j, c[j] - a] for a in range(c[j] + 1)]) for j in range(J)]
    F = [np.full(r0 + 1, -np.inf)]
    F[0][0] = 0.0
    for j in range(J):
        G = np.full(r0 + 1, -np.inf)
        for s in range(r0 + 1):
            a = np.arange(min(s, c[j]) + 1)
            G[s] = logsumexp(F[-1][s - a] + h[j][a])
        F.append(G)
    B = [None] * (J + 1)
    B[J] = np.full(r0 + 1, -np.inf)
    B[J][0] = 0.0                       # B[j][t]: columns j.. take t more
    for j in range(J - 1, -1, -1):
        B[j] = np.full(r0 + 1, -np.inf)
        for t in range(r0 + 1):
            a = np.arange(min(t, c[j]) + 1)
            B[j][t] = logsumexp(h[j][a] + B[j + 1][t - a])
    log_z = F[J][r0]
    expect = np.zeros((2 * J, Wmax))
    for j in range(J):
        for a in range(c[j] + 1):
            s = np.arange(r0 - a + 1)
            p = np.exp(logsumexp(F[j][s] + h[j][a] + B[j + 1][r0 - a - s]) - log_z)
            expect[j, a] += p
            expect[J + j, c[j] - a] += p
    n_tables = _count_box_sum(r0, c)
    assert n_tables == 84_971
    for order in (suggest_order(indptr, indices, 2 * J), np.arange(2 * J)):
        res = _run(lo, W, lw, indptr, indices, target, order)
        _check_structure(res, lo, W, lw)
        assert res["count"] == n_tables and res["complete"]
        assert _close_log(res["log_z"], log_z)
        np.testing.assert_allclose(res["probs"], expect, rtol=1e-9, atol=1e-300)


def _dp_3xJ(r, c, weight):
    """Total weight of the 3 x J tables with row sums r, column sums c, the weight of a
    table the product of weight[i][j][x_ij] (linear): DP over columns on the partial sums
    of the first two rows (the third follows from the column sums)."""
    F = np.zeros((r[0] + 1, r[1] + 1))
    F[0, 0] = 1.0
    for j in range(len(c)):
        G = np.zeros_like(F)
        for a in range(min(c[j], r[0]) + 1):
            for b in range(min(c[j] - a, r[1]) + 1):
                t = weight[0][j][a] * weight[1][j][b] * weight[2][j][c[j] - a - b]
                if t:
                    G[a:, b:] += t * F[:r[0] + 1 - a, :r[1] + 1 - b]
        F = G
    return F[r[0], r[1]]


def test_three_by_four_table_with_margins():
    """The whole 3 x 4 table hidden with its margins: count, log_z and every cell's pmf
    against a DP over the columns (a cell's pmf: the DP with the cell pinned to each
    value)."""
    rng = np.random.default_rng(11)
    r, c = [10, 12, 8], [9, 7, 8, 6]
    R, J = 3, 4
    rows = [[i * J + j for j in range(J)] for i in range(R)]
    rows += [[i * J + j for i in range(R)] for j in range(J)]
    rows.append(list(range(R * J)))
    indptr, indices = _csr(rows)
    target = np.array(r + c + [sum(r)])
    Wmax = 13
    lo = np.zeros(R * J, dtype=np.int64)
    W = np.array([min(r[i], c[j]) + 1 for i in range(R) for j in range(J)])
    lw = np.full((R * J, Wmax), -np.inf)
    base = rng.normal(size=(R * J, Wmax)) * 0.7
    for k in range(R * J):
        lw[k, :W[k]] = base[k, :W[k]]
    ones = [[np.ones(Wmax) for _ in range(J)] for _ in range(R)]
    n_tables = _dp_3xJ(r, c, ones)

    def weights(pin=None):
        wt = [[np.where(np.arange(Wmax) < W[i * J + j], np.exp(lw[i * J + j]), 0.0)
               for j in range(J)] for i in range(R)]
        if pin is not None:
            (i, j), v = pin
            keep = wt[i][j][v]
            wt[i][j] = np.zeros(Wmax)
            wt[i][j][v] = keep
        return wt

    Z = _dp_3xJ(r, c, weights())
    expect = np.zeros((R * J, Wmax))
    for i in range(R):
        for j in range(J):
            for v in range(W[i * J + j]):
                expect[i * J + j, v] = _dp_3xJ(r, c, weights(((i, j), v))) / Z
    for order in (suggest_order(indptr, indices, R * J), np.arange(R * J)[::-1].copy()):
        res = _run(lo, W, lw, indptr, indices, target, order)
        _check_structure(res, lo, W, lw)
        assert res["count"] == n_tables > 1000
        assert _close_log(res["log_z"], np.log(Z))
        np.testing.assert_allclose(res["probs"], expect, rtol=1e-9, atol=1e-300)


def test_hierarchy_closed_form():
    """Nine leaves in three groups of three with published subtotals (10, 8, 12) and total
    30, windows 0..40 and equal weights: the candidates are the compositions of each
    subtotal into three parts, C(s + 2, 2) per group, and a leaf of a group with subtotal
    s takes v with probability (s - v + 1) / C(s + 2, 2)."""
    s = [10, 8, 12]
    rows = [[3 * g + k for k in range(3)] for g in range(3)] + [list(range(9))]
    indptr, indices = _csr(rows)
    target = np.array(s + [sum(s)])
    lo = np.zeros(9, dtype=np.int64)
    W = np.full(9, 41)
    lw = np.zeros((9, 41))
    res = _run(lo, W, lw, indptr, indices, target, suggest_order(indptr, indices, 9))
    _check_structure(res, lo, W, lw)
    n = math.prod(math.comb(t + 2, 2) for t in s)
    assert res["count"] == n == 270_270
    assert _close_log(res["log_z"], math.log(n))
    for g, t in enumerate(s):
        v = np.arange(41)
        p = np.where(v <= t, (t - v + 1) / math.comb(t + 2, 2), 0.0)
        for k in range(3):
            np.testing.assert_allclose(res["probs"][3 * g + k], p, rtol=1e-9, atol=1e-300)


# --- keep, max_leaves, max_nodes ------------------------------------------------------------

def _small_table():
    """A 2 x 3 table hidden with its margins: 12 tables (counted by the brute force)."""
    rows = [[0, 1, 2], [3, 4, 5], [0, 3], [1, 4], [2, 5]]
    indptr, indices = _csr(rows)
    target = np.array([4, 5, 3, 3, 3])
    lo = np.zeros(6, dtype=np.int64)
    W = np.full(6, 4)
    lw = np.random.default_rng(3).normal(size=(6, 4))
    return lo, W, lw, indptr, indices, target


def test_keep_fewer_than_all():
    lo, W, lw, indptr, indices, target = _small_table()
    count, _, _, x, _ = brute_force(lo, W, lw, indptr, indices, target)
    assert count == 12
    res = _run(lo, W, lw, indptr, indices, target, np.arange(6), keep=5)
    assert res["count"] == 12 and res["complete"] and not res["all_kept"]
    assert res["kept"].shape == (5, 6)
    truth = set(map(tuple, x))
    assert set(map(tuple, res["kept"])) <= truth
    np.testing.assert_allclose(res["kept_lw"], [lw[np.arange(6), k].sum() for k in res["kept"]])


def test_max_leaves_stops_and_reports():
    """Stopping after k leaves: incomplete, and count, log_z, probs those of the first k
    candidates (the ones kept)."""
    lo, W, lw, indptr, indices, target = _small_table()
    order = np.arange(6)
    full = _run(lo, W, lw, indptr, indices, target, order, max_leaves=12)
    assert full["complete"] and full["count"] == 12 == full["n_leaves"]
    part = _run(lo, W, lw, indptr, indices, target, order, keep=7, max_leaves=7)
    assert not part["complete"] and not part["all_kept"]
    assert part["count"] == 7 == part["n_leaves"]
    _check_structure(part, lo, W, lw)
    assert _close_log(part["log_z"], logsumexp(part["kept_lw"]))
    expect = np.zeros_like(lw)
    for k, lwk in zip(part["kept"], part["kept_lw"]):
        expect[np.arange(6), k] += np.exp(lwk - part["log_z"])
    np.testing.assert_allclose(part["probs"], expect, rtol=1e-9)


def test_max_nodes_stops():
    lo, W, lw, indptr, indices, target = _small_table()
    full = _run(lo, W, lw, indptr, indices, target, np.arange(6))
    res = _run(lo, W, lw, indptr, indices, target, np.arange(6), max_nodes=10)
    assert not res["complete"] and 10 <= res["n_nodes"] <= 10 + 6 < full["n_nodes"]
    assert res["count"] < 12
    _check_structure(res, lo, W, lw)


# --- degenerate systems ---------------------------------------------------------------------

def test_no_cells():
    empty = np.zeros(0, dtype=np.int64)
    lw = np.zeros((0, 1))
    res = _run(empty, empty, lw, np.zeros(1, np.int64), empty, empty, empty)
    assert res["count"] == 1 and res["log_z"] == 0.0 and res["complete"]
    indptr = np.array([0, 0, 0], dtype=np.int64)            # two rows with no cells
    res = _run(empty, empty, lw, indptr, empty, [0, 0], empty)
    assert res["count"] == 1 and res["log_z"] == 0.0
    res = _run(empty, empty, lw, indptr, empty, [0, 1], empty)
    assert res["count"] == 0 and res["log_z"] == -np.inf


def test_infeasible_and_impossible_weights():
    lo, W, lw, indptr, indices, target = _small_table()
    bad = target.copy()
    bad[0] += 1                                              # rows and columns disagree
    for args in ((lw, bad), (np.full_like(lw, -np.inf), target)):
        res = _run(lo, W, args[0], indptr, indices, args[1], np.arange(6), keep=3)
        _check_structure(res, lo, W, args[0])
        assert res["count"] == 0 and res["log_z"] == -np.inf and res["all_kept"]
        assert (res["probs"] == 0).all() and res["kept"].shape == (0, 6)


def test_free_cells_and_fixed_rows():
    """Cell 2 is in no row: its pmf is its normalised weight and it multiplies the count;
    row [3] fixes cell 3, row [0, 1] = 2 leaves three candidates."""
    lo = np.array([0, 0, 1, 4], dtype=np.int64)
    W = np.array([3, 3, 4, 1], dtype=np.int64)
    lw = np.array([[0.0, 1.0, 2.0, 0.0], [0.5, 0.0, -1.0, 0.0],
                   [700.0, -np.inf, -700.0, 3.0], [-5.0, 0.0, 0.0, 0.0]])
    indptr, indices = _csr([[0, 1], [3]])
    target = np.array([2, 4])
    count, log_z, probs, _, _ = brute_force(lo, W, lw, indptr, indices, target)
    for keep in (0, 100):
        res = _run(lo, W, lw, indptr, indices, target, [2, 3, 1, 0], keep=keep)
        _check_structure(res, lo, W, lw)
        assert res["count"] == count == 9
        assert res["n_leaves"] == (3 if keep == 0 else 9)
        assert _close_log(res["log_z"], log_z)
        np.testing.assert_allclose(res["probs"], probs, rtol=1e-9, atol=1e-290)
    np.testing.assert_allclose(res["probs"][2, :3], np.exp(lw[2, :3] - logsumexp(lw[2, :3])))


def test_width_one_windows_everywhere():
    lo = np.array([1, 2, 3], dtype=np.int64)
    W = np.ones(3, dtype=np.int64)
    lw = np.array([[0.3], [-0.2], [700.0]])
    indptr, indices = _csr([[0, 1, 2], [0, 1]])
    res = _run(lo, W, lw, indptr, indices, [6, 3], [0, 1, 2])
    assert res["count"] == 1 and _close_log(res["log_z"], 700.1)
    assert (res["probs"] == 1).all()
    assert _run(lo, W, lw, indptr, indices, [6, 4], [0, 1, 2])["count"] == 0


def test_overflow_flag():
    """30 free cells of 4 values each: 4**30 > 2**53 candidates, in closed form."""
    n = 30
    lo = np.zeros(n, dtype=np.int64)
    W = np.full(n, 4)
    lw = np.zeros((n, 4))
    e = np.zeros(0, dtype=np.int64)
    res = _run(lo, W, lw, np.zeros(1, np.int64), e, e, np.arange(n))
    assert res["overflow"] and res["count"] == 4.0 ** 30
    assert _close_log(res["log_z"], n * math.log(4))


def test_bad_input_raises():
    lo, W, lw, indptr, indices, target = _small_table()
    with pytest.raises(ValueError, match="permutation"):
        _run(lo, W, lw, indptr, indices, target, [0, 1, 2, 3, 4, 4])
    dup_ptr, dup_idx = _csr([[0, 0, 1]])
    with pytest.raises(ValueError, match="at most once"):
        _run(lo, W, lw, dup_ptr, dup_idx, [3], np.arange(6))
    out_ptr, out_idx = _csr([[0, 6]])
    with pytest.raises(ValueError, match="cell ids"):
        _run(lo, W, lw, out_ptr, out_idx, [3], np.arange(6))


def test_suggest_order_closes_rows_early():
    """On a 2 x 3 table with its margins the greedy finishes a column first (the shortest
    rows), then the first row (now the shortest, with the lowest index), then the rest;
    the cell in no row comes last.  Worked by hand from the rule in the docstring."""
    rows = [[0, 1, 2], [3, 4, 5], [0, 3], [1, 4], [2, 5]]
    indptr, indices = _csr(rows)
    assert suggest_order(indptr, indices, 7).tolist() == [0, 3, 1, 2, 4, 5, 6]
    assert suggest_order(np.zeros(1, np.int64), np.zeros(0, np.int64), 3).tolist() == [0, 1, 2]


def test_callable_from_user_njit_code():
    @nb.njit
    def count_of(lo, W, lw, indptr, indices, target, order):
        return enumerate_sums(lo, W, lw, indptr, indices, target, order, 0, 0, 0)[0]

    lo, W, lw, indptr, indices, target = _small_table()
    assert count_of(lo, W.astype(np.int64), lw, indptr, indices, target,
                    np.arange(6, dtype=np.int64)) == 12
