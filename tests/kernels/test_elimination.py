"""Clique-tree sum-product against brute force over all assignments
(tests/reference/elimination.py); tolerance 1e-10 on log Z, 1e-12 on marginals."""

import numpy as np
import pytest

from kernels.elimination import CliqueTree
from tests.reference.elimination import log_joint, marginal


@pytest.mark.parametrize("seed", range(25))
def test_random_factor_graphs(seed):
    rng = np.random.default_rng(seed)
    nv = int(rng.integers(1, 8))
    sizes = {v: int(rng.integers(1, 4)) for v in range(nv)}
    factors = []
    for _ in range(int(rng.integers(1, 9))):
        k = int(rng.integers(0, min(3, nv) + 1))
        scope = tuple(sorted(rng.choice(nv, size=k, replace=False).tolist()))
        t = rng.normal(size=tuple(sizes[v] for v in scope))
        t[rng.random(t.shape) < 0.2] = -np.inf
        factors.append((scope, t))
    joint = log_joint(factors, sizes)
    vals = np.array(list(joint.values()))
    with np.errstate(divide="ignore"):
        logz = np.log(np.exp(vals).sum())
    tree = CliqueTree(factors, sizes, "log")
    got = tree.calibrate()
    assert got == pytest.approx(logz, abs=1e-10) if np.isfinite(logz) else got == -np.inf
    cnt = CliqueTree([(s, np.isfinite(t).astype(object)) for s, t in factors], sizes, "count")
    assert cnt.calibrate(downward=False) == int(np.isfinite(vals).sum())
    if np.isfinite(logz):
        for s, _ in factors:
            vars_, lm = tree.marginal(s)
            want = marginal(joint, vars_, sizes, logz)
            assert np.allclose(np.exp(lm), want, atol=1e-12)
