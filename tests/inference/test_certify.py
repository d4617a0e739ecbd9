"""Exact integer bounds and certainty (``riskengine.inference.certify``) on plain arrays,
against a brute force over every integer point of the box, with and without the local
stage (``groups=``: LPs over one group's cells, the rest held at a table)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from riskengine.inference import certify


def _system(seed):
    """Random sums over groups of cells: rows inside a group and rows across groups,
    exact or windowed around a true table, boxes of width 0-3.  Seeds below 40: 2-3
    groups of 2-3 cells; from 40: 6-7 groups of 1-2 cells with boxes of width at most 2,
    where the local stage also pairs groups (``certify._PAIRED_GROUPS``)."""
    rng = np.random.default_rng(seed)
    if seed < 40:
        n_groups = int(rng.integers(2, 4))
        sizes = rng.integers(2, 4, n_groups)
    else:
        n_groups = int(rng.integers(certify._PAIRED_GROUPS, certify._PAIRED_GROUPS + 2))
        sizes = rng.integers(1, 3, n_groups)
    groups = np.repeat(np.arange(n_groups), sizes)
    n = groups.size
    truth = rng.integers(0, 3, n)
    rows = []
    for g in range(n_groups):                    # inside each group
        cols = np.flatnonzero(groups == g)
        for _ in range(int(rng.integers(1, 3))):
            rows.append(rng.choice(cols, int(rng.integers(1, cols.size + 1)), replace=False))
    for _ in range(int(rng.integers(1, 3))):     # across groups
        rows.append(rng.choice(n, int(rng.integers(2, n + 1)), replace=False))
    R = np.zeros((len(rows), n), np.int64)
    for i, c in enumerate(rows):
        R[i, c] = 1
    s = R @ truth
    w = rng.integers(0, 3, len(rows)) * (rng.random() < 0.8)     # some seeds exact
    rlo = np.maximum(s - rng.integers(0, w + 1), 0)
    rhi = rlo + w
    hi = np.full(n, 3 if seed < 40 else 2, np.int64)
    hi = np.maximum(hi, truth)
    for i in range(len(rows)):                   # the box: the smallest sum holding it
        hi[R[i] > 0] = np.minimum(hi[R[i] > 0], rhi[i])
    lo = np.zeros(n, np.int64)
    return R, rlo, rhi, lo, hi, groups


def _brute(R, rlo, rhi, lo, hi):
    pts = np.indices(tuple(hi - lo + 1)).reshape(lo.size, -1).T + lo
    v = pts @ R.T
    return pts[((v >= rlo) & (v <= rhi)).all(axis=1)]


@pytest.mark.parametrize("seed", range(80))
def test_bounds_and_certainty_equal_brute_force_with_and_without_groups(seed):
    R, rlo, rhi, lo, hi, groups = _system(seed)
    X = _brute(R, rlo, rhi, lo, hi)
    if not len(X):
        with pytest.raises(certify.NoTable):
            certify.integer_bounds(sp.csr_matrix(R), rlo, rhi, lo, hi)
        return
    lo_b, hi_b = X.min(axis=0), X.max(axis=0)
    for g in (None, groups):
        b = certify.integer_bounds(sp.csr_matrix(R), rlo, rhi, lo, hi, bounds="exact",
                                   groups=g)
        np.testing.assert_array_equal(b.lower, lo_b)
        np.testing.assert_array_equal(b.upper, hi_b)
        np.testing.assert_array_equal(b.certain, lo_b == hi_b)
        assert b.exact.all() and b.decided.all()
        lp = certify.integer_bounds(sp.csr_matrix(R), rlo, rhi, lo, hi, bounds="lp",
                                    groups=g)
        np.testing.assert_array_equal(lp.certain, lo_b == hi_b)
        assert (lp.lower <= lo_b).all() and (lp.upper >= hi_b).all()
        np.testing.assert_array_equal(lp.lower[lp.exact], lo_b[lp.exact])
        np.testing.assert_array_equal(lp.upper[lp.exact], hi_b[lp.exact])


def _raise(R, rlo, rhi, lo, hi, x0, groups, cell):
    """The tables ``_local_moves`` finds while raising ``cell`` from ``x0``."""
    Rs = sp.csr_matrix(R)
    check = certify._Checker(Rs, rlo, rhi, lo, hi)
    seen_lo, seen_hi = x0.copy(), x0.copy()
    found = []

    def see(y):
        found.append(y.copy())
        np.minimum(seen_lo, y, out=seen_lo)
        np.maximum(seen_hi, y, out=seen_hi)

    certify._local_moves(Rs, rlo, rhi, lo, hi, x0, groups, np.array([cell]),
                         np.array([True]), seen_lo, seen_hi, check, see, 10.0)
    return found


def test_local_moves_find_a_table_of_the_whole_system():
    """Two groups tied by a windowed sum: the cell x1 can move with x0 held, and the table
    found is one of the whole system."""
    # x0 + x1 in [1, 2] (group 0), x2 + x3 = 1 (group 1), x0 + x2 in [0, 2] (across)
    R = np.array([[1, 1, 0, 0], [0, 0, 1, 1], [1, 0, 1, 0]])
    rlo, rhi = np.array([1, 1, 0]), np.array([2, 1, 2])
    lo, hi = np.zeros(4, np.int64), np.array([1, 1, 1, 1])
    x0 = np.array([1, 0, 1, 0])
    found = _raise(R, rlo, rhi, lo, hi, x0, np.array([0, 0, 1, 1]), 1)
    assert found and found[0][1] == 1
    for y in found:
        v = R @ y
        assert ((v >= rlo) & (v <= rhi)).all() and y[2] == x0[2] and y[3] == x0[3]


def test_local_moves_pair_groups_where_one_cannot_move_alone():
    """A sum across two groups at its end: x0 rises only if x1 (another group) falls.
    With at least _PAIRED_GROUPS groups, the pair pass finds that table."""
    k = certify._PAIRED_GROUPS
    n = k + 1                       # x0 in group 0, x1 in group 1, one cell per other
    groups = np.r_[0, 1, np.arange(2, k + 1)]
    R = np.zeros((1 + n, n), np.int64)
    R[0, [0, 1]] = 1                # x0 + x1 = 1
    R[1:, :] = np.eye(n, dtype=np.int64)     # each cell in [0, 1]
    rlo, rhi = np.r_[1, np.zeros(n, np.int64)], np.r_[1, np.ones(n, np.int64)]
    lo, hi = np.zeros(n, np.int64), np.ones(n, np.int64)
    x0 = np.r_[0, 1, np.zeros(n - 2, np.int64)]
    found = _raise(R, rlo, rhi, lo, hi, x0, groups, 0)
    assert found and found[-1][0] == 1 and found[-1][1] == 0
    assert (found[-1][2:] == 0).all()
    # with fewer groups than _PAIRED_GROUPS no pair is tried: the cell is left as it is
    assert not _raise(R, rlo, rhi, lo, hi, x0, np.minimum(groups, 2), 0)


@pytest.mark.parametrize("seed", range(3))
def test_groups_change_no_answer_at_realistic_counts(seed):
    """8 blocks of 12 cells with counts in the tens (a tract): windowed sums inside each
    block and across blocks (each code over all blocks); with the local stage, pairs
    included, certainty and the bounds equal those without it."""
    rng = np.random.default_rng(seed)
    k, m = 8, 12
    groups = np.repeat(np.arange(k), m)
    truth = rng.poisson(rng.choice([0.5, 20.0], k * m))
    rows = [np.flatnonzero(groups == g) for g in range(k)]
    rows += [rng.choice(np.flatnonzero(groups == g), 4, replace=False)
             for g in range(k) for _ in range(3)]
    rows += [np.arange(c, k * m, m) for c in range(m)]
    R = np.zeros((len(rows), k * m), np.int64)
    for i, c in enumerate(rows):
        R[i, c] = 1
    s = R @ truth
    w = rng.integers(0, 4, len(rows))
    rlo = np.maximum(s - rng.integers(0, w + 1), 0)
    rhi = rlo + w
    lo = np.zeros(k * m, np.int64)
    hi = np.full(k * m, 10**6, np.int64)
    for i in range(len(rows)):
        hi[R[i] > 0] = np.minimum(hi[R[i] > 0], rhi[i])
    Rs = sp.csr_matrix(R)
    a = certify.integer_bounds(Rs, rlo, rhi, lo, hi, bounds="lp")
    b = certify.integer_bounds(Rs, rlo, rhi, lo, hi, bounds="lp", groups=groups)
    np.testing.assert_array_equal(a.certain, b.certain)
    np.testing.assert_array_equal(a.lower, b.lower)
    np.testing.assert_array_equal(a.upper, b.upper)
    assert (truth >= b.lower).all() and (truth <= b.upper).all()
    assert (~b.certain).any() and b.decided.all()


def test_groups_of_the_wrong_length_are_refused():
    R = sp.csr_matrix(np.array([[1, 1]]))
    with pytest.raises(ValueError, match="groups has 3 entries for 2 unknowns"):
        certify.integer_bounds(R, [1], [1], [0, 0], [1, 1], groups=[0, 0, 1])
