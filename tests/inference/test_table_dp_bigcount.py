"""Exact counts beyond 64 and 128 bits from the table DP's multi-limb forward pass.

Reference: tests/reference/tables.py, an independent column-by-column count in Python
integers over arrays of partial row sums (numpy object arrays; no shared code with
kernels.table_dp): each column adds every allowed vector of cell values whose sum is an
allowed column total, then the row totals and the grand total are filtered at the end.
Exact equality.
"""

import numpy as np
import pytest

import riskengine as rk
from riskengine.inference import table_dp as _tabledp
from tests.reference.tables import count_tables_with_windows


def _dp_windows(rel):
    """The table DP's windows of a release."""
    return _tabledp.release_windows(rel)


@pytest.mark.slow
def test_margins_only_two_rows_count_beyond_128_bits():
    rng = np.random.default_rng(11)
    T = rng.integers(0, 10, size=(2, 48))
    rel = rk.MarginsOnly().protect(rk.Table(T, dims=("v", "w")))
    want = count_tables_with_windows(_dp_windows(rel))
    assert want > 2 ** 128
    assert rk.count_candidates(rel) == want
    assert rk.posterior(rel).n_candidates == want


@pytest.mark.slow
def test_margins_only_three_rows_count_beyond_64_bits():
    rng = np.random.default_rng(12)
    T = rng.integers(0, 5, size=(3, 24))
    rel = rk.MarginsOnly().protect(rk.Table(T, dims=("v", "w")))
    want = count_tables_with_windows(_dp_windows(rel))
    assert want > 2 ** 64
    assert rk.count_candidates(rel) == want
    post = rk.posterior(rel, rk.priors.Poisson(2.0))
    assert post.n_candidates == want


@pytest.mark.slow
def test_rounding_count_beyond_64_bits_interval_margins():
    rng = np.random.default_rng(13)
    T = rng.integers(0, 30, size=(2, 15))
    mech = rk.ControlledRounding(5, method="optimal")
    rel = mech.protect(rk.Table(T, dims=("v", "w")))
    want = count_tables_with_windows(_dp_windows(rel))
    assert want > 2 ** 64
    assert rk.count_candidates(rel) == want
    assert rk.posterior(rel).n_candidates == want


@pytest.mark.slow
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
        want = count_tables_with_windows(_dp_windows(rel))
        assert rk.count_candidates(rel) == want, (k, T)
