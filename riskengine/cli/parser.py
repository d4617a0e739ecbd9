"""The command line's grammar: every subcommand, its options and their help.

Only argparse and the commands' (light) modules are imported here: ``riskengine --help``
and argument errors answer without loading the library.
"""

from __future__ import annotations

import argparse

from .._version import __version__
from .argus import cmd_audit, cmd_run, cmd_suppress
from .counts import cmd_analyze, cmd_assess, cmd_count, cmd_protect
from .experiments import cmd_compare, cmd_simulate
from .output import cmd_report
from .reconstruct import cmd_reconstruct
from .releases import GROUPS_SYNTAX
from .routes import cmd_routes
from .rules import RULE_SYNTAX, rule_spec
from .warmup import cmd_warmup


def _number(option: str, text: str, integer: bool = False):
    """``text`` as the number ``option`` takes (an int where ``integer``), or the
    argparse error that names the option."""
    import math
    try:
        x = int(text) if integer else float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{option} must be {'an integer' if integer else 'a number'}, got {text!r}"
        ) from None
    if not integer and not math.isfinite(x):
        raise argparse.ArgumentTypeError(f"{option} must be a finite number, got {text}")
    return x


def _probability(option: str, example: str, zero: bool = False):
    """A probability in (0, 1] (``zero``: in [0, 1])."""
    rule = "[0, 1]" if zero else "(0, 1]"

    def check(text: str) -> float:
        x = _number(option, text)
        if not (0.0 <= x <= 1.0 if zero else 0.0 < x <= 1.0):
            raise argparse.ArgumentTypeError(f"{option} must be a probability in {rule} "
                                             f"(e.g. {example}), got {text}")
        return x
    return check


def _at_least(option: str, minimum, integer: bool = True, what: str = ""):
    """A number (an integer where ``integer``) >= ``minimum``."""

    def check(text: str):
        x = _number(option, text, integer)
        if x < minimum:
            kind = "an integer" if integer else "a number"
            raise argparse.ArgumentTypeError(f"{option} must be {kind} >= {minimum}"
                                             f"{what}, got {text}")
        return x
    return check


def _positive(option: str):
    """A finite number > 0."""

    def check(text: str) -> float:
        x = _number(option, text)
        if not x > 0:
            raise argparse.ArgumentTypeError(f"{option} must be a number > 0, got {text}")
        return x
    return check


def _memory(text: str) -> str:
    """--memory: a size the library reads (``8GB``, ``512 MiB``, bytes); kept as given."""
    from .._budget import budget  # the standard library only: no NumPy loaded
    try:
        budget(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"--{exc}") from None
    return text


_level = _probability("--level", "0.95")
_threshold = _probability("--threshold", "0.5")
_seed = _at_least("--seed", 0, what=" (a random seed)")
_draws = _at_least("--draws", 1)


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


