"""The column-uniform SIS proposal's counts of bounded compositions (kernels/sis.py):
the linear-space prefix / suffix sums against exact Python integers, on narrow rows
(summed directly) and wide ones (differences of sums), up to counts of 10^70."""

import math

import numpy as np
import pytest

from kernels import sis


def _exact(rr, cj):
    """N[i][s]: ways rows i.. hold s with row t at most rr[t] (Python integers)."""
    r = len(rr)
    N = [[0] * (cj + 1) for _ in range(r + 1)]
    N[r][0] = 1
    for i in range(r - 1, -1, -1):
        P = [0] * (cj + 2)
        for s in range(cj + 1):
            P[s + 1] = P[s] + N[i + 1][s]
        for s in range(cj + 1):
            N[i][s] = P[s + 1] - P[max(0, s - rr[i])]
    return N


@pytest.mark.parametrize("seed", range(6))
def test_linear_counts_equal_exact_integers(seed):
    rng = np.random.default_rng(seed)
    worst, wide = 0.0, 0
    for _ in range(40):
        r = int(rng.integers(1, 12))
        rr = rng.integers(0, [20, 300, 3000][seed % 3], r).astype(np.int64)
        cj = int(rng.integers(0, rr.sum() + 1))
        lin = np.empty((r + 1, cj + 1))
        scales = np.empty(r + 1)
        assert sis._suffix_linear(rr, cj, np.empty((r + 1, cj + 1)), lin, np.empty(cj + 2),
                                  np.empty(cj + 2), scales)
        with np.errstate(divide="ignore"):
            suf = np.log(lin) + scales[:, None]
        wide += bool((rr >= 32).any())
        N = _exact(rr.tolist(), cj)
        for i in range(r + 1):
            for s in range(cj + 1):
                if N[i][s] == 0:
                    assert suf[i, s] == -np.inf
                else:
                    worst = max(worst, abs(suf[i, s] - math.log(N[i][s])))
        ref = np.empty((r + 1, cj + 1))                  # the log-space version agrees
        sis._suffix(rr, cj, ref)
        np.testing.assert_allclose(suf[np.isfinite(ref)], ref[np.isfinite(ref)],
                                   rtol=0, atol=1e-11)
    assert worst < 1e-11
    if seed % 3:
        assert wide >= 20
