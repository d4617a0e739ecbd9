"""The count-table commands: ``protect``, ``count``, ``assess`` and ``analyze``."""

from __future__ import annotations

import sys
from pathlib import Path

from .magnitude import assess_audit, audits, no_posterior
from .output import (
    Progress,
    bundled,
    cli_hints,
    count_text,
    diagnostics_text,
    fmt_cell,
    log_text,
    maybe_report,
    out_dir,
    remove_report,
    text_table,
)
from .releases import (
    build_mechanism,
    csv_path,
    load_release,
    param,
    protect_groups,
    protect_inputs,
    save_release,
    tidy_release,
)


def risk_report(post, rel, ds, level: float) -> str:
    """The text report of ``assess``: a row per cell, then the release, prior, route and
    the evidence (``ds``: the posterior's summary, ``post.to_dataset(truth, level)``)."""
    import numpy as np

    truth = ds.get("true")
    dims = post.dims
    header = ["cell", "published", "mode", "P(mode)", "P(true)" if truth is not None else None,
              f"{round(level * 100)}% interval"]
    header = [h for h in header if h is not None]
    rows = []
    for idx in np.ndindex(*post.shape):
        labels = [post.coords[d][i] for d, i in zip(dims, idx)]
        pv = ds["published"].values[idx] if "published" in ds else np.nan
        pub = "-" if np.isnan(pv) else f"{int(pv)}"     # "-": not published (suppressed)
        r = [fmt_cell(labels), pub,
             f"{int(ds['mode'].values[idx])}", f"{ds['max_prob'].values[idx]:.3f}"]
        if truth is not None:
            r.append(f"{ds['prob_exact'].values[idx]:.3f}")
        r.append(f"[{int(ds['lower'].values[idx])}, {int(ds['upper'].values[idx])}]")
        rows.append(r)
    out = [*text_table(header, rows), ""]
    out.append(f"mechanism: {rel.mechanism.describe()}")
    out.append(f"prior: {post.attrs.get('prior')}    route: {post.attrs.get('route')}")
    out.append("candidate original tables: " + (
        count_text(post.n_candidates) if post.n_candidates is not None
        else post.attrs.get("n_candidates_note", "unknown")))
    out.append("log evidence: " + (log_text(post.log_evidence)
                                   if np.isfinite(post.log_evidence)
                                   else "not computed by this route"))
    if post.diagnostics is not None:
        out.append(diagnostics_text(post))
    elif not post.exact:                  # an approximate likelihood: said where it is read
        out.append(f"APPROXIMATE: {post.attrs['approximation']}")
    if truth is not None:
        pe = ds["prob_exact"].values
        out.append(f"expected exactly disclosed cells: {pe.sum():.3f} of {pe.size}; "
                   f"cells with P(true) >= 0.5: {int((pe >= 0.5).sum())}")
    return "\n".join(out)



def release_and_truth(args, command: str) -> tuple:
    """The release (the bundled seed 003 example when none is given, with its original as
    the truth) and the true table of ``--truth``."""
    from .._io import read_table
    from ..release import Release
    if args.release is None:
        rel = Release.load(bundled("seed003_release.json"))
        truth_path = args.truth or bundled("seed003_original.csv")
        print(f"riskengine {command}: bundled example (Duncan & Roehrig, seed 003: 4 x 4 "
              "table, diagonal cycles, alpha = beta = 1/4)")
    else:
        rel = load_release(args.release, args)
        truth_path = args.truth
    also = getattr(args, "also", None) or []
    if getattr(args, "group", None) and not also:
        raise ValueError("--group names categories across tables: give the other releases "
                         "with --also")
    if also:
        from ..release_set import ReleaseSet
        rel = ReleaseSet([rel] + [load_release(p, args) for p in also],
                         groups=parse_groups(args.group or []))
        print(f"riskengine {command}: {len(rel)} releases of the same records together, "
              f"finest table {' x '.join(f'{d} ({n})' for d, n in zip(rel.dims, rel.shape))}")
    return rel, (read_table(truth_path) if truth_path else None)


