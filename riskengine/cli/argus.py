"""The commands on tau-Argus files: ``run JOB.arb`` (a batch file), ``suppress --rda
--tab [--hst]`` (protect a table prepared for tau-Argus) and ``audit --rda --tab
--pattern`` (audit another tool's pattern of it).  Each prints the pattern's summary and
the audit verdict, and writes into ``--out``: the status-flagged table as tau-Argus writes
it (code-value with status numbers, WRITETABLE type 3 with AS+), the same as sdcTable
writes it (``sdcStatus`` s / u / x / z), ``audit.nc`` and the audit report."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from .output import maybe_report, out_dir, text_table


def _argus_mode(args, command) -> bool:
    """Whether the command runs on tau-Argus files (--rda); refuses a mix."""
    if getattr(args, "rda", None) is None:
        for opt in ("tab", "hst", "argus_rule", "pattern"):
            if getattr(args, opt, None):
                flag = "--safety-rule" if opt == "argus_rule" else "--" + opt
                raise ValueError(f"{flag} belongs to a table prepared for tau-Argus: give "
                                 "--rda (and --tab) too")
        return False
    other = "microdata" if command == "suppress" else "release"
    if getattr(args, other, None):
        raise ValueError(f"give either {other.upper()} or --rda/--tab (a table prepared for "
                         "tau-Argus), not both")
    return True


def cmd_suppress(args) -> int:
    """``riskengine suppress``: microdata or a count table (:mod:`.magnitude`), or a table
    prepared for tau-Argus (``--rda --tab``)."""
    if _argus_mode(args, "suppress"):
        if args.rule:
            raise ValueError("--rule is riskengine's rule syntax; a tau-Argus table takes "
                             "--safety-rule 'NK(3,75)|FREQ(3,10)'")
        return cmd_suppress_argus(args)
    from .magnitude import cmd_suppress as cmd
    return cmd(args)


def cmd_audit(args) -> int:
    """``riskengine audit``: a release (:mod:`.magnitude`), or a tau-Argus table's pattern
    (``--rda --tab [--pattern]``)."""
    if getattr(args, "sdc", None):
        if args.release or getattr(args, "rda", None) or getattr(args, "jj", None):
            raise ValueError("--sdc is audited on its own: give no release, --rda or --jj")
        return cmd_audit_sdc(args)
    if getattr(args, "jj", None):
        if args.release or getattr(args, "rda", None):
            raise ValueError("--jj is audited on its own: give no release and no --rda")
        return cmd_audit_jj(args)
    if _argus_mode(args, "audit"):
        return cmd_audit_argus(args)
    from .magnitude import cmd_audit as cmd
    return cmd(args)


def _rules(text):
    """``"NK(3,75)|FREQ(3,10)"`` -> [("NK", (3.0, 75.0)), ...] (the batch syntax)."""
    if not text:
        return []
    from .._formats.arb import _Line
    from .._formats.arb import _rules as parse
    return parse(_Line("--rule", None, text))["rules"]


def _summary(at, rel, st, rules, method) -> list:
    c = Counter(st)
    n = int(at.system.published.sum())
    return [(f"table {at.table.name}: {' x '.join(at.explanatory)}, {n} cells "
             "(every level of every hierarchy)"),
            "rules: " + ("; ".join(f"{k}({', '.join(f'{v:g}' for v in p)})" for k, p in rules)
                         if rules else "the status column (and apriori file) only"),
            f"primary: {c['primary']}, secondary: {c['secondary']}, forced safe "
            f"(protected): {c['forced_safe']}, empty: {c['empty']}, safe: {c['safe']}"
            + (f" (method {method})" if method else "")]


def _write(args, at, rel, st, ds, stem: str) -> int:
    """Write the status-flagged files, audit.nc and the report; print the verdict."""
    import numpy as np

    from .._batch import write_argus_output
    from .._formats.sdc import write_sdc_status
    from .._io import atomic_write_netcdf, tidy
    from ..report import KIND_ATTR, audit_rows, audit_verdict
    from .magnitude import strict_status

    out = out_dir(args.out)
    p1 = out / f"{stem}.csv"
    write_argus_output(at, rel, st, p1, kind=3, options={"add_status": True,
                                                         "names_first_line": True})
    cells = at.cells[list(at.explanatory)].copy()
    cells["value"] = np.where(rel.hidden, np.nan, at.vector("value", 0.0))
    pub = at.system.published
    p2 = out / f"{stem}_sdcstatus.csv"
    write_sdc_status(cells[pub].reset_index(drop=True), list(st[pub]), p2)
    ds.attrs.update({KIND_ATTR: "audit", "audit_of": "suppression",
                     "auditor": "the table's cells, statuses and rules (tau-Argus files)",
                     "release": f"tau-Argus table {at.table.name}"})
    header, rows = audit_rows(ds)
    label, lines = audit_verdict(ds)
    if rows:
        print("\n".join(text_table(header, rows)))
    print(f"AUDIT: {label}: " + "; ".join(lines))
    path = out / "audit.nc"
    for name, var in list(ds.data_vars.items()):
        if var.dtype.kind == "f":
            ds[name] = var.copy(data=tidy(var.values))
    atomic_write_netcdf(ds, path)
    print(f"written: {p1} (tau-Argus code-value, status numbers), {p2} (sdcTable "
          f"sdcStatus), {path}")
    maybe_report(args, ds, path, "audit")
    return strict_status(args, ds)


def _read(args):
    from .._formats.argus import read_argus
    if not args.tab:
        raise ValueError("--rda needs --tab (the table file, one line per cell)")
    return read_argus(args.rda, args.tab, args.hst, additivity=args.additivity)


def cmd_suppress_argus(args) -> int:
    """``riskengine suppress --rda T.rda --tab T.tab [--hst T.hst] [--argus-rule R]``."""
    from .._batch import audit_argus, protect_argus
    at = _read(args)
    rules = _rules(args.argus_rule)
    rel, st = protect_argus(at, rules, method=args.method, time_limit=args.time_limit)
    ds = audit_argus(at, rel, rules)
    print("\n".join(_summary(at, rel, st, rules, args.method)))
    return _write(args, at, rel, st, ds, Path(args.tab).stem + "_protected")


def cmd_audit_argus(args) -> int:
    """``riskengine audit --rda T.rda --tab T.tab --pattern OUT.csv``: another tool's
    pattern of the table, audited; without ``--pattern``, the table's own status column
    (a tau-Argus intermediate file: M = secondary) is the pattern."""
    from .._batch import audit_argus, read_pattern
    at = _read(args)
    rules = _rules(args.argus_rule)
    if args.pattern:
        rel, st = read_pattern(at, args.pattern)
        src = args.pattern
    else:
        from .._batch import status_pattern
        rel, st = status_pattern(at)
        src = f"{args.tab} (its status column)"
    ds = audit_argus(at, rel, rules)
    print(f"pattern: {src}")
    print("\n".join(_summary(at, rel, st, rules, None)))
    _posterior(args, at, rel, st)
    return _write(args, at, rel, st, ds, Path(args.tab).stem + "_audited")


def _posterior(args, at, rel, st) -> None:
    """``--posterior``: for a count table, the exact posterior of every primary cell under
    a uniform prior over the tables consistent with the pattern."""
    import numpy as np

    if not getattr(args, "posterior", False):
        return
    if at.table.kind != "count":
        raise ValueError("--posterior needs a frequency (count) table: a magnitude table's "
                         "cells have no posterior here (the audit is its answer)")
    from ..inference.resolve import posterior
    from ..priors import Uniform
    post = posterior(rel, prior=Uniform())
    cells = post.releases[0]
    x = at.vector("value", 0.0)
    rows = []
    for j in np.flatnonzero(st == "primary"):
        pm = cells.pmf.isel(cell=int(j)).values
        v = int(np.rint(x[j]))
        rows.append([at.system.labels()[j], str(v),
                     f"{pm[v] if v < pm.size else 0.0:.4f}",
                     f"{pm[: 3].sum():.4f}", str(int((pm > 0).sum()))])
    print(f"posterior (route {post.attrs['route']}, "
          f"{'exact' if not post.attrs.get('approximate') else 'APPROXIMATE'}; uniform over "
          f"the {post.n_candidates} tables consistent with the pattern):")
    print("\n".join(text_table(["cell", "true", "Pr(true)", "Pr(<=2)", "values possible"],
                                rows)))


def cmd_audit_sdc(args) -> int:
    """``riskengine audit --sdc RESULT.csv --dims A,B [--hierarchy A=FILE]``: an sdcTable
    result's pattern (sdcStatus u / x suppressed) audited, with its hierarchies."""
    from .._batch import audit_argus, status_pattern
    from .._formats.sdc_result import read_sdc_result
    if not args.dims:
        raise ValueError("--sdc needs --dims (the result's code columns, e.g. region,gender)")
    hier = {}
    for spec in args.hierarchy or []:
        dim, _, path = spec.partition("=")
        if not path:
            raise ValueError(f"--hierarchy {spec!r}: give DIM=FILE (a to-from CSV with "
                             "mapsFrom, mapsTo, sign; a level,name CSV; or an .hrc file)")
        hier[dim] = _hierarchy_file(dim, path)
    at = read_sdc_result(args.sdc, args.dims, hier, value=args.value or "freq",
                         additivity=args.additivity)
    rules = _rules(args.argus_rule)
    rel, st = status_pattern(at)
    ds = audit_argus(at, rel, rules)
    print(f"pattern: {args.sdc} (sdcStatus)")
    print("\n".join(_summary(at, rel, st, rules, None)))
    _posterior(args, at, rel, st)
    return _write(args, at, rel, st, ds, Path(args.sdc).stem + "_audited")


