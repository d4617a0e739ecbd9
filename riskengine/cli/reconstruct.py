"""``riskengine reconstruct [CONFIG.toml]``: the reconstruction audit of a publication.

Reads the config (:func:`riskengine._config.reconstruct_args`; the bundled
``reconstruct_example.toml`` without one), runs :func:`riskengine.reconstruct` with
progress, and writes into ``--out``: ``reconstruct.nc`` (every finest cell's bounds,
certainty and posterior summary, and the ranked records), ``records.csv`` (the claims
"this area holds at least k persons of this type", most confident first), and the
per-unit results ``units/*.nc`` with ``summary.csv`` -- a rerun with the same ``--out``
resumes from the units already there -- and the report ``reconstruct.html``
(``--no-report``: none).
"""

from __future__ import annotations

import sys

from .output import Progress, bundled, maybe_report, out_dir


def cmd_reconstruct(args) -> int:
    from .. import _config
    from .._atomic import atomic_write_text
    from .._io import atomic_write_netcdf
    from .._reconstruct import reconstruct
    cfg, base = _config.load(args.config or bundled("reconstruct_example.toml"))
    spec = _config.reconstruct_args(cfg, base)
    kw = spec["kwargs"]
    if args.workers is not None:
        kw["workers"] = args.workers
        kw["scheduler"] = None
    if args.scheduler is not None:
        kw["scheduler"] = None if args.scheduler == "serial" else args.scheduler
        kw.pop("workers", None)
    out = out_dir(args.out)
    print(f"population: {spec['describe']}")
    pub = spec["publication"]
    print(f"publication: {type(pub).__name__} of tables "
          f"{', '.join(pub.system.table_names)}")
    prog = Progress("reconstruct (units)")
    try:
        ds = reconstruct(pub, out=out, progress=prog, unit_progress=prog.detail, **kw)
    finally:
        prog.close()
    ds.attrs["config"] = str(args.config or "bundled reconstruct_example.toml")
    path = out / "reconstruct.nc"
    atomic_write_netcdf(ds, path)
    atomic_write_text(out / "records.csv", _records_csv(ds))
    a = ds.attrs
    print(f"units: {a['units']} ({a['units_resumed']} read back from an earlier run), "
          f"{a['integer_programs']} integer programs, {a['seconds']:.1f} s of work")
    if a.get("dropped_note"):
        print(f"note: {a['dropped_note']}")
    elif a.get("implied_note"):
        print(f"note: {a['implied_note']}")
    print(f"persons: {a['persons']}; reconstructed with certainty: {a['persons_certain']} "
          f"({100 * a['share_certain']:.1f} %)")
    if "coverage" in a:
        print(f"PROBABILISTIC: certain {a['certainty']}, not always ({a['what']})")
    print(f"finest cells: {a['cells']}, unknown {a['cells_unknown']}, certain "
          f"{a['cells_certain']}")
    if "areas" in a:
        print(f"areas every cell of which is certain: {a['areas_certain']} of {a['areas']} "
              f"({100 * a['share_areas_certain']:.1f} %)")
    if "prior" in a:
        print(f"prior: {a['prior']}; posterior {a['posterior']}")
        print(f"records with confidence >= {a['threshold']:g}: {a['records_confident']} "
              f"({100 * a['share_confident']:.1f} % of persons)")
        if a.get("approximate"):
            print(f"APPROXIMATE: {a['approximation']}")
    if "confident_correct" in a and a["confident_correct"] == a["confident_correct"]:
        print(f"against the truth: {100 * a['confident_correct']:.1f} % of the confident "
              "records are right")
    print(f"results written to {path}, {out / 'records.csv'} and {out / 'units'}")
    maybe_report(args, ds, path, "reconstruct")
    sys.stdout.flush()
    return 0


def _records_csv(ds) -> str:
    import numpy as np
    dims = list(ds["lower"].dims)
    cols = [f"record_{d}" for d in dims] + ["record_k", "confidence", "record_certain"]
    if "record_true" in ds:
        cols.append("record_true")
    lines = [",".join(dims + ["at_least", "confidence", "certain"] +
                      (["true"] if "record_true" in ds else []))]
    vals = [ds[c].values for c in cols]
    for i in range(ds.sizes["record"]):
        row = []
        for c, v in zip(cols, vals):
            x = v[i]
            if c == "confidence":
                row.append("" if np.isnan(x) else f"{float(x):.6g}")
            elif c in ("record_certain", "record_true"):
                row.append(str(bool(x)).lower())
            else:
                s = str(x)
                row.append('"' + s.replace('"', '""') + '"' if "," in s else s)
        lines.append(",".join(row))
    return "\n".join(lines) + "\n"
