"""The methodologist's commands: ``compare`` (several mechanisms on one table) and
``simulate`` (protect and attack many tables), each from a TOML config."""

from __future__ import annotations

import sys

from .output import Progress, bundled, cli_hints, maybe_report, out_dir


def cmd_compare(args) -> int:
    import warnings

    import numpy as np

    from .. import _config
    from .._compare import MechanismFailed, compare
    from .._io import atomic_write_netcdf
    cfg, base = _config.load(args.config or bundled("compare_example.toml"))
    kw = _config.compare_args(cfg, base)
    seed = kw.pop("seed")
    if args.seed is not None:
        seed = args.seed
    if args.draws is not None:
        kw["draws"] = args.draws
    out = out_dir(args.out)
    prog = Progress("compare")
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
        approx = ("  APPROXIMATE (routes " + str(r["routes"].values) + ")"
                  if "approximate" in ds and np.nansum(r["approximate"].values) > 0 else "")
        print(f"{n.ljust(w)}  {float(r['risk']):8.4f}  {float(r['utility']):8.4f}  "
              f"{float(r['expected_exact'].mean()):8.3f}  "
              f"{float(r['interval_width'].mean()):8.3f}  {float(r['l1'].mean()):8.2f}"
              + approx)
    print("risk = mean P(true value) for the intruder; utility = 1/(1 + mean user "
          "interval width)")
    path = out / "compare.nc"
    atomic_write_netcdf(ds, path)
    print(f"results written to {path}")
    maybe_report(args, ds, path, "compare")
    sys.stdout.flush()
    for n, e in failed.items():            # the others were kept; the run still failed
        print(f"riskengine: error: compare: mechanism {n!r} failed: {cli_hints(e, args)}",
              file=sys.stderr)
    return 2 if failed else 0


def cmd_simulate(args) -> int:
    import numpy as np

    from .. import _config
    from .._io import atomic_write_netcdf
    from .._simulate import calibration, simulate
    cfg, base = _config.load(args.config or bundled("simulate_example.toml"))
    kw = _config.simulate_args(cfg, base)
    seed = kw.pop("seed")
    if args.seed is not None:
        seed = args.seed
    if args.n_tables is not None:
        kw["n_tables"] = args.n_tables
    if args.scheduler is not None:
        kw["scheduler"] = None if args.scheduler == "serial" else args.scheduler
    if args.memory is not None:
        kw["memory"] = args.memory
    out = out_dir(args.out)
    prog = Progress("simulate")
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
    if ds.attrs.get("n_refuted"):
        print(f"{ds.attrs['n_refuted']} releases the intruder's mechanism cannot explain "
              "(refuted: left out of the calibration)")
    if ds.attrs.get("n_approximate"):
        print(f"APPROXIMATE: {ds.attrs['n_approximate']} of {ds.attrs['n_tables']} "
              f"posteriors are approximate (routes {ds.attrs.get('routes')}): their "
              "probabilities carry Monte Carlo or likelihood error")
    if ds.attrs.get("n_not_converged"):
        print(f"NOT CONVERGED: {ds.attrs['n_not_converged']} of {ds.attrs['n_tables']} "
              "Monte Carlo posteriors failed the usual rules (R-hat <= 1.01, ESS >= 400): "
              "treat their numbers as rough")
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
    maybe_report(args, ds, path, "simulate")
    return 0

