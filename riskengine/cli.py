"""The ``riskengine`` command.

    riskengine assess [RELEASE.json] [--prior SPEC] [--truth TABLE.csv] [--out DIR] [--no-report]
    riskengine report RESULTS.nc [--out DIR]
    riskengine protect TABLE.csv --mechanism cyclic [--design diagonal] [--alpha A] [--beta B]
    riskengine count RELEASE.json [--prior SPEC]
    riskengine suppress MICRO.csv --dims D1,D2 --value V --rule p:15 [--rule nk:3,80]
                        [--method heuristic|optimal] [--cost value|count] [--out REL.json]
    riskengine audit RELEASE.json [--microdata MICRO.csv --value V --rule R] [--out DIR]
                     [--no-report]
    riskengine analyze [RELEASE.json] [--statistic S ...] [--prior SPEC] [--draws N] [--seed S]
                       [--truth TABLE.csv] [--out DIR] [--no-report]
    riskengine compare [CONFIG.toml] [--out DIR] [--draws N] [--seed S] [--no-report]
    riskengine simulate [CONFIG.toml] [--out DIR] [--n-tables N] [--scheduler S] [--seed S]
                        [--no-report]
    riskengine warmup

``assess`` with no arguments runs the bundled example of seed 003 (Duncan &
Roehrig): the published perturbed 4 x 4 table, its diagonal cycle set,
alpha = beta = 1/4, and the original table as the truth.  ``assess`` writes
``posterior.nc`` and the HTML report (``assess.html`` + PNGs) into ``--out``.
``compare`` and ``simulate`` read a TOML config (format: ``riskengine._config``;
bundled examples ``compare_example.toml`` / ``simulate_example.toml`` run when no
config is given) and write ``compare.nc`` / ``simulate.nc`` and the report
(``compare.html`` / ``simulate.html``) into ``--out``.  ``analyze`` draws original tables from the posterior and reports the posterior of
statistics of the table (``--statistic``, repeatable: chi2, chi2_pvalue, g2, g2_pvalue,
cramers_v, row_proportions, col_proportions, loglinear,
log_odds_ratio:DIM=A,B;DIM=C,D), writing ``analysis.nc`` and its report (``analyze.html``) into ``--out``
(default ``riskengine-out/analyze``; the bundled example without a release).
``report`` turns any results netCDF (assess, compare, simulate, analyze) into
the report of its kind.  Each command writes its own report name, so one folder holds
them all; ``--no-report`` removes that command's earlier report from the folder.
``suppress`` builds a magnitude table from microdata (one row per contribution), finds
its sensitive cells by sensitivity rules (``--rule p:P | pq:P,Q | nk:N,K``, repeatable),
suppresses them and complementary cells, audits the pattern and writes the release;
``audit`` gives the LP interval of every suppressed cell of a suppression release (or the
published cells of a CTA release) and, with the microdata, whether each sensitive cell
is protected (``audit.nc``, ``audit.html``).  ``assess`` of such a magnitude release gives
the audit (no integer posterior exists); ``count`` refuses it, pointing to ``audit``.
``warmup`` compiles every numerical kernel ahead (e.g. in a container build): the
first run on a machine otherwise says so while it compiles.

Every failure a user can cause (bad input, a file that is not there or not readable, a
route that does not fit the memory budget) is one line on stderr,
``riskengine: error: ...``, and exit code 2; where the library's message names the way
forward, it is given as the command's option (``--memory``, ``--route``).
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

# only what the argument parser needs is imported here: `riskengine --help` and argument
# errors answer without NumPy, xarray, SciPy or Numba (riskengine/__init__ does not load
# the library for the console script; main() loads it when a subcommand runs)
from ._version import __version__


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
    from importlib import resources
    return Path(str(resources.files("riskengine.data") / name))


def _fmt_cell(labels) -> str:
    return "(" + ", ".join(str(x) for x in labels) + ")"


def _risk_report(post, rel, truth, level: float) -> str:
    import numpy as np

    from .posterior import _count_text
    ds = post.summary(truth, level)
    dims = post.dims
    header = ["cell", "published", "mode", "P(mode)", "P(true)" if truth is not None else None,
              f"{round(level * 100)}% interval"]
    header = [h for h in header if h is not None]
    rows = []
    for idx in np.ndindex(*post.shape):
        labels = [post.coords[d][i] for d, i in zip(dims, idx)]
        pv = ds["published"].values[idx] if "published" in ds else np.nan
        pub = "-" if np.isnan(pv) else f"{int(pv)}"     # "-": not published (suppressed)
        r = [_fmt_cell(labels), pub,
             f"{int(ds['mode'].values[idx])}", f"{ds['max_prob'].values[idx]:.3f}"]
        if truth is not None:
            r.append(f"{ds['prob_exact'].values[idx]:.3f}")
        r.append(f"[{int(ds['lower'].values[idx])}, {int(ds['upper'].values[idx])}]")
        rows.append(r)
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    line = lambda cells: "  ".join(c.rjust(w) for c, w in zip(cells, widths))
    out = [line(header), line(["-" * w for w in widths])] + [line(r) for r in rows]
    out.append("")
    out.append(f"mechanism: {rel.mechanism.describe()}")
    out.append(f"prior: {post.attrs.get('prior')}    route: {post.attrs.get('route')}")
    out.append("candidate original tables: " + (
        _count_text(post.n_candidates) if post.n_candidates is not None
        else post.attrs.get("n_candidates_note", "unknown")))
    out.append("log evidence: " + (f"{post.log_evidence:.6f}" if np.isfinite(post.log_evidence)
                                   else "not computed by this route"))
    if post.diagnostics is not None:
        out.append(_diagnostics_text(post))
    if truth is not None:
        pe = post.prob_exact(truth).values
        out.append(f"expected exactly disclosed cells: {pe.sum():.3f} of {pe.size}; "
                   f"cells with P(true) >= 0.5: {int((pe >= 0.5).sum())}")
    return "\n".join(out)


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


def _diagnostics_text(post) -> str:
    """The Monte Carlo route's convergence, in words (R-hat, ESS, MCSE, the verdict)."""
    dg = post.diagnostics
    verdict = ("converged by the usual rules (R-hat <= 1.01, bulk and tail ESS >= 400)"
               if post.attrs.get("converged") else
               "NOT CONVERGED by the usual rules (R-hat <= 1.01, bulk and tail ESS >= 400): "
               "treat these numbers as rough")
    return (f"APPROXIMATE (Monte Carlo): {post.attrs.get('approximation', '')}\n"
            f"  {post.attrs.get('diagnostics', '')}; largest MCSE of a cell's mean "
            f"{float(dg['mcse_mean'].max()):.3g}, of a cell's P(mode) "
            f"{float(dg['mcse_max_prob'].max()):.3g}\n  {verdict}")


