"""Side by side with tau-Argus (pytauargus, its HiGHS build) on the same tables and rules.

Run from the repository root:  python benchmarks/tauargus.py [--quick] [--case 30x20x5]

The script installs ``pytauargus`` (and pandas) into its own virtual environment,
``benchmarks/.venv-tauargus`` (never a dependency of riskengine), and runs tau-Argus
there in a subprocess on microdata it generates (one row per respondent contribution).
tau-Argus applies the rules (``P(15,1)|FREQ(3,10)``: p %-rule with p = 15 and the
threshold rule "fewer than 3 contributors", 10 % protection), computes the protection
levels and protects by OPT (optimal, Fischetti-Salazar) and MOD (modular, HiTaS).
riskengine then protects the same table with the same sensitive cells and the same
(lower, upper) protection levels, taken from tau-Argus's output (totals included, with
``suppress_totals=True`` when a total is sensitive), by its heuristic and its optimal
method (row generation; at the time limit the best pattern found, with its proven gap).
Every pattern, tau-Argus's included (which may also suppress totals), is audited by
riskengine's LP audit (:func:`riskengine.magnitude.intervals.intervals`): under-protected
sensitive cells, exact disclosures, cells and value suppressed, seconds.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import riskengine as rk
from riskengine.magnitude.intervals import intervals, protection_tol
from riskengine.tabular import tabular_system

VENV = ROOT / "benchmarks" / ".venv-tauargus"
RULES = "P(15,1)|FREQ(3,10)"

WORKER = r'''
import json, sys, time
import pandas as pd
from pytauargus import protect
micro, dims, method, workdir, out = sys.argv[1:6]
df = pd.read_csv(micro, dtype={d: str for d in dims.split(",")})
t0 = time.perf_counter()
res = protect(df, dims.split(","), response="V", safety_rules=sys.argv[6], suppress=method,
              workdir=workdir)
sec = time.perf_counter() - t0
d = res.tables[0].dataframe()
d.to_csv(out, index=False)
print(json.dumps({"seconds": sec}))
'''


def ensure_venv() -> Path:
    py = VENV / "bin" / "python"
    if not py.exists():
        print(f"creating {VENV} and installing pytauargus ...", flush=True)
        venv.create(VENV, with_pip=True)
        subprocess.run([str(py), "-m", "pip", "install", "--quiet", "pytauargus", "pandas"],
                       check=True)
    return py


def microdata(rng, shape, respondents=5):
    """Contributions: 1 + Poisson(respondents) respondents per cell (2 % of cells empty),
    lognormal values rounded to cents."""
    rows = []
    for idx in np.ndindex(*shape):
        if rng.random() < 0.02:
            continue
        for v in rng.lognormal(3.0, 1.5, 1 + rng.poisson(respondents)):
            rows.append((*idx, round(float(v), 2)))
    return np.array(rows)


def run_tauargus(py, micro, dims, method, tmp):
    import csv
    mpath = tmp / "micro.csv"
    with open(mpath, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow([*dims, "V"])
        for r in micro:
            w.writerow([f"{d}{int(i):03d}" for d, i in zip(dims, r[:-1])] + [f"{r[-1]:.2f}"])
    out = tmp / f"result_{method[:3]}.csv"
    script = tmp / "worker.py"
    script.write_text(WORKER)
    t0 = time.perf_counter()
    p = subprocess.run([str(py), str(script), str(mpath), ",".join(dims), method,
                        str(tmp / f"work_{method[:3]}"), str(out), RULES],
                       capture_output=True, text=True, check=False, cwd=tmp)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise RuntimeError(f"tau-Argus {method} failed:\n{p.stderr[-2000:]}")
    sec = json.loads(p.stdout.strip().splitlines()[-1])["seconds"]
    return out, sec, wall


def read_result(path, dims, shape):
    """tau-Argus's cells -> (system, cell vector, status vector, lower, upper protection)."""
    import csv
    system = tabular_system(dims, shape)
    blocks = {b.keep: b for b in system.blocks}
    n = system.n_var
    x = np.zeros(n)
    status = np.full(n, "Z", dtype=object)        # Z: empty cell (no row in the output)
    plo = np.zeros(n)
    phi = np.zeros(n)
    with open(path) as fh:
        for r in csv.DictReader(fh):
            codes = [r[d] for d in dims]
            keep = tuple(d for d, c in zip(dims, codes) if c != "Total")
            b = blocks[keep]
            idx = tuple(int(c[len(d):]) for d, c in zip(dims, codes) if c != "Total")
            j = b.offset + (int(np.ravel_multi_index(idx, b.shape)) if idx else 0)
            x[j] = float(r["V"])
            status[j] = r["status"]
            plo[j] = float(r["lower"])
            phi[j] = float(r["upper"])
    return system, x, status, plo, phi


def audit_pattern(system, x, supp, sens, plo, phi):
    """riskengine's audit of a pattern (mask over every cell, totals included)."""
    v = np.where(supp, np.nan, x)
    lo, hi = intervals(system, v)
    tol = protection_tol(x)
    s = np.flatnonzero(sens)
    under = int(np.sum((x[s] - lo[s] < plo[s] - tol) | (hi[s] - x[s] < phi[s] - tol)))
    exact = int(np.sum(supp & (hi - lo <= tol)))
    return under, exact


