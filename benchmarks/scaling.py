"""Scaling of the exact 2-D table DP (issue 3): n x n tables, n = 4..10.

Run:  python benchmarks/scaling.py [--max-seconds 60] [--ns 4 5 6] [--markdown]

For every n, margins-only releases of Poisson tables with cell means 2, 5 and 20,
and controlled roundings (base 3 and 5, ``method="optimal"``, Poisson mean 20):
candidates (exact count), seconds for the count alone and for the full posterior
(every cell and total, with the count from the same forward pass), and the DP's
stored states (largest stage / sum over stages).  The count keeps two stages in
memory, the posterior every stage.  A task whose predicted time exceeds
``--max-seconds`` (from the states and the rate per state of the last case run of
that kind) or whose states exceed the DP's memory limit is skipped ("-");
a case with neither prints "too large (N states)".  Numba compile (or cache load) is
paid once on a tiny case before the timed runs.
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np

import riskengine as rk
from riskengine.inference import table_dp as _tabledp

KINDS = [("margins only", None, 2), ("margins only", None, 5), ("margins only", None, 20),
         ("rounding", 3, 20), ("rounding", 5, 20)]


def make_release(kind, base, mean, n, seed=0):
    """The benchmark instance: a Poisson(mean) n x n table and its release."""
    rng = np.random.default_rng(1000 * n + 10 * mean + (base or 0) + seed)
    t = rk.Table(rng.poisson(mean, size=(n, n)), dims=("v", "w"))
    if kind == "margins only":
        return rk.MarginsOnly().protect(t)
    return rk.ControlledRounding(base, method="optimal").protect(t)


def windows(rel):
    """The DP's windows of the release (its first route is the table DP)."""
    return _tabledp.release_windows(rel)


def _fmt_n(x):
    return str(x) if x < 10 ** 12 else f"{float(x):.3e}"


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-seconds", type=float, default=60.0)
    ap.add_argument("--ns", type=int, nargs="*", default=list(range(4, 11)))
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args(argv)

    import numba
    t0 = time.perf_counter()
    for kind, base, _ in KINDS[::2]:
        rk.posterior(make_release(kind, base, 2, 2))
        rk.count_candidates(make_release(kind, base, 2, 2))
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"numba threads {numba.get_num_threads()}, python {platform.python_version()}; "
          f"warm-up (compile or cache load) {time.perf_counter() - t0:.1f} s; "
          f"time limit per case {args.max_seconds:.0f} s")
    rate = {}                  # seconds per stored state of the last (largest) case run, per key
    skip = set()
    head = ("release", "n", "cell mean", "candidates", "states (largest / total)", "count s",
            "posterior + count s")
    rows = []
    lim = 2e8                  # stored states: the memory this table was first measured at
    for n in args.ns:
        for kind, base, mean in KINDS:
            label = kind if base is None else f"{kind} base {base}"
            rel = make_release(kind, base, mean, n)
            big, total = _tabledp.states(windows(rel))
            st = f"{big:.3g} / {total:.3g}"
            cnt, t_cnt, t_post = None, "-", "-"
            # count: two stage arrays in memory; posterior: every stage stored
            for task, need, mem in (("count", total, 2 * big), ("posterior", total, total)):
                key = (kind, base, mean, task)
                if key in skip or mem > lim or need * rate.get(key, 0) > args.max_seconds:
                    skip.add(key)
                    continue
                t1 = time.perf_counter()
                if task == "count":
                    cnt = rk.count_candidates(rel)
                    t_cnt = f"{time.perf_counter() - t1:.3f}"
                else:
                    post = rk.posterior(rel)
                    t_post = f"{time.perf_counter() - t1:.3f}"
                    assert cnt is None or post.n_candidates == cnt
                    cnt = post.n_candidates
                dt = time.perf_counter() - t1
                rate[key] = dt / max(total, 1.0)      # cases grow with n
            shown = _fmt_n(cnt) if cnt is not None else f"too large ({total:.3g} states)"
            rows.append((label, str(n), str(mean), shown, st, t_cnt, t_post))
            print("  ", " | ".join(rows[-1]), flush=True)
    if args.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for r in rows:
            print("| " + " | ".join(r) + " |")
    else:
        w = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
        print("  ".join(h.ljust(x) for h, x in zip(head, w)))
        for r in rows:
            print("  ".join(v.ljust(x) for v, x in zip(r, w)))


if __name__ == "__main__":
    main()
