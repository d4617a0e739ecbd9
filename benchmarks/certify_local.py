"""Reconstruction of windowed releases (issue 32): the integer bounds' local stage (LPs
over one block, or a block and a partner, the rest held at a table) against the code
before it.

Run:  python benchmarks/certify_local.py --old PATH [--hogs] [--only NAME ...]
                                         [--timeout SECONDS]

``PATH`` is a checkout of the commit before (``git clone`` and ``git checkout``); each
case runs in a fresh process of each checkout in turn (``PYTHONPATH`` pointing at it),
and prints its wall seconds, the persons reconstructed with certainty and a digest of
every cell's certainty flag and bounds (they must agree: the local stage only finds
tables sooner).  ``--hogs`` starts two busy-looping processes beside the runs (2 cores).

Cases: the study's protections (``studies/reconstruction/run.py``, the ``sf1``
publication of one tract of 3 blocks, 41 persons: random rounding base 3, the cell key
method D=1 and D=2, discrete Gaussian noise sigma 1 at coverage 0.99), with its
``bounds="lp"``; one tract of 10 blocks (269 persons) under the cell key method D=2,
with ``bounds="none"`` (certainty only) and with ``"lp"``; one tract of 12 blocks
published exactly (``sf1`` and ``basic``), where the local stage should cost nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
STUDY = os.path.join(os.path.dirname(HERE), "studies", "reconstruction")

CHILD = r'''
import hashlib, json, sys, time, warnings
import numpy as np
import riskengine as rk
warnings.simplefilter("ignore")
sys.path.insert(0, {study!r})
from run import _set, SEED
from riskengine.census_blocks import BlockPopulation
name = {name!r}
blocks = int(name.split()[0])
pop = BlockPopulation(tracts=1, blocks=(blocks, blocks),
                      persons=(5, 60) if blocks > 3 else (5, 20))
df = pop.generate(np.random.default_rng(SEED))
ts = _set(pop, df, "basic" if "basic" in name else "sf1")
kw = {{"bounds": "lp"}}
if "exact" in name:
    rel = ts
elif "rounding" in name:
    rel = rk.RandomRounding(3).protect(ts, np.random.default_rng([SEED, 3]))
elif "noise" in name:
    rel = rk.NoisyCounts("discrete_gaussian", 1.0).protect(
        ts, np.random.default_rng([SEED, 40]))
    kw["coverage"] = 0.99
else:
    D = 1 if "D=1" in name else 2
    rel = rk.CellKey(ptable=rk.PTable.design(D=D, V=0.5 * D)).protect(
        ts, np.random.default_rng([SEED, 10 + D]))
if name.endswith("certainty only"):
    kw["bounds"] = "none"
t0 = time.perf_counter()
ds = rk.reconstruct(rel, unit="block", level=2, truth=ts, **kw)
dt = time.perf_counter() - t0
h = hashlib.sha256()
for v in ("certain", "lower", "upper"):
    h.update(np.ascontiguousarray(ds[v].values).tobytes())
print(json.dumps({{"s": dt, "certain": int(ds.attrs["persons_certain"]),
                  "digest": h.hexdigest()[:12]}}))
'''

CASES = ["3 blocks, random rounding base 3", "3 blocks, cell key D=1",
         "3 blocks, cell key D=2", "3 blocks, noise sigma 1",
         "10 blocks, cell key D=2, certainty only", "10 blocks, cell key D=2",
         "12 blocks, sf1, exact", "12 blocks, basic, exact"]


def run(root, name, timeout):
    env = dict(os.environ, PYTHONPATH=root)
    code = CHILD.format(study=STUDY, name=name)
    try:
        r = subprocess.run([sys.executable, "-c", code], env=env, cwd="/tmp",
                           capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return {"s": float("inf"), "certain": "-", "digest": f"> {timeout:g} s"}
    if r.returncode:
        return {"s": float("nan"), "certain": "-",
                "digest": r.stderr.strip().splitlines()[-1][:160]}
    return json.loads(r.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", required=True)
    ap.add_argument("--hogs", action="store_true")
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--timeout", type=float, default=1800.0)
    a = ap.parse_args()
    new = os.path.dirname(HERE)
    sys.path.insert(0, HERE)
    from _hogs import hogs
    with hogs(2 if a.hogs else 0):
        print("| case | before s | now s | ratio | persons certain (before / now) | "
              "same flags and bounds |")
        print("|---|---|---|---|---|---|")
        for name in CASES:
            if a.only and not any(o in name for o in a.only):
                continue
            old = run(a.old, name, a.timeout)
            now = run(new, name, a.timeout)
            same = "yes" if old["digest"] == now["digest"] else \
                f"no ({old['digest']} / {now['digest']})"
            print(f"| {name} | {old['s']:.1f} | {now['s']:.1f} | {old['s'] / now['s']:.2f} | "
                  f"{old['certain']} / {now['certain']} | {same} |", flush=True)

if __name__ == "__main__":
    main()
