"""Scaling of the exact routes for 2-D count tables (issues 3 and 15).

Run:  python benchmarks/scaling.py [--ns 4 5 6] [--m-plus 0 2] [--means 2 5 20 100]
          [--kinds margins base3 base5 base10] [--max-seconds 60] [--memory 8GB]
          [--normaliz] [--latte] [--markdown]
      python benchmarks/scaling.py --legacy [--ns 4 5 6] [--max-seconds 60] [--markdown]

Instances: Poisson(mean) n x m tables (m = n + each of ``--m-plus``; default n = 4..10,
m = n and n + 2), released as margins only or by controlled rounding to base 3, 5 or 10
(``method="optimal"``); :func:`make_release` builds them reproducibly (one seed per case).

Default table (issue 15): for every case the exact count and the full posterior (every
cell and total, with the count), each in a fresh subprocess
(``python benchmarks/scaling.py --one KIND MEAN N M TASK``) so that one case's memory
does not hide another's: the subprocess loads the Numba kernels on tiny releases of the
same mechanism first, then times the task and reports its peak resident memory
(``resource.getrusage(RUSAGE_SELF).ru_maxrss``, the interpreter and the kernels
included: the baseline after the warm-up is printed in the header).  The time limit
(``--max-seconds``) counts from the end of the warm-up; the subprocess is killed when it
passes.  A task the routes refuse within the memory budget (``--memory``, default the
library's: half of the memory available) is reported with the memory it needs, without
a subprocess; after a time-out the same series (release, mean, m - n) is skipped for
larger n.  Columns: candidates; count and posterior seconds; peak RSS; the route each
took; the table DP's stored states (largest stage / sum over stages) with the release's
own rows and transposed; "old limit": what the code before issue 15 would have answered
(a fixed limit of 2e8 stored states -- count: two stages, posterior: every stage -- in
the release's own orientation, no half-split route; state counts of today's DP).
``--normaliz`` and ``--latte`` add Normaliz's and LattE's time on the same instances
(``benchmarks/normaliz.py``, ``benchmarks/latte.py``; same time limit; each series stops
at its first time-out); every finished count must agree (exit status 1 otherwise).

``--legacy``: the issue-3 table (n x n, margins only means 2/5/20, rounding base 3/5 mean
20, in this process, skipping what the 2e8-state limit refused or the rate of the last
case predicts over the time limit).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import queue
import re
import resource
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

import riskengine as rk
from riskengine.inference import table_dp as _tabledp

HERE = Path(__file__).resolve()

#: the issue-3 table (``--legacy``)
KINDS = [("margins only", None, 2), ("margins only", None, 5), ("margins only", None, 20),
         ("rounding", 3, 20), ("rounding", 5, 20)]
#: the issue-15 table: (kind, base) by their command-line names
KIND_NAMES = {"margins": ("margins only", None), "base3": ("rounding", 3),
              "base5": ("rounding", 5), "base10": ("rounding", 10)}
KINDS_NEW = list(KIND_NAMES.values())
MEANS = (2, 5, 20, 100)
NS = tuple(range(4, 11))
M_PLUS = (0, 2)
SHAPES = [(n, n + k) for n in NS for k in M_PLUS]
#: stored states the DP allowed before issue 15 (no transposition, no half-split route)
OLD_LIMIT = 2e8


def make_release(kind, base, mean, n, m=None, seed=0):
    """The benchmark instance: a Poisson(mean) n x m table (m = n by default) and its
    release (margins only, or controlled rounding to ``base`` by the optimal method).
    The n x n instances are the issue-3 ones (same seeds)."""
    m = n if m is None else m
    s = 1000 * n + 10 * mean + (base or 0) + seed + (0 if m == n else 100_000 * m)
    rng = np.random.default_rng(s)
    t = rk.Table(rng.poisson(mean, size=(n, m)), dims=("v", "w"))
    if kind == "margins only":
        return rk.MarginsOnly().protect(t)
    return rk.ControlledRounding(base, method="optimal").protect(t)


def case_label(kind, base):
    return kind if base is None else f"{kind} base {base}"


def windows(rel):
    """The DP's windows of the release (its first route is the table DP)."""
    return _tabledp.release_windows(rel)


def dp_plans(rel, prior=None):
    """The table DP's plan in both orientations, the release's own first:
    ``[(rows dim, DP windows or None, (largest stage, total) stored states), ...]``."""
    route = next(r for r in rel.mechanism.routes if isinstance(r, _tabledp.TableDP))
    from riskengine.inference.resolve import plan
    plans = route.prepared(plan(rel, prior))
    return [(ew.dims[0], win, st) for ew, win, _, st in plans]


