"""tau-Argus files at realistic size: microdata (.asc) -> table, the table file (.tab) read
whole, safety rules on every cell, complementary suppression of every level at once, the
audit, and the pattern written and read back.

A synthetic census-like business table: Region (an .hrc tree: R regions x D districts),
NACE (digit levels 2,1: S sections x 4 classes), Size (5 bands); every code of every dim
crossed (tau-Argus's table: every level).  Records: lognormal turnover, a few dominant.

    python benchmarks/argus_files.py [--records 50000] [--regions 4] [--districts 6]
                                     [--sections 8] [--hogs 0]

tau-Argus itself (a Windows program driven by pytauargus) cannot run on this machine; the
timings are riskengine's alone.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd


def hog():
    x = 0
    while True:
        x += 1


def make(tmp: Path, n: int, regions: int, districts: int, sections: int, seed: int = 1):
    rng = np.random.default_rng(seed)
    hrc = "".join(f"R{r}\n" + "".join(f"@R{r}{d}\n" for d in range(districts))
                  for r in range(regions))
    (tmp / "region.hrc").write_text(hrc)
    leaves = [f"R{r}{d}" for r in range(regions) for d in range(districts)]
    nace = [f"{s:02d}{c}" for s in range(10, 10 + sections) for c in range(1, 5)]
    rda = ('<SEPARATOR> ";"\nRegion 3\n  <RECODEABLE>\n  <TOTCODE> "Total"\n'
           '  <HIERARCHICAL>\n  <HIERCODELIST> "region.hrc"\n  <HIERLEADSTRING> "@"\n'
           'Nace 3\n  <RECODEABLE>\n  <TOTCODE> "Total"\n  <HIERARCHICAL>\n'
           '  <HIERLEVELS> 2 1\nSize 1\n  <RECODEABLE>\n  <TOTCODE> "Total"\n'
           'Turnover 12\n  <NUMERIC>\n  <DECIMALS> 0\n')
    (tmp / "m.rda").write_text(rda)
    df = pd.DataFrame({"Region": rng.choice(leaves, n), "Nace": rng.choice(nace, n),
                       "Size": rng.choice(list("12345"), n, p=[.4, .3, .15, .1, .05]),
                       "Turnover": np.round(rng.lognormal(6, 1.5, n))})
    big = rng.choice(n, max(n // 200, 1), replace=False)
    df.loc[big, "Turnover"] *= 50
    from riskengine._formats.asc import write_asc
    from riskengine._formats.rda import read_rda
    write_asc(df, read_rda(tmp / "m.rda"), tmp / "m.asc")
    return df


def timed(label, f, rows):
    t = time.perf_counter()
    out = f()
    rows.append((label, time.perf_counter() - t))
    print(f"{label:<58} {rows[-1][1]:8.2f} s", flush=True)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=50_000)
    ap.add_argument("--regions", type=int, default=4)
    ap.add_argument("--districts", type=int, default=6)
    ap.add_argument("--sections", type=int, default=8)
    ap.add_argument("--hogs", type=int, default=0)
    a = ap.parse_args()
    hogs = [mp.Process(target=hog, daemon=True) for _ in range(a.hogs)]
    for h in hogs:
        h.start()
    import riskengine as rk
    from riskengine._argus_micro import argus_microdata
    from riskengine._formats.rda import read_rda
    from riskengine._formats.tab import write_tab
    rules = [("NK", (2.0, 75.0)), ("FREQ", (3.0, 10.0))]
    rows = []
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        timed("synthetic microdata written (.asc)", lambda: make(
            tmp, a.records, a.regions, a.districts, a.sections), rows)
        at, sv = timed("microdata -> table + rules on contributions (argus_microdata)",
                       lambda: argus_microdata(tmp / "m.rda", tmp / "m.asc",
                                               ["Region", "Nace", "Size"], "Turnover",
                                               rules=rules, top=2), rows)
        n_cells = int(at.system.published.sum())
        # the same table as a .tab file (every cell, totals included, top 2)
        tab_rda = ('<SEPARATOR> ";"\nRegion\n  <RECODEABLE>\n  <TOTCODE> "Total"\n'
                   '  <HIERARCHICAL>\n  <HIERCODELIST> "region.hrc"\n'
                   '  <HIERLEADSTRING> "@"\nNace\n  <RECODEABLE>\n  <TOTCODE> "Total"\n'
                   '  <HIERARCHICAL>\n  <HIERLEVELS> 2 1\nSize\n  <RECODEABLE>\n'
                   '  <TOTCODE> "Total"\nTurnover\n  <NUMERIC>\n  <DECIMALS> 0\n'
                   'Freq\n  <FREQUENCY>\nTop1\n  <MAXSCORE>\nTop2\n  <MAXSCORE>\n')
        (tmp / "t.rda").write_text(tab_rda)
        c = at.cells
        frame = pd.DataFrame({"Region": c.Region, "Nace": c.Nace, "Size": c.Size,
                              "Turnover": c.value, "Freq": c.freq, "Top1": c.top1,
                              "Top2": c.top2})
        timed(f"write_tab ({n_cells} lines)", lambda: write_tab(
            frame, read_rda(tmp / "t.rda"), tmp / "t.tab"), rows)
        at2 = timed("read_argus (rda + tab + hrc, additivity checked)",
                    lambda: rk.read_argus(tmp / "t.rda", tmp / "t.tab"), rows)
        from riskengine._batch import argus_sensitivity
        sens = timed("safety rules on every cell (NK(2,75)|FREQ(3,10), table input)",
                     lambda: argus_sensitivity(at2, rules), rows)
        print(f"cells {n_cells}, primary {int(sens[0].sum())} (microdata route: "
              f"{int(np.asarray(sv[0]).sum())})")
        rel, st = timed("protect_argus (heuristic, every level at once)",
                        lambda: rk.protect_argus(at2, rules), rows)
        audit = timed("audit_argus (LP interval of every suppressed cell)",
                      lambda: rk.audit_argus(at2, rel, rules), rows)
        print(f"suppressed {int(rel.hidden.sum())}, exact {audit.attrs['n_exact']}, "
              f"under-protected {audit.attrs['n_under_protected']}")
        timed("write_argus_output (code-value, status numbers)",
              lambda: rk.write_argus_output(at2, rel, st, tmp / "out.csv", kind=3,
                                            options={"add_status": True}), rows)
        timed("read_pattern (the written pattern read back)",
              lambda: rk.read_pattern(at2, tmp / "out.csv"), rows)
    print(f"load: {os.getloadavg()[0]:.2f} (1-min average, {a.hogs} hogs of our own)")
    for h in hogs:
        h.terminate()


if __name__ == "__main__":
    main()
