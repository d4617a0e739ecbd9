"""Slow, obviously-correct references: plain Python brute force over every sign vector.

Cyclic perturbation: for every e in {-1,0,1}^m the candidate original is
T = P - sum_k e_k C_k; its path probability is computed by running the
mechanism *forward* from T exactly as DESIGN.md defines it (no reverse-order
trick, no groups).  Candidates are collected in a dict keyed by the table, so
several sign vectors reaching one table add up, and distinct tables are
counted directly.
"""

from __future__ import annotations

import itertools
import math

import numpy as np


def cyclic_path_probability(T, e, cycles, alpha, beta, rule):
    gamma = 1.0 - alpha - beta
    S = np.array(T, dtype=np.int64)
    if S.min() < 0:
        return 0.0
    p = 1.0
    for k, ek in enumerate(e):
        c = cycles[k]
        if rule == "any_zero":
            bu = bd = bool(np.any(S[c != 0] == 0))
        else:
            bu = bool(np.any((S + c)[c != 0] < 0))
            bd = bool(np.any((S - c)[c != 0] < 0))
        if ek == 1:
            q = 0.0 if bu else alpha
        elif ek == -1:
            q = 0.0 if bd else beta
        else:
            q = gamma + (alpha if bu else 0.0) + (beta if bd else 0.0)
        p *= q
        if p == 0.0:
            return 0.0
        S = S + ek * c
    return p


def cyclic_brute(P, cycles, alpha, beta, rule, log_prior):
    """Posterior over distinct originals.

    ``log_prior(T)`` returns the prior log-weight of a table (may be -inf).
    Returns (dict table-bytes -> (T, posterior), n_candidates, evidence).
    """
    P = np.asarray(P, dtype=np.int64)
    cycles = np.asarray(cycles, dtype=np.int64)
    m = cycles.shape[0]
    like = {}
    tables = {}
    for e in itertools.product((-1, 0, 1), repeat=m):
        T = P - np.tensordot(np.array(e), cycles, axes=1)
        if T.min() < 0:
            continue
        p = cyclic_path_probability(T, e, cycles, alpha, beta, rule)
        if p == 0.0:
            continue
        key = T.tobytes()
        like[key] = like.get(key, 0.0) + p
        tables[key] = T
    post = {}
    for key, lik in like.items():
        lp = log_prior(tables[key])
        if lp == -math.inf:
            continue
        post[key] = lik * math.exp(lp)
    Z = sum(post.values())
    return {k: (tables[k], v / Z) for k, v in post.items()}, len(post), Z


def cell_pmfs(post, shape):
    """Per-cell pmf dict: cell index -> {value: prob}."""
    out = {idx: {} for idx in np.ndindex(*shape)}
    for T, p in post.values():
        for idx in np.ndindex(*shape):
            v = int(T[idx])
            out[idx][v] = out[idx].get(v, 0.0) + p
    return out


def poisson_log_prior(rate):
    from scipy import stats

    def lp(T):
        return float(np.sum(stats.poisson.logpmf(T, np.broadcast_to(rate, T.shape))))
    return lp


def uniform_log_prior(T):
    return 0.0


# --- 2-D tables with (interval) totals: rounding and margins only -----------------------

def tables_with_windows(cell_lo, cell_hi, row_rng, col_rng, grand_rng):
    """Every integer table with cell_lo <= x <= cell_hi whose row, column and grand totals
    lie in the given inclusive ranges (lists of (lo, hi)).  Row-major recursion; partial
    sums are pruned only by what the remaining cells can still add, and every yielded
    table is checked against all constraints again."""
    r, c = cell_lo.shape
    x = np.zeros((r, c), dtype=np.int64)

    def rec(k):
        if k == r * c:
            R, C, N = x.sum(1), x.sum(0), x.sum()
            if all(lo <= R[i] <= hi for i, (lo, hi) in enumerate(row_rng)) and \
               all(lo <= C[j] <= hi for j, (lo, hi) in enumerate(col_rng)) and \
               grand_rng[0] <= N <= grand_rng[1]:
                yield x.copy()
            return
        i, j = divmod(k, c)
        for v in range(int(cell_lo[i, j]), int(cell_hi[i, j]) + 1):
            x[i, j] = v
            rs = x[i, :j + 1].sum()
            if rs + cell_lo[i, j + 1:].sum() > row_rng[i][1] or \
               rs + cell_hi[i, j + 1:].sum() < row_rng[i][0]:
                continue
            cs = x[:i + 1, j].sum()
            if cs + cell_lo[i + 1:, j].sum() > col_rng[j][1] or \
               cs + cell_hi[i + 1:, j].sum() < col_rng[j][0]:
                continue
            yield from rec(k + 1)
        x[i, j] = 0

    yield from rec(0)


def round_prob(t, R, B):
    """Pr(entry t is rounded to R) under unbiased random rounding to base B."""
    lower = (t // B) * B
    if t == lower:
        return 1.0 if R == t else 0.0
    p_up = (t - lower) / B
    if R == lower + B:
        return p_up
    if R == lower:
        return 1.0 - p_up
    return 0.0


def posterior_over_tables(tables, log_weight):
    """Normalised posterior over an explicit list of tables; cell pmfs and totals pmfs."""
    ws = np.array([log_weight(T) for T in tables])
    keep = np.isfinite(ws)
    tables = [T for T, k in zip(tables, keep) if k]
    ws = ws[keep]
    if not tables:
        return None
    mx = ws.max()
    p = np.exp(ws - mx)
    Z = p.sum()
    p = p / Z
    shape = tables[0].shape
    cells = {idx: {} for idx in np.ndindex(*shape)}
    rows = [{} for _ in range(shape[0])]
    cols = [{} for _ in range(shape[1])]
    grand = {}
    for T, q in zip(tables, p):
        for idx in np.ndindex(*shape):
            cells[idx][int(T[idx])] = cells[idx].get(int(T[idx]), 0.0) + q
        for i, v in enumerate(T.sum(1)):
            rows[i][int(v)] = rows[i].get(int(v), 0.0) + q
        for j, v in enumerate(T.sum(0)):
            cols[j][int(v)] = cols[j].get(int(v), 0.0) + q
        grand[int(T.sum())] = grand.get(int(T.sum()), 0.0) + q
    return {"n": len(tables), "log_z": float(np.log(Z) + mx), "cells": cells, "rows": rows,
            "cols": cols, "grand": grand}
