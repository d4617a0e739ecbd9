"""Targeted record swapping side by side with sdcMicro's ``recordSwap`` C++ core, on the
same population and parameters, interleaved seed by seed (issue 31's acceptance).

    python benchmarks/trs_peer.py [--seeds 50] [--regions 1] [--swaprate 0.05] [--k 3]
                                  [--hogs 2] [--sdcmicro DIR]

The peer: sdcMicro's ``src/recordSwap/recordSwap.cpp`` and ``recordSwap.h`` (a git
checkout or snapshot of github.com/sdcTools/sdcMicro at ``--sdcmicro``; default the
workplace's mirror), compiled here with g++ beside our own command-line driver
``benchmarks/trs_peer_driver.cpp`` -- the C++ core alone, as sdcMicro's own
``compile.sh`` builds it, no R needed.  Nothing of it enters riskengine.

The two draw differently (the peer: a Mersenne twister, its number of swaps rounded up or
down with probability 1/2 and its extra swaps given to a uniform subset of areas; ours:
unbiased roundings), so they are compared in distribution over the seeds, not draw for
draw: the realised swap rate, the households moved at each level, the share of the
households that must be swapped (count below k at some level) that are moved there, each
household's frequency of being moved (their correlation over households), the invariants
(households per area), and the seconds per run (the peer's own clock inside its call; ours
around ``TargetedSwapping.protect``).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

import riskengine as rk

GEO = ["region", "district", "area"]
RISK = ["sex", "age"]
MIRROR = "/work/.mirror/sdcTools+sdcMicro/repo"


def _hog():
    while True:
        pass


def build_peer(src: str, work: Path) -> Path:
    """Compile the peer's recordSwap core with our driver; returns the executable."""
    for name in ("recordSwap.cpp", "recordSwap.h"):
        rel = f"src/recordSwap/{name}"
        p = Path(src) / rel
        if p.exists():
            (work / name).write_bytes(p.read_bytes())
        else:                                            # a bare git repository
            text = subprocess.run(["git", "-C", src, "show", f"HEAD:{rel}"], check=True,
                                  capture_output=True).stdout
            (work / name).write_bytes(text)
    exe = work / "recordswap_peer"
    here = Path(__file__).with_name("trs_peer_driver.cpp")
    subprocess.run(["g++", "-O2", "-std=c++11", "-DNDEBUG", "-I", str(work), str(here),
                    str(work / "recordSwap.cpp"), "-o", str(exe)], check=True)
    return exe


def encode(people: pd.DataFrame) -> tuple:
    """Integer columns hid, region, district, area, sex, age, hhsize (ordered by hid)."""
    df = people.sort_values(["hid", "pid"], kind="stable").reset_index(drop=True)
    cols = ["hid", *GEO, *RISK, "hhsize"]
    out = pd.DataFrame({c: pd.factorize(df[c], sort=True)[0] + 1 for c in cols})
    return df, out


def run_peer(exe, enc: pd.DataFrame, seeds, swaprate, k) -> list:
    cols = list(enc.columns)
    idx = {c: i for i, c in enumerate(cols)}
    head = [len(enc), len(cols), idx["hid"], len(GEO), *[idx[g] for g in GEO],
            1, 1, idx["hhsize"], swaprate, k, len(RISK), *[idx[r] for r in RISK], 0,
            len(seeds), *seeds]
    body = "\n".join(" ".join(map(str, r)) for r in enc.to_numpy().tolist())
    res = subprocess.run([str(exe)], input=" ".join(map(str, head)) + "\n" + body + "\n",
                         capture_output=True, text=True, check=True)
    lines = res.stdout.splitlines()
    out, i = [], 0
    while i < len(lines):
        sec = lines[i].split()[3]
        rows = np.array([list(map(int, ln.split())) for ln in lines[i + 1:i + 1 + len(enc)]])
        out.append((float(sec), pd.DataFrame(rows, columns=cols)))
        i += 1 + len(enc)
    return out


