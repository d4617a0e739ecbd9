"""A hierarchical table of >= 50,000 published cells: protected by the heuristic and
audited, with time and peak memory (issue 28).

Run:  python benchmarks/hierarchical_suppression.py [--scale S] [--seed N]

The table: a 3-level region hierarchy (regions > provinces > districts), a 4-level
NACE-like hierarchy (sections > divisions > groups > classes) and a size class; every
level of every dim published (the full grid of codes).  Counts: Poisson with a mean
that varies by cell (a quarter of the cells with mean 2, the others 25), so the
frequency rule (a count of 1 or 2 is sensitive) flags a realistic share.  Prints the
size, the number of sensitive and suppressed cells, seconds for building the system,
the suppression (heuristic) and the audit, and the peak resident memory.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import riskengine as rk


def tree(prefix, fan):
    if not fan:
        return {}
    return {f"{prefix}{i}": tree(f"{prefix}{i}.", fan[1:]) for i in range(fan[0])}


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--regions", default="3,4,5", help="fan-out per level of geo")
    ap.add_argument("--nace", default="3,3,3,3", help="fan-out per level of nace")
    ap.add_argument("--sizes", type=int, default=4)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    geo = rk.Hierarchy(tree("G", [int(x) for x in a.regions.split(",")]), total="Total")
    nace = rk.Hierarchy(tree("N", [int(x) for x in a.nace.split(",")]), total="Total")
    rng = np.random.default_rng(a.seed)
    shape = (len(geo.leaves), len(nace.leaves), a.sizes)
    mean = np.where(rng.random(shape) < 0.25, 2.0, 25.0)
    vals = rng.poisson(mean)
    t0 = time.perf_counter()
    t = rk.Table(vals, dims=("geo", "nace", "size"),
                 coords={"geo": list(geo.leaves), "nace": list(nace.leaves),
                         "size": [f"s{i}" for i in range(a.sizes)]},
                 hierarchies={"geo": geo, "nace": nace})
    ts = rk.TableSet(t)
    s = ts.system
    t_sys = time.perf_counter() - t0
    rule = rk.sensitivity.Frequency(3)
    n_sens = int((rule.sensitive(ts.values) & s.published).sum())
    print(f"finest cells {s.n_interior}, published cells {int(s.published.sum())}, "
          f"equations {s.A.shape[0]} (nnz {s.A.nnz}), sensitive {n_sens}; system "
          f"{t_sys:.1f} s", flush=True)
    t0 = time.perf_counter()
    rel = rk.suppress(ts, rule)
    t_sup = time.perf_counter() - t0
    print(f"heuristic: {rel.info['n_suppressed']} suppressed ({rel.info['n_complementary']} "
          f"complementary), {t_sup:.1f} s", flush=True)
    t0 = time.perf_counter()
    au = rk.audit(rel, rule, table=ts)
    t_aud = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(f"audit: {au.attrs['n_exact']} exact, {au.attrs['n_under_protected']} "
          f"under-protected, {t_aud:.1f} s; peak RSS {peak:.2f} GiB", flush=True)


if __name__ == "__main__":
    main()