def parse_groups(specs) -> dict:
    """``["region:North=N1,N2", ...]`` -> ``{"region": {"North": ["N1", "N2"]}}``; a
    label that is an integer is read as one, as the table readers read labels
    (``--group r:1=11,12`` matches the categories 1, 11 and 12 of a CSV)."""
    from .._io import _label
    out: dict = {}
    for spec in specs:
        dim, sep, rest = spec.partition(":")
        label, eq, members = rest.partition("=")
        parts = [_label(m) for m in members.split(",") if m.strip()]
        if not sep or not eq or not dim.strip() or not label.strip() or not parts:
            raise ValueError(f"--group {spec!r}: expected DIM:LABEL=A,B (the dim, the coarse "
                             "category, its finer categories; e.g. region:North=N1,N2)")
        groups = out.setdefault(dim.strip(), {})
        if _label(label) in groups:
            raise ValueError(f"--group {spec!r}: {label.strip()!r} of {dim.strip()!r} is "
                             "grouped twice")
        groups[_label(label)] = parts
    return out


def _audit_instead(rel) -> bool:
    """The audit answers for ``rel``: decided by the release and its mechanism (a count
    release whose mechanism has inference routes gets its posterior at once); a release
    without a posterior that the audit does not take gets the resolver's refusal."""
    if rel.kind == "count" and rel.mechanism.routes:
        return False
    return audits(rel)


def assess_policy(args):
    """The verdict's policy: ``--policy FILE`` (TOML), then ``--cells``, ``--baseline``,
    ``--threshold`` and ``--max-expected`` over it (default: ``rk.Policy()``)."""
    from .._policy import Policy
    pol = Policy.from_toml(args.policy) if getattr(args, "policy", None) else Policy()
    changes = {"cells": getattr(args, "cells", None),
               "threshold": getattr(args, "threshold", None),
               "max_expected": getattr(args, "max_expected", None)}
    base = getattr(args, "baseline", None)
    try:
        pol = pol.with_(**changes)
        if base is not None:
            from dataclasses import replace
            pol = replace(pol, baseline="margins" if base == "margins" else None)
    except ValueError as exc:
        raise ValueError(f"--policy / options: {exc}") from None
    return pol


def reference_release(args, rel):
    """``--baseline RELEASE``: the reference release the verdict judges against (None for
    ``margins`` / ``none``), checked to be a release of the same table."""
    base = getattr(args, "baseline", None)
    if base in (None, "margins", "none"):
        return None
    if not Path(base).is_file():
        raise ValueError(f"--baseline {base!r}: margins, none, or the path of a reference "
                         "release (JSON); no such file")
    from ..release import Release
    try:
        ref = Release.load(base)
    except ValueError as exc:
        raise ValueError(f"--baseline {base}: not a release JSON ({exc})") from None
    if tuple(ref.dims) != tuple(rel.dims) or tuple(ref.shape) != tuple(rel.shape) or any(
            list(ref.coords[d]) != list(rel.coords[d]) for d in rel.dims):
        raise ValueError(f"--baseline {base}: the reference release's table "
                         f"{dict(zip(ref.dims, ref.shape))} is not the release's "
                         f"{dict(zip(rel.dims, rel.shape))} (dims and labels must match)")
    return ref


def provenance(args, rel, seed=None) -> dict:
    """Where a result came from: date, version, input files and their SHA-256, the
    release's hash, the seed (``provenance_*`` attrs of the result file)."""
    import datetime
    import hashlib

    from .._version import __version__
    files = []
    for name in ("release", "truth", "policy", "baseline"):
        path = getattr(args, name, None)
        if path and not (name == "baseline" and path in ("margins", "none")):
            digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
            files.append(f"{name} {path} sha256:{digest[:16]}")
    for path in getattr(args, "also", None) or ():
        digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
        files.append(f"also {path} sha256:{digest[:16]}")
    if getattr(args, "release", None) is None:
        files.append("release: the bundled example (seed 003)")
    try:
        rhash = hashlib.sha256(rel.to_json().encode()).hexdigest()[:16]
    except (AttributeError, TypeError, ValueError):
        rhash = "n/a (a release set: see its files)"
    return {"provenance_date": datetime.datetime.now(datetime.UTC).strftime(
                "%Y-%m-%d %H:%M:%S UTC"),
            "provenance_version": f"riskengine {__version__}",
            "provenance_inputs": "; ".join(files),
            "provenance_release_sha256": rhash,
            "provenance_seed": "none (an exact route)" if seed is None else str(seed)}