def _release_and_truth(args, command: str) -> tuple:
    """The release (the bundled seed 003 example when none is given, with its original as
    the truth) and the true table of ``--truth``."""
    from ._io import read_table
    from .release import Release
    if args.release is None:
        rel = Release.load(_bundled("seed003_release.json"))
        truth_path = args.truth or _bundled("seed003_original.csv")
        print(f"riskengine {command}: bundled example (Duncan & Roehrig, seed 003: 4 x 4 "
              "table, diagonal cycles, alpha = beta = 1/4)")
    else:
        rel = Release.load(args.release)
        truth_path = args.truth
    return rel, (read_table(truth_path) if truth_path else None)


def _cmd_assess(args) -> int:
    from . import priors
    from ._io import atomic_write_netcdf
    from .posterior import posterior
    rel, truth = _release_and_truth(args, "assess")
    why = _no_posterior(rel)
    if why is not None:                 # magnitude releases: the audit is the answer
        print(f"riskengine assess: {why}; the audit is the answer, as riskengine audit "
              "gives it" + ("" if rel.mechanism.name == "cta" else ": the intervals an "
                            "intruder can derive for the suppressed cells by linear "
                            "programming"))
        if truth is not None:
            print("riskengine assess: --truth is not used here: riskengine audit --microdata "
                  "FILE --rule ... checks each sensitive cell against the original")
        return _run_audit(args, rel, None)
    if truth is not None and truth.shape != rel.shape:
        raise ValueError(f"truth table has shape {truth.shape}, the release {rel.shape}")
    prior = priors.parse(args.prior)
    prog = _Progress("posterior")
    try:
        post = posterior(rel, prior, route=args.route, progress=prog, memory=args.memory)
    finally:
        prog.close()
    print(_risk_report(post, rel, truth, args.level))
    from .verdict import verdict
    v = verdict(post, truth, threshold=args.threshold, max_expected=args.max_expected,
                level=args.level)
    print("\n".join(v.lines()))
    if args.strict and post.diagnostics is not None and not post.attrs.get("converged"):
        print("riskengine assess: --strict: the Monte Carlo posterior has not converged "
              f"({post.attrs.get('diagnostics')}); nothing written", file=sys.stderr)
        return 3
    out = _out_dir(args.out)
    path = out / "posterior.nc"
    ds = post.to_dataset(truth, args.level)
    ds.attrs["threshold"] = args.threshold
    if args.max_expected is not None:
        ds.attrs["max_expected"] = args.max_expected
    from .report import describe_release
    ds.attrs["release"] = "; ".join(f"{k}: {v}" for k, v in describe_release(rel).items())
    atomic_write_netcdf(ds, path)
    print(f"posterior written to {path}")
    if args.report:
        sys.stdout.flush()  # the text report is out before the plots are drawn
        from .report import write_report
        html = write_report(post, out, release=rel, truth=truth, level=args.level,
                            threshold=args.threshold, max_expected=args.max_expected)
        print(f"report written to {html}")
    else:
        _remove_report(out, "assess")
    if args.strict and not v.passed:
        print(f"riskengine assess: --strict: the verdict is FAIL ({'; '.join(v.reasons)})",
              file=sys.stderr)
        return 3
    return 0


def _cmd_analyze(args) -> int:
    import numpy as np

    from . import priors
    from ._io import atomic_write_netcdf
    from .analyze import DEFAULT, analyze
    rel, truth = _release_and_truth(args, "analyze")
    prior = priors.parse(args.prior)
    stats = args.statistic or list(DEFAULT)
    prog = _Progress("posterior")
    try:
        res = analyze(rel, prior, stats, draws=args.draws, rng=np.random.default_rng(args.seed),
                      truth=truth, level=args.level, route=args.route, memory=args.memory,
                      progress=prog)
    finally:
        prog.close()
    tab = res.table()
    cols = [c for c in ("mean", "sd", "hdi_lower", "hdi_upper", "plugin", "true",
                        "true_quantile") if c in tab]
    w = max(len("statistic"), *(len(s) for s in tab["statistic"]))
    print(f"{'statistic'.ljust(w)}  " + "  ".join(f"{c:>13}" for c in cols))
    for _, r in tab.iterrows():
        print(f"{r['statistic'].ljust(w)}  " + "  ".join(f"{float(r[c]):13.5g}" for c in cols))
    post = res.posterior
    kind = ("independent, exact posterior" if "approximation" not in post.attrs
            else "approximate")
    print(f"{args.draws} draws ({kind}), route {post.attrs.get('route')}, prior "
          f"{post.attrs.get('prior')}, HDI level {args.level:g}; plugin = the statistic on "
          "the published table")
    out = _out_dir(args.out)
    path = out / "analysis.nc"
    ds = res.to_dataset()
    if args.seed is not None:
        ds.attrs["seed"] = args.seed
    from .report import describe_release
    ds.attrs["release"] = "; ".join(f"{k}: {v}" for k, v in describe_release(rel).items())
    atomic_write_netcdf(ds, path)
    print(f"results written to {path}")
    _maybe_report(args, ds, path, "analyze")
    return 0


def _cmd_report(args) -> int:
    from .report import write_report
    src = Path(args.results)
    html = write_report(src, _out_dir(args.out) if args.out else src.parent)
    print(f"report written to {html}")
    return 0


#: the protect options of earlier releases: each passes one mechanism parameter
_LEGACY = ("design", "alpha", "beta", "rule", "base", "method", "likelihood")


def _param(text: str) -> tuple:
    """``key=value`` with the value read as JSON where it parses (numbers, lists, true)."""
    import json
    key, sep, val = text.partition("=")
    if not sep or not key.strip():
        raise ValueError(f"--param needs key=value, got {text!r}")
    try:
        return key.strip(), json.loads(val)
    except json.JSONDecodeError:
        return key.strip(), val


