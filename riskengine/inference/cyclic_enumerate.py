"""The cyclic enumeration route: every sign vector, streamed by the Numba walk.

All 3^m sign vectors are walked depth-first with pruning (``kernels.cyclic_enum``),
parallel over the top-level branches, accumulating the group histograms, the evidence
and the number of valid sign vectors and of distinct candidate tables (canonical sign
vectors by the small lattice vectors of the cycles, or integer keys deduplicated here).
This module drives the kernel: it builds the group arrays, keeps the problem's prepared
tables between the chunks of branches, and retries with another weight reference when
the first one under- or overflows.

Whole-table draws (:func:`sample_signs`) reuse the same walk: sampling by subtree
weights, a block of levels at a time (the masses of the branches that extend each drawn
prefix, then one choice per draw in proportion to them).
"""

from __future__ import annotations

import numpy as np

from kernels import cyclic_enum

from ..protocol import Cost, Route
from . import lattice
from ._cyclic_threads import walk
from .cyclic import CyclicProblem, problem, tables_from_signs, to_result

__all__ = ["MAX_CYCLES", "CyclicEnumerate", "enumerate_signs", "sample_signs",
           "sample_tables"]

#: most cycles the enumeration route takes on (3^24 = 2.8e11 sign vectors)
MAX_CYCLES = 24

#: most branches (rows of forced choices) one walk of the sampler takes: bounds its memory
#: (rows x m int64) and leaves each branch enough leaves below to amortise its setup
_SAMPLE_ROWS = 3 ** 11


def _kernel_arrays(pb: CyclicProblem):
    m = pb.m
    cyc_ptr = np.zeros(m + 1, np.int64)
    grp, coef = [], []
    for k in range(m):
        gs = pb.cycle_groups(k)
        grp.extend(gs.tolist())
        coef.extend(pb.R[gs, k].tolist())
        cyc_ptr[k + 1] = len(grp)
    first = np.argmax(pb.R != 0, axis=1)
    order = np.argsort(first, kind="stable")
    fin_ptr = np.searchsorted(first[order], np.arange(m + 1)).astype(np.int64)
    fin_grp = order.astype(np.int64)
    return cyc_ptr, np.array(grp, np.int64), np.array(coef, np.int64), fin_ptr, fin_grp


def _tables(pb: CyclicProblem, kp: cyclic_enum.Problem, limit: int) -> cyclic_enum.Tables:
    """The kernel's tables of ``kp`` (one problem, several chunks and draws), prepared once
    and kept with the problem ``pb`` (which lives for one call: nothing shared between
    calls or threads)."""
    key = tuple(a.tobytes() if isinstance(a, np.ndarray) else a for a in kp) + \
        (kp.F.shape, limit)
    cache = pb.kernel_tables
    if key not in cache:
        cache.clear()                      # one problem's tables at a time (they are large)
        cache[key] = cyclic_enum.prepare(kp, limit)
    return cache[key]


def _weights(pb: CyclicProblem, mx: np.ndarray) -> cyclic_enum.Problem:
    """The kernel's problem with each group's factors relative to ``mx`` (one per group)."""
    ok = np.isfinite(pb.logF)
    with np.errstate(over="ignore"):
        F = np.where(ok, np.exp(pb.logF - mx[:, None]), 0.0)
    cyc_ptr, cyc_grp, cyc_coef, fin_ptr, fin_grp = _kernel_arrays(pb)
    return cyclic_enum.Problem(cyc_ptr, cyc_grp, cyc_coef, pb.pmin, F, ok, pb.K, fin_ptr,
                               fin_grp, pb.rule, pb.alpha, pb.beta, pb.gamma)


def _plain(nrows: int, m: int) -> cyclic_enum.Canon:
    """No canonical test, no keys: the walk only sums the leaf weights per branch."""
    return cyclic_enum.Canon(np.zeros((0, m), np.int64), False, np.zeros(0, np.int64), 1,
                             np.zeros(1, np.int64), np.zeros(nrows, np.int64))


