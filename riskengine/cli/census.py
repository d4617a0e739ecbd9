"""``riskengine assess CONFIG.toml``: a census publication protected by targeted record
swapping and the cell key method (the config's [population], [swapping], [cell_key]),
judged by the intruder's simulation-based posterior with the secret parameters' candidates
of [intruder] (riskengine/_census_posterior.py); writes census.nc and census.html."""

from __future__ import annotations

import sys

from .output import Progress, maybe_report, out_dir


def is_census_config(path) -> bool:
    """Whether ``assess``'s argument is a census config (a ``.toml`` file)."""
    return path is not None and str(path).lower().endswith(".toml")


def assess_census(args) -> int:
    from .._census_posterior import census_verdict, intruder_posterior
    from .._config import census_args, load
    from .._io import atomic_write_netcdf
    cfg, base = load(args.release)
    c = census_args(cfg, base)
    print(f"riskengine assess: census publication {args.release}: {c['describe']}")
    print(f"intruder's candidates for the secret parameters ({len(c['settings'])}, equally "
          f"likely): " + "; ".join(s.describe() for s in c["settings"]))
    import numpy as np
    prog = Progress("simulated publications")
    try:
        post = intruder_posterior(c["publication"], c["population"], c["settings"],
                                  sims=c["sims"], rng=np.random.default_rng([c["seed"], 2]),
                                  min_cells=c["min_cells"], progress=prog)
    finally:
        prog.close()
    threshold = c["threshold"] if args.threshold is None else float(args.threshold)
    label, reasons = census_verdict(post, threshold, c["small"], c["sigmas"])
    table = post.risk_table(c["small"])
    print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    expected = post.expected_disclosures(c["small"])
    print(f"expected exact disclosures (published {list(c['small'])} whose original is the "
          "published value; s.e. conservative) and expected real ones, per table:")
    print(expected.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    print(f"APPROXIMATE: {post.attrs['approximation']}")
    print(f"VERDICT: {label} ({'; '.join(reasons)})")
    ds = post.cells.copy()
    ds.attrs.update({"riskengine_kind": "census", "verdict": label,
                     "verdict_reasons": "; ".join(reasons), "threshold": threshold,
                     "small": np.asarray(c["small"], np.int64), "config": str(args.release),
                     "publication": c["describe"],
                     "expected_exact": float(expected["expected_exact"].iloc[-1]),
                     "expected_exact_se": float(expected["expected_exact_se"].iloc[-1]),
                     "expected_real_ones": float(expected["expected_real_ones"].iloc[-1])})
    out = out_dir(args.out)
    path = out / "census.nc"
    atomic_write_netcdf(ds, path)
    print(f"posterior written to {path}")
    maybe_report(args, ds, path, "census")
    if args.strict and label != "PASS":
        print(f"riskengine assess: --strict: the verdict is {label}", file=sys.stderr)
        return 3
    return 0
