"""Complementary cell suppression by brute force over patterns, and the cells a pattern
fixes by a plain loop over the published sums.

Protection is decided by the independent LP intervals of
:mod:`tests.reference.intervals`; the cheapest protecting pattern is found by trying every
subset of the candidate cells, smallest first.
"""

import itertools

import numpy as np

from .intervals import independently_protected, protected_ext


def brute_force_optimum(x, sens, plo, phi, w, sums):
    """Cost (sum of ``w`` over the suppressed cells) of the cheapest pattern that contains
    every sensitive cell and protects each (:func:`independently_protected`), over every
    subset of the nonzero nonsensitive cells as complements."""
    cand = [c for c in zip(*np.nonzero((x > 0) & ~sens))]
    best = None
    for k in range(len(cand) + 1):
        for extra in itertools.combinations(cand, k):
            supp = sens.copy()
            for c in extra:
                supp[c] = True
            cost = w[supp].sum()
            if best is not None and cost >= best - 1e-9:
                continue
            if independently_protected(x, supp, sens, plo, phi, sums):
                best = cost
    return best


def brute_force_optimum_ext(e, sens_e, prot_e, cand_e):
    """The same on the extended array ``e`` (totals may be hidden, cost = value): the
    cheapest set of hidden entries that contains every sensitive entry and protects each
    (:func:`tests.reference.intervals.protected_ext`), over every subset of the candidate
    entries ``cand_e``."""
    free = [j for j in np.flatnonzero(cand_e.ravel()) if not sens_e.ravel()[j]]
    best = None
    for k in range(len(free) + 1):
        for combo in itertools.combinations(free, k):
            hide = sens_e.copy()
            hide.ravel()[list(combo)] = True
            cost = e[hide].sum()
            if best is not None and cost >= best - 1e-9:
                continue
            if protected_ext(e, hide, sens_e, prot_e, prot_e):
                best = cost
    return best


def fixed_closure(supp, sums):
    """Cells an interior pattern fixes: repeatedly, a suppressed cell that is the only
    suppressed cell of some published sum (``sums`` as (mask, total) pairs)."""
    supp = supp.copy()
    fixed = np.zeros_like(supp)
    changed = True
    while changed:
        changed = False
        for mask, _ in sums:
            cells = np.flatnonzero((mask & supp).ravel())
            if cells.size == 1:
                supp.ravel()[cells[0]] = False
                fixed.ravel()[cells[0]] = True
                changed = True
    return fixed