def moved_levels(orig: np.ndarray, new: np.ndarray) -> np.ndarray:
    """Per record: the highest level whose code changed (0 region .. 2 area), 3: none."""
    changed = orig != new
    return np.where(changed.any(axis=1), np.argmax(changed, axis=1), 3)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=50)
    ap.add_argument("--swaprate", type=float, default=0.05)
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--hogs", type=int, default=0)
    ap.add_argument("--regions", type=int, default=1)
    ap.add_argument("--sdcmicro", default=MIRROR)
    a = ap.parse_args()
    pop = rk.census.CensusPopulation(regions=a.regions)
    people, enc = encode(pop.generate(np.random.default_rng(2026)))
    trs = rk.TargetedSwapping(GEO, RISK, [["hhsize"]], swaprate=a.swaprate,
                              k_anonymity=a.k)
    must = trs.must_swap(people)
    hh_first = people.groupby("hid").head(1).index.to_numpy()
    must_level = must.set_index("hid").loc[people.hid.iloc[hh_first], "level"].to_numpy()
    with tempfile.TemporaryDirectory() as tmp:
        exe = build_peer(a.sdcmicro, Path(tmp))
        hogs = [mp.Process(target=_hog, daemon=True) for _ in range(a.hogs)]
        for h in hogs:
            h.start()
        time.sleep(5 if hogs else 0)
        print(f"load at start: {os.getloadavg()}; hogs: {a.hogs}; {a.regions} region(s), "
              f"{len(people):,} persons, "
              f"{len(hh_first):,} households; swaprate {a.swaprate}, k {a.k}")
        stats = {"ours": [], "peer": []}
        freq = {"ours": np.zeros(len(hh_first)), "peer": np.zeros(len(hh_first))}
        orig_geo = enc[GEO].to_numpy()
        for s in range(a.seeds):
            t0 = time.perf_counter()
            out = trs.protect(people, np.random.default_rng(s))
            t_ours = time.perf_counter() - t0
            new_ours = np.column_stack([pd.Index(sorted(people[g].unique())).get_indexer(
                out[g]) + 1 for g in GEO])
            t_peer, peer_df = run_peer(exe, enc, [s + 1], a.swaprate, a.k)[0]
            assert (peer_df[["hid", *RISK, "hhsize"]].to_numpy()
                    == enc[["hid", *RISK, "hhsize"]].to_numpy()).all(), "peer reordered"
            for name, new, sec in (("ours", new_ours, t_ours),
                                   ("peer", peer_df[GEO].to_numpy(), t_peer)):
                lev = moved_levels(orig_geo, new)[hh_first]
                area_before = np.bincount(orig_geo[hh_first, 2])
                area_after = np.bincount(new[hh_first, 2], minlength=area_before.size)
                row = {"seconds": sec, "swap_rate": float(np.mean(lev < 3)),
                       "households_per_area_kept": bool((area_before == area_after).all())}
                for j, g in enumerate(GEO):
                    row[f"moved_{g}"] = int((lev == j).sum())
                    sel = must_level == g
                    row[f"must_{g}_moved_there"] = (float(np.mean(lev[sel] <= j))
                                                    if sel.any() else np.nan)
                stats[name].append(row)
                freq[name] += lev < 3
        for h in hogs:
            h.terminate()
        print(f"load at end: {os.getloadavg()}")
    table = {k: pd.DataFrame(v) for k, v in stats.items()}
    print(f"\n{a.seeds} seeds each, interleaved; mean (sd) over the seeds:\n")
    print("| measure | riskengine | sdcMicro recordSwap (C++) |")
    print("|---|---|---|")
    for c in table["ours"].columns:
        if c == "seconds":
            continue
        o, p = table["ours"][c].astype(float), table["peer"][c].astype(float)
        print(f"| {c} | {o.mean():.4g} ({o.std():.2g}) | {p.mean():.4g} ({p.std():.2g}) |")
    o, p = table["ours"].seconds, table["peer"].seconds
    print(f"| seconds per run, min / median | {o.min():.3f} / {o.median():.3f} | "
          f"{p.min():.3f} / {p.median():.3f} |")
    fo, fp = freq["ours"] / a.seeds, freq["peer"] / a.seeds
    pooled = (fo + fp) / 2
    se = np.sqrt(pooled * (1 - pooled) * 2 / a.seeds)
    z = np.where(se > 0, (fo - fp) / np.where(se > 0, se, 1), 0.0)
    print(f"\nper household, frequency of being moved: correlation "
          f"{np.corrcoef(fo, fp)[0, 1]:.3f}, mean |difference| {np.mean(np.abs(fo - fp)):.3f}, "
          f"share with |z| > 3 {np.mean(np.abs(z) > 3):.4f} (two-sample z of the "
          f"frequencies, pooled; under one law about 0.003); must-swap households "
          f"{int(pd.notna(must_level).sum())}")


if __name__ == "__main__":
    main()