def _hierarchy_file(dim, path):
    import pandas as pd

    from ..hierarchy import Hierarchy
    p = Path(path)
    if p.suffix.lower() == ".hrc":
        return Hierarchy.from_hrc(p, name=dim)
    head = pd.read_csv(p, nrows=0).columns.tolist()
    if {"mapsFrom", "mapsTo"} <= set(head):
        from .._formats.sdc import tofrom_hierarchies
        hs = tofrom_hierarchies(p, name=dim)
        if len(hs) != 1:
            raise ValueError(f"{path}: the to-from table gives {len(hs)} alternative "
                             "hierarchies; an sdcTable result has one per dim")
        return hs[0]
    if {"level", "name"} <= set(head):
        return Hierarchy.from_levels(pd.read_csv(p, dtype=str), name=dim)
    raise ValueError(f"{path}: a hierarchy file is an .hrc file, a to-from CSV (mapsFrom, "
                     f"mapsTo, sign) or a level,name CSV; its columns are {head}")


def cmd_audit_jj(args) -> int:
    """``riskengine audit --jj FILE``: a JJ file's pattern audited on its own."""
    from .._batch import audit_jj
    from .._io import atomic_write_netcdf
    from .magnitude import strict_status
    ds = audit_jj(args.jj)
    a = ds.attrs
    rows = []
    for j in range(ds.sizes["cell"]):
        if bool(ds.suppressed[j]) or bool(ds.sensitive[j]):
            state = ("UNDER-PROTECTED" if bool(ds.under_protected[j]) else
                     "exactly disclosed" if bool(ds.exact[j]) else
                     "protected" if bool(ds.sensitive[j]) else "complementary")
            rows.append([str(j), str(ds.status.values[j]), f"{float(ds.value[j]):g}",
                         f"{float(ds.lower[j]):g}", f"{float(ds.upper[j]):g}",
                         f"{float(ds.protection_lower[j]):g}",
                         f"{float(ds.protection_upper[j]):g}", state])
    if rows:
        print("\n".join(text_table(["cell", "status", "value", "lower", "upper",
                                      "protection below", "protection above", "audit"],
                                     rows)))
    label = "NOT PROTECTED" if a["n_under_protected"] else "PROTECTED"
    print(f"AUDIT: {label}: {a['n_suppressed']} suppressed cells; {a['n_exact']} of them "
          f"exactly disclosed; {a['n_under_protected']} of {a['n_sensitive']} primary cells "
          "under-protected")
    out = out_dir(args.out)
    path = out / "audit_jj.nc"
    atomic_write_netcdf(ds, path)
    print(f"written: {path}")
    return strict_status(args, ds)


def cmd_run(args) -> int:
    """``riskengine run JOB.arb``: the commands of a tau-Argus batch file riskengine
    implements, in order (the others refused by name before any work)."""
    from .._batch import run_batch
    res = run_batch(args.job, out_dir=args.out, progress=lambda m: print(m, flush=True))
    for note in res.notes:
        print(f"note: {note}")
    status = 0
    for k, (rel, st) in res.releases.items():
        at = res.tables[k - 1]
        print()
        print("\n".join(_summary(at, rel, st, res.rules.get(k, []), None)))
        sub = argparse_namespace(args, out=str(Path(args.out or Path(args.job).parent)
                                               / f"table{k}"))
        status = max(status, _write(sub, at, rel, st, res.audits[k], f"table{k}"))
    if not res.releases:
        print("no <SUPPRESS> command: the tables were read and checked; nothing protected")
    return status


def argparse_namespace(args, **changes):
    import argparse
    d = dict(vars(args))
    d.update(changes)
    return argparse.Namespace(**d)