def _protect_inputs(cls) -> dict:
    """The keyword-only arguments of ``cls.protect`` (the agency's confidential inputs,
    e.g. suppression's sensitive cells), by name: True where required."""
    import inspect
    return {k: p.default is inspect.Parameter.empty
            for k, p in inspect.signature(cls.protect).parameters.items()
            if p.kind is inspect.Parameter.KEYWORD_ONLY}


#: protect inputs that mark cells: 0/1 (or true/false) per cell, read as a boolean mask
_MASKS = ("sensitive",)


def _protect_input(key: str, value, table):
    """A protect input from ``--param``: a CSV / netCDF file in the table's layout (matched
    by dim names and labels), a JSON array, or a scalar."""
    import numpy as np

    from ._io import read_table
    from .table import aligned
    where = f"--param {key}" + (f"={value}" if isinstance(value, str) else "")
    if isinstance(value, str) and Path(value).is_file():
        value = aligned(read_table(value), table.dims, table.coords, where)
    elif isinstance(value, list):
        value = aligned(np.asarray(value), table.dims, table.coords, where)
    else:
        return value
    if key in _MASKS:
        bad = value[(value != 0) & (value != 1)]
        if bad.size:
            raise ValueError(f"{where} marks cells with 0/1 (or true/false), got {bad[0].item()!r}")
        value = value.astype(bool)
    return value


def _cmd_protect(args) -> int:
    import numpy as np

    from . import _config
    from ._io import read_table
    from .mechanisms._base import lookup
    table = read_table(args.table)
    params = dict(_param(p) for p in args.param or ())
    params.update({k: getattr(args, k) for k in _LEGACY if getattr(args, k) is not None})
    try:
        inputs = _protect_inputs(lookup(args.mechanism))
    except ValueError:                  # an unknown name: _config.mechanism says so
        inputs = {}
    kw = {k: _protect_input(k, params.pop(k), table) for k in list(params) if k in inputs}
    mech = _config.mechanism({"type": args.mechanism, **params}, table.shape,
                             f"--mechanism {args.mechanism}", dims=table.dims)
    missing = [k for k, required in inputs.items() if required and k not in kw]
    if missing:
        raise ValueError(f"--mechanism {args.mechanism} needs the protect input"
                         f"{'s' if len(missing) > 1 else ''} {', '.join(missing)}: "
                         + " ".join(f"--param {k}=FILE.csv" for k in missing)
                         + " (the table's layout; or a JSON array or a number); optional: "
                         + (", ".join(k for k, r in inputs.items() if not r) or "none"))
    rel = mech.protect(table, np.random.default_rng(args.seed), **kw)
    if args.out:
        rel.save(args.out)
        print(f"release written to {args.out}")
    else:
        sys.stdout.write(rel.to_json(indent=1))
    return 0


def _cmd_count(args) -> int:
    from . import priors
    from .inference.sis import applies, estimate_count
    from .posterior import count_candidates
    from .release import Release
    rel = Release.load(args.release)
    why = _no_posterior(rel)
    if why is not None:
        raise ValueError(f"{why}: no original tables to count; riskengine audit "
                         f"{args.release} derives what an intruder can (the LP interval of "
                         "each cell)")
    prior = priors.parse(args.prior)
    sis_fits = applies(rel) is None and isinstance(prior, priors.Uniform)
    if args.sis is not None:
        if not sis_fits:
            raise ValueError("--sis estimates the number of tables of a margins-only 2-D "
                             "release under the uniform prior; "
                             + (applies(rel) or f"this prior is {prior!r}"))
        print(estimate_count(rel, n=args.sis))
        return 0
    try:
        print(count_candidates(rel, prior, route=args.route, memory=args.memory))
    except ValueError as e:
        if not (sis_fits and "memory budget" in str(e) and args.route == "auto"):
            raise
        print(f"riskengine count: no exact count within the memory budget "
              f"({_cli_hints(str(e), args)}); estimating by sequential importance sampling "
              "instead", file=sys.stderr)
        print(estimate_count(rel, n=10000))
    return 0


#: --rule NAME:NUMBERS -> (rule class of riskengine.magnitude.sensitivity, its parameters);
#: the library's own names for the rules (Rule.to_dict) are accepted too
_RULES = {"p": ("PPercent", ("p",)), "pq": ("PQ", ("p", "q")), "nk": ("Dominance", ("n", "k"))}
_RULE_ALIASES = {"p_percent": "p", "dominance": "nk"}
_RULE_SYNTAX = ("p:P (p-percent rule: the second largest contributor must not estimate the "
                "largest within P %, e.g. p:15) | pq:P,Q (pq rule: as p:P when every "
                "contribution is known within Q %, e.g. pq:15,50) | nk:N,K ((n,k)-dominance: "
                "the N largest must not exceed K % of the cell, e.g. nk:3,80); repeatable: a "
                "cell is sensitive under any rule and needs the largest protection")


def _rule_spec(text: str) -> tuple:
    """``--rule``: ``(class name, parameters, text)``, checked without loading the library
    (a bad rule is an argument error, answered at once)."""
    name, sep, rest = text.partition(":")
    name = _RULE_ALIASES.get(name.strip().lower(), name.strip().lower())
    if name not in _RULES:
        raise argparse.ArgumentTypeError(f"unknown rule {text.partition(':')[0]!r} in "
                                         f"{text!r}; known: p:P, pq:P,Q, nk:N,K")
    cls, params = _RULES[name]
    vals = [v.strip() for v in rest.split(",")] if sep and rest.strip() else []
    if len(vals) != len(params):
        raise argparse.ArgumentTypeError(
            f"rule {name} takes {len(params)} number{'s' if len(params) > 1 else ''} "
            f"({name}:{','.join(p.upper() for p in params)}), got {text!r}")
    nums = []
    for p, v in zip(params, vals):
        try:
            nums.append(int(v) if p == "n" else float(v))
        except ValueError:
            kind = "an integer" if p == "n" else "a number"
            raise argparse.ArgumentTypeError(f"rule {text!r}: {p} must be {kind}, got "
                                             f"{v!r}") from None
    return cls, tuple(nums), text