def compare(py, rng, shape, dims, tmp, optimal=True, respondents=5, time_limit=120.0):
    micro = microdata(rng, shape, respondents)
    rows = []
    results = {}
    for method in ("OPT(1)", "MOD(1)"):
        try:
            path, sec, _wall = run_tauargus(py, micro, dims, method, tmp)
        except RuntimeError as exc:
            rows.append((method, "failed", str(exc).splitlines()[-1][:60], "", "", "", ""))
            continue
        results[method] = (read_result(path, dims, shape), sec)
    if not results:
        return rows
    (system, x, status, plo, phi), _ = next(iter(results.values()))
    n_int = system.n_interior
    sens = status == "U"
    interior = np.zeros(system.n_var, bool)
    interior[:n_int] = True
    note = f"{int(sens[:n_int].sum())} sensitive cells, {int(sens[n_int:].sum())} totals"
    for method, ((_, _, st, _, _), sec) in results.items():
        supp = np.isin(st, ["U", "M"])
        under, exact = audit_pattern(system, x, supp, sens, plo, phi)
        rows.append((f"tau-Argus {method[:3]}", int((supp & interior).sum()),
                     int((supp & ~interior).sum()), float(x[supp & interior].sum()), sec,
                     under, exact))
    xi = x[:n_int].reshape(shape)
    table = rk.Table(xi, dims=dims)
    totals = bool(sens[n_int:].any())
    for method in (("heuristic", "optimal") if optimal else ("heuristic",)):
        t0 = time.perf_counter()
        try:
            # the same sensitive cells (totals included) and protection levels
            rel = rk.suppress(table, sens, (plo, phi), method=method, suppress_totals=totals,
                              time_limit=time_limit)
        except ValueError as exc:
            rows.append((f"riskengine {method}", "failed", str(exc)[:60], "", "", "", ""))
            continue
        sec = time.perf_counter() - t0
        supp = np.isnan(rel.cell_vector(system))
        under, exact = audit_pattern(system, x, supp, sens, plo, phi)
        name = f"riskengine {method}"
        if method == "optimal" and rel.info["status"] != "optimal":
            name += f" (gap {100 * rel.info['gap']:.2f} % at {time_limit:g} s)"
        rows.append((name, int((supp & interior).sum()), int((supp & ~interior).sum()),
                     float(x[supp & interior].sum()), sec, under, exact))
    return rows, note


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="two small tables")
    ap.add_argument("--case", help="only this table, e.g. 30x20x5")
    args = ap.parse_args(argv)
    py = ensure_venv()
    # (shape, dims, riskengine's optimal too?, respondents per cell (mean), time limit):
    # more respondents, fewer sensitive cells (~5 % of the 40x40 cells at 10)
    cases = [((10, 10), ("r", "c"), True, 5, 120.0),
             ((6, 5, 3), ("a", "b", "c"), True, 5, 120.0),
             ((40, 40), ("r", "c"), True, 10, 120.0),
             ((100, 100), ("r", "c"), True, 10, 120.0),
             ((30, 20, 5), ("a", "b", "c"), True, 10, 300.0)]
    if args.quick:
        cases = [((8, 8), ("r", "c"), True, 5, 60.0), ((6, 5, 3), ("a", "b", "c"), True, 5, 60.0)]
    header = ("method", "cells supp.", "totals supp.", "value supp.", "seconds",
              "under-prot.", "exact")
    # one-time costs of a fresh process (Numba kernels loaded from the cache, HiGHS
    # started), excluded from the timings below and reported here
    t0 = time.perf_counter()
    for shape in ((3, 3), (2, 2, 2)):
        xw = np.arange(1.0, 1.0 + np.prod(shape)).reshape(shape)
        sw = np.zeros(shape, bool)
        sw.flat[0] = True
        rk.suppress(rk.Table(xw, dims=("a", "b", "c")[: len(shape)]), sw, 0.5,
                    method="optimal")
    print(f"riskengine warm-up (kernel cache load, first HiGHS models): "
          f"{time.perf_counter() - t0:.2f} s", flush=True)
    for shape, dims, optimal, respondents, limit in cases:
        if args.case and "x".join(map(str, shape)) != args.case:
            continue
        rng = np.random.default_rng([5, *shape])          # each case on its own
        with tempfile.TemporaryDirectory() as d:
            out = compare(py, rng, shape, dims, Path(d), optimal=optimal,
                          respondents=respondents, time_limit=limit)
        rows, note = out if isinstance(out, tuple) else (out, "")
        print(f"\n### {'x'.join(map(str, shape))} table, {respondents} respondents per cell "
              f"(mean), rules {RULES}: {note}\n", flush=True)
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for r in rows:
            cells = [f"{v:.2f}" if isinstance(v, float) else str(v) for v in r]
            print("| " + " | ".join(cells) + " |")
    print("\nunder-prot. and exact: riskengine's LP audit of each pattern, with tau-Argus's "
          "protection levels.\ntimes: tau-Argus inside its protect() call (engine incl. "
          "table building); riskengine: rk.suppress.  Shared 2-core machine.")


if __name__ == "__main__":
    main()
