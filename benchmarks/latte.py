"""Side by side with LattE integrale (Barvinok's algorithm): exact counts of candidate tables.

Run:  python benchmarks/latte.py [--timeout 120] [--all] [--keep DIR] [--markdown]

LattE comes from PyPI inside the wheel ``passagemath-latte-4ti2`` (its ``count`` program,
``sage_wheels/bin/count``; the emptiness check calls ``scdd_gmp`` from its dependency
``passagemath-cddlib``).  The script installs it into its own virtual environment,
``benchmarks/.venv-latte`` (never a dependency of riskengine), from a local copy of the
wheel in /tmp/latte/ when there is one, else from PyPI.

For every instance it writes LattE's H-representation of the candidate tables -- one
variable per interior cell; a row ``b a_1 ... a_d`` means ``b + a x >= 0``; the margins
as equations (``linearity`` line), controlled rounding as pairs of inequalities (every
cell and every total within base - 1 of its published value), cells nonnegative: the
same system as ``benchmarks/normaliz.py`` (:func:`normaliz.constraints`) -- runs
``count`` in a temporary directory with a time limit, reads the number of lattice points
(file ``numOfLatticePoints``) and prints it beside riskengine's exact count: instance,
size, LattE count, LattE seconds (wall, including process start), riskengine count,
riskengine seconds (in this process, after a warm-up), riskengine's route, equal?  The
script exits non-zero when both finish and disagree.  Instances: a 2x2 hand check, De
Loera & Sturmfels' 4x4 margins-only example (1,225,914,276,768,514 tables), seed 003's
margins-only and base-3 rounding examples, small 3x3 cases and the 4x4 rounding to base 5
with cell mean 20; ``--all`` adds the instances of ``benchmarks/scaling.py`` up to 6x6
(each (release, mean, shape) series stops at its first LattE time-out).  Last, riskengine's
full per-cell posterior of De Loera's table (uniform prior) and its time.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path

import riskengine as rk

sys.path.insert(0, str(Path(__file__).resolve().parent))
from normaliz import constraints, seed_instances
from scaling import KINDS_NEW, SHAPES, _print, case_label, count_route, make_release

ROOT = Path(__file__).resolve().parents[1]
VENV = ROOT / "benchmarks" / ".venv-latte"
WHEELS = Path("/tmp/latte")
PACKAGE = "passagemath-latte-4ti2"

#: De Loera & Sturmfels' 4x4 margins (the count seed 003 thanks them for)
DE_LOERA = ([220, 215, 93, 64], [108, 286, 71, 127])
DE_LOERA_COUNT = 1_225_914_276_768_514


def _count_exe() -> Path | None:
    found = sorted(VENV.glob("lib/python*/site-packages/sage_wheels/bin/count"))
    if found and (found[0].parent / "scdd_gmp").exists():
        return found[0]
    return None


def ensure_latte() -> Path:
    """The ``count`` executable of LattE in ``benchmarks/.venv-latte`` (installed on first
    use: the local wheel in /tmp/latte/ if present, else PyPI)."""
    exe = _count_exe()
    if exe:
        return exe
    py = VENV / "bin" / "python"
    if not py.exists():
        print(f"creating {VENV} ...", flush=True)
        venv.create(VENV, with_pip=True)
    local = sorted(WHEELS.glob("passagemath_latte_4ti2-*.whl"))
    done = False
    if local:
        print(f"installing {local[-1].name} (dependencies from PyPI) ...", flush=True)
        done = subprocess.run([str(py), "-m", "pip", "install", "--quiet", str(local[-1])],
                              check=False).returncode == 0
    if not done:
        print(f"installing {PACKAGE} from PyPI ...", flush=True)
        subprocess.run([str(py), "-m", "pip", "install", "--quiet", PACKAGE], check=True)
    exe = _count_exe()
    if exe is None:
        sys.exit(f"{PACKAGE} installed no sage_wheels/bin/count (and scdd_gmp) under {VENV}")
    return exe


def latte_input(rel) -> str:
    """LattE's H-representation of the candidate tables of a 2-D margins-only or rounding
    release: ``m d+1``, then one row ``b a_1 ... a_d`` per constraint ``b + a x >= 0``;
    equations are listed in the ``linearity`` line (1-based row numbers)."""
    eqs, ineqs = constraints(rel)
    rows = [(a, b) for a, b in ineqs] + [(a, b) for a, b in eqs]
    d = len(rows[0][0])
    out = [f"{len(rows)} {d + 1}"]
    out += [f"{int(b)} " + " ".join(str(int(x)) for x in a) for a, b in rows]
    if eqs:
        first = len(ineqs) + 1
        out.append(f"linearity {len(eqs)} " + " ".join(str(first + k) for k in range(len(eqs))))
    return "\n".join(out) + "\n"


def run_latte(exe, text, workdir, name, timeout, extra=()):
    """``(count, wall seconds)``; count None when LattE did not finish within ``timeout``.
    LattE writes its files into its working directory: each run gets its own."""
    work = Path(workdir) / name
    work.mkdir(parents=True, exist_ok=True)
    path = work / f"{name}.latte"
    path.write_text(text)
    env = dict(os.environ)
    lib = exe.parent.parent / "lib"
    if lib.is_dir():
        env["LD_LIBRARY_PATH"] = os.pathsep.join(
            x for x in (str(lib), env.get("LD_LIBRARY_PATH", "")) if x)
    t0 = time.perf_counter()
    p = subprocess.Popen([str(exe), *extra, path.name], cwd=work, env=env, text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, 9)                  # count and the cdd programs it started
        p.communicate()
        return None, time.perf_counter() - t0
    dt = time.perf_counter() - t0
    res = work / "numOfLatticePoints"
    if p.returncode == 0 and res.exists():
        return int(res.read_text().split()[0]), dt
    m = re.search(r"number of lattice points is:\s*\**\s*(\d+)", out + err)
    if p.returncode == 0 and m:
        return int(m.group(1)), dt
    raise RuntimeError(f"LattE failed on {path} (exit {p.returncode}):\n{(out + err)[-1500:]}")


def de_loera():
    R, C = DE_LOERA
    return rk.Release(None, margins={("v",): R, ("w",): C, (): sum(R)},
                      mechanism=rk.MarginsOnly(), dims=("v", "w"))


def instances(everything=False):
    """``(name, size, release, known count or None, series)``; ``series`` groups the
    scaling instances that grow with n (a time-out skips the rest of the series)."""
    hand = rk.Table([[1, 2], [3, 4]], dims=("v", "w"))
    yield "hand check: margins of [[1, 2], [3, 4]]", "2x2", rk.MarginsOnly().protect(hand), 4, None
    yield ("De Loera & Sturmfels, margins only", "4x4, n=592", de_loera(), DE_LOERA_COUNT,
           None)
    from riskengine.data.seeds import S003 as S
    known = [S.N_TABLES_MARGINS, S.N_TABLES_ROUNDING]
    for (name, rel), n in zip(seed_instances(), known):
        yield name, "4x4", rel, n, None
    fixed = [("margins only", None, 5, 3, 3), ("rounding", 3, 20, 3, 3),
             ("rounding", 5, 20, 4, 4)]
    if everything:
        fixed = [(k, b, mean, n, m) for n, m in SHAPES if n <= 6 and m <= 6
                 for k, b in KINDS_NEW for mean in (2, 5, 20, 100)]
    for kind, base, mean, n, m in fixed:
        label = case_label(kind, base)
        yield (f"scaling: {label}, mean {mean}", f"{n}x{m}", make_release(kind, base, mean, n, m),
               None, (kind, base, mean, m - n))


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per LattE run")
    ap.add_argument("--all", action="store_true",
                    help="also the scaling.py instances up to 6x6")
    ap.add_argument("--keep", help="keep LattE's files here (default: a temp dir)")
    ap.add_argument("--latte-args", default="",
                    help="extra options for LattE's count, e.g. '--irrational-primal'")
    ap.add_argument("--no-posterior", action="store_true",
                    help="skip the De Loera posterior line")
    ap.add_argument("--repeat", type=int, default=3,
                    help="best of this many runs, for both tools (LattE: runs under 10 s)")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args(argv)
    exe = ensure_latte()
    t0 = time.perf_counter()
    for kind, base in (("margins only", None), ("rounding", 3)):     # numba cache / compile
        for n in (2, 3, 4):
            rel = make_release(kind, base, 2, n)
            rk.count_candidates(rel)
            rk.posterior(rel)
    warm = time.perf_counter() - t0
    import numba
    print(f"LattE integrale from {PACKAGE} ({exe}); {os.cpu_count()} cores, numba threads "
          f"{numba.get_num_threads()}; riskengine warm-up {warm:.1f} s; LattE time limit "
          f"{args.timeout:.0f} s")
    head = ("instance", "size", "LattE count", "LattE s", "riskengine count", "riskengine s",
            "route", "equal?")
    rows, bad, dead = [], [], set()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.keep or tmp)
        for k, (name, size, rel, known, series) in enumerate(instances(args.all)):
            t_ours = math.inf
            for _ in range(args.repeat):             # best of --repeat, each on a fresh
                fresh = rk.Release.from_dict(rel.to_dict())   # release (no plan reused)
                t1 = time.perf_counter()
                ours = rk.count_candidates(fresh)
                t_ours = min(t_ours, time.perf_counter() - t1)
            route = count_route(rel)
            if series in dead:
                theirs, t_l, shown = None, None, "skipped (smaller case timed out)"
            else:
                theirs, t_l = run_latte(exe, latte_input(rel), work, f"case{k}", args.timeout,
                                        args.latte_args.split())
                for _ in range(args.repeat - 1 if theirs is not None and t_l < 10 else 0):
                    t_l = min(t_l, run_latte(exe, latte_input(rel), work, f"case{k}",
                                             args.timeout, args.latte_args.split())[1])
                shown = f"{t_l:.2f}" + (" (limit)" if theirs is None else "")
                if theirs is None and series is not None:
                    dead.add(series)
            agree = [x == ours for x in (theirs, known) if x is not None]
            eq = "-" if not agree else ("yes" if all(agree) else "NO")
            if eq == "NO":
                bad.append(name)
            rows.append((name, size, "timeout" if theirs is None and t_l is not None
                         else ("-" if theirs is None else str(theirs)), shown, str(ours),
                         f"{t_ours:.3f}", route, eq))
            print("  ", " | ".join(rows[-1]), flush=True)
    _print(head, rows, args.markdown)
    if not args.no_posterior:
        rel = de_loera()
        t1 = time.perf_counter()
        post = rk.posterior(rel)
        dt = time.perf_counter() - t1
        ok = post.n_candidates == DE_LOERA_COUNT
        print(f"\nDe Loera & Sturmfels 4x4, full per-cell posterior (uniform over tables) "
              f"with the count: {dt:.2f} s, route {post.attrs['route']!r}, "
              f"{post.n_candidates} candidates ({'= published' if ok else 'DIFFERS from'} "
              f"{DE_LOERA_COUNT}); LattE would need one count per cell value")
        if not ok:
            bad.append("De Loera posterior count")
    if bad:
        sys.exit(f"MISMATCH on: {', '.join(bad)}")
    print("every finished count agrees")


if __name__ == "__main__":
    main()
