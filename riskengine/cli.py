"""The ``riskengine`` command.

    riskengine assess [RELEASE.json] [--prior SPEC] [--truth TABLE.csv] [--out DIR] [--no-report]
    riskengine report RESULTS.nc [--out DIR]
    riskengine protect TABLE.csv --mechanism cyclic [--design diagonal] [--alpha A] [--beta B]
    riskengine count RELEASE.json [--prior SPEC]

``assess`` with no arguments runs the bundled example of seed 003 (Duncan &
Roehrig): the published perturbed 4 x 4 table, its diagonal cycle set,
alpha = beta = 1/4, and the original table as the truth.  ``assess`` writes
``posterior.nc`` and the HTML report (``report.html`` + PNGs) into ``--out``;
``report`` turns any results netCDF (assess, compare, simulate) into that
report.  Bad input: exit code 2 and one line on stderr.
"""

from __future__ import annotations

import argparse
import sys
import time
from importlib import resources
from pathlib import Path

import numpy as np

from . import __version__, cycles, priors
from ._io import atomic_write_netcdf, read_table
from .mechanisms import ControlledRounding, CyclicPerturbation, MarginsOnly
from .posterior import _count_text, count_candidates, posterior
from .release import Release


class _Progress:
    """A one-line progress report on stderr, shown only when work takes a while."""

    def __init__(self, label: str, after: float = 1.0, stream=None):
        self.label, self.after = label, after
        self.stream = stream or sys.stderr
        self.t0 = time.monotonic()
        self.shown = False

    def __call__(self, done: int, total: int):
        el = time.monotonic() - self.t0
        if el < self.after and done < total:
            return
        if el >= self.after:
            self.shown = True
            self.stream.write(f"\r{self.label}: {done}/{total} ({el:.1f} s)")
            self.stream.flush()

    def close(self):
        if self.shown:
            self.stream.write("\n")
            self.stream.flush()


def _bundled(name: str) -> Path:
    return Path(str(resources.files("riskengine.data") / name))


def _fmt_cell(labels) -> str:
    return "(" + ", ".join(str(x) for x in labels) + ")"


def _risk_report(post, rel, truth, level: float) -> str:
    ds = post.summary(truth, level)
    dims = post.dims
    header = ["cell", "published", "mode", "P(mode)", "P(true)" if truth is not None else None,
              f"{int(round(level * 100))}% interval"]
    header = [h for h in header if h is not None]
    rows = []
    for idx in np.ndindex(*post.shape):
        labels = [post.coords[d][i] for d, i in zip(dims, idx)]
        pub = f"{int(ds['published'].values[idx])}" if "published" in ds else "-"
        r = [_fmt_cell(labels), pub,
             f"{int(ds['mode'].values[idx])}", f"{ds['max_prob'].values[idx]:.3f}"]
        if truth is not None:
            r.append(f"{ds['prob_exact'].values[idx]:.3f}")
        r.append(f"[{int(ds['lower'].values[idx])}, {int(ds['upper'].values[idx])}]")
        rows.append(r)
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    line = lambda cells: "  ".join(c.rjust(w) for c, w in zip(cells, widths))  # noqa: E731
    out = [line(header), line(["-" * w for w in widths])] + [line(r) for r in rows]
    out.append("")
    out.append(f"mechanism: {rel.mechanism.describe()}")
    out.append(f"prior: {post.attrs.get('prior')}    route: {post.attrs.get('route')}")
    out.append(f"candidate original tables: {_count_text(post.n_candidates)}")
    out.append(f"log evidence: {post.log_evidence:.6f}")
    if truth is not None:
        pe = post.prob_exact(truth).values
        out.append(f"expected exactly disclosed cells: {pe.sum():.3f} of {pe.size}; "
                   f"cells with P(true) >= 0.5: {int((pe >= 0.5).sum())}")
    return "\n".join(out)


def _cmd_assess(args) -> int:
    if args.release is None:
        rel = Release.load(_bundled("seed003_release.json"))
        truth_path = args.truth or _bundled("seed003_original.csv")
        print("riskengine assess: bundled example (Duncan & Roehrig, seed 003: 4 x 4 table, "
              "diagonal cycles, alpha = beta = 1/4)")
    else:
        rel = Release.load(args.release)
        truth_path = args.truth
    truth = read_table(truth_path) if truth_path else None
    if truth is not None and truth.shape != rel.shape:
        raise ValueError(f"truth table has shape {truth.shape}, the release {rel.shape}")
    prior = priors.parse(args.prior)
    prog = _Progress("posterior")
    try:
        post = posterior(rel, prior, route=args.route, progress=prog)
    finally:
        prog.close()
    print(_risk_report(post, rel, truth, args.level))
    out = Path(args.out)
    path = out / "posterior.nc"
    ds = post.to_dataset(truth, args.level)
    from .report import describe_release
    ds.attrs["release"] = "; ".join(f"{k}: {v}" for k, v in describe_release(rel).items())
    atomic_write_netcdf(ds, path)
    print(f"posterior written to {path}")
    if args.report:
        sys.stdout.flush()  # the text report is out before the plots are drawn
        from .report import write_report
        html = write_report(post, out, release=rel, truth=truth, level=args.level)
        print(f"report written to {html}")
    return 0


