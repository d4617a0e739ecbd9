"""Exact counts beyond 64 and 128 bits from the table DP's multi-limb forward pass.

Reference: an independent column-by-column count in Python integers over arrays of
partial row sums (numpy object arrays; no shared code with kernels.table_dp): each
column adds every allowed vector of cell values whose sum is an allowed column
total, then the row totals and the grand total are filtered at the end.
"""

import itertools

import numpy as np

import riskengine as rk
from riskengine.inference import table_dp as _tabledp


def _dp_windows(rel):
    """The table DP's windows of a release (its mechanism's first route is the DP)."""
    return rel.mechanism.routes[0].prepared(rel, rk.priors.Uniform())[1]


def _allowed(lo, lw):
    return [int(lo) + w for w in range(lw.shape[-1]) if np.isfinite(lw[w])]


def _reference_count(win: _tabledp.Windows) -> int:
    ok = np.isfinite(win.cell_lw)
    r, c, W = ok.shape
    cols = [_allowed(win.col_lo[j], win.col_lw[j]) for j in range(c)]
    # with every column total fixed the last row is implied: track rows 0..r-2 only
    implied = r > 1 and all(len(x) == 1 for x in cols)
    kept = r - 1 if implied else r
    row_max = [int(win.cell_lo[i].sum()) + c * (W - 1) for i in range(kept)]
    arr = np.zeros([m + 1 for m in row_max], dtype=object)
    arr[(0,) * kept] = 1
    for j in range(c):
        vals = [[int(win.cell_lo[i, j]) + w for w in range(W) if ok[i, j, w]] for i in range(r)]
        new = np.zeros_like(arr)
        for x in itertools.product(*vals[:kept]):
            if implied:
                last = cols[j][0] - sum(x)
                if last not in vals[r - 1]:
                    continue
            elif sum(x) not in cols[j]:
                continue
            dst = tuple(slice(v, None) for v in x)
            src = tuple(slice(0, m + 1 - v) for v, m in zip(x, row_max))
            new[dst] += arr[src]
        arr = new
    rows = [set(_allowed(win.row_lo[i], win.row_lw[i])) for i in range(r)]
    grand = set(_allowed(win.grand_lo, win.grand_lw))
    col_sum = sum(x[0] for x in cols) if implied else None
    total = 0
    for idx in zip(*np.nonzero(arr != 0)):
        sums = [int(v) for v in idx]
        if implied:
            sums.append(col_sum - sum(sums))
        if all(v in rows[i] for i, v in enumerate(sums)) and sum(sums) in grand:
            total += arr[idx]
    return int(total)


def test_margins_only_two_rows_count_beyond_128_bits():
    rng = np.random.default_rng(11)
    T = rng.integers(0, 10, size=(2, 48))
    rel = rk.MarginsOnly().protect(rk.Table(T, dims=("v", "w")))
    want = _reference_count(_dp_windows(rel))
    assert want > 2 ** 128
    assert rk.count_candidates(rel) == want
    assert rk.posterior(rel).n_candidates == want


def test_margins_only_three_rows_count_beyond_64_bits():
    rng = np.random.default_rng(12)
    T = rng.integers(0, 5, size=(3, 24))
    rel = rk.MarginsOnly().protect(rk.Table(T, dims=("v", "w")))
    want = _reference_count(_dp_windows(rel))
    assert want > 2 ** 64
    assert rk.count_candidates(rel) == want
    post = rk.posterior(rel, rk.priors.Poisson(2.0))
    assert post.n_candidates == want


def test_rounding_count_beyond_64_bits_interval_margins():
    rng = np.random.default_rng(13)
    T = rng.integers(0, 30, size=(2, 15))
    mech = rk.ControlledRounding(5, method="optimal")
    rel = mech.protect(rk.Table(T, dims=("v", "w")))
    want = _reference_count(_dp_windows(rel))
    assert want > 2 ** 64
    assert rk.count_candidates(rel) == want
    assert rk.posterior(rel).n_candidates == want


def test_small_counts_match_reference_on_random_windows():
    """Many small rounding and margins-only cases, 1 to 4 rows (single-limb path)."""
    rng = np.random.default_rng(14)
    for k in range(40):
        r, c = int(rng.integers(1, 4)), int(rng.integers(1, 5))
        T = rng.poisson(3.0, size=(r, c))
        if k % 2:
            mech = rk.MarginsOnly()
            rel = mech.protect(rk.Table(T, dims=("v", "w")))
        else:
            mech = rk.ControlledRounding(int(rng.integers(2, 5)), method="optimal")
            rel = mech.protect(rk.Table(T, dims=("v", "w")))
        want = _reference_count(_dp_windows(rel))
        assert rk.count_candidates(rel) == want, (k, T)
