"""The bundled example (riskengine/data/seed003_original.csv and seed003_release.json, the
CLI's default input) is exactly seed 003's 2-D example: the original and perturbed tables
of riskengine/data/seeds.py (S003), the diagonal 4 x 4 design and alpha = beta = 1/4.
Exact comparisons (integers; alpha and beta are binary fractions)."""

from importlib import resources

import numpy as np

import riskengine as rk
from riskengine.data.seeds import S003


def _bundled(name):
    return str(resources.files("riskengine.data") / name)


def test_bundled_original_is_the_seed_table():
    t = rk.read_table(_bundled("seed003_original.csv"))
    assert t.dims == ("v", "w")
    assert np.array_equal(t.values, S003.ORIGINAL_2D)


def test_bundled_release_is_the_seed_perturbation():
    rel = rk.Release.load(_bundled("seed003_release.json"))
    assert rel.dims == ("v", "w")
    assert np.array_equal(rel.published, S003.PERTURBED_2D)
    # the published totals are the original's (cyclic perturbation keeps every margin)
    assert np.array_equal(rel.margins[("v",)], S003.ORIGINAL_2D.sum(1))
    assert np.array_equal(rel.margins[("w",)], S003.ORIGINAL_2D.sum(0))
    assert int(rel.margins[()]) == int(S003.ORIGINAL_2D.sum())
    mech = rel.mechanism
    assert isinstance(mech, rk.CyclicPerturbation)
    assert (mech.alpha, mech.beta) == (S003.ALPHA, S003.BETA)
    # the diagonal design: cycle k has +1 at (i, i + k) and -1 at (i, i + k + 1), mod 4
    C = np.asarray(mech.cycles)
    assert C.shape == (4, 4, 4)
    want = np.zeros((4, 4, 4), int)
    for k in range(4):
        for i in range(4):
            want[k, i, (i + k) % 4] = 1
            want[k, i, (i + k + 1) % 4] = -1
    assert np.array_equal(C, want)
    assert np.array_equal(C, rk.cycles.diagonal(4))