def _sensitivity_rule(specs):
    """The rule of one or several ``--rule`` (several: ``Max``, a cell is sensitive under
    any of them and needs the largest protection)."""
    from .magnitude import sensitivity as S
    rules = []
    for cls, nums, text in specs:
        try:
            rules.append(getattr(S, cls)(*nums))
        except (ValueError, TypeError) as exc:
            raise ValueError(f"--rule {text}: {exc}") from None
    return rules[0] if len(rules) == 1 else S.Max(*rules)


def _dims_list(text: str) -> tuple:
    dims = tuple(d.strip() for d in text.split(",") if d.strip())
    if not dims:
        raise argparse.ArgumentTypeError(f"--dims needs column names separated by commas, "
                                         f"got {text!r}")
    return dims


def _read_microdata(path, dims, value: str, respondent=None) -> dict:
    """The columns of a microdata CSV (one row per contribution): dims as labels (as
    tables read them: integers where they parse), the value column as numbers."""
    import numpy as np

    from ._io import _label, _number, _read_rows
    rows = _read_rows(path)
    header = [h.strip() for h in rows[0]]
    need = [*dims, value] + ([respondent] if respondent else [])
    missing = [c for c in need if c not in header]
    if missing:
        raise ValueError(f"{path}: no column{'s' if len(missing) > 1 else ''} "
                         f"{', '.join(map(repr, missing))}; its columns are {header}")
    for n, r in enumerate(rows[1:], start=2):
        if len(r) != len(header):
            raise ValueError(f"{path}, line {n}: {len(r)} fields, header has {len(header)}")
    cols = {d: [_label(r[header.index(d)]) for r in rows[1:]]
            for d in [*dims] + ([respondent] if respondent else [])}
    vi = header.index(value)
    cols[value] = np.array([_number(r[vi], f"{path}, line {n}, column {value!r}")
                            for n, r in enumerate(rows[1:], start=2)])
    return cols


class _Auditor:
    """The agency's confidential view: the contributions and their sensitivity."""

    def __init__(self, path, dims, value, rules, respondent=None, release=None):
        from .magnitude.contributions import contributions
        from .magnitude.sensitivity import assess
        cols = _read_microdata(path, dims, value, respondent)
        kw = {}
        if release is not None:             # the release's categories and totals
            kw = {"categories": {d: list(release.coords[d]) for d in dims},
                  "margins": list(release.margins)}
        self.contribs = contributions(cols, dims=dims, value=value, respondent=respondent,
                                      **kw)
        self.rule = _sensitivity_rule(rules)
        self.sens = assess(self.contribs, self.rule)
        self.n_rows = len(cols[value])
        self.text = (f"microdata {path} ({self.n_rows} contributions, value {value!r}), "
                     f"rule {self.rule.describe()}")


def _auditor(args, release):
    """``--microdata`` (with ``--value`` and ``--rule``, defaults from the release's
    record of how ``riskengine suppress`` made it), or None: the intruder's view only."""
    if getattr(args, "microdata", None) is None:
        for opt in ("rule", "value", "dims", "respondent"):
            if getattr(args, opt, None):
                raise ValueError(f"--{opt} describes the microdata: give --microdata too")
        return None
    made = release.info.get("microdata", {})
    value = args.value or made.get("value")
    specs = args.rule or [_rule_spec(t) for t in made.get("rules", ())]
    if value is None or not specs:
        raise ValueError("--microdata needs --value COLUMN and --rule (this release does not "
                         "record how it was made)")
    dims = args.dims or tuple(release.dims)
    if set(dims) != set(release.dims):
        raise ValueError(f"--dims {','.join(dims)}: the release's dims are "
                         f"{','.join(release.dims)}")
    return _Auditor(args.microdata, tuple(release.dims), value, specs,
                    args.respondent or made.get("respondent"), release)


def _audit_of(release):
    """``"suppression"`` / ``"cta"``: the release kinds the audit answers; else None."""
    name = release.mechanism.name
    if name == "cta":
        return "cta"
    if name == "cell_suppression":
        return "suppression"
    return None


def _no_posterior(release):
    """Why ``assess`` / ``count`` have no posterior for this release (then the audit is
    the answer), or None."""
    if release.mechanism.name == "cta":
        return (f"a CTA release ({release.mechanism.describe()}) publishes adjusted "
                "magnitudes: magnitude releases have no integer posterior, and this one no "
                "likelihood either (its protection levels and capacities are confidential)")
    if release.mechanism.name == "cell_suppression" and release.kind == "magnitude":
        return (f"magnitude releases ({release.mechanism.describe()}) have no integer "
                "posterior")
    return None


def _audit_dataset(release, auditor=None):
    """``rk.audit``'s Dataset of a suppression release (the auditor's view with
    ``auditor``), or of a CTA release: every cell published; with ``auditor``, each
    sensitive cell's adjustment against its protection."""
    import numpy as np
    import xarray as xr

    from .magnitude.audit import audit
    from .magnitude.intervals import protection_tol
    from .magnitude.protection import sensitive_cells
    from .report import KIND_ATTR, describe_release
    kind = _audit_of(release)
    if kind is None:
        raise ValueError(f"riskengine audit takes a cell-suppression or CTA release, this one "
                         f"is {release.mechanism.describe()}: riskengine assess gives its "
                         "posterior risk")
    if auditor is None:
        ds = audit(release)
    elif kind == "suppression":
        ds = audit(release, auditor.sens, table=auditor.contribs)
    else:
        ds = audit(release)
        system = release.system()
        x = release.cell_vector(system)
        val = system.vector(auditor.contribs.table.values).astype(float)
        sens, plo, phi = sensitive_cells(auditor.sens, None, system)
        moved = x - val
        tol = protection_tol(val)
        under = sens & ~((moved <= -plo + tol) | (moved >= phi - tol))
        data = {"published": x, "suppressed": np.zeros(x.size, bool), "value": val,
                "adjustment": moved, "sensitive": sens, "protection_lower": plo,
                "protection_upper": phi, "under_protected": under}
        show = bool(sens[system.n_interior:].any())
        ds = xr.Dataset({name + b.suffix: (b.xdims, vec[b.slice].reshape(b.shape))
                         for b in system.blocks if b.is_interior or show
                         for name, vec in data.items()},
                        coords={d: release.coords[d] for d in release.dims},
                        attrs={**ds.attrs, "n_under_protected": int(under.sum())})
    ds.attrs.update({KIND_ATTR: "audit", "audit_of": kind,
                     "release": "; ".join(f"{k}: {v}" for k, v in
                                          describe_release(release).items()),
                     "auditor": auditor.text if auditor is not None else
                     "the release alone (an intruder's view)"})
    return ds


