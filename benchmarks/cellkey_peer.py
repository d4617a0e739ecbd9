"""The cell key method side by side with ONS's ``cell-key-perturbation`` package.

Run:  python benchmarks/cellkey_peer.py [--records 20000] [--seed 1]

ONS's package (MIT, PyPI ``cell-key-perturbation`` 3.1.0) is installed by this script into
its own environment, ``benchmarks/.venv-ckm`` (never a dependency of riskengine), and run
there in a subprocess on the same microdata, record keys and p-tables.  Its conventions:
integer record keys 0..255, a cell's key the sum of its records' keys modulo 256, a
p-table of rows ``(pcv, ckey, pvalue)`` (the published count is ``count + pvalue`` for the
row of the cell's key), counts above 750 reusing rows 501..750 in turn
(``pcv = (count - 1) mod 250 + 501``), and counts below a threshold published as missing.

riskengine's conventions: keys uniform on [0, 1), a cell's key the fractional part of the
sum; a p-table row is a partition of [0, 1) into intervals.  The translation is exact: a
record key ``r`` becomes ``r / 256`` (held exactly on riskengine's 2^-52 key grid, so the
cell key is ``(sum r mod 256) / 256``), and ONS row ``pcv`` becomes riskengine row ``i``
with the interval ``[c / 256, (c + 1) / 256)`` publishing ``i + pvalue(pcv(i), c)``.
Riskengine's rule for counts above the last row (the last row shifted, as tau-Argus and the
R ptable package) differs from ONS's cycling through rows 501..750, so the translated table
gets one row per count up to the largest count in the data.  ONS's threshold is set to 0
(riskengine publishes the perturbed count; suppressing small counts is a separate step).

Two p-tables: ONS's own "10-5 rule" (``generate_ptable_10_5_rule``: counts below 10 to 0,
others to the nearest multiple of 5 by a fixed rule, the same for every key) and a random
one in ONS's format whose published value depends on the key (contiguous blocks of keys
per row, perturbations -2..+2, never below 0).  The script prints the number of cells
compared and the number that differ (expected: 0).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import venv
from pathlib import Path

import numpy as np

import riskengine as rk

ROOT = Path(__file__).resolve().parents[1]
VENV = ROOT / "benchmarks" / ".venv-ckm"
#: the package does not declare its pandas dependency
PEER = ["cell-key-perturbation==3.1.0", "pandas"]
KEYS = 256

WORKER = r"""
import json, sys
import pandas as pd
from cell_key_perturbation.create_perturbed_table import create_perturbed_table
from cell_key_perturbation.utils.generate_test_ptable import generate_ptable_10_5_rule
job = json.loads(sys.stdin.read())
micro = pd.DataFrame(job["records"])
out = {}
tables = {"ons_10_5": generate_ptable_10_5_rule(), "random": pd.DataFrame(job["random"])}
for name, pt in tables.items():
    t = create_perturbed_table(data=micro, ptable=pt, geog=["region"], tab_vars=["age", "sex"],
                               record_key="record_key", use_existing_ons_id=False, threshold=0)
    out[name] = {"ptable": pt[["pcv", "ckey", "pvalue"]].values.tolist(),
                 "cells": t[["region", "age", "sex", "pre_sdc_count", "count"]]
                 .astype(object).where(t.notna(), None).values.tolist()}