def _route_line(post) -> str | None:
    """The route ``auto`` passed over, in words (None when it took the first)."""
    why = post.attrs.get("route_reason", "")
    if "passed over:" in why:
        return f"route {post.attrs.get('route')}: {why}"
    return None


def cmd_assess(args) -> int:
    from .census import assess_census, is_census_config
    if is_census_config(args.release):
        return assess_census(args)
    from .. import priors
    from .._io import atomic_write_netcdf
    from .._verdict import UNDECIDED, annotate, verdict
    from ..inference.resolve import posterior
    rel, truth = release_and_truth(args, "assess")
    if _audit_instead(rel):             # magnitude releases: the audit is the answer
        return assess_audit(args, rel, truth)
    if truth is not None and truth.shape != rel.shape:
        raise ValueError(f"truth table has shape {truth.shape}, the release {rel.shape}")
    prior = priors.parse(args.prior)
    policy = assess_policy(args)
    reference = reference_release(args, rel)
    seconds = getattr(args, "time", None)
    prog = Progress("posterior")
    try:
        post = posterior(rel, prior, route=args.route, progress=prog, memory=args.memory,
                         time=seconds)
    finally:
        prog.close()
    line = _route_line(post)
    if line:
        print(line, file=sys.stderr)
    def judge(post):
        prog = Progress("baseline: the posterior of the totals alone")
        try:
            return verdict(post, truth, level=args.level, policy=policy, progress=prog,
                           baseline=reference)
        finally:
            prog.close()

    v = judge(post)
    rounds = 0
    while (getattr(args, "until_decided", False) and v.status == UNDECIDED
           and post.diagnostics is not None and rounds < 3):
        from ..protocol import MonteCarlo
        rounds += 1
        draws = int(post.diagnostics.attrs.get("draws", 1000)) * 4
        print(f"riskengine assess: undecided within Monte Carlo error: running again with "
              f"{draws} draws per chain (round {rounds} of at most 3)", file=sys.stderr)
        prog = Progress("posterior")
        try:
            post = posterior(rel, prior, route=post.attrs["route"], progress=prog,
                             memory=args.memory, mcmc=MonteCarlo(draws=draws))
        finally:
            prog.close()
        v = judge(post)
    ds = post.to_dataset(truth, args.level)     # the summary, computed once
    if "mcse_prob_exact" not in ds and truth is not None and post.chains is not None:
        ds["mcse_prob_exact"] = post.summary(truth, args.level)["mcse_prob_exact"]
    print(risk_report(post, rel, ds, args.level))
    print("\n".join(v.lines()))
    if args.strict and post.diagnostics is not None and not post.attrs.get("converged"):
        print("riskengine assess: --strict: the Monte Carlo posterior has not converged "
              f"({post.attrs.get('diagnostics')}); nothing written", file=sys.stderr)
        return 3
    out = out_dir(args.out)
    path = out / "posterior.nc"
    annotate(ds, v)
    seed = None if post.diagnostics is None else (
        args.seed if getattr(args, "seed", None) is not None else "default (fixed by the "
        "release, prior and settings)")
    ds.attrs.update(provenance(args, rel, seed))
    from ..report import describe_release
    ds.attrs["release"] = "; ".join(f"{k}: {v}" for k, v in describe_release(rel).items())
    atomic_write_netcdf(ds, path)
    print(f"posterior written to {path}")
    if args.report:
        sys.stdout.flush()  # the text report is out before the plots are drawn
        from ..report import write_report
        html = write_report(ds, out, release=rel)
        print(f"report written to {html}")
    else:
        remove_report(out, "assess")
    if args.strict and not v.passed:
        print(f"riskengine assess: --strict: the verdict is {v.label} "
              f"({'; '.join(v.reasons)})", file=sys.stderr)
        return 3
    return 0


