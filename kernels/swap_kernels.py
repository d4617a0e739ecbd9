"""Targeted record swapping: the greedy household-by-household pass of one geography level.

Plain arrays in, plain arrays out (``riskengine/mechanisms/swapping.py`` builds them).
Households are ``0 .. nh-1``; every array below is indexed by household unless said so.

One call processes one level ``l`` of the hierarchy, area by area in the order given:

* the households to swap in an area: its households that must be swapped at this level
  (``must``), not yet used and not logged as failed, in the order of ``area_hh``; at the
  lowest level (``last``) followed by up to ``quota[a] - |must|`` further households of
  the area (unused, not failed, not must), taken in the order of ``sel_hh`` (the caller
  sorts it by descending ``risk / Exp(1)`` key: weighted sampling without replacement);
* the donor of each, in turn: for each similarity profile ``p`` in order, the first
  household in ``donor_ord[p]`` (sorted by profile code, then by descending
  ``risk / Exp(1)`` key at this level) of the household's profile code that is unused
  and lies in another area of this level; none in any profile: the household is logged
  as failed.

Used positions of ``donor_ord[p]`` are skipped by a path-compressed "next candidate"
array (``parent[p]``), so a level costs about (households to swap) x (unused same-area
donors met ahead of the first other-area one) plus the sorting the caller does.
"""

from __future__ import annotations

import numpy as np

from ._jit import njit

__all__ = ["swap_level"]


@njit
def _find(parent, order, used, j, n):
    """The first position ``>= j`` of ``order`` whose household is unused (``n``: none)."""
    r = j
    while r < n:
        q = parent[r]
        if q != r:
            r = q
            continue
        if used[order[r]]:
            parent[r] = r + 1
            r += 1
            continue
        break
    while j < r:                      # path compression along the path walked
        q = parent[j]
        if q == j:
            break
        parent[j] = r
        j = q
    return r


@njit
def _donor(s, area, sim_code, donor_ord, donor_len, sim_start, parent, used):
    """The donor of household ``s`` and the profile that gave it (-1, -1: none)."""
    n_prof = donor_ord.shape[0]
    a = area[s]
    for p in range(n_prof):
        c = sim_code[p, s]
        lo = sim_start[p, c]
        hi = sim_start[p, c + 1]
        n = donor_len[p]
        r = _find(parent[p], donor_ord[p], used, lo, n)
        while r < hi:
            d = donor_ord[p, r]
            if area[d] != a:
                return d, p
            r = _find(parent[p], donor_ord[p], used, r + 1, n)
    return -1, -1


@njit
def swap_level(last, area, area_hh, area_start, must, quota, sel_hh, sel_start,
               sim_code, donor_ord, donor_len, sim_start, parent, used, failed,
               out_s, out_d, out_p, n_out, fail_s, n_fail):
    """Swap the households of one level, area by area (see the module docstring).

    Parameters
    ----------
    last : bool
        The lowest level: add the quota draws of ``sel_hh``.
    area : int64[nh]
        Each household's area at this level (``0 .. A-1``).
    area_hh, area_start : int64[nh], int64[A + 1]
        The households of area ``a``: ``area_hh[area_start[a]:area_start[a + 1]]``,
        areas in processing order, households in swap order.
    must : bool[nh]
        The household must be swapped at this level.
    quota : int64[A]
        The lowest level: the number of households to swap in each area (must included).
    sel_hh, sel_start : int64[nh], int64[A + 1]
        The lowest level: each area's households by descending selection key.
    sim_code : int64[P, nh]
        Each household's code for each similarity profile.
    donor_ord, donor_len : int64[P, nh], int64[P]
        Per profile: the eligible donors (first ``donor_len[p]``) by code then key.
    sim_start : int64[P, C + 1]
        Per profile: code ``c`` occupies ``donor_ord[p, sim_start[p, c]:sim_start[p, c+1]]``.
    parent : int64[P, nh + 1]
        Skip pointers over used donors (initially ``parent[p, j] = j``); updated.
    used, failed : bool[nh]
        Swapped already / logged without a donor; updated.
    out_s, out_d, out_p : int64[nh]
        The swaps made (household, donor, profile) from position ``n_out``.
    n_out : int
        Swaps already in ``out_*``.
    fail_s : int64[nh]
        The households logged without a donor, from position ``n_fail``.
    n_fail : int
        Households already in ``fail_s``.

    Returns
    -------
    tuple of int
        ``(n_out, n_fail)`` after this level.
    """
    n_area = area_start.shape[0] - 1
    todo = np.empty(area_hh.shape[0], np.int64)
    for a in range(n_area):
        m = 0
        for i in range(area_start[a], area_start[a + 1]):
            h = area_hh[i]
            if must[h] and not used[h] and not failed[h]:
                todo[m] = h
                m += 1
        if last:
            extra = quota[a] - m
            i = sel_start[a]
            while extra > 0 and i < sel_start[a + 1]:
                h = sel_hh[i]
                if not must[h] and not used[h] and not failed[h]:
                    todo[m] = h
                    m += 1
                    extra -= 1
                i += 1
        for t in range(m):
            s = todo[t]
            if used[s]:               # cannot happen (donors lie in other areas): guard
                continue
            d, p = _donor(s, area, sim_code, donor_ord, donor_len, sim_start, parent, used)
            if d < 0:
                failed[s] = True
                fail_s[n_fail] = s
                n_fail += 1
            else:
                used[s] = True
                used[d] = True
                out_s[n_out] = s
                out_d[n_out] = d
                out_p[n_out] = p
                n_out += 1
    return n_out, n_fail