def _argus_options(sp) -> None:
    """A table prepared for tau-Argus: rda + tab (+ hst), its rules and additivity."""
    g = sp.add_argument_group("a table prepared for tau-Argus")
    g.add_argument("--rda", metavar="FILE", help="tau-Argus metadata (.rda); the .hrc files "
                   "it names are read from its folder")
    g.add_argument("--tab", metavar="FILE", help="tau-Argus table file (.tab): one line "
                   "per cell, totals included")
    g.add_argument("--hst", metavar="FILE", help="tau-Argus apriori file (.hst): statuses, "
                   "costs, protection levels of some cells")
    g.add_argument("--safety-rule", dest="argus_rule", metavar="RULES",
                   help="tau-Argus safety rules, as in a batch file: e.g. "
                   "'NK(3,75)|P(15,1)|FREQ(3,10)' (default: the status column only)")
    g.add_argument("--additivity", choices=("check", "compute"), default="check",
                   help="check (default, tau-Argus <READTABLE> 0: totals must add up) or "
                   "compute (<READTABLE> 1: totals recomputed from the cells)")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="riskengine", description="Bayesian disclosure-risk analysis of "
                "statistical tables.")
    p.add_argument("--version", action="version", version=f"riskengine {__version__}")
    sub = p.add_subparsers(dest="command")
    a = sub.add_parser("assess", help="posterior risk of every cell of a release")
    a.add_argument("release", nargs="?", help=_RELEASE_HELP + " (default: the bundled seed "
                   "003 example); a magnitude release (cell suppression of magnitudes, CTA) gets the "
                   "audit instead (as riskengine audit), written to audit.nc / audit.html; a "
                   "census publication config (.toml: [population], [swapping], [cell_key], "
                   "[intruder], [policy]; README) gets the intruder's simulation-based "
                   "posterior and its verdict, written to census.nc / census.html")
    _release_options(a)
    a.add_argument("--also", action="append", metavar="RELEASE",
                   help="another release of the same records (repeatable): the tables are "
                        "analysed together, categories matched by label, so differences "
                        "between them count (e.g. a region published whole and split); the "
                        "posterior is over the finest table")
    a.add_argument("--group", action="append", metavar="DIM:LABEL=A,B",
                   help="with --also: a category of one table that is the union of finer "
                        "ones of another (repeatable): DIM the dim, LABEL the coarse "
                        "category, A,B its finer categories (labels, ',' between them), "
                        "e.g. --group region:North=N1,N2")
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
    a.add_argument("--memory", type=_memory,
                   help="memory budget, e.g. 8GB (default: half the available)")
    a.add_argument("--level", type=_level, default=0.95, help="credible level")
    a.add_argument("--time", type=_positive("--time"), default=None,
                   metavar="SECONDS",
                   help="time budget of --route auto (default 120): an exact route "
                        "estimated longer is passed over, with its estimate, for the next "
                        "one (Monte Carlo last)")
    a.add_argument("--policy", metavar="FILE",
                   help="the verdict's policy, a TOML file ([policy]: cells, small, zeros, "
                        "declared, measure, threshold, baseline, gain, max_expected, "
                        "mc_sigmas); the options below override it; default: sensitive "
                        "cells (counts 1-2), Pr(true value) >= 0.5 above what the totals "
                        "alone give (README: the verdict)")
    a.add_argument("--cells", choices=("sensitive", "all", "hidden"), default=None,
                   help="the cells the verdict judges (default sensitive: counts 1-2 and "
                        "declared cells; hidden: the cells the release hides)")
    a.add_argument("--baseline", default=None, metavar="margins|none|RELEASE",
                   help="judge the release against what its totals alone disclose "
                        "(margins, the default), against a reference release (its JSON: "
                        "e.g. the same table under another mechanism), or not (none)")
    a.add_argument("--threshold", type=_threshold, default=None,
                   help="the policy's threshold: a judged cell FAILs when its Pr(true "
                        "value) (with --truth; else Pr(best guess)) is >= this (default "
                        "0.5)")
    a.add_argument("--max-expected", type=_at_least("--max-expected", 0, integer=False),
                   default=None, metavar="K",
                   help="the policy also FAILs when more than K judged cells are expected "
                        "to be exactly disclosed")
    a.add_argument("--until-decided", action="store_true",
                   help="an UNDECIDED verdict of a Monte Carlo posterior (cells within 2 "
                        "MCSE of the threshold): run again with 4x the draws, up to 3 "
                        "times")
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
                         "cta: sensitive, protection, capacity); groups= (cell_suppression: "
                         "one level of subtotals, published with the release): "
                         + GROUPS_SYNTAX + ", e.g. --param 'groups=region:N1,N2;S1,S2'")
    pr.add_argument("--design", help="cyclic: diagonal (square, default) | staircase (n x m) | "
                    "seed003_three_way (4 x 4 x 3)")
    pr.add_argument("--alpha", type=_probability("--alpha", "0.25", zero=True),
                    help="cyclic: probability of adding (default 0.25)")
    pr.add_argument("--beta", type=_probability("--beta", "0.25", zero=True),
                    help="cyclic: probability of subtracting "
                    "(default 0.25)")
    pr.add_argument("--rule", help="cyclic: negative (default) | any_zero")
    pr.add_argument("--base", type=_at_least("--base", 2), help="rounding base")
    pr.add_argument("--method", help="rounding: unbiased (default) | optimal")
    pr.add_argument("--likelihood",
                    help="rounding likelihood for inference: feasible (default) | unbiased")
    pr.add_argument("--seed", type=_seed, default=None,
                    help="random seed (same seed, same release)")
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
    c.add_argument("--time", type=_positive("--time"), default=None,
                   metavar="SECONDS",
                   help="time budget of --route auto (default 120): a route estimated "
                        "longer is passed over for the next one")
    c.add_argument("--memory", type=_memory,
                   help="memory budget, e.g. 8GB (default: half the available)")
    c.add_argument("--sis", type=_at_least("--sis", 1), metavar="N",
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
    an.add_argument("--draws", type=_draws, default=4000, help="tables drawn (default 4000)")
    an.add_argument("--seed", type=_seed, default=None, help="random seed of the draws")
    an.add_argument("--truth", help="original table (CSV or netCDF): true values and their "
                    "posterior quantiles")
    an.add_argument("--level", type=_level, default=0.94, help="HDI probability (default 0.94)")
    an.add_argument("--route", default="auto", help="inference route (default auto)")
    an.add_argument("--memory", type=_memory,
                    help="memory budget, e.g. 8GB (default: half the available)")
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
    cp.add_argument("--draws", type=_draws, help="override the config's draws")
    cp.add_argument("--seed", type=_seed, help="override the config's seed")
    cp.add_argument("--memory", type=_memory, help="memory budget of each posterior, "
                    "e.g. 8GB (default: "
                    "half the available)")
    cp.add_argument("--no-report", dest="report", action="store_false",
                    help="write the netCDF only, no HTML report and plots (an earlier "
                         "compare.html in the folder is removed)")
    cp.set_defaults(func=cmd_compare)
    sm = sub.add_parser("simulate", help="intruder simulation: protect and attack many tables")
    sm.add_argument("config", nargs="?", help="TOML config (default: bundled simulate_example)")
    sm.add_argument("--out", default="riskengine-out",
                    help="output folder (simulate.nc, simulate.html + PNGs)")
    sm.add_argument("--n-tables", type=_at_least("--n-tables", 1), help="override the config's n_tables")
    sm.add_argument("--scheduler", help="serial | dask | tcp://host:port (overrides config)")
    sm.add_argument("--seed", type=_seed, help="override the config's seed")
    sm.add_argument("--memory", type=_memory, help="memory budget of each posterior, "
                    "e.g. 8GB (default: "
                    "half the available)")
    sm.add_argument("--no-report", dest="report", action="store_false",
                    help="write the netCDF only, no HTML report and plots (an earlier "
                         "simulate.html in the folder is removed)")
    sm.set_defaults(func=cmd_simulate)
    rc = sub.add_parser("reconstruct", help="reconstruction audit of a table set: which "
                        "persons the published tables give away, with certainty or with a "
                        "given confidence")
    rc.add_argument("config", nargs="?",
                    help="TOML config (default: bundled reconstruct_example)")
    rc.add_argument("--out", default="riskengine-out/reconstruct",
                    help="output folder (reconstruct.nc, records.csv, reconstruct.html, "
                         "units/; a rerun resumes from the units already there)")
    rc.add_argument("--workers", type=_at_least("--workers", 1),
                    help="local worker processes (overrides the config)")
    rc.add_argument("--scheduler", help="serial | dask | tcp://host:port (overrides config)")
    rc.add_argument("--no-report", dest="report", action="store_false",
                    help="no HTML report (an earlier reconstruct.html in the folder is "
                         "removed)")
    rc.set_defaults(func=cmd_reconstruct)
    r = sub.add_parser("report", help="HTML report + PNG plots of a results netCDF "
                       "(from assess, compare, simulate, analyze or reconstruct)")
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
    su.add_argument("microdata", nargs="?", help="CSV, one row per contribution: the "
                    "--dims columns and the --value column; without --value, a table of "
                    "counts (long or wide CSV, or netCDF, as riskengine protect reads it), "
                    "--rule freq:N; with --rda and --tab: none (a table prepared for "
                    "tau-Argus)")
    su.add_argument("--dims", type=_dims_list, metavar="COL,COL",
                    help="the columns that classify a contribution, e.g. region,industry "
                    "(microdata: required)")
    su.add_argument("--value", metavar="COL",
                    help="the column of contributions (nonnegative numbers), e.g. turnover "
                    "(microdata: required; without it MICRODATA is a count table)")
    su.add_argument("--rule", type=rule_spec, action="append",
                    metavar="RULE", help="sensitivity rule, repeatable: p:P | pq:P,Q | nk:N,K "
                    "| freq:N[,R][,zeros] (e.g. --rule p:15 --rule nk:3,80; a count table: "
                    "--rule freq:3)")
    su.add_argument("--respondent", metavar="COL", help="a respondent id column: one "
                    "respondent's contributions to a cell are added up first")
    su.add_argument("--method", default="heuristic", choices=("heuristic", "optimal"),
                    help="how secondary suppressions are chosen (default heuristic; optimal: "
                         "Fischetti-Salazar's model, proven optimal or best found in "
                         "--time-limit)")
    su.add_argument("--cost", default="value", choices=("value", "count"),
                    help="minimise the total value (default) or the number of secondary "
                         "suppressions")
    su.add_argument("--time-limit", type=_positive("--time-limit"), metavar="SECONDS",
                    help="--method optimal: stop at this time with the best pattern found")
    su.add_argument("--suppress-zeros", action="store_true",
                    help="allow zero cells as secondary suppressions")
    su.add_argument("--suppress-totals", action="store_true",
                    help="allow totals to be suppressed (needed when a total is sensitive)")
    su.add_argument("--out", help="release JSON path, the published table beside it as "
                    "CSV (default: the JSON on stdout, the "
                    "summary on stderr)")
    _argus_options(su)
    su.add_argument("--strict", action="store_true", help="--rda: exit with status 3 when "
                    "the audit of the pattern finds a disclosure")
    su.add_argument("--no-report", dest="report", action="store_false",
                    help="--rda: write audit.nc without audit.html")
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
    au.add_argument("release", nargs="?", help="cell suppression or CTA release: "
                    + _RELEASE_HELP + " (none with --rda and --tab: a tau-Argus table)")
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
    _argus_options(au)
    au.add_argument("--sdc", metavar="CSV", help="audit an sdcTable result (its cells, "
                    "values and sdcStatus: u and x suppressed), with --dims and --hierarchy")
    au.add_argument("--hierarchy", action="append", metavar="DIM=FILE",
                    help="--sdc: a dim's hierarchy (a to-from CSV with mapsFrom, mapsTo, "
                    "sign; a level,name CSV; or an .hrc file), repeatable")
    au.add_argument("--posterior", action="store_true", help="--rda/--sdc count tables: the "
                    "exact posterior of every primary cell (uniform prior over the tables "
                    "consistent with the pattern)")
    au.add_argument("--jj", metavar="FILE", help="audit a JJ file (tau-Argus / sdcTable's "
                    "suppression problem with its pattern: statuses u, m/x suppressed) on its "
                    "own: relations, a-priori bounds, protection levels")
    au.add_argument("--pattern", metavar="FILE", help="--rda: another tool's pattern of the "
                    "table: a tau-Argus output (WRITETABLE type 2 or 3: x for a suppressed "
                    "value, or status numbers with AS+) or an sdcTable result CSV "
                    "(sdcStatus); default: the table file's own status column")
    au.set_defaults(func=cmd_audit)
    rn = sub.add_parser(
        "run", help="run a tau-Argus batch file (.arb): read the tables, protect them, "
        "audit the patterns, write the tables",
        description="The commands of a tau-Argus batch file that riskengine implements, in "
        "order: <OPENTABLEDATA>, <OPENMETADATA>, <SPECIFYTABLE>, <SAFETYRULE>, "
        "<READTABLE>, <APRIORI>, <SUPPRESS> MOD/GH/NET (riskengine's heuristic) or OPT "
        "(its optimal model), <WRITETABLE> types 1-3. Other commands (microdata, RECODE, "
        "RND, CTA, CKM, ...) are refused by name before any work starts. Every protected "
        "table is audited; the status-flagged tables, audit.nc and the report go to "
        "--out/tableK.")
    rn.add_argument("job", help="the .arb file (its file names are looked up next to it)")
    rn.add_argument("--out", help="output folder (default: the batch file's folder)")
    rn.add_argument("--strict", action="store_true", help="exit with status 3 when an "
                    "audit finds a disclosure")
    rn.add_argument("--no-report", dest="report", action="store_false",
                    help="write audit.nc without audit.html")
    rn.set_defaults(func=cmd_run)
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


