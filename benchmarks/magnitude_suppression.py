"""Benchmarks: audit and complementary cell suppression of magnitude tables.

Run from the repository root:  python benchmarks/magnitude_suppression.py [--quick]

Cases (targets from issue 5, on the 2-core machine):
* audit of a 40x40 table with totals and ~5 % of its cells suppressed (<= 10 s);
* heuristic suppression of the same table, ~5 % sensitive cells (<= 60 s);
* optimal (MILP) suppression of small tables and of seed 000's 4x9 table.
The table is printed (case, size, cells, seconds); nothing is written.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import riskengine as rk


def magnitude_table(rng, shape):
    """Skewed magnitudes (a few large cells, many small), two decimals."""
    return np.round(rng.lognormal(4.0, 1.2, shape), 2)


def sensitive_cells(rng, x, frac):
    """A fraction of the cells, chosen among the smaller ones (as dominance rules tend to),
    with protection 15 % of the value."""
    n = max(1, round(frac * x.size))
    small = np.argsort(x.ravel(), kind="stable")[: x.size // 2]
    pick = rng.choice(small, size=n, replace=False)
    sens = np.zeros(x.size, bool)
    sens[pick] = True
    sens = sens.reshape(x.shape)
    return sens, np.where(sens, 0.15 * x, 0.0)


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="smaller tables (smoke run)")
    args = ap.parse_args(argv)
    n = 15 if args.quick else 40
    rng = np.random.default_rng(2026)
    rows = []

    # warm-up (imports, first HiGHS call), excluded and reported
    x0 = magnitude_table(rng, (4, 4))
    s0, p0 = sensitive_cells(rng, x0, 0.1)
    _, warm = timed(lambda: rk.audit(rk.suppress(x0, s0, p0)))
    rows.append(("warm-up (suppress + audit 4x4)", "4x4", "", warm))

    x = magnitude_table(rng, (n, n))
    t = rk.Table(x, dims=("r", "c"))
    supp = rng.random(x.shape) < 0.05
    rel = rk.Release(np.where(supp, np.nan, x), margins=t.totals(),
                     mechanism=rk.CellSuppression(), dims=t.dims)
    a, sec = timed(lambda: rk.audit(rel))
    rows.append((f"audit, random 5 % pattern ({int(supp.sum())} cells)", f"{n}x{n}",
                 f"{a.attrs['n_exact']} exact", sec))

    sens, prot = sensitive_cells(rng, x, 0.05)
    h, sec = timed(lambda: rk.suppress(t, sens, prot, method="heuristic"))
    rows.append((f"heuristic suppression, {int(sens.sum())} sensitive", f"{n}x{n}",
                 f"{h.info['n_suppressed']} cells, value {h.info['value_suppressed']:.0f}", sec))
    a, sec = timed(lambda: rk.audit(h, sens, prot, table=x))
    rows.append((f"audit of that pattern ({h.info['n_suppressed']} cells)", f"{n}x{n}",
                 f"{a.attrs['n_under_protected']} under-protected", sec))

    for m in (6, 10):
        xs = magnitude_table(rng, (m, m))
        ss, ps = sensitive_cells(rng, xs, 0.08)
        o, sec = timed(lambda xs=xs, ss=ss, ps=ps: rk.suppress(xs, ss, ps, method="optimal"))
        hh, sec_h = timed(lambda xs=xs, ss=ss, ps=ps: rk.suppress(xs, ss, ps))
        rows.append((f"optimal (MILP), {int(ss.sum())} sensitive", f"{m}x{m}",
                     f"{o.info['n_suppressed']} cells, value {o.info['value_suppressed']:.0f}",
                     sec))
        rows.append(("heuristic, same table", f"{m}x{m}",
                     f"{hh.info['n_suppressed']} cells, value {hh.info['value_suppressed']:.0f}",
                     sec_h))

    x3 = magnitude_table(rng, (8, 6, 4))
    s3, p3 = sensitive_cells(rng, x3, 0.04)
    h3, sec = timed(lambda: rk.suppress(rk.Table(x3, dims=("a", "b", "c")), s3, p3))
    rows.append((f"heuristic 3-D, all 2-way margins, {int(s3.sum())} sensitive", "8x6x4",
                 f"{h3.info['n_suppressed']} cells", sec))

    w = max(len(r[0]) for r in rows)
    print(f"{'case':<{w}}  {'size':>7}  {'result':>30}  {'seconds':>8}")
    for case, size, res, sec in rows:
        print(f"{case:<{w}}  {size:>7}  {res:>30}  {sec:8.2f}")
    print("\n(timings on a shared 2-core machine; warm-up excluded from the other rows)")


if __name__ == "__main__":
    main()
