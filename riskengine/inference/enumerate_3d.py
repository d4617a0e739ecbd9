"""The 3-D enumeration route: every I x J x K table with the release's 2-way margins.

A streaming Numba walk (``kernels.table_enum``) over the cells in C order, pruned by
what every line through a cell can still hold, with windows on every cell and every
total (exact margins: windows of one value).  It accumulates the count, the evidence and
every cell's and total's weighted histogram without storing a table.  Offered by every
mechanism with per-entry windows on 3-D tables (margins only, controlled rounding,
suppression).  1-way margins and the grand total that the release does not publish are
implied by the 2-way ones: they get the flat window their 2-way parent allows.
"""

from __future__ import annotations

import time

import numpy as np

from kernels import table_enum

from ..protocol import Cost, Route, RouteResult
from .windows import EntryWindows, flat

__all__ = ["Enumerate3D", "enumerate_windows", "order"]


def order(dims) -> list:
    """The totals in the kernel's order: ij, ik, jk, i, j, k, grand."""
    a, b, c = dims
    return [(a, b), (a, c), (b, c), (a,), (b,), (c,), ()]


def _complete(ew: EntryWindows) -> tuple:
    """``(lo, lw)`` of every total in kernel order, the unpublished lower ones filled in."""
    lo, lw = dict(ew.lo), dict(ew.lw)
    dims = ew.dims
    for keep in order(dims)[3:]:
        if keep in lo:
            continue
        parent = next(k for k in order(dims)[:3] if set(keep) <= set(k))
        axes = tuple(i for i, d in enumerate(parent) if d not in keep)
        fin = np.isfinite(lw[parent])
        plo = lo[parent] + np.argmax(fin, axis=-1)
        phi = lo[parent] + fin.shape[-1] - 1 - np.argmax(fin[..., ::-1], axis=-1)
        lo[keep], lw[keep] = flat(plo.sum(axis=axes), phi.sum(axis=axes))
    return [lo[k] for k in order(dims)], [lw[k] for k in order(dims)]


def _shift_rows(lw):
    """Log-weights shifted so that each row's largest is 0, and the total shift taken out."""
    fin = np.isfinite(lw)
    mx = np.where(fin, lw, -np.inf).max(axis=-1)
    mx = np.where(np.isfinite(mx), mx, 0.0)
    return np.ascontiguousarray(np.where(fin, lw - mx[..., None], -np.inf)), float(mx.sum())


def _kernel_arrays(ew: EntryWindows) -> tuple:
    I, J, K = ew.shape
    clo, clw = ew.interior
    mlos, mlws = _complete(ew)
    Wm = max(w.shape[-1] for w in mlws)
    mlo = np.concatenate([np.ravel(x) for x in mlos]).astype(np.int64)
    mlw = np.concatenate([np.concatenate([w.reshape(-1, w.shape[-1]),
                                          np.full((int(np.prod(w.shape[:-1], dtype=np.int64)),
                                                   Wm - w.shape[-1]), -np.inf)], axis=1)
                          for w in mlws])
    cw, cshift = _shift_rows(clw.reshape(I * J * K, -1))
    mw, mshift = _shift_rows(mlw)
    return (I, J, K, np.ascontiguousarray(clo.ravel(), dtype=np.int64), cw, mlo, mw), \
        cshift + mshift, clo, mlo


def sample_tables(ew: EntryWindows, n: int, rng) -> np.ndarray:
    """``n`` exact draws of whole tables: one walk for the total, a second one that stops
    at ``n`` sorted uniform points of the cumulative leaf weight."""
    args, _, _, _ = _kernel_arrays(ew)
    _, total, ref, _, _, _ = table_enum.enumerate_3d_windows(*args, -np.inf, np.zeros(0))
    targets = np.sort(rng.random(n)) * total
    out = table_enum.enumerate_3d_windows(*args, ref, targets)[5]
    return out[rng.permutation(n)].reshape((n,) + tuple(ew.shape))


#: steps of the walk ``route="auto"`` lets the enumerator take (about 2 s on one core of
#: the benchmark machine); beyond, the walk gives up and the Monte Carlo route answers
AUTO_STEPS = 50_000_000


