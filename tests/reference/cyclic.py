"""Cyclic perturbation by brute force over every sign vector (plain Python).

For every e in {-1,0,1}^m the candidate original is
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
    """Pr(the mechanism applied to T takes the moves e), by running it forward: cycle k in
    order, each move's coin (alpha up, beta down, gamma none) with a blocked move's mass
    falling to "none"; ``rule`` "any_zero" blocks both ways when a cycle cell is 0,
    "negative" blocks a move that would make a cell negative."""
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
    """Posterior over distinct originals: every sign vector e gives T = P - sum_k e_k C_k;
    T >= 0 is weighed by its path probability (summed over the e reaching it) times
    exp(log_prior(T)), then normalised.

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
