"""Seed 003 (Duncan & Roehrig), slide "Suppress Primary Cells + Complementary Cells":
"only three possible original tables".  Seed numbers: riskengine/data/seeds.py (S003)."""

import numpy as np

import riskengine as rk
from riskengine.data.seeds import S003 as S


def test_seed003_three_possible_tables():
    # seed 003, slide "Suppress Primary Cells + Complementary Cells": the 4x4 table with
    # s entries at (1,2) (1,3) (1,4) (3,3) (3,4) (4,2) (4,4); "only three possible original
    # tables".  Exact count.  Reproduced when the intruder knows that no cell is zero
    # (Flat(low=1): the table has no zeros, a suppressed count is a respondent count);
    # with cells >= 0 there are 15 completions (hand derivation: two free cells a = x12,
    # b = x13 with a >= 0, b >= 1, a + b <= 5).
    x = S.ORIGINAL_2D
    supp = np.zeros(x.shape, bool)
    for c in S.SUPPRESSED_CELLS:
        supp[c] = True
    rel = rk.Release(np.where(supp, np.nan, x), margins=rk.Table(x, dims=("v", "w")).totals(),
                     mechanism=rk.CellSuppression(), dims=("v", "w"), kind="count")
    assert rk.count_candidates(rel, rk.priors.Flat(low=1)) == S.N_TABLES_SUPPRESSION
    assert rk.count_candidates(rel) == 15
    post = rk.posterior(rel, rk.priors.Flat(low=1))
    assert post.n_candidates == S.N_TABLES_SUPPRESSION
    assert float(post.prob_exact(x).values.min()) > 0
    # the three tables, by hand: (a, b) in {(1, 2), (1, 3), (2, 2)}; x12 = a
    assert post.pmf.sel(v=0, w=1, value=[1, 2]).values.round(12).tolist() == [
        round(2 / 3, 12), round(1 / 3, 12)]