def _text_table(header, rows) -> list:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    def line(cells):
        return "  ".join(c.rjust(w) for c, w in zip(cells, widths))
    return [line(header), line(["-" * w for w in widths])] + [line(r) for r in rows]


def _run_audit(args, release, auditor) -> int:
    """Print the audit, write ``audit.nc`` and (unless ``--no-report``) ``audit.html``."""
    from ._io import atomic_write_netcdf
    from .report import audit_rows, audit_verdict
    ds = _audit_dataset(release, auditor)
    header, rows = audit_rows(ds)
    label, lines = audit_verdict(ds)
    print("\n".join(_text_table(header, rows)) if rows else
          "no cell is suppressed or known to be sensitive")
    print(f"\nmechanism: {release.mechanism.describe()}")
    print(f"audited with: {ds.attrs['auditor']}")
    print(f"AUDIT: {label}: " + "; ".join(lines))
    out = _out_dir(args.out)
    path = out / "audit.nc"
    atomic_write_netcdf(ds, path)
    print(f"audit written to {path}")
    _maybe_report(args, ds, path, "audit")
    return 0


def _cmd_audit(args) -> int:
    from .release import Release
    rel = Release.load(args.release)
    if _audit_of(rel) is None:        # before the microdata are read
        _audit_dataset(rel)
    return _run_audit(args, rel, _auditor(args, rel))


def _cmd_suppress(args) -> int:
    from .mechanisms.suppression import suppress
    from .report import audit_verdict, magnitude
    aud = _Auditor(args.microdata, args.dims, args.value, args.rule, args.respondent)
    rel = suppress(aud.contribs, aud.sens, method=args.method, cost=args.cost,
                   suppress_zeros=args.suppress_zeros, suppress_totals=args.suppress_totals,
                   time_limit=args.time_limit)
    rel.info["microdata"] = {"value": args.value, "rules": [t for _, _, t in args.rule],
                             **({"respondent": args.respondent} if args.respondent else {})}
    ds = _audit_dataset(rel, aud)
    label, lines = audit_verdict(ds)
    i = rel.info
    t = aud.contribs.table
    n_prim = i["n_sensitive"] + i["n_sensitive_totals"]
    n_sec = i["n_complementary"] + i["n_totals_suppressed"] - i["n_sensitive_totals"]
    cost = (f"{magnitude(i['value_complementary'] + i['value_totals_suppressed'])} (the value "
            "of the secondary suppressions; of every suppressed cell "
            f"{magnitude(i['value_suppressed'] + i['value_totals_suppressed'])})"
            if args.cost == "value" else f"{n_sec} secondary suppressions")
    summary = [
        f"riskengine suppress: {aud.n_rows} contributions -> "
        + " x ".join(f"{d} ({n})" for d, n in zip(t.dims, t.shape))
        + f" table of {args.value}; rule {aud.rule.describe()}",
        f"primary suppressions: {n_prim} (sensitive cells"
        + (f", {i['n_sensitive_totals']} of them totals)" if i["n_sensitive_totals"] else ")"),
        f"secondary suppressions: {n_sec}"
        + (f" ({i['n_totals_suppressed'] - i['n_sensitive_totals']} of them totals)"
           if i["n_totals_suppressed"] > i["n_sensitive_totals"] else ""),
        f"pattern cost (--cost {args.cost}, --method {args.method}): {cost}"
        + (f"; status {i['status']}, gap {i['gap']:.3g}" if "status" in i else ""),
        f"audit: {label}: " + "; ".join(lines)]
    if args.out:
        rel.save(args.out)
        print("\n".join(summary))
        print(f"release written to {args.out}")
    else:                          # the release on stdout (as protect), the summary beside
        sys.stdout.write(rel.to_json(indent=1))
        print("\n".join(summary), file=sys.stderr)
    return 0


