"""The cyclic enumeration route: every sign vector, streamed by the Numba walk.

All 3^m sign vectors are walked depth-first with pruning (``kernels.cyclic_enum``),
parallel over the top-level branches, accumulating the group histograms, the evidence
and the number of valid sign vectors and of distinct candidate tables (canonical sign
vectors by the small lattice vectors of the cycles, or integer keys deduplicated here).
This module drives the kernel: it builds the group arrays, keeps the problem's prepared
tables between the chunks of branches, and retries with another weight reference when
the first one under- or overflows.
"""

from __future__ import annotations

import numpy as np

from kernels import cyclic_enum

from ..mechanisms._base import Cost, Route
from . import lattice
from .cyclic import CyclicProblem, build, to_posterior

__all__ = ["MAX_CYCLES", "CyclicEnumerate", "enumerate_signs"]

#: most cycles the enumeration route takes on (3^24 = 2.8e11 sign vectors)
MAX_CYCLES = 24


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


class _Prepared:
    """The kernel's tables of the problem walked last (one problem, several chunks)."""

    def __init__(self):
        self.key = None
        self.tables = None

    def get(self, kp: cyclic_enum.Problem, limit: int) -> tuple:
        key = tuple(a.tobytes() if isinstance(a, np.ndarray) else a for a in kp) + \
            (kp.F.shape, limit)
        if key != self.key:
            self.tables = cyclic_enum.prepare(kp, limit)
            self.key = key
        return self.tables


_PREPARED = _Prepared()


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
    cyc_ptr, cyc_grp, cyc_coef, fin_ptr, fin_grp = _kernel_arrays(pb)
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

    def problem(F):
        return cyclic_enum.Problem(cyc_ptr, cyc_grp, cyc_coef, pb.pmin, F, ok, K, fin_ptr,
                                   fin_grp, pb.rule, pb.alpha, pb.beta, pb.gamma)

    chunk = max(1, nbr // 9)
    for mx in refs:
        with np.errstate(over="ignore"):
            F = np.where(ok, np.exp(pb.logF - mx[:, None]), 0.0)
        kp = problem(F)
        tab = _PREPARED.get(kp, cyclic_enum.lut_limit(m, False))
        H = np.zeros_like(F)
        tot = np.zeros(nbr)
        nvalid = np.zeros(nbr, np.int64)
        ncanon = np.zeros(nbr, np.int64)
        for a in range(0, nbr, chunk):
            rows = np.arange(a, min(nbr, a + chunk))
            canon = plain._replace(key_starts=np.zeros(len(rows), np.int64))
            h, t, nv, nc = cyclic_enum.walk(prefixes[rows], kp, canon, tab)
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
            cyclic_enum.walk(prefixes, kp, canon,
                             _PREPARED.get(kp, cyclic_enum.lut_limit(m, True)))
            n_cand = int(np.unique(keys[:n_valid]).size)
    if n_valid == 0:
        raise ValueError("no original table is consistent with this release under this prior")
    if not (1e-290 < total < 1e290) or not np.all(np.isfinite(H)):
        raise FloatingPointError(
            f"enumeration weights under- or overflowed (total {total!r} over {n_valid} sign "
            "vectors, with both references); use route='structured', which works in log space")
    group_pmf = H / total
    return {"group_pmf": group_pmf, "log_evidence": np.log(total) + mx.sum() + pb.const,
            "n_candidates": n_cand, "n_sign_vectors": n_valid, "note": note}


class CyclicEnumerate(Route):
    """Enumeration of all 3^m sign vectors (up to :data:`MAX_CYCLES` cycles)."""

    name = "enumerate"

    def applies(self, release, prior):
        m = release.mechanism.m
        if m > MAX_CYCLES:
            return (f"{m} cycles: 3^{m} sign vectors, more than enumeration takes on "
                    f"(<= {MAX_CYCLES} cycles)")
        return None

    def estimate(self, release, prior, what="posterior"):
        pb = build(release.mechanism, release, prior)
        return Cost(float(pb.G * (2 * pb.K + 1) * 8 * 40),
                    f"group histograms of {pb.G} groups")

    def run(self, release, prior, *, count=True, progress=None, memory):
        pb = build(release.mechanism, release, prior)
        if pb.empty:
            raise ValueError("no original table is consistent with this release under this "
                             "prior (every candidate has zero prior weight)")
        return to_posterior(pb, enumerate_signs(pb, progress=progress, count=count), release,
                            prior, self.name)

    def count(self, release, prior, *, progress=None, memory):
        pb = build(release.mechanism, release, prior)
        if pb.empty:
            return 0
        res = enumerate_signs(pb, progress=progress, count=True)
        if res["n_candidates"] is None:
            raise ValueError(f"cannot count candidates exactly here: {res['note']}")
        return res["n_candidates"]
