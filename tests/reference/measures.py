"""Utility and calibration measures by their textbook formulas, cell by cell in plain
Python."""

import itertools

import numpy as np


def chi_square_mutual_independence(a):
    """Pearson's X^2 of a 3-way table against mutual independence: sum over cells of
    (a - e)^2 / e with e_ijk = a_i.. a_.j. a_..k / n^2 (cells with e = 0 skipped)."""
    n = a.sum()
    m0, m1, m2 = a.sum((1, 2)), a.sum((0, 2)), a.sum((0, 1))
    ref = 0.0
    for i, j, k in itertools.product(*(range(s) for s in a.shape)):
        e = m0[i] * m1[j] * m2[k] / n ** 2
        if e > 0:
            ref += (a[i, j, k] - e) ** 2 / e
    return ref


def calibration_bins(p, h, edges):
    """Per bin [edges[b], edges[b + 1]) (the last bin closed on the right) of the claimed
    probabilities ``p`` (NaN left out): (number of cells, hits, mean claimed, mean observed
    hit rate), by a plain loop over the cells."""
    out = []
    nb = len(edges) - 1
    for b in range(nb):
        last = b == nb - 1
        sel = [i for i in range(p.size) if not np.isnan(p[i]) and edges[b] <= p[i]
               and (p[i] < edges[b + 1] or (last and p[i] == edges[b + 1]))]
        out.append((len(sel), sum(h[i] for i in sel), np.mean(p[sel]), np.mean(h[sel])))
    return out
