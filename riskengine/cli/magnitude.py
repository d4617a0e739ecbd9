"""The magnitude-table commands: ``suppress`` (microdata -> sensitive cells ->
complementary suppression -> release; or a count table and the threshold rule,
``--rule freq:N``) and ``audit`` (what an intruder can derive from a
suppressed or adjusted release; with the microdata, whether each sensitive cell is
protected)."""

from __future__ import annotations

import sys

from .output import maybe_report, out_dir, text_table
from .releases import csv_path, load_release, save_release, tidy_release
from .rules import is_frequency, rule_spec, sensitivity_rule


def _read_microdata(path, dims, value: str, respondent=None) -> dict:
    """The columns of a microdata CSV (one row per contribution): dims as labels (as
    tables read them: integers where they parse), the value column as numbers."""
    import numpy as np

    from .._io import _label, _number, _read_rows
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
        from ..magnitude.contributions import contributions
        from ..magnitude.sensitivity import assess
        cols = _read_microdata(path, dims, value, respondent)
        kw = {}
        if release is not None:             # the release's categories and totals
            kw = {"categories": {d: list(release.coords[d]) for d in dims},
                  "margins": list(release.margins)}
        self.contribs = contributions(cols, dims=dims, value=value, respondent=respondent,
                                      **kw)
        self.rule = sensitivity_rule(rules)
        self.sens = assess(self.contribs, self.rule)
        self.n_rows = len(cols[value])
        self.text = (f"microdata {path} ({self.n_rows} contributions, value {value!r}), "
                     f"rule {self.rule.describe()}")


class _CountAuditor:
    """The agency's view of a count table: the counts and the threshold rule's sensitive
    cells (``contribs``: the original table, as ``rk.audit`` takes it)."""

    def __init__(self, path, rules):
        from .._io import read_table
        from ..magnitude.sensitivity import assess
        other = [text for *spec, text in rules if not is_frequency(spec)]
        if other:
            raise ValueError(f"--rule {other[0]}: a count table has no contributions, only "
                             "the threshold rule applies to it (--rule freq:N); the p, pq "
                             "and nk rules need the microdata (--dims and --value)")
        if len(rules) > 1:
            raise ValueError("a count table takes one --rule freq:N (got "
                             f"{', '.join(t for *_, t in rules)})")
        self.table = read_table(path)
        if self.table.kind != "count":
            raise ValueError(f"{path} holds magnitudes (values that are not whole numbers), "
                             "not counts: the threshold rule counts units; a magnitude table "
                             "needs its microdata (--dims and --value)")
        self.rule = sensitivity_rule(rules)
        self.contribs = self.table
        self.sens = assess(self.table, self.rule)
        self.text = f"count table {path}, rule {self.rule.describe()}"


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
    if value is None and release.kind == "count":   # the original count table
        counted = release.info.get("count_table", {})
        specs = args.rule or [rule_spec(t) for t in counted.get("rules", ())]
        if not specs:
            raise ValueError("--microdata with a count table needs --rule freq:N (this "
                             "release does not record how it was made)")
        for opt in ("dims", "respondent"):
            if getattr(args, opt, None):
                raise ValueError(f"--{opt} describes microdata: give --value too (without "
                                 "--value, --microdata of a count release is its count table)")
        return _CountAuditor(args.microdata, specs)
    specs = args.rule or [rule_spec(t) for t in made.get("rules", ())]
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


def audits(release) -> bool:
    """The audit is the answer for this release, which has no posterior (a magnitude
    release, or a mechanism without inference routes): a suppression or CTA release."""
    return _audit_of(release) is not None


def no_posterior(release) -> str:
    """Why ``assess`` / ``count`` have no posterior for a release the audit answers."""
    if _audit_of(release) == "cta":
        return (f"a CTA release ({release.mechanism.describe()}) publishes adjusted "
                "magnitudes: magnitude releases have no integer posterior, and this one no "
                "likelihood either (its protection levels and capacities are confidential)")
    return f"magnitude releases ({release.mechanism.describe()}) have no integer posterior"


def assess_audit(args, release, truth) -> int:
    """``assess`` of a release the audit answers: say so, then run the audit."""
    print(f"riskengine assess: {no_posterior(release)}; the audit is the answer, as "
          "riskengine audit gives it" + ("" if _audit_of(release) == "cta" else
                                         ": the intervals an intruder can derive for the "
                                         "suppressed cells by linear programming"))
    if truth is not None:
        print("riskengine assess: --truth is not used here: riskengine audit --microdata "
              "FILE --rule ... checks each sensitive cell against the original")
    return run_audit(args, release, None)


def _audit_dataset(release, auditor=None):
    """``rk.audit``'s Dataset of a suppression release (the auditor's view with
    ``auditor``), or of a CTA release: every cell published; with ``auditor``, each
    sensitive cell's adjustment against its protection."""
    import numpy as np
    import xarray as xr

    from ..magnitude.audit import audit
    from ..magnitude.intervals import protection_tol
    from ..magnitude.protection import sensitive_cells
    from ..report import KIND_ATTR, describe_release
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


def run_audit(args, release, auditor) -> int:
    """Print the audit, write ``audit.nc`` and (unless ``--no-report``) ``audit.html``."""
    from .._io import atomic_write_netcdf, tidy
    from ..report import audit_rows, audit_verdict
    ds = _audit_dataset(release, auditor)
    header, rows = audit_rows(ds)
    label, lines = audit_verdict(ds)
    print("\n".join(text_table(header, rows)) if rows else
          "no cell is suppressed or known to be sensitive")
    print(f"\nmechanism: {release.mechanism.describe()}")
    print(f"audited with: {ds.attrs['auditor']}")
    print(f"AUDIT: {label}: " + "; ".join(lines))
    out = out_dir(args.out)
    path = out / "audit.nc"
    for name, var in list(ds.data_vars.items()):   # sums as 11144.2, not 11144.199999999999
        if var.dtype.kind == "f":
            ds[name] = var.copy(data=tidy(var.values))
    atomic_write_netcdf(ds, path)
    print(f"audit written to {path}")
    maybe_report(args, ds, path, "audit")
    return strict_status(args, ds)