def _out_dir(out) -> Path:
    """``--out``: a folder (created when results are written), not a file."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {str(out)!r} exists and is not a folder")
    return out


def _maybe_report(args, ds, path, kind: str) -> None:
    if getattr(args, "report", True):
        sys.stdout.flush()
        from .report import write_report
        html = write_report(ds, Path(path).parent)
        print(f"report written to {html}")
    else:
        _remove_report(Path(path).parent, kind)


def _remove_report(out: Path, kind: str) -> None:
    """``--no-report``: this command's report of an earlier run would describe other
    results; it goes (with its plots)."""
    from .report import remove_report
    gone = remove_report(out, kind)
    if gone:
        print(f"earlier report removed: {', '.join(str(p) for p in gone)}")


def _cmd_compare(args) -> int:
    import warnings

    import numpy as np

    from . import _config
    from ._io import atomic_write_netcdf
    from .compare import MechanismFailed, compare
    cfg, base = _config.load(args.config or _bundled("compare_example.toml"))
    kw = _config.compare_args(cfg, base)
    seed = kw.pop("seed") if args.seed is None else args.seed
    kw.pop("seed", None)
    if args.draws is not None:
        kw["draws"] = args.draws
    out = _out_dir(args.out)
    prog = _Progress("compare")
    try:
        with warnings.catch_warnings():       # failures are printed below, one line each
            warnings.simplefilter("ignore", MechanismFailed)
            ds = compare(**kw, rng=np.random.default_rng(seed), progress=prog,
                         memory=args.memory)
    finally:
        prog.close()
    ds.attrs["seed"] = seed
    ds.attrs["config"] = str(args.config or "bundled compare_example.toml")
    names = [str(n) for n in ds["mechanism"].values]
    w = max(len("mechanism"), *(len(n) for n in names))
    print(f"intruder prior: {ds.attrs['intruder']}    user prior: {ds.attrs['user']}    "
          f"draws: {ds.attrs['draws']}")
    print(f"{'mechanism'.ljust(w)}  {'risk':>8}  {'utility':>8}  {'E[exact]':>8}  "
          f"{'width':>8}  {'L1':>8}")
    failed = {str(n): str(e) for n, e in zip(ds["mechanism"].values, ds["error"].values)
              if str(e)}
    for n in names:
        if n in failed:
            print(f"{n.ljust(w)}  FAILED (see below)")
            continue
        r = ds.sel(mechanism=n)
        print(f"{n.ljust(w)}  {float(r['risk']):8.4f}  {float(r['utility']):8.4f}  "
              f"{float(r['expected_exact'].mean()):8.3f}  "
              f"{float(r['interval_width'].mean()):8.3f}  {float(r['l1'].mean()):8.2f}")
    print("risk = mean P(true value) for the intruder; utility = 1/(1 + mean user "
          "interval width)")
    path = out / "compare.nc"
    atomic_write_netcdf(ds, path)
    print(f"results written to {path}")
    _maybe_report(args, ds, path, "compare")
    sys.stdout.flush()
    for n, e in failed.items():            # the others were kept; the run still failed
        print(f"riskengine: error: compare: mechanism {n!r} failed: {_cli_hints(e, args)}",
              file=sys.stderr)
    return 2 if failed else 0


def _cmd_simulate(args) -> int:
    import numpy as np

    from . import _config
    from ._io import atomic_write_netcdf
    from .simulate import calibration, simulate
    cfg, base = _config.load(args.config or _bundled("simulate_example.toml"))
    kw = _config.simulate_args(cfg, base)
    seed = kw.pop("seed") if args.seed is None else args.seed
    kw.pop("seed", None)
    if args.n_tables is not None:
        kw["n_tables"] = args.n_tables
    if args.scheduler is not None:
        kw["scheduler"] = None if args.scheduler == "serial" else args.scheduler
    out = _out_dir(args.out)
    prog = _Progress("simulate")
    try:
        ds = simulate(**kw, rng=np.random.default_rng(seed), progress=prog)
    finally:
        prog.close()
    ds.attrs["seed"] = seed
    ds.attrs["config"] = str(args.config or "bundled simulate_example.toml")
    cal = calibration(ds, bins=10)
    print(f"generator: {ds.attrs['generator']}")
    print(f"mechanism: {ds.attrs['mechanism']}    intruder assumes: "
          f"{ds.attrs['intruder_mechanism']}")
    print(f"prior: {ds.attrs['prior']}    tables: {ds.attrs['n_tables']}")
    print(f"MAP hit rate {cal.attrs['overall_observed']:.4f}, mean claimed "
          f"{cal.attrs['overall_claimed']:.4f} (difference {cal.attrs['overall_z']:+.2f} s.e.)")
    print(f"{'P(MAP) bin':>12}  {'cells':>7}  {'claimed':>8}  {'observed':>8}  {'s.e.':>7}")
    for j in range(cal.sizes["bin"]):
        c = cal.isel(bin=j)
        if int(c["n"]):
            print(f"{float(c['lower']):5.1f}-{float(c['upper']):<5.1f}  {int(c['n']):7d}  "
                  f"{float(c['claimed']):8.4f}  {float(c['observed']):8.4f}  "
                  f"{float(c['se']):7.4f}")
    path = out / "simulate.nc"
    atomic_write_netcdf(ds, path)
    print(f"results written to {path}")
    _maybe_report(args, ds, path, "simulate")
    return 0


#: the tiny instance ``warmup`` protects with: parameters a mechanism needs beyond its
#: defaults (a mechanism missing here that needs some is reported, not skipped silently)
_WARMUP_PARAMS = {"controlled_rounding": {"base": 3}, "random_rounding": {"base": 3},
                  "bootstrap": {"M": 3, "S": 2}, "binomial": {"S": 2},
                  "cell_key": {"D": 2, "V": 1},
                  "noisy_counts": {"scale": 0.3}}   # narrow windows: a small enumeration


def _warmup_tables():
    import numpy as np

    from .table import Table
    return [Table(np.array([[3, 1, 2], [2, 4, 1], [1, 2, 5]]), dims=("v", "w")),
            Table(np.array([[[2, 1], [1, 3]], [[1, 2], [3, 1]]]), dims=("v", "w", "x")),
            Table(np.array([3, 1, 4, 2]), dims=("v",))]


def _warmup_mechanism(cls, tables, priors_, rng) -> set:
    """Every route of ``cls`` that applies to a tiny release of each table: posterior,
    count and a few draws.  Returns the routes run."""
    import copy
    import inspect

    import numpy as np

    from ._budget import budget
    from .posterior import count_candidates, posterior
    from .table import Table
    ran = set()
    if cls.name == "cyclic":     # its enumerator's kernels come per block of cycles: 4 x 4 too
        tables = [*tables, Table(np.array([[5, 1, 3, 1], [2, 3, 1, 4], [3, 1, 2, 2],
                                           [1, 4, 2, 2]]), dims=("v", "w"))]
    for table in tables:
        extra = {}
        if "sensitive" in inspect.signature(cls.protect).parameters:   # suppression
            sens = table.values == table.values.min()
            extra = {"sensitive": sens, "protection": sens * 1.0}
        try:
            mech = cls.from_config(dict(_WARMUP_PARAMS.get(cls.name, {})), shape=table.shape,
                                   dims=table.dims)
            rel = mech.protect(table, rng, **extra)
        except (ValueError, TypeError) as exc:
            if "needs parameter" in str(exc):
                raise ValueError(f"warmup: {exc}: add it to cli._WARMUP_PARAMS") from None
            continue                       # the mechanism does not take tables of this shape
        for prior in priors_:
            for route in mech.routes:
                if route.applies(rel, prior) is not None:
                    continue
                try:
                    if not route.exact and hasattr(route, "draws"):   # Monte Carlo: short
                        short = copy.copy(route)
                        short.draws = short.warmup = 20
                        post = short.run(rel, prior, count=False, memory=budget())
                    else:
                        post = posterior(rel, prior, route=route.name, count=False)
                except ValueError:         # e.g. no candidate under this prior: no kernel ran
                    continue
                ran.add(route.name)
                try:
                    if route.counts:
                        count_candidates(rel, prior, route=route.name)
                except ValueError:         # no count (unbounded noise): no kernel ran
                    pass
                try:
                    post.sample(3, rng)
                except ValueError:         # no draws from this route
                    pass
    return ran


def _warmup_grouped(table, priors_, rng) -> str:
    """The grouped-subtotals route: a margins-only release whose rows come in two groups
    with published subtotals (no mechanism's protect makes one)."""
    import numpy as np

    from .mechanisms.margins_only import MarginsOnly
    from .posterior import count_candidates, posterior
    from .release import Release
    x = table.values
    rel = Release(None, margins={("v",): x.sum(1), ("w",): x.sum(0), (): x.sum()},
                  mechanism=MarginsOnly(), dims=("v", "w"), groups={"v": [[0, 1], [2]]},
                  subtotals={("v", "w"): np.stack([x[:2].sum(0), x[2]]),
                             ("v",): np.array([x[:2].sum(), x[2].sum()])})
    for prior in priors_:
        posterior(rel, prior, route="grouped-dp").sample(3, rng)
        count_candidates(rel, prior, route="grouped-dp")
    return "margins-only 3 x 3, rows in 2 groups: route grouped-dp"


def _cmd_warmup(args) -> int:
    import warnings

    import numpy as np

    from kernels._jit import watch_compiles

    from . import priors
    from .inference.sis import estimate_count
    from .mechanisms import REGISTRY
    print("riskengine warmup: a tiny instance of every inference route of every mechanism; "
          "each numerical kernel compiles once for this machine or loads from numba's cache",
          flush=True)
    tables = _warmup_tables()
    priors_ = (priors.Uniform(), priors.Poisson(2.0))
    rng = np.random.default_rng(0)
    start = time.perf_counter()
    with watch_compiles() as watch, warnings.catch_warnings():
        warnings.simplefilter("ignore")     # tiny Monte Carlo runs do not converge: no matter
        steps = [(name, cls) for name, cls in sorted(REGISTRY.items()) if cls.routes]
        steps += [("grouped subtotals", "grouped"), ("count estimate (SIS)", "sis")]
        for name, cls in steps:
            t0, before = time.perf_counter(), dict(watch.seconds)
            if cls == "grouped":
                what = _warmup_grouped(tables[0], priors_, rng)
            elif cls == "sis":
                from .mechanisms.margins_only import MarginsOnly
                estimate_count(MarginsOnly().protect(tables[0]), n=200)
                what = "margins-only 3 x 3"
            else:
                ran = _warmup_mechanism(cls, tables, priors_, rng)
                what = "routes " + (", ".join(sorted(ran)) or "none")
            new = sorted(m.rpartition(".")[2] for m in watch.seconds if m not in before)
            print(f"  {name:<20} {what}: {time.perf_counter() - t0:.1f} s"
                  + (f" (compiled {', '.join(new)})" if new else ""), flush=True)
    total = time.perf_counter() - start
    compiled = ", ".join(f"{m.rpartition('.')[2]} {s:.1f} s"
                         for m, s in sorted(watch.seconds.items(), key=lambda x: -x[1]))
    print(f"warmup done in {total:.1f} s: " + (
        f"{watch.count} kernel{'s' if watch.count > 1 else ''} compiled ({compiled}); the "
        "rest loaded from the cache"
        if watch.count else "every kernel loaded from numba's cache, nothing to compile"))
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="riskengine", description="Bayesian disclosure-risk analysis of "
                "statistical tables.")
    p.add_argument("--version", action="version", version=f"riskengine {__version__}")
    sub = p.add_subparsers(dest="command")
    a = sub.add_parser("assess", help="posterior risk of every cell of a release")
    a.add_argument("release", nargs="?", help="release JSON (default: bundled seed 003 example); "
                   "a magnitude release (cell suppression of magnitudes, CTA) gets the "
                   "audit instead (as riskengine audit), written to audit.nc / audit.html")
    a.add_argument("--prior", default="uniform",
                   help="uniform | flat:LOW[,HIGH] | poisson:RATE | negbin:MEAN,DISP")
    a.add_argument("--truth", help="original table (CSV or netCDF) for exact-disclosure risk")
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
                        "(R-hat > 1.01 or ESS < 400; nothing written)")
    a.set_defaults(func=_cmd_assess)
    pr = sub.add_parser("protect", help="protect a table, write the release JSON")
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
    pr.add_argument("--out", help="release JSON path (default: stdout)")
    pr.set_defaults(func=_cmd_protect)
    c = sub.add_parser("count", help="number of original tables consistent with a release")
    c.add_argument("release")
    c.add_argument("--prior", default="uniform",
                   help="count only tables this prior allows (e.g. flat:1: every cell >= 1)")
    c.add_argument("--route", default="auto", help="inference route (default auto)")
    c.add_argument("--memory", help="memory budget, e.g. 8GB (default: half the available)")
    c.add_argument("--sis", type=int, metavar="N",
                   help="estimate the count from N sequential importance samples instead "
                        "(margins-only 2-D releases; also the fallback, with 10,000, when "
                        "the exact count does not fit the memory budget)")
    c.set_defaults(func=_cmd_count)
    an = sub.add_parser("analyze", help="posterior of statistics of the original table "
                        "(chi-square, Cramer's V, odds ratios, ...)")
    an.add_argument("release", nargs="?", help="release JSON (default: bundled seed 003 example)")
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
    an.set_defaults(func=_cmd_analyze)
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
    cp.set_defaults(func=_cmd_compare)
    sm = sub.add_parser("simulate", help="intruder simulation: protect and attack many tables")
    sm.add_argument("config", nargs="?", help="TOML config (default: bundled simulate_example)")
    sm.add_argument("--out", default="riskengine-out",
                    help="output folder (simulate.nc, simulate.html + PNGs)")
    sm.add_argument("--n-tables", type=int, help="override the config's n_tables")
    sm.add_argument("--scheduler", help="serial | dask | tcp://host:port (overrides config)")
    sm.add_argument("--seed", type=int, help="override the config's seed")
    sm.add_argument("--no-report", dest="report", action="store_false",
                    help="write the netCDF only, no HTML report and plots (an earlier "
                         "simulate.html in the folder is removed)")
    sm.set_defaults(func=_cmd_simulate)
    r = sub.add_parser("report", help="HTML report + PNG plots of a results netCDF "
                       "(from assess, compare, simulate or analyze)")
    r.add_argument("results", help="results netCDF (e.g. riskengine-out/posterior.nc)")
    r.add_argument("--out", help="output folder (default: the folder of RESULTS); the "
                   "report is named after the kind of results (assess.html, compare.html, "
                   "simulate.html, analyze.html)")
    r.set_defaults(func=_cmd_report)
    su = sub.add_parser(
        "suppress", help="microdata -> magnitude table -> sensitive cells by rules -> "
        "complementary cell suppression -> release JSON (audited)",
        description="Build the magnitude table of --value by --dims from MICRODATA (one row "
        "per contribution), find the sensitive cells by the --rule(s) (primary "
        "suppressions), choose complementary (secondary) suppressions that protect every "
        "one of them, audit the pattern by linear programming and write the release. "
        "Rule syntax (--rule, repeatable): " + _RULE_SYNTAX + ".")
    su.add_argument("microdata", help="CSV, one row per contribution: the --dims columns "
                    "and the --value column")
    su.add_argument("--dims", type=_dims_list, required=True, metavar="COL,COL",
                    help="the columns that classify a contribution, e.g. region,industry")
    su.add_argument("--value", required=True, metavar="COL",
                    help="the column of contributions (nonnegative numbers), e.g. turnover")
    su.add_argument("--rule", type=_rule_spec, action="append", required=True,
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
    su.add_argument("--out", help="release JSON path (default: the JSON on stdout, the "
                    "summary on stderr)")
    su.set_defaults(func=_cmd_suppress)
    au = sub.add_parser(
        "audit", help="what an intruder can derive from a suppressed or adjusted (CTA) "
        "magnitude release; with the microdata, whether every sensitive cell is protected",
        description="The LP interval of every suppressed cell of a cell-suppression release "
        "(the smallest and largest value it can take in a nonnegative table that agrees "
        "with everything published), or the published cells of a CTA release. With "
        "--microdata and the rule (the agency's confidential inputs; defaults: what "
        "riskengine suppress recorded in the release), the sensitive cells, their "
        "protection and whether each one is protected. Printed as a table; written to "
        "audit.nc and audit.html in --out. Rule syntax: " + _RULE_SYNTAX + ".")
    au.add_argument("release", help="release JSON (cell suppression or CTA)")
    au.add_argument("--microdata", metavar="CSV", help="the microdata the release was made "
                    "from (one row per contribution)")
    au.add_argument("--value", metavar="COL", help="the column of contributions (default: "
                    "as recorded by riskengine suppress)")
    au.add_argument("--dims", type=_dims_list, metavar="COL,COL",
                    help="the classifying columns (default: the release's dims)")
    au.add_argument("--rule", type=_rule_spec, action="append", metavar="RULE",
                    help="sensitivity rule, repeatable: p:P | pq:P,Q | nk:N,K (default: as "
                         "recorded by riskengine suppress)")
    au.add_argument("--respondent", metavar="COL", help="respondent id column")
    au.add_argument("--out", default="riskengine-out",
                    help="output folder (audit.nc, audit.html)")
    au.add_argument("--no-report", dest="report", action="store_false",
                    help="write audit.nc only (an earlier audit.html in the folder is removed)")
    au.set_defaults(func=_cmd_audit)
    w = sub.add_parser("warmup", help="compile every numerical kernel now (e.g. in a "
                       "container build), so that no later run waits for it",
                       description="Run a tiny instance of every inference route of every "
                       "registered mechanism, which compiles each numerical kernel once for "
                       "this machine (numba's cache keeps it) or loads it from the cache.")
    w.set_defaults(func=_cmd_warmup)
    return p


class _Parser(argparse.ArgumentParser):
    """argparse, with a bad argument reported as one line (exit code 2)."""

    def error(self, message):
        self.exit(2, f"riskengine: error: {message} (see {self.prog} --help)\n")


#: arguments that name an input file: checked before the library loads (a fast answer)
_INPUT_FILES = ("release", "truth", "table", "config", "results", "microdata")


def _check_inputs(args) -> None:
    for name in _INPUT_FILES:
        path = getattr(args, name, None)
        if path is None:
            continue
        if not Path(path).exists():
            raise FileNotFoundError(f"no such file: {path}")
        if Path(path).is_dir():
            raise IsADirectoryError(f"{path} is a folder; a file is needed")


def _cli_hints(msg: str, args) -> str:
    """The library's way forward in the command's words (``memory=`` -> ``--memory``)."""
    if hasattr(args, "memory"):
        msg = msg.replace("memory=", "--memory")
    else:
        msg = msg.replace("; raise memory= if the machine has more",
                          f"; riskengine {args.command} uses the default memory budget "
                          "(half the available memory)")
    if args.command == "suppress":
        msg = msg.replace("suppress_totals=True", "--suppress-totals")
    if hasattr(args, "route"):             # "routes that apply: gibbs, dp" (a named route)
        msg = re.sub(r"(routes that apply: [\w-]+(?:, [\w-]+)*)",
                     r"\1 (--route NAME chooses one)", msg)
    return msg


def _compiling(module: str) -> None:
    from kernels._jit import compile_estimate
    print(f"riskengine: compiling numerical kernels ({module.rpartition('.')[2]}) once for "
          f"this machine, ~{compile_estimate(module):.0f} s (later runs load them from the "
          "cache; riskengine warmup compiles them all ahead)", file=sys.stderr, flush=True)


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        _check_inputs(args)
        if args.command == "report":
            return args.func(args)
        from kernels._jit import watch_compiles

        from .mechanisms import load
        load()             # the mechanism registry (the console script's riskengine is lazy)
        with watch_compiles(None if args.command == "warmup" else _compiling):
            return args.func(args)
    except KeyboardInterrupt:
        print("riskengine: error: interrupted", file=sys.stderr)
        return 130
    except MemoryError as exc:
        msg = str(exc).splitlines()[0] if str(exc) else "an allocation failed"
        tip = ("; a smaller --memory budget refuses routes that do not fit before they start"
               if hasattr(args, "memory") else "")
        print(f"riskengine: error: out of memory ({msg}){tip}", file=sys.stderr)
        return 2
    except (ValueError, TypeError, FileNotFoundError, RuntimeError, FloatingPointError,
            OSError, KeyError, ImportError) as exc:
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        print(f"riskengine: error: {_cli_hints(msg, args)}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
