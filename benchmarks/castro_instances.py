"""Castro's public tabular-protection instances, suppressed and audited (issue 28, item 6).

Run:  python benchmarks/castro_instances.py [--instances TARGUS,TABLE7] [--protection upper]
                                           [--no-optimal]

The instances
-------------
Jordi Castro's controlled-tabular-adjustment (CTA) test tables, in the CUTEst SIF
collection as the quadratic programs of the two-norm CTA ("L2_<name>.mps"; J. Castro,
Minimum-distance controlled perturbation methods for large-scale tabular data
protection, EJOR 171 (2006) 39-52; http://www-eio.upc.es/~jcastro/data.html):

==========  ==============  ======  =========  =========  ==========
file        Castro's name    cells  relations  sensitive  zero cells
==========  ==============  ======  =========  =========  ==========
TARGUS      targus             162         63         13          47
TABLE7      table7             624        230         17         140
TABLE8      table8            1271         72          3           2
HIE1372D    hier13x7x7d        637        525         50         118
DALE        dale             16514        405       4923        1583
==========  ==============  ======  =========  =========  ==========

(Castro's page gathers tau-Argus and CSPLIB tables; the files do not say which is which.
TABLE7's header classification says 17 constraints, its ROWS section has 230.)

The SIF files are taken from ``github.com/optimizers/mastsif-mirror`` (a git mirror of the
CUTEst ``sif`` repository) at commit ``335ae057175c8fe9ac17c9967e9d9046c2eaf50f``; TARGUS
is byte-identical to ``sif/TARGUS.SIF`` of ``GrattonToint/S2MPJ`` (commit
``35c9dcab486c799e8c4bacb1c25d1903305581a7``), the only one of the five S2MPJ carries.
They are cached gzipped in ``benchmarks/data/castro/`` and checked against their git blob
ids; a missing file is downloaded from the mirror (the only network access).

What a file encodes, and how it is read here
--------------------------------------------
Each file is ``min 1/2 z' Q z  s.t.  A z = 0,  l <= z <= u`` over the *deviations*
``z = x - a`` of the cells from their true values ``a`` (no RHS section: ``b = 0``):

* ``A`` (``COLUMNS``): one row per table relation, coefficients +-1, exactly one -1 per
  row -- the aggregate (``-total + sum(parts) = 0``).  Rows are negated here to the
  ``total - sum(parts) = 0`` form of riskengine's tabular systems.
* ``Q`` (``QMATRIX``, diagonal): ``Q_ii = k / a_i`` (Castro's weights ``1 / a_i``), with
  ``k = 2`` in every file but TARGUS (``k = 1``), and ``Q_ii = 2`` for zero cells.  The
  values are recovered as ``a_i = k / Q_ii``; ``k`` is found per file from the bounds (next
  item) and every cell is checked against it.
* bounds (``BOUNDS``): a non-sensitive cell has ``l_i = -a_i`` (the table is
  nonnegative; 6 significant digits) and ``u_i`` = a common cap minus ``a_i`` (``2 a_i``
  for TARGUS, 5e7 for TABLE7, 2e5 for TABLE8, 1e6 for HIE1372D and DALE).  A zero cell has
  ``l_i = 0`` (the default) and usually ``u_i = 0``.  A *sensitive* cell has ``l_i > 0``:
  the CTA instance has already chosen its protection direction (always upwards in these
  five files) and ``l_i`` is its upper protection level ``upl_i``.  Lower protection
  levels are not in the files.

``Q`` is truncated to 7 significant digits (``2 / 2048`` is written ``9.765624e-04``), so
``k / Q_ii`` is exact to ``1e-6 a_i``.  Where these values rounded to integers satisfy
``A a = 0`` exactly (HIE1372D, TABLE8, DALE) they are the table.  TARGUS (cells of 2.5)
and TABLE7 do not add up at the files' precision, from ``Q`` or from ``l`` (TARGUS:
``max |A (k/Q)| = 21``, ``max |A (-l)| = 47.5`` on cells of up to 8.4e6): there the table
is the smallest change of ``k / Q``, weighted by each cell's precision, with ``A a = 0``;
the largest relative change is printed (7e-6 for TARGUS, 4e-6 for TABLE7).

Suppression: the sensitive cells are protected by ``upl_i`` above and, by default, by
``min(upl_i, a_i)`` below (tau-Argus's symmetric protection; the files encode only the
upward choice, and no nonnegative table lies more than ``a_i`` below); ``--protection
upper`` protects upwards only, as the files do.  The CTA caps ``u`` are not a-priori
bounds of the intruder here (the audit only knows the cells are nonnegative).  Every cell
is a candidate complementary suppression except zero cells (riskengine's default).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import resource
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

DATA = Path(__file__).resolve().parent / "data" / "castro"
MIRROR = "optimizers/mastsif-mirror"
COMMIT = "335ae057175c8fe9ac17c9967e9d9046c2eaf50f"
URL = f"https://raw.githubusercontent.com/{MIRROR}/{COMMIT}/{{name}}.SIF"

#: file name -> (Castro's name, git blob id of the SIF text at ``COMMIT``)
INSTANCES = {
    "TARGUS": ("targus", "4bbf046151f222cee881ba5561f3622728c56b13"),
    "TABLE7": ("table7", "ab355cf563983d2f86352db9df10ae710955547c"),
    "TABLE8": ("table8", "3bb0f924342723cdef5161565c3decc64550d139"),
    "HIE1372D": ("hier13x7x7d", "7c4233b0a4dfc4342e115f10018a61e4ee9308c2"),
    "DALE": ("dale", "db995517690ac31ce7d776d783e934866bd8f264"),
}

#: the heuristic must take less than this for the optimal method to be tried
OPTIMAL_IF_UNDER = 20.0
OPTIMAL_TIME_LIMIT = 60.0


# -- reading -------------------------------------------------------------------------------

def _blob_id(text: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(text) + text).hexdigest()


def sif_text(name: str) -> str:
    """The SIF file of instance ``name``, from the cache or (once) from the mirror;
    checked against its git blob id."""
    if name not in INSTANCES:
        raise ValueError(f"unknown instance {name!r}; known: {sorted(INSTANCES)}")
    blob = INSTANCES[name][1]
    path = DATA / f"{name}.SIF.gz"
    if path.exists():
        raw = gzip.decompress(path.read_bytes())
    else:
        url = URL.format(name=name)
        print(f"{path} is missing: downloading {url}", file=sys.stderr, flush=True)
        try:
            with urllib.request.urlopen(url, timeout=60) as r:
                raw = r.read()
        except OSError as e:
            raise RuntimeError(f"cannot download {url} ({e}); fetch {name}.SIF from "
                               f"github.com/{MIRROR} at commit {COMMIT} and gzip it to "
                               f"{path}") from None
        if _blob_id(raw) == blob:
            DATA.mkdir(parents=True, exist_ok=True)
            path.write_bytes(gzip.compress(raw, 9, mtime=0))
    if _blob_id(raw) != blob:
        raise ValueError(f"{name}.SIF has git blob id {_blob_id(raw)}, expected {blob} "
                         f"({MIRROR}@{COMMIT})")
    return raw.decode("ascii")


@dataclass(frozen=True)
class SifQP:
    """A diagonal QP ``min 1/2 z'Qz, A z = b (E rows), lo <= z <= up`` read from SIF."""

    columns: list
    A: sp.csr_matrix    #: the E rows
    lo: np.ndarray
    up: np.ndarray
    q: np.ndarray       #: the diagonal of Q
    q_ulp: np.ndarray   #: one unit in the last printed digit of each q (they are truncated)