print("RESULT:" + json.dumps(out))
"""


def _python() -> Path:
    py = VENV / "bin" / "python"
    done = VENV / ".installed"
    if not done.exists():
        venv.create(VENV, with_pip=True)
        subprocess.run([str(py), "-m", "pip", "install", "--quiet", *PEER], check=True)
        done.write_text(" ".join(PEER))
    return py


def _random_ptable(rng, max_pcv=750) -> list:
    """A p-table in ONS's format whose pvalue depends on the key: per row, up to three
    contiguous blocks of keys with distinct perturbations in -2..2 (published >= 0)."""
    rows = []
    for pcv in range(1, max_pcv + 1):
        vals = [v for v in range(-2, 3) if pcv + v >= 0]
        k = int(rng.integers(1, 4))
        chosen = list(rng.choice(vals, size=min(k, len(vals)), replace=False))
        cuts = sorted(rng.choice(np.arange(1, KEYS), size=len(chosen) - 1, replace=False))
        edges = [0, *cuts, KEYS]
        for b, v in enumerate(chosen):
            rows += [[pcv, c, int(v)] for c in range(edges[b], edges[b + 1])]
    return rows


def _translate(rows, top: int) -> rk.PTable:
    """riskengine's p-table for ONS rows ``[(pcv, ckey, pvalue)]``, one row per count up to
    ``top`` (ONS's pcv rule applied to each count)."""
    pv = {}
    for pcv, c, v in rows:
        pv[(int(pcv), int(c))] = int(v)
    j, ub = [np.array([0])], [np.array([1.0])]
    for i in range(1, top + 1):
        pcv = i if i <= 750 else (i - 1) % 250 + 501
        seq = [i + pv.get((pcv, c), 0) for c in range(KEYS)]
        vals, ends = [], []
        for c, y in enumerate(seq):
            if vals and vals[-1] == y:
                ends[-1] = (c + 1) / KEYS
            else:
                vals.append(y)
                ends.append((c + 1) / KEYS)
        if len(set(vals)) != len(vals):
            raise ValueError(f"row {i}: a published value's keys are not contiguous; "
                             "riskengine's p-table rows hold one interval per value")
        j.append(np.array(vals))
        ub.append(np.array(ends))
    return rk.PTable(j, ub, source="translated from ONS's (pcv, ckey, pvalue) format")


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    n = args.records
    # skewed categories: cells from 0 (absent combinations) to well above 750
    region = rng.choice([f"r{k}" for k in range(8)], size=n, p=np.r_[0.5, np.full(7, 0.5 / 7)])
    age = rng.choice([f"a{k}" for k in range(6)], size=n, p=[0.4, 0.2, 0.15, 0.15, 0.05, 0.05])
    sex = rng.choice(["f", "m"], size=n)
    rkey = rng.integers(0, KEYS, size=n)
    records = {"region": region.tolist(), "age": age.tolist(), "sex": sex.tolist(),
               "record_key": rkey.tolist()}
    job = {"records": records, "random": {"pcv": [], "ckey": [], "pvalue": []}}
    for pcv, c, v in _random_ptable(rng):
        job["random"]["pcv"].append(pcv)
        job["random"]["ckey"].append(c)
        job["random"]["pvalue"].append(v)
    res = subprocess.run([str(_python()), "-c", WORKER], input=json.dumps(job),
                         capture_output=True, text=True, check=True)
    # the package prints notes of its own: the result is the line marked RESULT:
    peer = json.loads(next(line for line in res.stdout.splitlines()
                           if line.startswith("RESULT:"))[len("RESULT:"):])
    ours_records = {**records, "record_key": (rkey / KEYS).tolist()}
    for name, out in peer.items():
        top = max(int(r[3]) for r in out["cells"])
        ck = rk.CellKey(ptable=_translate(out["ptable"], top))
        table, keys = rk.CellKey.tabulate(ours_records, ("region", "age", "sex"))
        published = ck.protect(table, keys=keys).published
        differ, compared = [], 0
        for reg, a, s, pre, cnt in out["cells"]:
            idx = (table.coords["region"].index(reg), table.coords["age"].index(a),
                   table.coords["sex"].index(s))
            compared += 1
            assert int(table.values[idx]) == int(pre), (reg, a, s, pre)
            if int(published[idx]) != int(cnt):
                differ.append(((reg, a, s), int(pre), int(cnt), int(published[idx])))
        print(f"{name}: {compared} cells (counts {min(int(r[3]) for r in out['cells'])}.."
              f"{top}), {len(differ)} differ" + (f": {differ[:5]}" if differ else ""))


if __name__ == "__main__":
    main()
