"""Seed 003 (Duncan & Roehrig): the counts of its margins-only and controlled-rounding
slides, exact.  Seed numbers: riskengine/data/seeds.py (S003)."""

import numpy as np

import riskengine as rk
from riskengine.data.seeds import S003 as S


def test_rounded_table_transcription():
    # slide "Controlled Rounding": the interior adds up to the printed totals exactly, and
    # every entry and total is a multiple of 3 adjacent to the original's
    x = S.ROUNDED_2D
    assert tuple(x.sum(1).tolist()) == S.ROUNDED_ROW_TOTALS
    assert tuple(x.sum(0).tolist()) == S.ROUNDED_COL_TOTALS
    assert x.sum() == S.ROUNDED_GRAND_TOTAL
    B = S.ROUNDING_BASE
    for rounded, orig in ((x, S.ORIGINAL_2D), (S.ROUNDED_ROW_TOTALS, S.ORIGINAL_2D.sum(1)),
                          (S.ROUNDED_COL_TOTALS, S.ORIGINAL_2D.sum(0)),
                          (S.ROUNDED_GRAND_TOTAL, S.ORIGINAL_2D.sum())):
        rounded, orig = np.asarray(rounded), np.asarray(orig)
        assert np.all(rounded % B == 0) and np.all(np.abs(rounded - orig) < B)


def test_seed003_margins_only_count():
    """Seed 003: '18,272,363,056 tables have our margins' — exact."""
    rel = rk.MarginsOnly().protect(rk.Table(S.ORIGINAL_2D, dims=("v", "w")))
    assert rk.count_candidates(rel) == S.N_TABLES_MARGINS


def test_seed003_rounding_count():
    """Seed 003: '1,025,908,683 possible original tables' for its base-3 rounding — exact."""
    rel = rk.Release(S.ROUNDED_2D, mechanism=rk.ControlledRounding(S.ROUNDING_BASE),
                     dims=("v", "w"))
    assert rk.count_candidates(rel) == S.N_TABLES_ROUNDING
    # the seed's rounded table is a controlled rounding of its original
    assert np.abs(S.ROUNDED_2D - S.ORIGINAL_2D).max() <= 2
    post = rk.posterior(rel)
    assert post.n_candidates == S.N_TABLES_ROUNDING
    assert post.prob_exact(S.ORIGINAL_2D).values.min() > 0