def read_sif(text: str) -> SifQP:
    """Read the SIF subset of Castro's files: ROWS (E, one N), COLUMNS, an empty RHS,
    BOUNDS (LO/UP; SIF defaults 0 and +inf) and a diagonal QMATRIX.  Anything else is
    refused, so a file outside this family is not misread."""
    sec = None
    rows: dict = {}
    cols: dict = {}
    ent_r, ent_c, ent_v = [], [], []
    lo: dict = {}
    up: dict = {}
    q: dict = {}
    q_ulp: dict = {}
    for ln, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("*"):
            continue
        f = line.split()
        if not line[0].isspace():
            sec = f[0]
            if sec not in ("NAME", "ROWS", "COLUMNS", "RHS", "BOUNDS", "QMATRIX", "ENDATA"):
                raise ValueError(f"line {ln}: section {sec!r} is not read by this reader")
            continue
        if sec == "ROWS":
            if f[0] not in ("E", "N"):
                raise ValueError(f"line {ln}: row type {f[0]!r} (only E and N are read)")
            rows[f[1]] = f[0]
        elif sec == "COLUMNS":
            c = cols.setdefault(f[0], len(cols))
            for r, v in zip(f[1::2], f[2::2]):
                if rows[r] == "E":
                    ent_r.append(r)
                    ent_c.append(c)
                    ent_v.append(float(v))
                elif float(v) != 0.0:
                    raise ValueError(f"line {ln}: a linear objective term (only Q is read)")
        elif sec == "BOUNDS":
            if f[0] not in ("LO", "UP"):
                raise ValueError(f"line {ln}: bound type {f[0]!r} (only LO and UP are read)")
            (lo if f[0] == "LO" else up)[f[2]] = float(f[3])
        elif sec == "QMATRIX":
            if f[0] != f[1]:
                raise ValueError(f"line {ln}: off-diagonal Q entry (only a diagonal is read)")
            q[f[0]] = float(f[2])
            mant = f[2].lower().split("e")
            digits = len(mant[0].split(".")[1]) if "." in mant[0] else 0
            q_ulp[f[0]] = 10.0 ** (int(mant[1]) if len(mant) > 1 else 0) / 10**digits
        elif sec == "RHS":
            raise ValueError(f"line {ln}: a nonzero right-hand side (only A z = 0 is read)")
    eq = {r: i for i, r in enumerate(r for r, t in rows.items() if t == "E")}
    names = list(cols)
    A = sp.csr_matrix((ent_v, ([eq[r] for r in ent_r], ent_c)), shape=(len(eq), len(names)))
    missing = [c for c in names if c not in q]
    if missing:
        raise ValueError(f"no QMATRIX entry for {len(missing)} columns, e.g. {missing[0]}")
    return SifQP(names, A, np.array([lo.get(c, 0.0) for c in names]),
                 np.array([up.get(c, np.inf) for c in names]),
                 np.array([q[c] for c in names]), np.array([q_ulp[c] for c in names]))


