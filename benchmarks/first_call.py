"""First calls (issue 30, item 2): each README Python example in a fresh process, on an
empty numba cache and on a warm one, CPU seconds (user + system of the process and its
children) and wall seconds; and a fresh process's overhead before its first kernel runs.

    python benchmarks/first_call.py [--blocks 0,3] [--repeat 3]

Each example runs in its own empty folder, as ``tests/uses/test_readme.py`` runs it.  The
empty cache is a new ``NUMBA_CACHE_DIR`` per example (so each pays every compile it needs,
as a new user's first call does); the warm run repeats the example on the cache it filled.
The overhead run times a fresh process from its first line (NumPy and riskengine
imported) to a tiny margins-only posterior, and the same posterior's second call in that
process: the difference is what a fresh process pays before (and around) its first
kernel.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

RUNNER = r"""
import json, resource, sys, time
t0 = time.perf_counter()
code = open(sys.argv[1]).read()
exec(compile(code, "block", "exec"), {})
wall = time.perf_counter() - t0
ru = resource.getrusage(resource.RUSAGE_SELF)
rc = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"wall": wall, "cpu": ru.ru_utime + ru.ru_stime + rc.ru_utime + rc.ru_stime}))
"""

OVERHEAD = r"""
import json, resource, time
t0 = time.perf_counter()
import numpy as np
import riskengine as rk
rel = rk.MarginsOnly().protect(rk.Table(np.array([[3, 1, 2], [2, 4, 1], [0, 2, 5]])))
rk.posterior(rel, prior=rk.priors.Poisson(3.0))
first = time.perf_counter() - t0
t2 = time.perf_counter()
rk.posterior(rel, prior=rk.priors.Poisson(3.0))
second = time.perf_counter() - t2
ru = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"first": first, "second": second, "cpu": ru.ru_utime + ru.ru_stime}))
"""


def blocks() -> list:
    text = (ROOT / "README.md").read_text()
    return re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)


def run(code: str, cache: str, script: str = RUNNER) -> dict:
    with tempfile.TemporaryDirectory() as work:
        path = Path(work) / "block.py"
        path.write_text(code)
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        t0 = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", script, str(path)], cwd=work, env=env,
                             capture_output=True, text=True, check=False)
        if out.returncode:
            raise RuntimeError(out.stderr.strip().splitlines()[-1] if out.stderr else "failed")
        wall = time.perf_counter() - t0
    res = json.loads(out.stdout.strip().splitlines()[-1])
    res["process_wall"] = wall
    return res


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--blocks", default=None, help="comma-separated block numbers")
    ap.add_argument("--repeat", type=int, default=3, help="warm runs (minimum reported)")
    ap.add_argument("--overhead-only", action="store_true",
                    help="only the fresh process's overhead")
    args = ap.parse_args()
    code = blocks()
    todo = range(len(code)) if args.blocks is None else [int(k) for k in args.blocks.split(",")]
    if args.overhead_only:
        todo = []
    print(f"load average {os.getloadavg()[0]:.2f}")
    print("| block | first line | empty cache CPU s | wall s | warm cache CPU s | wall s |")
    print("|---|---|---|---|---|---|")
    for k in todo:
        first = next(line for line in code[k].splitlines()
                     if line.strip() and not line.startswith(("import", "from")))
        try:
            with tempfile.TemporaryDirectory() as cache:
                cold = run(code[k], cache)
                warm = min((run(code[k], cache) for _ in range(args.repeat)),
                           key=lambda r: r["process_wall"])
        except RuntimeError as exc:
            print(f"| {k} | `{first[:50]}` | failed: {exc} | | | |", flush=True)
            continue
        print(f"| {k} | `{first[:50]}` | {cold['cpu']:.1f} | {cold['process_wall']:.1f} | "
              f"{warm['cpu']:.2f} | {warm['process_wall']:.2f} |", flush=True)
    with tempfile.TemporaryDirectory() as cache:
        run("", cache, OVERHEAD)
        res = min((run("", cache, OVERHEAD) for _ in range(args.repeat)),
                  key=lambda r: r["process_wall"])
    print(f"\nfresh process, warm cache: process {res['process_wall']:.2f} s ({res['cpu']:.2f} "
          f"s CPU); from its first line to the first posterior {res['first']:.3f} s, the "
          f"second posterior {res['second']:.4f} s: overhead before and around the first "
          f"kernel {res['first'] - res['second']:.2f} s")
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
