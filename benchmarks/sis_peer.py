"""SIS counts side by side with the PyPI package ``sequential-importance-sampling``.

Run:  python benchmarks/sis_peer.py [--draws 100000] [--markdown]

The peer package (MIT, an independent implementation of Chen, Diaconis, Holmes & Liu
2005 for tables with fixed margins: each column drawn uniformly among the compositions
the remaining row sums allow) is installed by this script into its own environment,
``benchmarks/.venv-sis`` (never a dependency of riskengine), and run there in a
subprocess on the same margins.  Both estimates are the mean importance weight, with its
standard error and effective sample size computed here the same way from the log-weights
(ours: ``rk.estimate_count`` with its default proposal, ``"columns"``, the same
column-uniform proposal as the peer's, and with ``proposal="cells"``).
The exact count is given where an exact route (or a closed form) has it.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
import venv
import warnings
from pathlib import Path

import numpy as np

import riskengine as rk

ROOT = Path(__file__).resolve().parents[1]
VENV = ROOT / "benchmarks" / ".venv-sis"
PEER = "sequential-importance-sampling==0.1.1"

WORKER = r"""
import json, math, sys, time
import numpy as np
from sequential_importance_sampling import sample_tables
cases = json.loads(sys.stdin.read())
out = []
for rows, cols, n in cases:
    sample_tables(np.array(rows), np.array(cols), 10, rng_seed=0, parallel=False)  # JIT
    t0 = time.perf_counter()
    _, logq = sample_tables(np.array(rows), np.array(cols), n, rng_seed=1, parallel=False)
    out.append({"logw": (-logq).tolist(), "seconds": time.perf_counter() - t0})
print(json.dumps(out))
"""


def _python() -> Path:
    py = VENV / "bin" / "python"
    if not py.exists():
        venv.create(VENV, with_pip=True)
        subprocess.run([str(py), "-m", "pip", "install", "--quiet", PEER], check=True)
    return py


def _summary(logw: np.ndarray) -> tuple:
    """(log of the mean weight, relative SE, ESS) from log importance weights."""
    m = logw.max()
    w = np.exp(logw - m)
    mean = w.mean()
    rel_se = w.std(ddof=1) / math.sqrt(len(w)) / mean
    ess = w.sum() ** 2 / (w ** 2).sum()
    return float(m + math.log(mean)), float(rel_se), float(ess)


def _z(est, se, exact) -> str:
    """(estimate - exact) / SE; an estimate with SE 0 (every weight equal) is exact or not."""
    if se <= 1e-9 * abs(est):                  # every weight equal (up to rounding)
        return "exact (SE 0)" if math.isclose(est, exact, rel_tol=1e-9) else "wrong (SE 0)"
    return f"{(est - exact) / se:+.2f}"


def _instances():
    rng = np.random.default_rng(3)
    t = rk.Table(rng.poisson(5, size=(5, 5)))
    yield ("De Loera & Sturmfels 4x4, n=592", [220, 215, 93, 64], [108, 286, 71, 127],
           1_225_914_276_768_514)
    yield ("random 5x5, mean 5", t.values.sum(1).tolist(), t.values.sum(0).tolist(),
           rk.count_candidates(rk.MarginsOnly().protect(t), route="dp"))  # ~3 s
    t = rk.Table(np.random.default_rng(7).poisson(15, size=(8, 6)))
    yield ("8x6, mean 15 (no exact count)", t.values.sum(1).tolist(),
           t.values.sum(0).tolist(), None)
    yield ("permutation margins 12x12 (12! tables)", [1] * 12, [1] * 12, math.factorial(12))


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--draws", type=int, default=100_000)
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args(argv)
    cases = list(_instances())
    py = _python()
    res = subprocess.run([str(py), "-c", WORKER], input=json.dumps(
        [[r, c, args.draws] for _, r, c, _ in cases]), capture_output=True, text=True,
        check=True)
    peer = json.loads(res.stdout)
    rows = []
    for (name, r, c, exact), p in zip(cases, peer):
        rel = rk.Release(None, margins={("dim_0",): np.array(r), ("dim_1",): np.array(c),
                                        (): np.array(sum(r))},
                         mechanism=rk.MarginsOnly(), dims=("dim_0", "dim_1"), kind="count")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")                 # ours warns when unreliable
            rk.estimate_count(rel, n=100, rng=np.random.default_rng(0))      # JIT
            t0 = time.perf_counter()
            ours = rk.estimate_count(rel, n=args.draws, rng=np.random.default_rng(1))
            t_ours = time.perf_counter() - t0
            rk.estimate_count(rel, n=100, rng=np.random.default_rng(0), proposal="cells")
            t0 = time.perf_counter()
            cols = rk.estimate_count(rel, n=args.draws, rng=np.random.default_rng(1),
                                     proposal="cells")
            t_cols = time.perf_counter() - t0
        lp, sp, ep = _summary(np.array(p["logw"]))
        row = {"instance": name, "exact": "-" if exact is None else f"{exact:.6g}",
               "ours": f"{ours.estimate:.5g} ± {100 * ours.rel_se:.2g}%",
               "ours ESS": f"{ours.ess:,.0f}" + ("" if ours.reliable else " (flagged)"),
               "ours s": f"{t_ours:.2f}",
               "cells": f"{cols.estimate:.5g} ± {100 * cols.rel_se:.2g}%",
               "cells ESS": f"{cols.ess:,.0f}", "cells s": f"{t_cols:.2f}",
               "peer": f"{math.exp(lp):.5g} ± {100 * sp:.2g}%", "peer ESS": f"{ep:,.0f}",
               "peer s": f"{p['seconds']:.2f}"}
        if exact is not None:
            row["ours z"] = _z(ours.estimate, ours.estimate * ours.rel_se, exact)
            row["peer z"] = _z(math.exp(lp), math.exp(lp) * sp, exact)
            row["cells z"] = _z(cols.estimate, cols.estimate * cols.rel_se, exact)
        rows.append(row)
        print(row, flush=True)
    if args.markdown:
        cols = ["instance", "exact", "ours", "ours z", "ours ESS", "ours s", "peer", "peer z",
                "peer ESS", "peer s", "cells", "cells z", "cells ESS", "cells s"]
        print(f"{args.draws:,} draws each, one thread (the peer's parallel=False), "
              f"python {sys.version.split()[0]}")
        print("| " + " | ".join(cols) + " |")
        print("|" + "---|" * len(cols))
        for r in rows:
            print("| " + " | ".join(r.get(c, "-") for c in cols) + " |")


if __name__ == "__main__":
    main()