# -- the table -----------------------------------------------------------------------------

class CellSystem:
    """The tabular system of a flat cell vector (the interface ``find_pattern`` and
    ``intervals`` read): rows ``aggregate - sum(parts) = 0``."""

    dims = ("cell",)

    def __init__(self, A: sp.csr_matrix, names: list):
        self.A = A
        self.n_var = self.n_interior = A.shape[1]
        self.shape = (self.n_var,)
        self._names = list(names)

    def labels(self) -> list:
        return list(self._names)


@dataclass(frozen=True)
class CastroTable:
    """One instance as a table: values, relations, sensitive cells, protections."""

    name: str
    system: CellSystem
    a: np.ndarray        #: cell values (``A a = 0``)
    sens: np.ndarray     #: sensitive cells
    upl: np.ndarray      #: upper protection (the files' ``l_i`` of sensitive cells)
    k: int               #: ``Q_ii = k / a_i``
    exact: bool          #: ``k / Q`` rounded to integers satisfies ``A a = 0``
    residual: float      #: ``max |A (k/Q)|`` before any correction
    correction: float    #: largest ``|a - k/Q| / a``


def castro_table(name: str, qp: SifQP) -> CastroTable:
    """Recover the table of a CTA instance (the mapping is in the module docstring)."""
    A = qp.A.tocsr()
    if not np.all(np.abs(A.data) == 1.0):
        raise ValueError(f"{name}: relation coefficients other than +-1")
    neg = np.asarray((A < 0).sum(axis=1)).ravel()
    if np.any(neg != 1):
        r = int(np.flatnonzero(neg != 1)[0])
        raise ValueError(f"{name}: relation {r} has {neg[r]} entries -1, expected exactly "
                         "one (the aggregate)")
    A = (-A).tocsr()    # total - sum(parts) = 0: exactly one +1 per row
    sens = qp.lo > 0
    zero = (qp.lo == 0) & ~sens
    body = qp.lo < 0
    ratio = -qp.lo[body] * qp.q[body]
    k = round(float(np.median(ratio)))
    off = np.abs(ratio / k - 1.0)
    if k not in (1, 2) or off.max() > 1e-5:
        raise ValueError(f"{name}: Q_ii * (-l_i) is not one constant 1 or 2 over the "
                         f"non-sensitive cells (median {np.median(ratio):g}, worst relative "
                         f"deviation {off.max():.3g})")
    if np.any(qp.q[zero] != 2.0):
        raise ValueError(f"{name}: a zero cell (l_i = 0) with Q_ii != 2")
    a0 = np.where(zero, 0.0, k / qp.q)
    prec = np.where(zero, 0.0, k * qp.q_ulp / (qp.q * (qp.q - qp.q_ulp)))
    residual = float(np.abs(A @ a0).max())
    ai = np.round(a0)
    exact = bool(np.all(np.abs(ai - a0) <= np.maximum(prec, 1e-9)) and not (A @ ai).any())
    if exact:
        a = ai
    else:
        # a = a0 - prec * B' lam with B = A diag(prec): the smallest change of a0, in units
        # of each cell's precision, that satisfies A a = 0 (lstsq: relations may be
        # linearly dependent)
        B = A @ sp.diags(prec)
        lam = np.linalg.lstsq((B @ B.T).toarray(), A @ a0, rcond=None)[0]
        a = a0 - prec * (B.T @ lam)
    rel = np.abs(a - a0) / np.where(a0 > 0, a0, 1.0)
    left = float(np.abs(A @ a).max())
    if left > 1e-9 * float(np.abs(a).max()) or (a < 0).any():
        raise ValueError(f"{name}: no nonnegative table with A a = 0 near k/Q (|A a| = "
                         f"{left:g})")
    system = CellSystem(A, qp.columns)
    return CastroTable(name, system, a, sens, np.where(sens, qp.lo, 0.0), k, exact,
                       residual, float(rel.max()))


