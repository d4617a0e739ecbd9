"""The command line's grammar: every subcommand, its options and their help.

Only argparse and the commands' (light) modules are imported here: ``riskengine --help``
and argument errors answer without loading the library.
"""

from __future__ import annotations

import argparse

from .._version import __version__
from .counts import cmd_analyze, cmd_assess, cmd_count, cmd_protect
from .experiments import cmd_compare, cmd_simulate
from .magnitude import cmd_audit, cmd_suppress
from .output import cmd_report
from .routes import cmd_routes
from .rules import RULE_SYNTAX, rule_spec
from .warmup import cmd_warmup


def _level(text: str) -> float:
    """--level: a credible level in (0, 1]."""
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--level must be a number, got {text!r}") from None
    if not 0.0 < x <= 1.0:
        raise argparse.ArgumentTypeError(f"--level must be a probability in (0, 1] (e.g. "
                                         f"0.95), got {text}")
    return x



def _dims_list(text: str) -> tuple:
    dims = tuple(d.strip() for d in text.split(",") if d.strip())
    if not dims:
        raise argparse.ArgumentTypeError(f"--dims needs column names separated by commas, "
                                         f"got {text!r}")
    return dims



#: what a release argument takes, in every command that reads one
_RELEASE_HELP = ("release JSON, or the published table as a CSV (wide or long, as tables "
                 "are read; a Total row / column / category holds published totals, x a "
                 "suppressed cell) with --mechanism and --param")


