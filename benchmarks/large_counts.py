"""Counts of any size (issue 26 item 2): 2 x 2, 2 x 3 and 3 x 3 margins-only and
suppression releases with cells of 1e4 .. 1e5 under Uniform, Poisson and negative binomial
priors, through ``rk.posterior`` (route ``auto``).

Run:  python benchmarks/large_counts.py [--scales 1e4 3e4 1e5] [--dispersion 50]
          [--limit 5] [--markdown]

Each case is timed after a warm-up on a tiny release of the same shape, mechanism and prior
(the Numba kernels compiled or loaded; the warm-up's seconds are printed apart).  Cases:

* margins only, 2 x 2 (1 free dimension), 2 x 3 (2), 3 x 3 (4);
* cell suppression of a 3 x 3 table: a rectangle of 4 cells (1 free dimension), two whole
  rows (2), an L of 6 cells (2);
* priors: ``Uniform()``, ``Poisson(scale)``, ``NegativeBinomial(scale, dispersion)``.

Columns: the route ``auto`` took, the free dimensions, the candidates (exact; ``-`` when
the route does not count), the points the walk summed ("(FFT)": every point, by FFT
convolutions; "MC": a Monte Carlo route, its largest R-hat and smallest bulk ESS over the
cells), the dropped-mass bound, the
route's own time estimate, the wall time, and ``ok`` when the time is within ``--limit``
seconds.  A case ``auto`` refuses prints the time it took to refuse and the start of its
reason.  ``uptime``'s load is
printed in the header: the numbers are only comparable on an idle machine.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

import riskengine as rk
from riskengine.inference.resolve import plan, select_route

DIMS = ("v", "w")

SHAPES = {"margins 2x2": ((2, 2), None), "margins 2x3": ((2, 3), None),
          "margins 3x3": ((3, 3), None),
          "suppressed rectangle 3x3": ((3, 3), [(0, 0), (0, 2), (2, 0), (2, 2)]),
          "suppressed two rows 3x3": ((3, 3), [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1),
                                              (1, 2)]),
          "suppressed L 3x3": ((3, 3), [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1)])}


def release(shape, hidden, scale, seed=0):
    """A reproducible table of cells near ``scale``, released as margins only
    (``hidden`` None) or with the ``hidden`` cells suppressed (every total published)."""
    rng = np.random.default_rng(seed)
    T = np.rint(scale * rng.uniform(0.9, 1.1, size=shape)).astype(np.int64)
    margins = {("v",): T.sum(1), ("w",): T.sum(0), (): int(T.sum())}
    if hidden is None:
        return rk.Release(None, margins=margins, mechanism=rk.MarginsOnly(), dims=DIMS)
    P = T.astype(float)
    for c in hidden:
        P[c] = np.nan
    return rk.Release(P, margins=margins, mechanism=rk.CellSuppression(), dims=DIMS)


def priors(scale, dispersion):
    return {"Uniform": rk.priors.Uniform(), "Poisson": rk.priors.Poisson(float(scale)),
            f"NB(r={dispersion:g})": rk.priors.NegativeBinomial(float(scale), dispersion)}


def one(rel, prior):
    """``(route, dims, count, points, dropped, estimate, seconds, refusal)``."""
    t0 = time.perf_counter()
    try:
        r, _ = select_route(plan(rel, prior), "auto", "posterior+count")
        est = r.estimate(plan(rel, prior), "posterior+count").seconds
    except ValueError as e:         # auto refuses: how long it took to say so
        return ("refused", "", "", "", "", "", time.perf_counter() - t0, str(e)[:120])
    t0 = time.perf_counter()
    post = rk.posterior(rel, prior)
    dt = time.perf_counter() - t0
    a = post.attrs
    return (a["route"], str(a.get("fiber_dimensions", "")),
            "-" if post.n_candidates is None else f"{post.n_candidates:.4g}",
            (f"{a['fiber_points_summed']:.3g}"
             + (" (FFT)" if "fiber_fft_rounding_bound" in a else ""))
            if "fiber_points_summed" in a else
            (f"MC: R-hat {post.diagnostics.attrs['max_rhat']:.3f}, ESS "
             f"{post.diagnostics.attrs['min_ess_bulk']:.0f}"
             if post.diagnostics is not None else ""),
            f"{a['fiber_dropped_mass']:.1e}" if "fiber_dropped_mass" in a else "",
            f"{est:.2g}", dt, "")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scales", type=float, nargs="+", default=[1e4, 3e4, 1e5])
    ap.add_argument("--dispersion", type=float, default=50.0)
    ap.add_argument("--limit", type=float, default=5.0)
    ap.add_argument("--cases", nargs="*", default=list(SHAPES))
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args(argv)
    load = os.getloadavg()
    print(f"# large counts: load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, "
          f"{os.cpu_count()} cores")
    t0 = time.perf_counter()
    for name in args.cases:                         # warm-up: the kernels of every path
        shape, hidden = SHAPES[name]
        for prior in priors(10, args.dispersion).values():
            try:
                rk.posterior(release(shape, hidden, 10), prior)
            except ValueError:
                pass
    print(f"# warm-up (compile or load kernels): {time.perf_counter() - t0:.1f} s")
    head = ["case", "scale", "prior", "route", "d", "candidates", "points", "dropped",
            "est s", "seconds", ""]
    rows = []
    for name in args.cases:
        shape, hidden = SHAPES[name]
        for scale in args.scales:
            rel = release(shape, hidden, scale)
            for pname, prior in priors(scale, args.dispersion).items():
                route, d, n, pts, drop, est, dt, why = one(rel, prior)
                ok = "ok" if dt <= args.limit else "SLOW"
                row = [name, f"{scale:.0e}", pname, route, d, n, pts, drop, est,
                       f"{dt:.2f}", why or ok]
                rows.append(row)
                if not args.markdown:
                    print("  ".join(str(x) for x in row), flush=True)
    if args.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for row in rows:
            print("| " + " | ".join(str(x) for x in row) + " |")


if __name__ == "__main__":
    main()