def strict_status(args, ds) -> int:
    """The exit status of an audit: 3 with ``--strict`` when it finds a disclosure (said
    on stderr), else 0."""
    found = disclosures(ds)
    if getattr(args, "strict", False) and found:
        print(f"riskengine {args.command}: --strict: the audit finds a disclosure "
              f"({'; '.join(found)})", file=sys.stderr)
        return 3
    return 0


def disclosures(ds) -> list:
    """What the audit Dataset finds disclosed, in words (empty: nothing): suppressed
    cells an intruder derives exactly, sensitive cells derived within less than their
    protection, sensitive cells not protected (with the microdata)."""
    def count(prefix):
        return int(sum(int(ds[k].sum()) for k in ds.data_vars if k.startswith(prefix)))
    found = []
    for prefix, what in (("exact", "suppressed cells exactly disclosed"),
                         ("approximate_disclosure", ("sensitive cells approximately "
                          "disclosed (interval narrower than their protection)")),
                         ("under_protected", "sensitive cells not protected")):
        n = count(prefix)
        if n:
            found.append(f"{n} {what}")
    return found


def cmd_audit(args) -> int:
    if args.release is None:
        raise ValueError("the following arguments are required: release (or --rda and "
                         "--tab: a table prepared for tau-Argus)")
    rel = load_release(args.release, args)
    if _audit_of(rel) is None:        # before the microdata are read
        _audit_dataset(rel)
    return run_audit(args, rel, _auditor(args, rel))


def cmd_suppress(args) -> int:
    if args.microdata is None or not args.rule:
        raise ValueError("the following arguments are required: microdata and --rule (or "
                         "--rda and --tab: a table prepared for tau-Argus)")
    from ..mechanisms.suppression import suppress
    from ..report import audit_verdict, magnitude
    if args.out:
        csv_path(args.out)              # a bad --out is refused before the work
    opts = {"method": args.method, "cost": args.cost, "suppress_zeros": args.suppress_zeros,
            "suppress_totals": args.suppress_totals, "time_limit": args.time_limit}
    rules = [t for *_, t in args.rule]
    if args.value is None:              # a count table: the threshold rule counts its cells
        for opt in ("dims", "respondent"):
            if getattr(args, opt):
                raise ValueError(f"--{opt} describes microdata, so the following arguments "
                                 "are required: --value (without --value, the input is a "
                                 "count table)")
        aud = _CountAuditor(args.microdata, args.rule)
        rel = suppress(aud.table, aud.rule, **opts)
        rel.info["count_table"] = {"rules": rules}
        t = aud.table
        what = (f"riskengine suppress: count table {args.microdata} ("
                + " x ".join(f"{d} ({n})" for d, n in zip(t.dims, t.shape))
                + f", {int(t.values.sum())} units); rule {aud.rule.describe()}")
    else:
        if not args.dims:
            raise ValueError("--value names the column of microdata contributions: give "
                             "--dims too (the columns that classify a contribution)")
        aud = _Auditor(args.microdata, args.dims, args.value, args.rule, args.respondent)
        rel = suppress(aud.contribs, aud.sens, **opts)
        rel.info["microdata"] = {"value": args.value, "rules": rules,
                                 **({"respondent": args.respondent} if args.respondent
                                    else {})}
        t = aud.contribs.table
        what = (f"riskengine suppress: {aud.n_rows} contributions -> "
                + " x ".join(f"{d} ({n})" for d, n in zip(t.dims, t.shape))
                + f" table of {args.value}; rule {aud.rule.describe()}")
    rel = tidy_release(rel)
    ds = _audit_dataset(rel, aud)
    label, lines = audit_verdict(ds)
    i = rel.info
    n_prim = i["n_sensitive"] + i["n_sensitive_totals"]
    n_sec = i["n_complementary"] + i["n_totals_suppressed"] - i["n_sensitive_totals"]
    cost = (f"{magnitude(i['value_complementary'] + i['value_totals_suppressed'])} (the value "
            "of the secondary suppressions; of every suppressed cell "
            f"{magnitude(i['value_suppressed'] + i['value_totals_suppressed'])})"
            if args.cost == "value" else f"{n_sec} secondary suppressions")
    summary = [
        what,
        f"primary suppressions: {n_prim} (sensitive cells"
        + (f", {i['n_sensitive_totals']} of them totals)" if i["n_sensitive_totals"] else ")"),
        f"secondary suppressions: {n_sec}"
        + (f" ({i['n_totals_suppressed'] - i['n_sensitive_totals']} of them totals)"
           if i["n_totals_suppressed"] > i["n_sensitive_totals"] else ""),
        f"pattern cost (--cost {args.cost}, --method {args.method}): {cost}"
        + (f"; status {i['status']}, gap {i['gap']:.3g}" if "status" in i else ""),
        f"audit: {label}: " + "; ".join(lines)]
    if args.out:
        js, table_csv = save_release(rel, args.out)
        print("\n".join(summary))
        print(f"release written to {js} (the published table: {table_csv})")
    else:                          # the release on stdout (as protect), the summary beside
        sys.stdout.write(rel.to_json(indent=1))
        print("\n".join(summary), file=sys.stderr)
    return 0