def enumerate_signs(pb: CyclicProblem, progress=None, count: bool = True) -> dict:
    """Group pmfs, log evidence, number of valid sign vectors and (``count``) of distinct
    candidate tables, by enumeration."""
    m, K = pb.m, pb.K
    ok = np.isfinite(pb.logF)
    # weights are products of per-group factors relative to a reference: first each
    # group's maximum (no overflow possible); if the total underflows, the published
    # table's own factors (leaves near the published table then weigh about 1)
    refs = [np.where(ok, pb.logF, -np.inf).max(axis=1)]
    if np.all(ok[:, K]):
        refs.append(pb.logF[:, K])
    note = ""
    zset = np.zeros((0, m), np.int64)
    key_mode = False
    if count:
        z = lattice.small_lattice_vectors(pb.R)
        if z is None:
            key_mode = True
        else:
            zset = z
    s = min(m, 4)
    prefixes = np.array(np.meshgrid(*[np.arange(3)] * s, indexing="ij")).reshape(s, -1).T
    prefixes = np.ascontiguousarray(prefixes, dtype=np.int64)
    nbr = prefixes.shape[0]
    plain = cyclic_enum.Canon(zset, False, np.zeros(0, np.int64), 1, np.zeros(1, np.int64),
                              None)

    chunk = max(1, nbr // 9)
    for mx in refs:
        kp = _weights(pb, mx)
        tab = _tables(pb, kp, cyclic_enum.lut_limit(m, False))
        H = np.zeros_like(kp.F)
        tot = np.zeros(nbr)
        nvalid = np.zeros(nbr, np.int64)
        ncanon = np.zeros(nbr, np.int64)
        for a in range(0, nbr, chunk):
            rows = np.arange(a, min(nbr, a + chunk))
            canon = plain._replace(key_starts=np.zeros(len(rows), np.int64))
            h, t, nv, nc = walk(prefixes[rows], kp, canon, tab)
            H += h
            tot[rows], nvalid[rows], ncanon[rows] = t, nv, nc
            if progress is not None:
                progress(int(rows[-1]) + 1, nbr)
        total = float(tot.sum())
        if (1e-290 < total < 1e290 and np.all(np.isfinite(H))) or int(nvalid.sum()) == 0:
            break
    n_valid = int(nvalid.sum())
    n_cand = int(ncanon.sum()) if count else None
    if count and key_mode:
        pivots = lattice.row_basis(pb.R)
        base = 2 * K + 1
        if n_valid > 50_000_000 or len(pivots) * np.log(base) > 62 * np.log(2):
            n_cand = None
            note = (f"{n_valid} valid sign vectors and a null space too large to list; "
                    "distinct tables not counted")
        else:
            keys = np.zeros(max(n_valid, 1), np.int64)
            starts = np.concatenate([[0], np.cumsum(nvalid)[:-1]]).astype(np.int64)
            canon = cyclic_enum.Canon(np.zeros((0, m), np.int64), True,
                                      pivots.astype(np.int64), base, keys, starts)
            walk(prefixes, kp, canon, _tables(pb, kp, cyclic_enum.lut_limit(m, True)))
            n_cand = int(np.unique(keys[:n_valid]).size)
    if n_valid == 0:
        raise ValueError("no original table is consistent with this release under this prior")
    if not (1e-290 < total < 1e290) or not np.all(np.isfinite(H)):
        raise FloatingPointError(
            f"enumeration weights under- or overflowed (total {total!r} over {n_valid} sign "
            "vectors, with both references); use route='structured', which works in log space")
    group_pmf = H / total
    return {"group_pmf": group_pmf, "log_evidence": np.log(total) + mx.sum() + pb.const,
            "n_candidates": n_cand, "n_sign_vectors": n_valid, "note": note,
            "weight_ref": mx}


def _branch_masses(pre: np.ndarray, L: int, kp, tab) -> np.ndarray:
    """Total leaf mass below every prefix of ``pre`` (rows) extended by every choice of the
    next ``L`` levels: (len(pre), 3^L), extensions in base-3 order (first level most
    significant).  Walked in pieces of at most :data:`_SAMPLE_ROWS` branches."""
    D = pre.shape[0]
    nb = 3 ** L
    ext = np.array(np.unravel_index(np.arange(nb), (3,) * L), np.int64).T     # (nb, L)
    out = np.empty(D * nb)
    per = max(1, _SAMPLE_ROWS // nb)
    for a in range(0, D, per):
        part = pre[a:a + per]
        rows = np.ascontiguousarray(np.concatenate(
            [np.repeat(part, nb, axis=0), np.tile(ext, (len(part), 1))], axis=1))
        out[a * nb:(a + len(part)) * nb] = walk(
            rows, kp, _plain(len(rows), kp.cyc_ptr.size - 1), tab)[1]
    return out.reshape(D, nb)


def _pick(cum: np.ndarray, rows: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Per draw i, the smallest j with ``cum[rows[i], j] > u[i]`` (rows of ``cum``
    nondecreasing), by a vectorised binary search; ``cum.shape[1]`` where there is none."""
    nb = cum.shape[1]
    lo = np.zeros(len(rows), np.int64)
    hi = np.full(len(rows), nb, np.int64)
    while True:
        active = lo < hi
        if not active.any():
            return lo
        mid = (lo + hi) // 2
        above = cum[rows, np.minimum(mid, nb - 1)] > u
        hi = np.where(active & above, mid, hi)
        lo = np.where(active & ~above, mid + 1, lo)


def sample_signs(pb: CyclicProblem, n: int, rng: np.random.Generator,
                 weight_ref: np.ndarray, memo: dict | None = None) -> np.ndarray:
    """``n`` independent draws of the sign vector, (n, m) in -1..1, from the exact posterior
    over valid sign vectors (weight: the mechanism's path probability times the prior).

    Sampling by subtree weights on the enumeration tree (cycles decided in the walk's
    order, m-1 first): a block of L levels at a time, the walk gives the mass of every
    extension of each distinct drawn prefix, and each draw takes one extension with
    probability proportional to its mass (one uniform per draw and block from ``rng``).
    The first block starts at the root and costs about one enumeration; the later ones
    walk below at most n prefixes; ``memo`` (a dict kept between calls on one problem)
    keeps the first block's masses, so that later calls skip it.  Weights are relative to
    ``weight_ref`` (the reference under which the enumeration's total neither under- nor
    overflowed)."""
    m = pb.m
    kp = _weights(pb, weight_ref)
    tab = _tables(pb, kp, cyclic_enum.lut_limit(m, False))
    pre = np.zeros((1, 0), np.int64)          # the distinct prefixes drawn so far
    at = np.zeros(n, np.int64)                # each draw's prefix
    while pre.shape[1] < m:
        D, s = pre.shape
        L = 1
        while s + L < m and D * 3 ** (L + 1) <= _SAMPLE_ROWS:
            L += 1
        if s == 0 and memo is not None and ("root", L) in memo:
            mass = memo["root", L]
        else:
            mass = _branch_masses(pre, L, kp, tab)
            if s == 0 and memo is not None:
                memo["root", L] = mass
        cum = np.cumsum(mass, axis=1)
        tot = cum[:, -1]
        if not np.all((tot[at] > 0) & np.isfinite(tot[at])):
            raise FloatingPointError(
                f"the sampler's subtree weights under- or overflowed below {s} levels "
                f"(mass {tot[at].min()!r}); use route='structured', which works in log space")
        nb = mass.shape[1]
        j = _pick(cum, at, rng.random(n) * tot[at])
        # (cum[j-1] <= u < cum[j]: extension j has mass.)  Rounding can leave u at the
        # row's total: then the row's last extension with mass
        last = nb - 1 - np.argmax(mass[:, ::-1] > 0, axis=1)
        j = np.where(j < nb, j, last[at])
        key, at = np.unique(at * nb + j, return_inverse=True)    # new distinct prefixes
        ext = np.array(np.unravel_index(key % nb, (3,) * L), np.int64).T
        pre = np.concatenate([pre[key // nb], ext], axis=1)
        at = at.ravel()
    return 1 - pre[at][:, ::-1]               # choice c at depth d: e_{m-1-d} = 1 - c


def sample_tables(pb: CyclicProblem, cycles, n: int, rng: np.random.Generator,
                  weight_ref: np.ndarray, memo: dict | None = None) -> np.ndarray:
    """``n`` exact posterior draws of the original table: sign vectors by
    :func:`sample_signs`, then ``T = P - sum_k e_k C_k``."""
    e = sample_signs(pb, n, rng, weight_ref, memo)
    return tables_from_signs(pb.P, e, cycles)


class CyclicEnumerate(Route):
    """Enumeration of all 3^m sign vectors (up to :data:`MAX_CYCLES` cycles)."""

    name = "enumerate"
    needs = f"the cycle set and its coin (alpha, beta); at most {MAX_CYCLES} cycles (3^m signs)"

    def applies(self, plan):
        release = plan.release
        m = release.mechanism.m
        if m > MAX_CYCLES:
            return (f"{m} cycles: 3^{m} sign vectors, more than enumeration takes on "
                    f"(<= {MAX_CYCLES} cycles)")
        return None

    def estimate(self, plan, what="posterior"):
        pb = problem(plan)
        # every one of 3^m sign vectors, each updating the groups it touches
        secs = 1e-3 + 3.0 ** pb.m * (pb.G + 1) / 1e8
        return Cost(float(pb.G * (2 * pb.K + 1) * 8 * 40),
                    f"group histograms of {pb.G} groups, 3^{pb.m} sign vectors",
                    seconds=secs)

    def run(self, plan, *, count=True):
        release, progress = plan.release, plan.progress
        pb = problem(plan)
        if pb.empty:
            raise ValueError("no original table is consistent with this release under this "
                             "prior (every candidate has zero prior weight)")
        res = enumerate_signs(pb, progress=progress, count=count)
        ref, memo, cycles = res["weight_ref"], {}, release.mechanism.cycles
        return to_result(pb, res,
                         sampler=lambda n, rng: sample_tables(pb, cycles, n, rng, ref, memo))

    def count(self, plan):
        progress = plan.progress
        pb = problem(plan)
        if pb.empty:
            return 0
        res = enumerate_signs(pb, progress=progress, count=True)
        if res["n_candidates"] is None:
            raise ValueError(f"cannot count candidates exactly here: {res['note']}")
        return res["n_candidates"]