def load(name: str) -> CastroTable:
    return castro_table(name, read_sif(sif_text(name)))


# -- one run -------------------------------------------------------------------------------

def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def run_instance(name: str, protection: str = "symmetric", optimal: bool = True) -> dict:
    """Suppress (heuristic, then optimal if the heuristic was quick) and audit one
    instance; returns the printed numbers."""
    from riskengine.magnitude.csp import find_pattern
    from riskengine.magnitude.intervals import intervals, protection_tol

    t0 = time.perf_counter()
    t = load(name)
    t_load = time.perf_counter() - t0
    a, sens, upl = t.a, t.sens, t.upl
    plo = np.minimum(upl, a) if protection == "symmetric" else np.zeros_like(upl)
    out = {"instance": name, "castro": INSTANCES[name][0], "cells": int(a.size),
           "relations": int(t.system.A.shape[0]), "sensitive": int(sens.sum()),
           "zero": int((a == 0).sum()), "k": t.k, "exact": t.exact, "residual": t.residual,
           "correction": t.correction, "load_s": t_load, "rss_base_mb": _rss_mb()}
    kw = {"protection": (plo, upl), "cost": "value", "suppress_zeros": False,
          "suppress_totals": True}
    t0 = time.perf_counter()
    pat = find_pattern(t.system, a, sens, method="heuristic", **kw)
    out["heuristic_s"] = time.perf_counter() - t0
    mask = pat.mask
    out["suppressed"] = int(mask.sum())
    out["suppressed_value"] = float(a[mask].sum())
    t0 = time.perf_counter()
    lo, hi = intervals(t.system, np.where(mask, np.nan, a))
    out["audit_s"] = time.perf_counter() - t0
    tol = protection_tol(a)
    under = sens & ((a - lo < plo - tol) | (hi - a < upl - tol))
    out["under_protected"] = int(under.sum())
    out["rss_mb"] = _rss_mb()
    if optimal and out["heuristic_s"] < OPTIMAL_IF_UNDER:
        t0 = time.perf_counter()
        try:
            opt = find_pattern(t.system, a, sens, method="optimal",
                               time_limit=OPTIMAL_TIME_LIMIT, **kw)
        except (ValueError, RuntimeError) as e:     # report, keep the heuristic's row
            out["optimal"] = {"error": f"{type(e).__name__}: {e}",
                              "seconds": time.perf_counter() - t0}
        else:
            out["optimal"] = {"status": str(opt.info.get("status")),
                              "gap": opt.info.get("gap"), "rounds": opt.info.get("rounds"),
                              "cuts": opt.info.get("cuts"), "suppressed": int(opt.mask.sum()),
                              "value": float(a[opt.mask].sum()),
                              "seconds": time.perf_counter() - t0, "rss_mb": _rss_mb()}
    return out


