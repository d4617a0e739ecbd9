"""Seed 001 (Domingo-Ferrer & Mateo-Sanz 1999), Table 1: P(X_ij = k | X^M_ij = k) for
k = 1, 2, 3, printed with two decimals.  Seed numbers: riskengine/data/seeds.py (S001)."""

import numpy as np
import pytest

import riskengine as rk
from riskengine.data.seeds import S001


@pytest.mark.parametrize("n", [1000, 100_000])
def test_seed001_table1(n):
    """All 27 values of seed 001's Table 1 within 0.01 (flat prior on x >= 1; the seed's
    "n > 1000")."""
    for k, row in S001.TABLE1.items():
        for (M, S), want in zip(S001.TABLE1_MS, row):
            rel = rk.Release(np.array([[k, n - k]]), margins={(): n}, mechanism=rk.Bootstrap(M, S))
            got = float(rk.posterior(rel, rk.priors.Flat(low=1)).prob_published().values[0, 0])
            assert got == pytest.approx(want, abs=0.01), (k, M, S, got)