def _cmd_report(args) -> int:
    from .report import write_report
    src = Path(args.results)
    html = write_report(src, Path(args.out) if args.out else src.parent)
    print(f"report written to {html}")
    return 0


def _cmd_protect(args) -> int:
    table = read_table(args.table)
    rng = np.random.default_rng(args.seed)
    if args.mechanism == "cyclic":
        if table.ndim != 2:
            raise ValueError("protect --mechanism cyclic builds its design for 2-D tables; "
                             "for k-D tables build the release in Python with your cycles")
        n, m = table.shape
        if args.design == "diagonal":
            if n != m:
                raise ValueError(f"the diagonal design needs a square table, got {n} x {m}; "
                                 "use --design staircase")
            c = cycles.diagonal(n)
        elif args.design == "staircase":
            c = cycles.staircase(n, m)
        else:
            raise ValueError(f"unknown design {args.design!r}; known: diagonal, staircase")
        mech = CyclicPerturbation(c, alpha=args.alpha, beta=args.beta, rule=args.rule)
    elif args.mechanism == "rounding":
        mech = ControlledRounding(args.base, method=args.method, likelihood=args.likelihood)
    elif args.mechanism == "margins":
        mech = MarginsOnly()
    else:
        raise ValueError(f"unknown mechanism {args.mechanism!r}; known: cyclic, rounding, margins")
    rel = mech.protect(table, rng)
    if args.out:
        rel.save(args.out)
        print(f"release written to {args.out}")
    else:
        sys.stdout.write(rel.to_json(indent=1))
    return 0


def _cmd_count(args) -> int:
    rel = Release.load(args.release)
    print(count_candidates(rel, priors.parse(args.prior)))
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="riskengine", description="Bayesian disclosure-risk "
                                "analysis of statistical tables.")
    p.add_argument("--version", action="version", version=f"riskengine {__version__}")
    sub = p.add_subparsers(dest="command")
    a = sub.add_parser("assess", help="posterior risk of every cell of a release")
    a.add_argument("release", nargs="?", help="release JSON (default: bundled seed 003 example)")
    a.add_argument("--prior", default="uniform",
                   help="uniform | flat:LOW[,HIGH] | poisson:RATE | negbin:MEAN,DISP")
    a.add_argument("--truth", help="original table (CSV or netCDF) for exact-disclosure risk")
    a.add_argument("--out", default="riskengine-out",
                   help="output folder (posterior.nc, report.html and its PNGs)")
    a.add_argument("--no-report", dest="report", action="store_false",
                   help="write posterior.nc only, no HTML report and plots")
    a.add_argument("--route", default="auto", help="inference route (auto, structured, enumerate)")
    a.add_argument("--level", type=float, default=0.95, help="credible level")
    a.set_defaults(func=_cmd_assess)
    pr = sub.add_parser("protect", help="protect a table, write the release JSON")
    pr.add_argument("table")
    pr.add_argument("--mechanism", default="cyclic", help="cyclic | rounding | margins")
    pr.add_argument("--design", default="diagonal", help="diagonal (square) | staircase (n x m)")
    pr.add_argument("--alpha", type=float, default=0.25)
    pr.add_argument("--beta", type=float, default=0.25)
    pr.add_argument("--rule", default="negative", help="negative | any_zero")
    pr.add_argument("--base", type=int, default=3, help="rounding base")
    pr.add_argument("--method", default="unbiased", help="rounding: unbiased | optimal")
    pr.add_argument("--likelihood", default="feasible",
                    help="rounding likelihood for inference: feasible | unbiased")
    pr.add_argument("--seed", type=int, default=None, help="random seed (same seed, same release)")
    pr.add_argument("--out", help="release JSON path (default: stdout)")
    pr.set_defaults(func=_cmd_protect)
    c = sub.add_parser("count", help="number of original tables consistent with a release")
    c.add_argument("release")
    c.add_argument("--prior", default="uniform")
    c.set_defaults(func=_cmd_count)
    r = sub.add_parser("report", help="HTML report + PNG plots of a results netCDF "
                       "(from assess, compare or simulate)")
    r.add_argument("results", help="results netCDF (e.g. riskengine-out/posterior.nc)")
    r.add_argument("--out", help="output folder (default: the folder of RESULTS)")
    r.set_defaults(func=_cmd_report)
    return p


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return args.func(args)
    except (ValueError, TypeError, FileNotFoundError, RuntimeError, FloatingPointError,
            OSError, KeyError) as exc:
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        print(f"riskengine: error: {msg}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
