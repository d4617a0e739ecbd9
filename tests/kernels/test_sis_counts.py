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


@pytest.mark.parametrize("seed", range(4))
def test_exact_column_counts_equal_python_integers(seed):
    """The float64 fast path (:func:`sis._column_exact`) where :func:`sis.exact_fits`:
    every count it defines is the exact integer (equality, not a tolerance), the rows'
    ranges are the sums the rows above can leave, and the column's count is row 0's at
    the column sum."""
    rng = np.random.default_rng(100 + seed)
    checked = 0
    for _ in range(60):
        r = int(rng.integers(2, 10))
        rr = rng.integers(0, [6, 40, 400, 3000][seed], r).astype(np.int64)
        cj = int(rng.integers(0, rr.sum() + 1))
        if not sis.exact_fits(rr, np.array([cj])):
            continue
        lin = np.full((r + 1, cj + 1), np.nan)
        caps = np.empty(r + 1, np.int64)
        z = sis._column_exact(rr, cj, lin, caps)
        N = _exact(rr.tolist(), cj)
        assert z == N[0][cj] and float(N[0][cj]) < 2.0 ** 53
        for i in range(1, r):
            lo, hi = max(0, cj - int(rr[:i].sum())), min(cj, int(rr[i:].sum()))
            assert caps[i] == rr[i:].sum()
            for s in range(lo, hi + 1):
                assert lin[i, s] == N[i][s]
        checked += 1
    assert checked >= 25           # the rest pass the float64 bound (the guarded path)


def test_exact_fits_is_the_float64_bound():
    """Exact where the unbounded compositions of the largest column sum into r parts stay
    below e**36 (< 2**53); beyond it the guarded path (prefix / suffix sums, rescaling)."""
    r = 8
    ok = [c for c in range(1, 5000) if math.comb(c + r - 1, r - 1) <= math.exp(36)]
    edge = max(ok)
    R = np.full(r, 10 ** 6, np.int64)
    assert sis.exact_fits(R, np.array([edge, 3]))
    assert not sis.exact_fits(R, np.array([edge + 1, 3]))
    assert math.comb(edge + r - 1, r - 1) < 2 ** 53


@pytest.mark.parametrize("seed", range(3))
def test_exact_and_guarded_paths_give_the_same_draws(seed):
    """The same uniforms give the same log q on both paths (the guarded one forced), draw
    by draw, on margins in the tens to hundreds, where no table list is possible (the
    small fibers' every table: tests/inference/test_sis.py)."""
    rng = np.random.default_rng(200 + seed)
    done = 0
    while done < 5:
        r, m = int(rng.integers(2, 7)), int(rng.integers(2, 7))
        T0 = rng.poisson(rng.uniform(1, [5, 40, 150][seed]), size=(r, m))
        R, C = T0.sum(1).astype(np.int64), T0.sum(0).astype(np.int64)
        if not sis.exact_fits(R, C):
            continue
        u = rng.random((300, r - 1, m - 1))
        none = np.zeros((0, 0), np.int64)
        lq = [[sis._walk(R, C, u[k], none, True, True, exact, *sis._buffers(R, C, True))
               for k in range(len(u))] for exact in (True, False)]
        np.testing.assert_allclose(lq[0], lq[1], rtol=0, atol=1e-9)
        assert np.isfinite(lq[0]).all()
        done += 1