def dp_memory(win, what):
    """Bytes the DP asks for ``what`` ("count" / "posterior") with these windows."""
    return 0.0 if win is None else float(_tabledp.memory(win, what)[0])


def old_limit(plans) -> str:
    """What the code before issue 15 answered: count when its two stages fit 2e8 stored
    states, posterior when every stage does, in the release's own orientation."""
    big, total = plans[0][2]
    ok = [name for name, need in (("count", 2 * big), ("posterior", total))
          if need <= OLD_LIMIT]
    return " + ".join(ok) if ok else "neither"


def select(rel, what, memory=None):
    """``(route name, None)`` or ``(None, refusal message)`` for ``what`` ("count" or
    "posterior+count"), as ``rk.count_candidates`` / ``rk.posterior`` resolve it."""
    from riskengine.inference.resolve import route_for
    try:
        r, reason = route_for(rel, rk.priors.Uniform(), "auto", memory, what)
    except ValueError as e:
        return None, str(e)
    if not r.exact:             # the exact frontier: a Monte Carlo route is not an answer here
        return None, f"no exact route fits ({reason}); Monte Carlo route {r.name!r} would answer"
    return r.name, None


def count_route(rel, memory=None) -> str:
    """The route ``rk.count_candidates`` takes for ``rel`` (or "refused")."""
    return select(rel, "count", memory)[0] or "refused"


