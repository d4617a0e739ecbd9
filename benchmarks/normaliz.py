"""Side by side with an independent lattice-point counter: Normaliz (Debian package).

Run:  python benchmarks/normaliz.py [--timeout 60] [--keep DIR] [--markdown]

The script installs Normaliz with apt-get when the ``normaliz`` command is missing
(as root; riskengine itself never depends on it).  For every instance it writes a
Normaliz input file -- one variable per interior cell, the totals as inhomogeneous
equations (margins only) or as pairs of inhomogeneous inequalities (controlled
rounding: every cell and every total within base - 1 of its published value, cells
nonnegative), and the computation goal ``NumberLatticePoints`` -- runs Normaliz
with a time limit, parses the number of lattice points from its output file and
prints it beside riskengine's exact count and the two wall times.  The counts must
be equal (the script exits non-zero otherwise).  riskengine's time includes the
count only (one forward pass of the table DP), after a warm-up.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import riskengine as rk
from riskengine.data.seeds import S003 as S

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scaling import make_release


def ensure_normaliz() -> str:
    exe = shutil.which("normaliz")
    if exe:
        return exe
    if os.geteuid() != 0:
        sys.exit("normaliz is missing; install it with: apt-get install normaliz")
    print("installing normaliz (apt-get) ...", flush=True)
    subprocess.run(["apt-get", "update", "-qq"], check=True)
    subprocess.run(["apt-get", "install", "-y", "-qq", "normaliz"], check=True)
    exe = shutil.which("normaliz")
    if not exe:
        sys.exit("apt-get did not install normaliz")
    return exe


def _row(coef, const):
    return " ".join(str(int(x)) for x in coef) + f" {int(const)}"


def constraints(rel):
    """The candidate tables of a 2-D margins-only or rounding release as a lattice-point
    problem: ``(equations, inequalities)``, lists of ``(a, b)`` meaning ``a x + b = 0`` and
    ``a x + b >= 0``, over the variables x[i*c + j] (every interior cell).  Margins only:
    cells >= 0, every row and column total (one of them redundant) an equation.  Controlled
    rounding: cells >= 0, every cell and every total within base - 1 of its published value."""
    d0, d1 = rel.dims
    R = np.asarray(rel.margins[(d0,)], dtype=np.int64)
    C = np.asarray(rel.margins[(d1,)], dtype=np.int64)
    N = int(rel.margins[()])
    r, c = len(R), len(C)
    nv = r * c

    def e(cells):
        v = np.zeros(nv, np.int64)
        for i, j in cells:
            v[i * c + j] = 1
        return v

    rows = [e([(i, j) for j in range(c)]) for i in range(r)]
    cols = [e([(i, j) for i in range(r)]) for j in range(c)]
    grand = e([(i, j) for i in range(r) for j in range(c)])
    cells = [e([(i, j)]) for i in range(r) for j in range(c)]
    eqs, ineqs = [], [(v, 0) for v in cells]                     # x >= 0
    if isinstance(rel.mechanism, rk.MarginsOnly):
        eqs += [(v, -int(t)) for v, t in zip(rows, R)]
        eqs += [(v, -int(t)) for v, t in zip(cols, C)]
    elif isinstance(rel.mechanism, rk.ControlledRounding):
        B = rel.mechanism.base
        P = np.asarray(rel.published, dtype=np.int64).ravel()
        pairs = list(zip(cells, P)) + list(zip(rows, R)) + list(zip(cols, C)) + [(grand, N)]
        for v, t in pairs:                                        # |v x - t| <= B - 1
            ineqs.append((v, -int(t - B + 1)))
            ineqs.append((-v, int(t + B - 1)))
    else:
        raise TypeError(f"no lattice-point translation for {rel.mechanism!r}")
    return eqs, ineqs


def normaliz_input(rel) -> str:
    """Normaliz input for the candidate tables of a 2-D margins-only or rounding release
    (:func:`constraints`): an inhomogeneous equation ``a x + b = 0`` is written ``a b``,
    an inhomogeneous inequality ``a x + b >= 0`` likewise."""
    eqs, ineqs = constraints(rel)
    out = [f"amb_space {len(ineqs[0][0])}"]
    if eqs:
        out += [f"inhom_equations {len(eqs)}"] + [_row(a, b) for a, b in eqs]
    out += [f"inhom_inequalities {len(ineqs)}"] + [_row(a, b) for a, b in ineqs]
    out += ["NumberLatticePoints", ""]
    return "\n".join(out)


def run_normaliz(exe, text, workdir, name, timeout):
    path = Path(workdir) / f"{name}.in"
    path.write_text(text)
    env = dict(os.environ, OMP_NUM_THREADS=str(os.cpu_count() or 1))
    t0 = time.perf_counter()
    try:
        subprocess.run([exe, "-c", str(path)], check=True, capture_output=True, timeout=timeout,
                       env=env)
    except subprocess.TimeoutExpired:
        return None, time.perf_counter() - t0
    dt = time.perf_counter() - t0
    out = path.with_suffix(".out").read_text()
    m = re.search(r"^(\d+) lattice points? in polytope", out, re.MULTILINE)
    if not m:
        raise RuntimeError(f"cannot parse Normaliz's output {path.with_suffix('.out')}")
    return int(m.group(1)), dt


def seed_instances():
    """Seed 003's margins-only and base-3 rounding examples (counts S.N_TABLES_MARGINS,
    S.N_TABLES_ROUNDING)."""
    seed_t = rk.Table(S.ORIGINAL_2D, dims=("v", "w"))
    yield "seed 003 margins only (4x4, n=135)", rk.MarginsOnly().protect(seed_t)
    yield "seed 003 rounding base 3 (4x4)", rk.Release(
        S.ROUNDED_2D, mechanism=rk.ControlledRounding(S.ROUNDING_BASE), dims=("v", "w"))


def instances():
    yield from seed_instances()
    for kind, base, mean, n in [("margins only", None, 2, 3), ("margins only", None, 5, 3),
                                ("margins only", None, 20, 3), ("margins only", None, 1, 4),
                                ("margins only", None, 2, 4), ("margins only", None, 5, 4),
                                ("rounding", 3, 20, 3), ("rounding", 5, 20, 3),
                                ("rounding", 3, 5, 4), ("rounding", 3, 20, 4)]:
        label = kind if base is None else f"{kind} base {base}"
        yield f"scaling: {label}, {n}x{n}, mean {mean}", make_release(kind, base, mean, n)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per Normaliz run")
    ap.add_argument("--keep", help="write the Normaliz files here (default: a temp dir)")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args(argv)
    exe = ensure_normaliz()
    ver = subprocess.run([exe, "--version"], check=False, capture_output=True,
                         text=True).stdout.split("\n")[0]
    rk.count_candidates(make_release("margins only", None, 2, 2))           # warm-up
    rk.count_candidates(make_release("rounding", 3, 2, 2))
    print(f"{ver}; {os.cpu_count()} cores; Normaliz time limit {args.timeout:.0f} s")
    head = ("instance", "riskengine count", "normaliz count", "riskengine s", "normaliz s")
    rows, bad = [], False
    with tempfile.TemporaryDirectory() as tmp:
        work = args.keep or tmp
        Path(work).mkdir(parents=True, exist_ok=True)
        for k, (name, rel) in enumerate(instances()):
            t0 = time.perf_counter()
            ours = rk.count_candidates(rel)
            t_ours = time.perf_counter() - t0
            theirs, t_nmz = run_normaliz(exe, normaliz_input(rel), work, f"case{k}",
                                         args.timeout)
            if theirs is not None and theirs != ours:
                bad = True
            rows.append((name, str(ours), "timeout" if theirs is None else str(theirs),
                         f"{t_ours:.3f}", f"{t_nmz:.2f}" + (" (limit)" if theirs is None else "")))
            print("  ", " | ".join(rows[-1]), flush=True)
    if args.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for r in rows:
            print("| " + " | ".join(r) + " |")
    if bad:
        sys.exit("MISMATCH: riskengine and Normaliz counts differ")
    print("all finished counts equal")


if __name__ == "__main__":
    main()