def cmd_analyze(args) -> int:
    import numpy as np

    from .. import priors
    from .._analyze import DEFAULT, analyze
    from .._io import atomic_write_netcdf
    rel, truth = release_and_truth(args, "analyze")
    prior = priors.parse(args.prior)
    stats = args.statistic or list(DEFAULT)
    prog = Progress("posterior")
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
    out = out_dir(args.out)
    path = out / "analysis.nc"
    ds = res.to_dataset()
    if args.seed is not None:
        ds.attrs["seed"] = args.seed
    from ..report import describe_release
    ds.attrs["release"] = "; ".join(f"{k}: {v}" for k, v in describe_release(rel).items())
    atomic_write_netcdf(ds, path)
    print(f"results written to {path}")
    maybe_report(args, ds, path, "analyze")
    return 0



#: the protect options of earlier releases: each passes one mechanism parameter
_LEGACY = ("design", "alpha", "beta", "rule", "base", "method", "likelihood")


#: protect inputs that mark cells: 0/1 (or true/false) per cell, read as a boolean mask
_MASKS = ("sensitive",)


def _protect_input(key: str, value, table):
    """A protect input from ``--param``: a CSV / netCDF file in the table's layout (matched
    by dim names and labels), a JSON array, or a scalar."""
    import numpy as np

    from .._io import read_table
    from ..table import aligned
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


def cmd_protect(args) -> int:
    import numpy as np

    from .._io import read_original
    from ..protocol import lookup
    if args.out:
        csv_path(args.out)              # a bad --out is refused before the work
    # an agency's table may carry its totals (a Total row / column / category): checked
    # against the cells, then the interior is protected (the mechanism publishes its own)
    table = read_original(args.table)
    params = dict(param(p) for p in args.param or ())
    params.update({k: getattr(args, k) for k in _LEGACY if getattr(args, k) is not None})
    try:
        inputs = protect_inputs(lookup(args.mechanism))
    except ValueError:                  # an unknown name: build_mechanism says so
        inputs = {}
    kw = {k: protect_groups(params.pop(k), table) if k == "groups"
          else _protect_input(k, params.pop(k), table) for k in list(params) if k in inputs}
    mech = build_mechanism(args.mechanism, params, table.shape, table.dims, inputs)
    missing = [k for k, required in inputs.items() if required and k not in kw]
    if missing:
        raise ValueError(f"--mechanism {args.mechanism} needs the protect input"
                         f"{'s' if len(missing) > 1 else ''} {', '.join(missing)}: "
                         + " ".join(f"--param {k}=FILE.csv" for k in missing)
                         + " (the table's layout; or a JSON array or a number); optional: "
                         + (", ".join(k for k, r in inputs.items() if not r) or "none"))
    rel = tidy_release(mech.protect(table, np.random.default_rng(args.seed), **kw))
    # what was done, every parameter named (noisy counts: clip=True, no negative counts)
    print(f"protected with {rel.mechanism.describe()}",
          file=sys.stdout if args.out else sys.stderr)
    if args.out and rel.groups:         # subtotals are no row or column of a CSV table
        rel.save(args.out)
        print(f"release written to {args.out} (with subtotal groups: no published CSV "
              "beside it; assess / count / audit read the JSON)")
    elif args.out:
        js, table_csv = save_release(rel, args.out)
        print(f"release written to {js} (the published table: {table_csv})")
    else:
        sys.stdout.write(rel.to_json(indent=1))
    return 0


def cmd_count(args) -> int:
    from .. import priors
    from ..inference.resolve import count_candidates
    from ..inference.sis import applies, estimate_count
    rel = load_release(args.release, args)
    if _audit_instead(rel):
        why = no_posterior(rel)
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
    prog = Progress("count")
    try:
        try:
            n = count_candidates(rel, prior, route=args.route, memory=args.memory,
                                 progress=prog, time=getattr(args, "time", None))
        finally:
            prog.close()
        print(n)
    except ValueError as e:
        if not (sis_fits and "memory budget" in str(e) and args.route == "auto"):
            raise
        print(f"riskengine count: no exact count within the memory budget "
              f"({cli_hints(str(e), args)}); estimating by sequential importance sampling "
              "instead", file=sys.stderr)
        print(estimate_count(rel, n=10000))
    return 0