def needs(msg: str) -> str:
    """The memory a refusal names for its cheapest route and the budget, from its message."""
    got = re.findall(r"needs ([0-9.]+ [kMGT]?B)", msg or "")
    bud = re.search(r"budget of ([0-9.]+ [kMGT]?B)", msg or "")
    if not got:
        return "refused"

    def b(s):
        v, u = s.split()
        return float(v) * {"B": 1, "kB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12}[u]
    low = min(got, key=b)
    return f"needs {low}" + (f" > {bud.group(1)}" if bud else "")


# --- one task in a fresh process -------------------------------------------------------
def peak_rss() -> int:
    """Peak resident memory of this process in bytes (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def warm_up(kind, base):
    """Load (or compile) the kernels the task will use: count and posterior of tiny
    releases of the same mechanism (2 rows: the DP; 3-4 rows: the half-split route)."""
    for n in (2, 3, 4):
        rel = make_release(kind, base, 2, n)
        rk.count_candidates(rel)
        rk.posterior(rel)


def child(rel, kind, base, task, memory=None):
    """Run in the subprocess: warm up, print ``READY {json}``, run ``task`` ("count" or
    "posterior", the latter with the count) and print ``RESULT {json}``."""
    from riskengine import _budget
    t0 = time.perf_counter()
    warm_up(kind, base)
    print("READY " + json.dumps({"warm_s": time.perf_counter() - t0, "base_rss": peak_rss(),
                                 "budget": _budget.budget(memory)}), flush=True)
    out = {"task": task}
    t1 = time.perf_counter()
    try:
        if task == "count":
            route = count_route(rel, memory)
            t1 = time.perf_counter()
            n = rk.count_candidates(rel, memory=memory)
            out.update(count=str(n), route=route)
        else:
            route, why = select(rel, "posterior+count", memory)
            if why is not None:
                raise ValueError(why)
            t1 = time.perf_counter()
            post = rk.posterior(rel, route=route, memory=memory)
            out.update(count=str(post.n_candidates), route=route)
        out.update(status="ok", seconds=time.perf_counter() - t1)
    except ValueError as e:
        out.update(status="refused", seconds=time.perf_counter() - t1, message=str(e))
    except (MemoryError, FloatingPointError) as e:
        out.update(status="error", seconds=time.perf_counter() - t1,
                   message=f"{type(e).__name__}: {e}")
    out["peak_rss"] = peak_rss()
    print("RESULT " + json.dumps(out), flush=True)


def run_isolated(argv, limit, startup=300.0) -> dict:
    """Run ``python argv...`` (a :func:`child`) and return its RESULT, or a status
    "timeout" (killed ``limit`` seconds after READY), "crash" (no result: killed by a
    signal, out of memory) or "startup timeout"; ``ready`` holds the READY record."""
    p = subprocess.Popen([sys.executable, *map(str, argv)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, start_new_session=True)
    lines: queue.Queue = queue.Queue()
    err: list = []

    def pump(stream, sink):
        for line in stream:
            sink(line)
        if sink is lines.put:
            lines.put(None)
    threads = [threading.Thread(target=pump, args=(p.stdout, lines.put), daemon=True),
               threading.Thread(target=pump, args=(p.stderr, err.append), daemon=True)]
    for t in threads:
        t.start()
    ready, result = None, None
    deadline = time.monotonic() + startup
    status = None
    while result is None:
        try:
            line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            status = "timeout" if ready is not None else "startup timeout"
            break
        if line is None:
            break
        if line.startswith("READY "):
            ready = json.loads(line[6:])
            deadline = time.monotonic() + limit
        elif line.startswith("RESULT "):
            result = json.loads(line[7:])
    if status is not None:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    p.wait()
    for t in threads:
        t.join(timeout=5)
    if result is None:
        result = {"status": status or "crash",
                  "message": f"exit {p.returncode}: " + "".join(err)[-800:].strip()}
        if status == "timeout":
            result["seconds"] = limit
    result["ready"] = ready
    return result


# --- the issue-15 table ----------------------------------------------------------------
def _fmt_n(x):
    x = int(x)
    return str(x) if x < 10 ** 12 else f"{float(x):.3e}"


def _fmt_bytes(b):
    return "-" if b is None else (f"{b / 1e9:.2f} GB" if b >= 1e9 else f"{b / 1e6:.0f} MB")


def _cell(res, limit):
    """Seconds, or what stopped the task."""
    st = res["status"]
    if st == "ok":
        return f"{res['seconds']:.3f}"
    if st == "timeout":
        return f"timeout (> {limit:.0f} s)"
    if st == "refused":
        return needs(res.get("message"))
    if st == "skipped":
        return "skipped"
    return st


def scaling_table(args) -> int:
    """The issue-15 table; returns the number of count mismatches."""
    import numba

    from riskengine import _budget
    kinds = [KIND_NAMES[k] for k in args.kinds]
    nmz = lat = None
    if args.normaliz:
        import normaliz
        nmz = (normaliz, normaliz.ensure_normaliz())
    if args.latte:
        import latte
        lat = (latte, latte.ensure_latte())
    budget = _budget.budget(args.memory)
    tool_limit = args.tool_seconds or args.max_seconds
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"numba {numba.__version__} ({numba.config.NUMBA_NUM_THREADS} threads), python "
          f"{platform.python_version()}; memory budget {_budget.fmt_bytes(budget)}"
          f"{'' if args.memory else ' (default: half of the available memory)'}; time limit "
          f"per task {args.max_seconds:.0f} s (after the warm-up)", flush=True)
    head = ["release", "size", "mean", "candidates", "count s", "posterior s",
            "peak RSS (count / posterior)", "route (count / posterior)",
            "DP states, own rows (largest / total)", "DP states, transposed", "old limit"]
    if nmz:
        head.append("Normaliz s")
    if lat:
        head.append("LattE s")
    rows, dead, bad, base_rss = [], set(), [], None
    import tempfile
    tmp = tempfile.TemporaryDirectory()
    for n in args.ns:
        for k in args.m_plus:
            m = n + k
            for kind, base in kinds:
                for mean in args.means:
                    rel = make_release(kind, base, mean, n, m)
                    plans = dp_plans(rel)
                    series = (kind, base, mean, k)
                    res, counts = {}, {}
                    for task, what in (("count", "count"), ("posterior", "posterior+count")):
                        _, why = select(rel, what, args.memory)
                        if why is not None:
                            res[task] = {"status": "refused", "message": why}
                        elif (series, task) in dead:
                            res[task] = {"status": "skipped"}
                        else:
                            argv = [HERE, "--one", kind, base or 0, mean, n, m, task]
                            if args.memory:
                                argv += ["--memory", args.memory]
                            res[task] = run_isolated(argv, args.max_seconds)
                            if res[task].get("ready") and base_rss is None:
                                base_rss = res[task]["ready"]["base_rss"]
                                print(f"baseline RSS after imports and warm-up: "
                                      f"{_fmt_bytes(base_rss)}", flush=True)
                        if res[task]["status"] in ("timeout", "crash"):
                            dead.add((series, task))
                        if res[task]["status"] == "ok":
                            counts[task] = int(res[task]["count"])
                    extra = []
                    for tool, key in ((nmz, "normaliz"), (lat, "latte")):
                        if tool is None:
                            continue
                        if (series, key) in dead:
                            extra.append("skipped")
                            continue
                        mod, exe = tool
                        name = f"{key}_{n}x{m}_{kind[0]}{base or 0}_{mean}"
                        try:
                            if key == "normaliz":
                                got, dt = mod.run_normaliz(exe, mod.normaliz_input(rel),
                                                           tmp.name, name, tool_limit)
                            else:
                                got, dt = mod.run_latte(exe, mod.latte_input(rel), tmp.name,
                                                        name, tool_limit)
                        except RuntimeError as e:       # the tool failed on this instance
                            why = str(e).splitlines()[-1].strip()[:60]
                            extra.append(f"failed ({why})" if why else "failed")
                            continue
                        if got is None:
                            dead.add((series, key))
                            extra.append(f"timeout (> {tool_limit:.0f} s)")
                        else:
                            counts[key] = got
                            extra.append(f"{dt:.2f}")
                    label = case_label(kind, base)
                    if len(set(counts.values())) > 1:
                        bad.append(f"{label} {n}x{m} mean {mean}: {counts}")
                    cand = _fmt_n(next(iter(counts.values()))) if counts else "-"
                    rss = " / ".join(_fmt_bytes(res[t].get("peak_rss")) for t in res)
                    routes = " / ".join(res[t].get("route", "-") for t in res)
                    st = [f"{p[2][0]:.3g} / {p[2][1]:.3g}" if p[1] is not None else "empty"
                          for p in plans]
                    rows.append([label, f"{n}x{m}", str(mean), cand,
                                 _cell(res["count"], args.max_seconds),
                                 _cell(res["posterior"], args.max_seconds), rss, routes,
                                 f"{plans[0][0]}: {st[0]}", f"{plans[1][0]}: {st[1]}",
                                 old_limit(plans), *extra])
                    print("  ", " | ".join(rows[-1]), flush=True)
                    for t, r in res.items():
                        if r["status"] in ("error", "crash", "startup timeout"):
                            print(f"     {t}: {r['status']}: {r.get('message', '')}",
                                  flush=True)
    tmp.cleanup()
    print()
    _print(head, rows, args.markdown)
    print(f"\npeak RSS includes the interpreter and the loaded kernels (baseline "
          f"{_fmt_bytes(base_rss)}); 'needs X > B': every route refused within the budget B, "
          f"X is the least a route asks for; 'skipped': a smaller n of the same series timed "
          f"out; old limit: {OLD_LIMIT:.0e} stored states in the release's own orientation")
    if bad:
        print("MISMATCH between finished counts:\n  " + "\n  ".join(bad))
    return len(bad)


def _print(head, rows, markdown):
    if markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for r in rows:
            print("| " + " | ".join(r) + " |")
    else:
        w = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
        print("  ".join(h.ljust(x) for h, x in zip(head, w)))
        for r in rows:
            print("  ".join(v.ljust(x) for v, x in zip(r, w)))


# --- the issue-3 table (--legacy) ------------------------------------------------------
def legacy(args):
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
    lim = OLD_LIMIT            # stored states: the memory this table was first measured at
    for n in args.ns:
        for kind, base, mean in KINDS:
            label = case_label(kind, base)
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
    _print(head, rows, args.markdown)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ns", type=int, nargs="*", default=list(NS))
    ap.add_argument("--m-plus", type=int, nargs="*", default=list(M_PLUS),
                    help="columns m = n + each of these (default 0 2)")
    ap.add_argument("--means", type=int, nargs="*", default=list(MEANS))
    ap.add_argument("--kinds", nargs="*", default=list(KIND_NAMES), choices=list(KIND_NAMES))
    ap.add_argument("--max-seconds", type=float, default=60.0,
                    help="time limit per task (count, posterior) after the warm-up")
    ap.add_argument("--memory", help="memory budget for riskengine, e.g. 8GB (default: the "
                                     "library's, half of the available memory)")
    ap.add_argument("--normaliz", action="store_true", help="add Normaliz's time")
    ap.add_argument("--latte", action="store_true", help="add LattE's time")
    ap.add_argument("--tool-seconds", type=float,
                    help="time limit for Normaliz / LattE (default: --max-seconds)")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--legacy", action="store_true", help="the issue-3 table, in-process")
    ap.add_argument("--one", nargs=6, metavar=("KIND", "BASE", "MEAN", "N", "M", "TASK"),
                    help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        kind, base, mean, n, m, task = args.one
        base = int(base) or None
        child(make_release(kind, base, int(mean), int(n), int(m)), kind, base, task,
              args.memory)
        return
    if args.legacy:
        legacy(args)
        return
    if scaling_table(args):
        sys.exit(1)


if __name__ == "__main__":
    main()
