"""Benchmark: controlled tabular adjustment of a 13 x 13 x 13 table with all 2-D margins.

Run:  PYTHONPATH=. python benchmarks/magnitude_cta.py [--milp-time-limit SECONDS] [--seed N]

Seed 000 reports CTA on a 13x13x13 (Dandekar) table.  Here: random microdata (2-15
lognormal contributions per cell, about 5 % empty cells), the sensitivity of every
cell (totals included) by the p % rule, capacities 20 % of each cell's value, then

* the ordering heuristic (directions fixed, one LP; target <= 60 s), and
* the full MILP (one binary per sensitive cell) under a time limit, with its gap.

Prints a markdown table.  Timings include model building; the machine is shared.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import riskengine as rk


def microdata(rng, shape, empty=0.05):
    rows = {"a": [], "b": [], "c": [], "v": []}
    for idx in np.ndindex(*shape):
        if rng.random() < empty:
            continue
        m = int(rng.integers(2, 16))
        v = np.round(rng.lognormal(3.0, 1.2, m), 2)
        for d, i in zip("abc", idx):
            rows[d].extend([i] * m)
        rows["v"].extend(v.tolist())
    return rows


def main(argv=None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--milp-time-limit", type=float, default=120.0)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--p", type=float, default=10.0, help="p of the p %% rule")
    args = ap.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    shape = (13, 13, 13)
    rows_out = []

    t0 = time.perf_counter()
    data = microdata(rng, shape)
    c = rk.contributions(data, dims=["a", "b", "c"], value="v",
                         categories={d: list(range(13)) for d in "abc"})
    ds = rk.sensitivity.assess(c, rk.sensitivity.PPercent(args.p))
    t_sens = time.perf_counter() - t0
    sens = rk.sensitivity.cell_vector(ds, "sensitive", c.system).astype(bool)
    n_int = c.system.n_interior
    share = sens[:n_int].mean()
    rows_out.append(("contributions + p% sensitivity", f"{len(data['v'])} contributions",
                     f"{sens[:n_int].sum()} interior ({share:.1%}), {sens[n_int:].sum()} totals",
                     "", "", f"{t_sens:.2f}"))
    cap = 0.2 * c.table.values

    t0 = time.perf_counter()
    heur = rk.cta(c, ds, capacity=cap, directions="ordering")
    t_h = time.perf_counter() - t0
    rows_out.append(("CTA ordering heuristic (LP)", f"{c.system.n_var} cells", f"{sens.sum()}",
                     f"{heur.objective:,.1f}", f"LP {heur.status}", f"{t_h:.2f}"))

    t0 = time.perf_counter()
    try:
        milp = rk.cta(c, ds, capacity=cap, time_limit=args.milp_time_limit, mip_rel_gap=1e-6)
        t_m = time.perf_counter() - t0
        rows_out.append(("CTA full MILP", f"{c.system.n_var} cells", f"{sens.sum()} binaries",
                         f"{milp.objective:,.1f}",
                         f"{milp.status}, gap {milp.gap:.2e}", f"{t_m:.2f}"))
        extra = (f"\nOrdering heuristic / MILP objective: "
                 f"{heur.objective / milp.objective:.4f}")
    except ValueError as exc:
        t_m = time.perf_counter() - t0
        rows_out.append(("CTA full MILP", f"{c.system.n_var} cells", f"{sens.sum()} binaries",
                         "", str(exc)[:60], f"{t_m:.2f}"))
        extra = ""

    print(f"## CTA, 13 x 13 x 13 with all 2-D margins (seed {args.seed}, p % rule p = {args.p:g},"
          f" capacities 20 %)\n")
    print("| case | size | sensitive | objective (sum abs y) | status | seconds |")
    print("|---|---|---|---|---|---|")
    for r in rows_out:
        print("| " + " | ".join(r) + " |")
    print(extra)


if __name__ == "__main__":
    main()