def _release_options(sp) -> None:
    """``--mechanism`` / ``--param``: the mechanism of a release given as its published
    table (CSV); a release JSON records its own."""
    sp.add_argument("--mechanism", metavar="NAME",
                    help="with a published table (CSV): the registered mechanism that "
                         "protected it, as riskengine protect names it (e.g. rounding)")
    sp.add_argument("--param", action="append", metavar="KEY=VALUE",
                    help="with a published table (CSV): a parameter of the mechanism "
                         "(repeatable), e.g. --param base=3")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="riskengine", description="Bayesian disclosure-risk analysis of "
                "statistical tables.")
    p.add_argument("--version", action="version", version=f"riskengine {__version__}")
    sub = p.add_subparsers(dest="command")
    a = sub.add_parser("assess", help="posterior risk of every cell of a release")
    a.add_argument("release", nargs="?", help=_RELEASE_HELP + " (default: the bundled seed "
                   "003 example); a magnitude release (cell suppression of magnitudes, CTA) gets the "
                   "audit instead (as riskengine audit), written to audit.nc / audit.html")
    _release_options(a)
    a.add_argument("--also", action="append", metavar="RELEASE",
                   help="another release of the same records (repeatable): the tables are "
                        "analysed together, categories matched by label, so differences "
                        "between them count (e.g. a region published whole and split); the "
                        "posterior is over the finest table")
    a.add_argument("--group", action="append", metavar="DIM:LABEL=A,B",
                   help="with --also: a category of one table that is the union of finer "
                        "ones of another (repeatable), e.g. --group region:North=N1,N2")
    a.add_argument("--prior", default="uniform",
                   help="uniform | flat:LOW[,HIGH] | poisson:RATE | negbin:MEAN,DISP")
    a.add_argument("--truth", help="original table (CSV or netCDF) for exact-disclosure risk"
                   " (with --also: the finest table)")
    a.add_argument("--out", default="riskengine-out",
                   help="output folder (posterior.nc, assess.html and its PNGs)")
    a.add_argument("--no-report", dest="report", action="store_false",
                   help="write posterior.nc only, no HTML report and plots (an earlier "
                        "assess.html in the folder is removed)")
    a.add_argument("--route", default="auto",
                   help="inference route (default auto: the first that applies and fits)")
    a.add_argument("--memory", help="memory budget, e.g. 8GB (default: half the available)")
    a.add_argument("--level", type=_level, default=0.95, help="credible level")
    a.add_argument("--threshold", type=float, default=0.5,
                   help="the risk policy: FAIL when a cell's Pr(true value) (with --truth; "
                        "else Pr(best guess)) is >= this (default 0.5)")
    a.add_argument("--max-expected", type=float, default=None, metavar="K",
                   help="the policy also FAILs when more than K cells are expected to be "
                        "exactly disclosed")
    a.add_argument("--strict", action="store_true",
                   help="exit with status 3 when the verdict is FAIL (results still "
                        "written), or when a Monte Carlo posterior has not converged "
                        "(R-hat > 1.01 or ESS < 400; nothing written); for a magnitude "
                        "release, when the audit finds a disclosure (as audit --strict)")
    a.set_defaults(func=cmd_assess)
    pr = sub.add_parser("protect", help="protect a table, write the release JSON and the "
                        "published table (CSV) beside it")
    pr.add_argument("table")
    pr.add_argument("--mechanism", default="cyclic",
                    help="registered mechanism name (default cyclic; e.g. rounding, margins, "
                         "bootstrap, binomial)")
    pr.add_argument("--param", action="append", metavar="KEY=VALUE",
                    help="a mechanism parameter (repeatable), e.g. --param base=5; also "
                         "the inputs a mechanism's protect needs, as a CSV in the table's "
                         "layout or a JSON array (cell_suppression: sensitive, protection; "
                         "cta: sensitive, protection, capacity)")
    pr.add_argument("--design", help="cyclic: diagonal (square, default) | staircase (n x m) | "
                    "seed003_three_way (4 x 4 x 3)")
    pr.add_argument("--alpha", type=float, help="cyclic: probability of adding (default 0.25)")
    pr.add_argument("--beta", type=float, help="cyclic: probability of subtracting "
                    "(default 0.25)")
    pr.add_argument("--rule", help="cyclic: negative (default) | any_zero")
    pr.add_argument("--base", type=int, help="rounding base")
    pr.add_argument("--method", help="rounding: unbiased (default) | optimal")
    pr.add_argument("--likelihood",
                    help="rounding likelihood for inference: feasible (default) | unbiased")
    pr.add_argument("--seed", type=int, default=None, help="random seed (same seed, same release)")
    pr.add_argument("--out", help="release JSON path (default: stdout); the published "
                    "table is written beside it as CSV (same name, .csv), as a board "
                    "receives it: assess / count / analyze / audit read either")
    pr.set_defaults(func=cmd_protect)
    c = sub.add_parser("count", help="number of original tables consistent with a release")
    c.add_argument("release", help=_RELEASE_HELP)
    _release_options(c)
    c.add_argument("--prior", default="uniform",
                   help="count only tables this prior allows (e.g. flat:1: every cell >= 1)")
    c.add_argument("--route", default="auto", help="inference route (default auto)")
    c.add_argument("--memory", help="memory budget, e.g. 8GB (default: half the available)")
    c.add_argument("--sis", type=int, metavar="N",
                   help="estimate the count from N sequential importance samples instead "
                        "(margins-only 2-D releases; also the fallback, with 10,000, when "
                        "the exact count does not fit the memory budget)")
    c.set_defaults(func=cmd_count)
    an = sub.add_parser("analyze", help="posterior of statistics of the original table "
                        "(chi-square, Cramer's V, odds ratios, ...)")
    an.add_argument("release", nargs="?", help=_RELEASE_HELP + " (default: the bundled "
                    "seed 003 example)")
    _release_options(an)
    an.add_argument("--statistic", action="append", metavar="S",
                    help="repeatable: chi2 | chi2_pvalue | g2 | g2_pvalue | cramers_v | "
                         "row_proportions | col_proportions | loglinear | "
                         "log_odds_ratio:DIM=A,B;DIM=C,D (default: chi2, chi2_pvalue, "
                         "cramers_v)")
    an.add_argument("--prior", default="uniform",
                    help="the user's prior: uniform | flat:LOW[,HIGH] | poisson:RATE | "
                         "negbin:MEAN,DISP")
    an.add_argument("--draws", type=int, default=4000, help="tables drawn (default 4000)")
    an.add_argument("--seed", type=int, default=None, help="random seed of the draws")
    an.add_argument("--truth", help="original table (CSV or netCDF): true values and their "
                    "posterior quantiles")
    an.add_argument("--level", type=_level, default=0.94, help="HDI probability (default 0.94)")
    an.add_argument("--route", default="auto", help="inference route (default auto)")
    an.add_argument("--memory", help="memory budget, e.g. 8GB (default: half the available)")
    an.add_argument("--out", default="riskengine-out/analyze",
                    help="output folder (analysis.nc, analyze.html + PNGs)")
    an.add_argument("--no-report", dest="report", action="store_false",
                    help="write analysis.nc only, no HTML report and plots (an earlier "
                         "analyze.html in the folder is removed)")
    an.set_defaults(func=cmd_analyze)
    cp = sub.add_parser("compare", help="risk and utility of several mechanisms on one table",
                        description="Risk and utility of several mechanisms on one table. A "
                        "mechanism that fails (e.g. a release no route fits) is reported on "
                        "stderr, in compare.nc and in the report; the others are kept and "
                        "written, and the exit status is 2.")
    cp.add_argument("config", nargs="?", help="TOML config (default: bundled compare_example)")
    cp.add_argument("--out", default="riskengine-out",
                    help="output folder (compare.nc, compare.html + PNGs)")
    cp.add_argument("--draws", type=int, help="override the config's draws")
    cp.add_argument("--seed", type=int, help="override the config's seed")
    cp.add_argument("--memory", help="memory budget of each posterior, e.g. 8GB (default: "
                    "half the available)")
    cp.add_argument("--no-report", dest="report", action="store_false",
                    help="write the netCDF only, no HTML report and plots (an earlier "
                         "compare.html in the folder is removed)")
    cp.set_defaults(func=cmd_compare)
    sm = sub.add_parser("simulate", help="intruder simulation: protect and attack many tables")
    sm.add_argument("config", nargs="?", help="TOML config (default: bundled simulate_example)")
    sm.add_argument("--out", default="riskengine-out",
                    help="output folder (simulate.nc, simulate.html + PNGs)")
    sm.add_argument("--n-tables", type=int, help="override the config's n_tables")
    sm.add_argument("--scheduler", help="serial | dask | tcp://host:port (overrides config)")
    sm.add_argument("--seed", type=int, help="override the config's seed")
    sm.add_argument("--memory", help="memory budget of each posterior, e.g. 8GB (default: "
                    "half the available)")
    sm.add_argument("--no-report", dest="report", action="store_false",
                    help="write the netCDF only, no HTML report and plots (an earlier "
                         "simulate.html in the folder is removed)")
    sm.set_defaults(func=cmd_simulate)
    r = sub.add_parser("report", help="HTML report + PNG plots of a results netCDF "
                       "(from assess, compare, simulate or analyze)")
    r.add_argument("results", help="results netCDF (e.g. riskengine-out/posterior.nc)")
    r.add_argument("--out", help="output folder (default: the folder of RESULTS); the "
                   "report is named after the kind of results (assess.html, compare.html, "
                   "simulate.html, analyze.html)")
    r.set_defaults(func=cmd_report)
    su = sub.add_parser(
        "suppress", help="microdata -> magnitude table -> sensitive cells by rules -> "
        "complementary cell suppression -> release JSON (audited)",
        description="Build the magnitude table of --value by --dims from MICRODATA (one row "
        "per contribution), find the sensitive cells by the --rule(s) (primary "
        "suppressions), choose complementary (secondary) suppressions that protect every "
        "one of them, audit the pattern by linear programming and write the release. "
        "Rule syntax (--rule, repeatable): " + RULE_SYNTAX + ".")
    su.add_argument("microdata", help="CSV, one row per contribution: the --dims columns "
                    "and the --value column")
    su.add_argument("--dims", type=_dims_list, required=True, metavar="COL,COL",
                    help="the columns that classify a contribution, e.g. region,industry")
    su.add_argument("--value", required=True, metavar="COL",
                    help="the column of contributions (nonnegative numbers), e.g. turnover")
    su.add_argument("--rule", type=rule_spec, action="append", required=True,
                    metavar="RULE", help="sensitivity rule, repeatable: p:P | pq:P,Q | nk:N,K "
                    "(e.g. --rule p:15 --rule nk:3,80)")
    su.add_argument("--respondent", metavar="COL", help="a respondent id column: one "
                    "respondent's contributions to a cell are added up first")
    su.add_argument("--method", default="heuristic", choices=("heuristic", "optimal"),
                    help="how secondary suppressions are chosen (default heuristic; optimal: "
                         "Fischetti-Salazar's model, proven optimal or best found in "
                         "--time-limit)")
    su.add_argument("--cost", default="value", choices=("value", "count"),
                    help="minimise the total value (default) or the number of secondary "
                         "suppressions")
    su.add_argument("--time-limit", type=float, metavar="SECONDS",
                    help="--method optimal: stop at this time with the best pattern found")
    su.add_argument("--suppress-zeros", action="store_true",
                    help="allow zero cells as secondary suppressions")
    su.add_argument("--suppress-totals", action="store_true",
                    help="allow totals to be suppressed (needed when a total is sensitive)")
    su.add_argument("--out", help="release JSON path, the published table beside it as "
                    "CSV (default: the JSON on stdout, the "
                    "summary on stderr)")
    su.set_defaults(func=cmd_suppress)
    au = sub.add_parser(
        "audit", help="what an intruder can derive from a suppressed or adjusted (CTA) "
        "magnitude release; with the microdata, whether every sensitive cell is protected",
        description="The LP interval of every suppressed cell of a cell-suppression release "
        "(the smallest and largest value it can take in a nonnegative table that agrees "
        "with everything published), or the published cells of a CTA release. With "
        "--microdata and the rule (the agency's confidential inputs; defaults: what "
        "riskengine suppress recorded in the release), the sensitive cells, their "
        "protection and whether each one is protected. Printed as a table; written to "
        "audit.nc and audit.html in --out. Rule syntax: " + RULE_SYNTAX + ".")
    au.add_argument("release", help="cell suppression or CTA release: " + _RELEASE_HELP)
    _release_options(au)
    au.add_argument("--microdata", metavar="CSV", help="the microdata the release was made "
                    "from (one row per contribution)")
    au.add_argument("--value", metavar="COL", help="the column of contributions (default: "
                    "as recorded by riskengine suppress)")
    au.add_argument("--dims", type=_dims_list, metavar="COL,COL",
                    help="the classifying columns (default: the release's dims)")
    au.add_argument("--rule", type=rule_spec, action="append", metavar="RULE",
                    help="sensitivity rule, repeatable: p:P | pq:P,Q | nk:N,K (default: as "
                         "recorded by riskengine suppress)")
    au.add_argument("--respondent", metavar="COL", help="respondent id column")
    au.add_argument("--out", default="riskengine-out",
                    help="output folder (audit.nc, audit.html)")
    au.add_argument("--strict", action="store_true",
                    help="exit with status 3 when the audit finds a disclosure (a suppressed "
                         "cell derived exactly; with --microdata, a sensitive cell derived "
                         "within less than its protection or not protected); results still "
                         "written")
    au.add_argument("--no-report", dest="report", action="store_false",
                    help="write audit.nc only (an earlier audit.html in the folder is removed)")
    au.set_defaults(func=cmd_audit)
    w = sub.add_parser("warmup", help="compile every numerical kernel now (e.g. in a "
                       "container build), so that no later run waits for it",
                       description="Run a tiny instance of every inference route of every "
                       "registered mechanism, which compiles each numerical kernel once for "
                       "this machine (numba's cache keeps it) or loads it from the cache.")
    w.set_defaults(func=cmd_warmup)
    ro = sub.add_parser("routes", help="every mechanism x inference route: what each needs, "
                        "whether it is exact, its cost on the mechanism's own example",
                        description="The registry (rk.routes()): every registered mechanism's "
                        "inference routes, in the order route=auto tries them, for a release "
                        "and for a set of releases of the same records: whether each is exact "
                        "and counts candidates, what it needs, and its cost on the "
                        "mechanism's own small example (why it does not apply there, or the "
                        "memory it plans).")
    ro.add_argument("--markdown", action="store_true",
                    help="print the README's routes table (markdown) instead")
    ro.set_defaults(func=cmd_routes)
    return p


class _Parser(argparse.ArgumentParser):
    """argparse, with a bad argument reported as one line (exit code 2)."""

    def error(self, message):
        self.exit(2, f"riskengine: error: {message} (see {self.prog} --help)\n")