def enumerate_windows(ew: EntryWindows, max_steps: int = 0) -> dict:
    """Run the kernel on entry windows (prior included): count, evidence and histograms
    (``count`` -1: the walk gave up after ``max_steps`` steps)."""
    args, shift, clo, mlo = _kernel_arrays(ew)
    count, total, ref, hist, mhist, _ = table_enum.enumerate_3d_windows(
        *args, -np.inf, np.zeros(0), int(max_steps))
    return {"count": int(count), "total": float(total), "shift": shift + ref,
            "hist": hist, "mhist": mhist, "clo": clo, "mlo": mlo}


class Enumerate3D(Route):
    """Streaming enumeration of 3-D tables with every 2-way margin published.

    Reads the mechanism's entry windows (``plan.inputs["windows"]``, without the prior).
    """

    name = "enumerate"
    needs = "entry windows; 3-D count table with every 2-way margin published"

    def applies(self, plan):
        release = plan.release
        if release.kind != "count":
            return ("the exact routes walk integer tables and need a count release; this "
                    "release holds magnitudes (rk.audit gives their intervals)")
        if len(release.dims) != 3:
            return f"the 3-D enumerator covers 3-D tables; this release has dims {release.dims}"
        missing = [k for k in order(release.dims)[:3] if k not in release.margins]
        if missing:
            return f"the 3-D enumerator needs every 2-way margin published; missing {missing}"
        if release.groups:
            return "the 3-D enumerator does not use published subtotals"
        return None

    def estimate(self, plan, what="posterior"):
        ew = plan.inputs["windows"]
        n = sum(int(np.prod(np.shape(v), dtype=np.int64)) for v in ew.lw.values())
        # the walk's length is known only by walking: a probe of AUTO_STEPS steps, whose
        # result the run re-uses when it finished
        t0 = time.perf_counter()
        _, res = self._run(plan, AUTO_STEPS)
        probe = time.perf_counter() - t0   # the whole walk when the probe finished it
        long = "" if res is None or res["count"] >= 0 else (
            f"the enumeration did not finish within {AUTO_STEPS:.0e} steps (about 2 s; the "
            "candidate tables are too many to list)")
        return Cost(float(8 * 4 * n), f"histograms of {n} window values", too_long=long,
                    seconds=max(probe, 1e-6))

    @staticmethod
    def _run(plan, max_steps: int = 0):
        """``(entry windows with the prior, enumeration)``; a probe's walk (``max_steps``)
        that finished is the run's (kept in ``plan.memo`` for the call)."""
        last = plan.prepared.get("enumerate_3d")
        if last is not None and (last[1] is None or last[1]["count"] >= 0
                                 or last[2] == max_steps):
            return last[0], last[1]
        release, prior = plan.release, plan.prior
        ew = plan.inputs["windows"].with_prior(prior, release.coords).trimmed()
        res = None
        if ew is not None:
            tilt = ew.tilted()
            res = enumerate_windows(tilt, max_steps)
            res["shift"] += tilt.shift
            res["tilted"] = tilt
        plan.prepared["enumerate_3d"] = (ew, res, max_steps)
        return ew, res

    def run(self, plan, *, count=True):
        release = plan.release
        ew, res = self._run(plan)
        if ew is None or res["count"] == 0:
            raise ValueError(f"no original table is consistent with this "
                             f"{release.mechanism.name} release under this prior")
        total = res["total"]     # >= 1: the reference leaf itself
        shape = release.shape
        totals, at = {}, 0
        for keep in order(release.dims):
            tshape = tuple(shape[release.dims.index(d)] for d in keep)
            n = int(np.prod(tshape, dtype=np.int64))
            if keep in release.margins:
                totals[keep] = (res["mlo"][at:at + n].reshape(tshape),
                                (res["mhist"][at:at + n] / total).reshape(tshape + (-1,)))
            at += n
        return RouteResult(start=res["clo"],
                            probs=(res["hist"] / total).reshape(shape + (-1,)),
                            log_evidence=float(np.log(total) + res["shift"]),
                            n_candidates=res["count"], totals=totals,
                            approximation=ew.approximation,
                            sampler=lambda n, rng: sample_tables(res["tilted"], n, rng))

    def count(self, plan):
        ew, res = self._run(plan)
        return 0 if ew is None else res["count"]
