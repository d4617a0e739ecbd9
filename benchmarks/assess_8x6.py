"""Issue 27: ``riskengine assess`` of 8 x 6 releases under ``route="auto"`` (the default
time budget), wall clock per command, with the route taken and the verdict; and the time
of ``import riskengine`` in a fresh process.

Two tables: the bundled ``regions_ages.csv`` (cell mean 15) and a census-style 8 x 6 of
counts in the hundreds with a sparse 85+ column (the issue's kind of table).  Every
mechanism a board would try on a count table: margins only, controlled rounding (base 3,
unbiased and optimal), random rounding (base 3), binomial perturbation (S = 2), cyclic
perturbation (staircase cycles).

    python benchmarks/assess_8x6.py [--hogs 2]

``--hogs N`` runs N busy-looping processes beside the measurements (a shared machine);
the load average is printed.  Each command runs in its own process with a warm numba
cache (``riskengine warmup`` first).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CENSUS = """region\\age,0-15,16-24,25-44,45-64,65-84,85+
North East,147,147,201,120,75,1
North West,336,201,363,309,246,3
Yorkshire,201,120,327,183,138,0
East Midlands,102,111,219,165,201,2
West Midlands,192,120,228,273,93,0
East,165,120,264,174,129,1
London,408,318,570,300,102,0
South West,75,138,237,120,120,4
"""

MECHANISMS = {
    "margins": ["--mechanism", "margins"],
    "rounding 3": ["--mechanism", "rounding", "--base", "3"],
    "optimal rounding 3": ["--mechanism", "rounding", "--base", "3", "--method", "optimal"],
    "random rounding 3": ["--mechanism", "random_rounding", "--param", "base=3"],
    "binomial S=2": ["--mechanism", "binomial", "--param", "S=2"],
    "cyclic staircase": ["--mechanism", "cyclic", "--design", "staircase"],
}


def _hog():
    while True:
        pass


def _run(args, cwd) -> tuple:
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "riskengine.cli", *args], check=False, cwd=cwd,
                       capture_output=True, text=True)
    return time.perf_counter() - t0, r


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hogs", type=int, default=0)
    a = ap.parse_args()
    hogs = [mp.Process(target=_hog, daemon=True) for _ in range(a.hogs)]
    for h in hogs:
        h.start()
    try:
        time.sleep(2 if hogs else 0)
        print(f"load average at start: {os.getloadavg()}; hogs: {a.hogs}")
        t = [time.perf_counter()]
        for _ in range(5):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", "import riskengine"], check=True)
            t.append(time.perf_counter() - t0)
        print(f"python -c 'import riskengine' (fresh process, median of 5): "
              f"{sorted(t[1:])[2]:.3f} s")
        from riskengine.cli.output import bundled
        with tempfile.TemporaryDirectory() as d:
            Path(d, "census.csv").write_text(CENSUS)
            tables = {"regions_ages": str(bundled("regions_ages.csv")),
                      "census": str(Path(d, "census.csv"))}
            print(f"{'table':13} {'mechanism':20} {'seconds':>8}  route / verdict")
            for tname, path in tables.items():
                for mname, margs in MECHANISMS.items():
                    rel = Path(d, f"{tname}-{mname.replace(' ', '_')}.json")
                    _, r = _run(["protect", path, *margs, "--seed", "1", "--out", str(rel)],
                                d)
                    if r.returncode:
                        print(f"{tname:13} {mname:20} protect failed: "
                              f"{r.stderr.strip()[:120]}")
                        continue
                    sec, r = _run(["assess", str(rel), "--truth", path, "--no-report",
                                   "--out", str(Path(d, "o"))], d)
                    route = re.search(r"route: (\S+)", r.stdout)
                    verdict = re.search(r"VERDICT: (\w+)", r.stdout)
                    print(f"{tname:13} {mname:20} {sec:8.1f}  "
                          f"{route.group(1) if route else '?'} / "
                          f"{verdict.group(1) if verdict else r.stderr.strip()[-100:]}",
                          flush=True)
        print(f"load average at end: {os.getloadavg()}")
    finally:
        for h in hogs:
            h.terminate()


if __name__ == "__main__":
    main()