def _child(name: str, protection: str, optimal: bool) -> dict:
    """``run_instance`` in a fresh interpreter, so the peak RSS is the instance's own."""
    cmd = [sys.executable, __file__, "--child", name, "--protection", protection]
    if not optimal:
        cmd.append("--no-optimal")
    r = subprocess.run(cmd, check=False, capture_output=True, text=True)
    if r.returncode != 0:
        return {"instance": name, "castro": INSTANCES[name][0],
                "error": (r.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(r.stdout.strip().splitlines()[-1])


def _table(results: list) -> str:
    head = ("instance", "castro", "cells", "rel", "sens", "supp", "supp value",
            "heur s", "audit s", "under", "RSS MB")
    lines = ["  ".join(f"{h:>11}" for h in head)]
    for r in results:
        if "error" in r:
            lines.append(f"{r['instance']:>11}  {r['castro']:>11}  ERROR {r['error']}")
            continue
        lines.append("  ".join(f"{v:>11}" for v in (
            r["instance"], r["castro"], r["cells"], r["relations"], r["sensitive"],
            r["suppressed"], f"{r['suppressed_value']:.6g}", f"{r['heuristic_s']:.2f}",
            f"{r['audit_s']:.2f}", r["under_protected"], f"{r['rss_mb']:.0f}")))
    lines += ["", ("values: k (Q_ii = k / a_i); exact: k/Q rounded to integers adds up; "
                   "residual: max |A k/Q|; correction: max |a - k/Q| / a")]
    for r in results:
        if "error" not in r:
            lines.append(f"  {r['instance']:>9}: k={r['k']} exact={r['exact']} "
                         f"residual={r['residual']:.3g} correction={r['correction']:.3g} "
                         f"zero cells={r['zero']} load {r['load_s']:.2f} s")
    opt = [r for r in results if "optimal" in r]
    if opt:
        lines += ["", (f"optimal (time_limit={OPTIMAL_TIME_LIMIT:g} s; run when the "
                       f"heuristic took < {OPTIMAL_IF_UNDER:g} s)")]
        for r in opt:
            o = r["optimal"]
            if "error" in o:
                lines.append(f"  {r['instance']:>9}: ERROR after {o['seconds']:.1f} s: "
                             f"{o['error']}")
                continue
            gap = "nan" if o["gap"] is None else f"{o['gap']:.3g}"
            lines.append(f"  {r['instance']:>9}: status={o['status']} gap={gap} "
                         f"cells={o['suppressed']} value={o['value']:.6g} "
                         f"(heuristic {r['suppressed']} / {r['suppressed_value']:.6g}) "
                         f"rounds={o['rounds']} cuts={o['cuts']} {o['seconds']:.1f} s "
                         f"RSS {o['rss_mb']:.0f} MB")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--instances", default=",".join(INSTANCES),
                    help=f"comma-separated, of {', '.join(INSTANCES)}")
    ap.add_argument("--protection", choices=("symmetric", "upper"), default="symmetric")
    ap.add_argument("--no-optimal", action="store_true")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        print(json.dumps(run_instance(a.child, a.protection, not a.no_optimal)))
        return
    names = [n.strip().upper() for n in a.instances.split(",") if n.strip()]
    for n in names:
        if n not in INSTANCES:
            ap.error(f"unknown instance {n!r}; known: {', '.join(INSTANCES)}")
    print(f"protection: {a.protection}; load average {os.getloadavg()[0]:.2f} at start",
          flush=True)
    results = []
    for n in names:
        results.append(_child(n, a.protection, not a.no_optimal))
        print(json.dumps(results[-1]), flush=True)
    print(f"load average {os.getloadavg()[0]:.2f} at end\n")
    print(_table(results))


if __name__ == "__main__":
    main()
