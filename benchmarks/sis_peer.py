"""SIS counts side by side with the PyPI package ``sequential-importance-sampling``.

Run:  python benchmarks/sis_peer.py [--draws 100000] [--repeat 3] [--hogs] [--markdown]

The peer package (MIT, an independent implementation of Chen, Diaconis, Holmes & Liu
2005 for tables with fixed margins: each column drawn uniformly among the compositions
the remaining row sums allow) is installed by this script into its own environment,
``benchmarks/.venv-sis`` (never a dependency of riskengine), and run there in a
subprocess on the same margins.  Both estimates are the mean importance weight, with its
standard error and effective sample size computed here the same way from the log-weights
(ours: ``rk.estimate_count`` with its default proposal, ``"columns"``, the same
column-uniform proposal as the peer's, and with ``proposal="cells"``).
The exact count is given where an exact route (or a closed form) has it.  The runs are
interleaved (peer, ours, ours "cells" on each instance, ``--repeat`` rounds; seconds the
least of the rounds; each run seeded, so every round gives the same estimates); the peer
runs in one worker process for the whole benchmark, its kernels compiled before the
first round.  ``--hogs``: two busy-looping processes beside the runs (a loaded machine).
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
import json, sys, time
import numpy as np
from sequential_importance_sampling import sample_tables
for line in sys.stdin:
    rows, cols, n = json.loads(line)
    sample_tables(np.array(rows), np.array(cols), 10, rng_seed=0, parallel=False)  # JIT
    t0 = time.perf_counter()
    _, logq = sample_tables(np.array(rows), np.array(cols), n, rng_seed=1, parallel=False)
    print(json.dumps({"logw": (-logq).tolist(), "seconds": time.perf_counter() - t0}),
          flush=True)
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


def _ours(rel, draws, proposal):
    """Seconds and estimate of one seeded run of ours."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                     # ours warns when unreliable
        t0 = time.perf_counter()
        est = rk.estimate_count(rel, n=draws, rng=np.random.default_rng(1), proposal=proposal)
        return time.perf_counter() - t0, est


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--draws", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--hogs", action="store_true", help="two busy processes beside")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _hogs import hogs
    cases = list(_instances())
    rels = [rk.Release(None, margins={("dim_0",): np.array(r), ("dim_1",): np.array(c),
                                      (): np.array(sum(r))},
                       mechanism=rk.MarginsOnly(), dims=("dim_0", "dim_1"), kind="count")
            for _, r, c, _ in cases]
    worker = subprocess.Popen([str(_python()), "-c", WORKER], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)

    def peer(r, c, n):
        worker.stdin.write(json.dumps([r, c, n]) + "\n")
        worker.stdin.flush()
        return json.loads(worker.stdout.readline())

    for (_, r, c, _), rel in zip(cases, rels):              # compile both sides first
        peer(r, c, 10)
        for proposal in ("columns", "cells"):
            _ours(rel, 100, proposal)
    best = [{} for _ in cases]
    with hogs(2 if args.hogs else 0):
        for _ in range(args.repeat):
            for k, ((_, r, c, _), rel) in enumerate(zip(cases, rels)):
                p = peer(r, c, args.draws)
                t_ours, ours = _ours(rel, args.draws, "columns")
                t_cols, cols = _ours(rel, args.draws, "cells")
                b = best[k]
                b["peer"] = p["logw"]
                b["ours"], b["cells"] = ours, cols
                for key, t in (("peer s", p["seconds"]), ("ours s", t_ours),
                               ("cells s", t_cols)):
                    b[key] = min(b.get(key, math.inf), t)
    worker.stdin.close()
    worker.wait()
    rows = []
    for (name, r, c, exact), b in zip(cases, best):
        ours, cols = b["ours"], b["cells"]
        lp, sp, ep = _summary(np.array(b["peer"]))
        row = {"instance": name, "exact": "-" if exact is None else f"{exact:.6g}",
               "ours": f"{ours.estimate:.5g} ± {100 * ours.rel_se:.2g}%",
               "ours ESS": f"{ours.ess:,.0f}" + ("" if ours.reliable else " (flagged)"),
               "ours s": f"{b['ours s']:.3f}",
               "cells": f"{cols.estimate:.5g} ± {100 * cols.rel_se:.2g}%",
               "cells ESS": f"{cols.ess:,.0f}", "cells s": f"{b['cells s']:.2f}",
               "peer": f"{math.exp(lp):.5g} ± {100 * sp:.2g}%", "peer ESS": f"{ep:,.0f}",
               "peer s": f"{b['peer s']:.3f}",
               "peer / ours": f"{b['peer s'] / b['ours s']:.2f}"}
        if exact is not None:
            row["ours z"] = _z(ours.estimate, ours.estimate * ours.rel_se, exact)
            row["peer z"] = _z(math.exp(lp), math.exp(lp) * sp, exact)
            row["cells z"] = _z(cols.estimate, cols.estimate * cols.rel_se, exact)
        rows.append(row)
        print(row, flush=True)
    if args.markdown:
        cols = ["instance", "exact", "ours", "ours z", "ours ESS", "ours s", "peer", "peer z",
                "peer ESS", "peer s", "peer / ours", "cells", "cells z", "cells ESS",
                "cells s"]
        print(f"{args.draws:,} draws each, one thread (the peer's parallel=False), least of "
              f"{args.repeat} interleaved rounds, python {sys.version.split()[0]}")
        print("| " + " | ".join(cols) + " |")
        print("|" + "---|" * len(cols))
        for r in rows:
            print("| " + " | ".join(r.get(c, "-") for c in cols) + " |")


if __name__ == "__main__":
    main()
