"""TOML configurations of ``riskengine compare`` and ``riskengine simulate``.

compare::

    seed = 2006                 # root seed (same seed, same results)
    draws = 10                  # protections per mechanism
    level = 0.95                # optional: credible level of the interval widths

    [table]                     # path = CSV / netCDF (relative to this file), or
    path = "seed003_original.csv"
    # values = [[3, 1], [2, 4]]   dims = ["v", "w"]   (inline)

    [priors]                    # specs of rk.priors.parse
    intruder = "uniform"
    user = "poisson:8"

    [[mechanisms]]              # one block per mechanism; type = registry name
    label = "cyclic"
    type = "cyclic"
    design = "diagonal"         # cyclic only: diagonal | staircase (or cycles = [...])
    sweep = { alpha = [0.05, 0.25], beta = [0.05, 0.25] }   # optional: one mechanism
                                                             # per setting (lists zipped)

simulate::

    seed = 7
    n_tables = 200
    scheduler = "serial"        # serial | dask | tcp://host:port
    chunk = 25                  # optional: tables per dask task

    [generator]                 # type: poisson (rate, shape) | multinomial (n, probs)
    type = "poisson"            #       | resample (path or values, optional n)
    rate = 3.0
    shape = [3, 3]
    dims = ["v", "w"]           # optional

    [mechanism]                 # as one [[mechanisms]] block, without label/sweep
    type = "cyclic"
    design = "diagonal"
    alpha = 0.25
    beta = 0.25

    [intruder]
    prior = "poisson:3"
    # assumed = { type = "cyclic", design = "diagonal", alpha = 0.05, beta = 0.05 }
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import numpy as np

from . import generators, priors
from ._io import read_table
from .protocol import lookup
from .table import Table

COMPARE_KEYS = ("seed", "draws", "level", "table", "priors", "mechanisms")
SIMULATE_KEYS = ("seed", "n_tables", "scheduler", "chunk", "generator", "mechanism", "intruder")


def load(path) -> tuple[dict, Path]:
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no such config file: {path}")
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh), path.parent
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{path}: not valid TOML: {exc}") from None


def _keys(d: dict, known, where: str) -> dict:
    if not isinstance(d, dict):
        raise TypeError(f"{where} must be a TOML table, got {d!r}")
    bad = [k for k in d if k not in known]
    if bad:
        raise ValueError(f"unknown key {bad[0]!r} in {where}; known: {', '.join(known)}")
    return d


def _need(d: dict, key: str, where: str):
    if key not in d:
        raise ValueError(f"{where} needs {key!r}")
    return d[key]


def _table(d: dict, base: Path, where: str) -> Table:
    _keys(d, ("path", "values", "dims", "coords"), where)
    if ("path" in d) == ("values" in d):
        raise ValueError(f"{where} needs exactly one of 'path' (a CSV/netCDF file) or 'values'")
    if "path" in d:
        p = Path(d["path"])
        return read_table(p if p.is_absolute() else base / p)
    return Table(np.array(d["values"]), dims=d.get("dims"), coords=d.get("coords"))


def mechanism(spec: dict, shape, where: str = "mechanism", dims=None, base=None):
    """A mechanism from ``{type, params...}`` through the registry (each mechanism's
    ``from_config``: e.g. ``design`` builds cyclic cycles for ``shape``); a relative file
    path in a parameter the mechanism reads files from (``path_parameters``, e.g. a cell
    key p-table) is taken from ``base`` (the config's folder), as ``[table] path`` is."""
    spec = dict(_keys(spec, tuple(spec), where))
    kind = _need(spec, "type", where)
    spec.pop("type")
    try:
        cls = lookup(kind)
        for k in getattr(cls, "path_parameters", ()):
            v = spec.get(k)
            if base is not None and isinstance(v, str) and not Path(v).is_absolute():
                spec[k] = str(Path(base) / v)
        return cls.from_config(spec, shape=shape, dims=dims)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{where}: {exc}") from None


def _mechanisms(blocks, shape, base=None) -> dict:
    if not isinstance(blocks, list) or not blocks:
        raise ValueError("compare config needs at least one [[mechanisms]] block")
    out = {}
    for j, b in enumerate(blocks):
        where = f"[[mechanisms]] block {j + 1}"
        b = dict(_keys(b, tuple(b), where))
        label = str(b.pop("label", b.get("type", f"mechanism {j + 1}")))
        sweep = b.pop("sweep", None)
        settings = [{}]
        if sweep is not None:
            _keys(sweep, tuple(sweep), f"sweep of {where}")
            lens = {k: len(v) if isinstance(v, list) else -1 for k, v in sweep.items()}
            if not lens or any(n < 1 for n in lens.values()) or len(set(lens.values())) != 1:
                raise ValueError(f"sweep of {where} must map parameters to non-empty lists of "
                                 f"one common length, got lengths {lens}")
            n = next(iter(lens.values()))
            settings = [{k: v[i] for k, v in sweep.items()} for i in range(n)]
        for s in settings:
            name = label + ("" if not s else " " + " ".join(f"{k}={v}" for k, v in s.items()))
            if name in out:
                raise ValueError(f"two mechanisms are labelled {name!r}; labels must differ")
            out[name] = mechanism({**b, **s}, shape, where, base=base)
    return out


def _prior(spec, where):
    if not isinstance(spec, str):
        raise TypeError(f"{where} must be a prior spec string like 'poisson:2', got {spec!r}")
    return priors.parse(spec)


def _int(d, key, default, minimum, where):
    v = d.get(key, default)
    if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
        raise ValueError(f"{where}: {key} must be an integer >= {minimum}, got {v!r}")
    return v


def compare_args(cfg: dict, base: Path) -> dict:
    """Keyword arguments of rk.compare (plus ``seed``) from a compare config."""
    _keys(cfg, COMPARE_KEYS, "the compare config")
    table = _table(_need(cfg, "table", "the compare config"), base, "[table]")
    pri = _keys(cfg.get("priors", {}), ("intruder", "user"), "[priors]")
    level = cfg.get("level", 0.95)
    if not isinstance(level, (int, float)) or not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    return {
        "table": table,
        "mechanisms": _mechanisms(cfg.get("mechanisms"), table.shape, base),
        "intruder": _prior(pri.get("intruder", "uniform"), "[priors] intruder"),
        "user": _prior(pri.get("user", "uniform"), "[priors] user"),
        "draws": _int(cfg, "draws", 20, 1, "compare config"),
        "level": float(level),
        "seed": _int(cfg, "seed", 0, 0, "compare config"),
    }


def _generator(d: dict, base: Path):
    where = "[generator]"
    kind = _need(d, "type", where)
    if kind == "poisson":
        _keys(d, ("type", "rate", "shape", "dims", "coords"), where)
        return generators.Poisson(np.array(_need(d, "rate", where), dtype=float),
                                  shape=d.get("shape"), dims=d.get("dims"),
                                  coords=d.get("coords"))
    if kind == "multinomial":
        _keys(d, ("type", "n", "probs", "dims", "coords"), where)
        return generators.Multinomial(_need(d, "n", where), np.array(_need(d, "probs", where)),
                                      dims=d.get("dims"), coords=d.get("coords"))
    if kind == "resample":
        _keys(d, ("type", "path", "values", "dims", "coords", "n"), where)
        t = _table({k: v for k, v in d.items() if k not in ("type", "n")}, base, where)
        return generators.Resample(t, n=d.get("n"))
    raise ValueError(f"unknown generator type {kind!r}; known: poisson, multinomial, resample")


def simulate_args(cfg: dict, base: Path) -> dict:
    """Keyword arguments of rk.simulate (plus ``seed``) from a simulate config."""
    _keys(cfg, SIMULATE_KEYS, "the simulate config")
    gen = _generator(_need(cfg, "generator", "the simulate config"), base)
    intr = _keys(cfg.get("intruder", {}), ("prior", "assumed"), "[intruder]")
    mech = mechanism(_need(cfg, "mechanism", "the simulate config"), gen.shape, "[mechanism]",
                     base=base)
    assumed = intr.get("assumed")
    sched = cfg.get("scheduler", "serial")
    if not isinstance(sched, str):
        raise TypeError(f"scheduler must be 'serial', 'dask' or 'tcp://host:port', "
                        f"got {sched!r}")
    return {
        "generator": gen,
        "mechanism": mech,
        "intruder": _prior(intr.get("prior", "uniform"), "[intruder] prior"),
        "assumed": None if assumed is None else mechanism(assumed, gen.shape,
                                                          "[intruder] assumed", base=base),
        "n_tables": _int(cfg, "n_tables", 100, 1, "simulate config"),
        "scheduler": None if sched == "serial" else sched,
        "chunk": cfg.get("chunk"),
        "seed": _int(cfg, "seed", 0, 0, "simulate config"),
    }


RECONSTRUCT_KEYS = ("seed", "population", "tables", "hierarchies", "protection", "reconstruct")
_RECON_OPTIONS = ("unit", "level", "prior", "threshold", "max_candidates", "time_limit",
                  "workers", "scheduler", "bounds", "coverage", "monte_carlo", "draws",
                  "chains", "mc_seconds")
_RECON_PROTECTION = ("type", "base", "rule", "distribution", "scale", "clip", "D", "V")
_PROTECTION_KEYS = {"random_rounding": ("base",), "suppression": ("rule",),
                    "cell_key": ("D", "V"), "noise": ("distribution", "scale", "clip")}
_GENERATORS = {"census": ("riskengine.census", "CensusPopulation"),
               "blocks": ("riskengine.census_blocks", "BlockPopulation")}


def reconstruct_args(cfg: dict, base: Path) -> dict:
    """``{"publication": TableSet or release, "kwargs": rk.reconstruct's keywords,
    "seed": int, "describe": str}`` from a reconstruct config::

        seed = 3
        [population]              # generator = "census" | "blocks" (+ its parameters),
        generator = "census"      # or path = "people.csv" (one row per person)
        districts = 3
        [tables]                  # name = [columns]; optional with a generator
        [hierarchies]             # column = "file.hrc" (tau-Argus), for every table
        [protection]              # type = "exact" (default) | "random_rounding" (base)
        type = "exact"            #   | "suppression" (rule = "freq:3") | "cell_key" (D, V)
                                  #   | "noise" (distribution, scale, clip; then
                                  #     [reconstruct] coverage = 0.99)
        [reconstruct]             # rk.reconstruct's keywords
        unit = "area"
        level = 2
        prior = "uniform"         # or "none"
    """
    import importlib

    import pandas as pd

    from .hierarchy import Hierarchy
    from .table_set import TableSet
    _keys(cfg, RECONSTRUCT_KEYS, "the reconstruct config")
    # every key checked before the population is drawn (a large design takes seconds)
    _keys(cfg.get("reconstruct", {}), _RECON_OPTIONS, "[reconstruct]")
    _keys(cfg.get("protection", {}), _RECON_PROTECTION, "[protection]")
    seed = _int(cfg, "seed", 0, 0, "reconstruct config")
    pop = dict(_keys(_need(cfg, "population", "the reconstruct config"),
                     tuple(cfg["population"]), "[population]"))
    tables = cfg.get("tables")
    hier = None
    design = None
    if ("generator" in pop) == ("path" in pop):
        raise ValueError("[population] needs exactly one of 'generator' (census | blocks) "
                         "or 'path' (a CSV of one row per person)")
    if "generator" in pop:
        kind = pop.pop("generator")
        which = pop.pop("publication", None)
        if kind not in _GENERATORS:
            raise ValueError(f"[population] generator must be one of {sorted(_GENERATORS)}, "
                             f"got {kind!r}")
        mod, cls = _GENERATORS[kind]
        try:
            design = getattr(importlib.import_module(mod), cls)(
                **{k: (tuple(v) if isinstance(v, list) else v) for k, v in pop.items()})
        except TypeError as exc:
            raise ValueError(f"[population]: {exc}") from None
        df = design.generate(np.random.default_rng(seed))
        if tables is None:
            if which is None:
                tables, hier = design.tables(), design.hierarchies()
            else:
                try:
                    tables = design.tables(which)
                    hier = design.hierarchies(publication=which)
                except TypeError:
                    raise ValueError(f"[population] publication: the {kind!r} generator "
                                     "has one publication only") from None
        describe = f"{design.describe()}, seed {seed}: {len(df)} persons"
    else:
        _keys(pop, ("path",), "[population]")
        p = Path(pop["path"])
        p = p if p.is_absolute() else base / p
        if not p.exists():
            raise FileNotFoundError(f"[population] path: no such file: {p}")
        df = pd.read_csv(p, dtype=str, keep_default_na=False)
        describe = f"{p.name}: {len(df)} persons"
    if not isinstance(tables, dict) or not tables:
        raise ValueError("the reconstruct config needs [tables]: name = [columns] (a "
                         "generator brings its own)")
    for name, cols in tables.items():
        if not isinstance(cols, list) or not all(isinstance(c, str) for c in cols):
            raise TypeError(f"[tables] {name} must be a list of column names, got {cols!r}")
    if "hierarchies" in cfg:
        hier = {}
        for dim, f in _keys(cfg["hierarchies"], tuple(cfg["hierarchies"]),
                            "[hierarchies]").items():
            fp = Path(f)
            hier[dim] = Hierarchy.from_hrc(fp if fp.is_absolute() else base / fp)
    ts = TableSet.from_pandas(df, tables, hierarchies=hier)
    prot = dict(_keys(cfg.get("protection", {"type": "exact"}), _RECON_PROTECTION,
                      "[protection]"))
    kind = prot.get("type", "exact")
    rng = np.random.default_rng([seed, 1])
    if kind == "exact":
        publication = ts
    elif kind == "random_rounding":
        from .mechanisms.random_rounding import RandomRounding
        publication = RandomRounding(_int(prot, "base", 3, 2, "[protection]")).protect(ts, rng)
    elif kind == "suppression":
        from .cli.rules import rule_spec
        from .magnitude import sensitivity
        from .mechanisms.suppression import suppress
        cls_name, params, _ = rule_spec(str(_need(prot, "rule", "[protection]")))
        publication = suppress(ts, getattr(sensitivity, cls_name)(*params))
    elif kind == "cell_key":
        from .mechanisms.cell_key import CellKey, PTable
        D = _int(prot, "D", 2, 1, "[protection]")
        publication = CellKey(ptable=PTable.design(D=D, V=float(prot.get("V", D / 2)))
                              ).protect(ts, rng)
    elif kind == "noise":
        from .mechanisms.noise import NoisyCounts
        publication = NoisyCounts(prot.get("distribution", "geometric"),
                                  _need(prot, "scale", "[protection]"),
                                  clip=prot.get("clip", True)).protect(ts, rng)
    else:
        raise ValueError(f"[protection] type must be exact, random_rounding, suppression, "
                         f"cell_key or noise, got {kind!r}")
    for key in set(prot) - {"type"} - set(_PROTECTION_KEYS.get(kind, ())):
        raise ValueError(f"[protection] {key!r} does not apply to type = {kind!r} (it takes "
                         f"{', '.join(_PROTECTION_KEYS.get(kind, ())) or 'nothing else'})")
    opts = dict(_keys(cfg.get("reconstruct", {}), _RECON_OPTIONS, "[reconstruct]"))
    prior = opts.pop("prior", "none")
    opts["prior"] = None if prior == "none" else _prior(prior, "[reconstruct] prior")
    sched = opts.pop("scheduler", "serial")
    opts["scheduler"] = None if sched == "serial" else sched
    return {"publication": publication, "kwargs": opts, "seed": seed, "describe": describe}


CENSUS_KEYS = ("seed", "sims", "min_cells", "population", "swapping", "cell_key",
               "intruder", "policy")
_CENSUS_SWAP = ("risk_variables", "similar", "swaprate", "k_anonymity", "geography")
_CENSUS_INTRUDER = ("swaprate", "cell_key")
_CENSUS_POLICY = ("threshold", "small", "sigmas")


def census_args(cfg: dict, base: Path) -> dict:
    """The census publication of a ``riskengine assess`` config, protected, and the
    intruder's candidates (riskengine/_census_posterior.py)::

        seed = 2026
        sims = 60                     # simulated publications (the intruder's)
        min_cells = 30                # simulated cells a (kind, value) needs
        [population]                  # rk.census.CensusPopulation's parameters
        districts = 3
        areas = 4
        [swapping]                    # rk.TargetedSwapping (omit: no swapping)
        risk_variables = ["sex", "age"]
        similar = [["hhsize"]]
        swaprate = 0.05
        k_anonymity = 3
        [cell_key]                    # rk.CellKey(D=, V=) (omit: none)
        D = 2
        V = 0.5
        [intruder]                    # the secret parameters' candidates (equally
        swaprate = [0.02, 0.05, 0.1]  # likely); default: the true ones
        cell_key = [{D = 2, V = 0.5}, {D = 4, V = 2.0}]
        [policy]
        threshold = 0.5               # Pr(original = published) of a small published
        small = [1, 2]                # count at or above this FAILs
        sigmas = 2.0                  # Monte Carlo margin (s.e.) of PASS / FAIL

    Returns
    -------
    dict
        ``publication``, ``population``, ``settings``, ``sims``, ``min_cells``, ``seed``,
        ``threshold``, ``small``, ``sigmas``, ``describe``.
    """
    from ._census_posterior import Setting
    from ._publication import protect_publication
    from .census import CensusPopulation
    from .mechanisms.cell_key import CellKey
    from .mechanisms.swapping import TargetedSwapping
    _keys(cfg, CENSUS_KEYS, "the census config")
    seed = _int(cfg, "seed", 0, 0, "census config")
    sims = _int(cfg, "sims", 60, 1, "census config")
    min_cells = _int(cfg, "min_cells", 30, 1, "census config")
    pop_cfg = dict(cfg.get("population", {}))
    try:
        pop = CensusPopulation(**{k: (tuple(v) if isinstance(v, list) else v)
                                  for k, v in pop_cfg.items()})
    except TypeError as exc:
        raise ValueError(f"[population]: {exc}") from None
    sw = cfg.get("swapping")
    swap = None
    if sw is not None:
        sw = dict(_keys(sw, _CENSUS_SWAP, "[swapping]"))
        geo = sw.pop("geography", ["region", "district", "area"])
        try:
            swap = TargetedSwapping(geo, sw.pop("risk_variables", ["sex", "age"]),
                                    sw.pop("similar", [["hhsize"]]), **sw)
        except TypeError as exc:
            raise ValueError(f"[swapping]: {exc}") from None
    def cell_key(d, where):
        """``rk.CellKey(D=, V=)`` of a table ``{D, V}`` (V defaults to D / 2)."""
        if not isinstance(d, dict):
            raise TypeError(f"{where} must be a table {{D, V}}, got {d!r}")
        _keys(d, ("D", "V"), where)
        D = _int(d, "D", 2, 1, where)
        return CellKey(D=D, V=float(d.get("V", D / 2)))

    ck_cfg = cfg.get("cell_key")
    ck = None if ck_cfg is None else cell_key(ck_cfg, "[cell_key]")
    if swap is None and ck is None:
        raise ValueError("the census config protects nothing: give [swapping] and / or "
                         "[cell_key]")
    intr = dict(_keys(cfg.get("intruder", {}), _CENSUS_INTRUDER, "[intruder]"))
    rates = intr.get("swaprate", [None if swap is None else swap.swaprate])
    if not isinstance(rates, list) or not rates:
        raise ValueError(f"[intruder] swaprate must be a non-empty list, got {rates!r}")
    cks = intr.get("cell_key", [ck_cfg])
    if not isinstance(cks, list) or not cks:
        raise ValueError(f"[intruder] cell_key must be a non-empty list of {{D, V}} tables, "
                         f"got {cks!r}")
    settings = []
    for r in rates:
        for c in cks:
            s_r = None
            if r is not None:
                if swap is None:
                    raise ValueError("[intruder] swaprate: the config has no [swapping]")
                if not isinstance(r, (int, float)) or isinstance(r, bool):
                    raise ValueError(f"[intruder] swaprate entries are numbers, got {r!r}")
                s_r = TargetedSwapping(**{**swap._params(), "swaprate": float(r)})
            c_r = None if c is None else cell_key(c, "[intruder] cell_key")
            settings.append(Setting(s_r, c_r))
    pol = dict(_keys(cfg.get("policy", {}), _CENSUS_POLICY, "[policy]"))
    threshold = float(pol.get("threshold", 0.5))
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"[policy] threshold must lie in (0, 1], got {threshold}")
    small = pol.get("small", [1, 2])
    if not isinstance(small, list) or not all(isinstance(v, int) and v >= 1 for v in small):
        raise ValueError(f"[policy] small must be a list of counts >= 1, got {small!r}")
    sigmas = float(pol.get("sigmas", 2.0))
    people = pop.generate(np.random.default_rng([seed, 0]))
    pub = protect_publication(people, pop.tables(), pop.hierarchies(), swap, ck,
                              np.random.default_rng([seed, 1]))
    describe = (f"{pop.describe()}, seed {seed}: {len(people)} persons; protected by "
                + "; ".join(x for x in (swap.describe() if swap else None,
                                        ck.describe() if ck else None) if x))
    return {"publication": pub, "population": pop, "settings": settings, "sims": sims,
            "min_cells": min_cells, "seed": seed, "threshold": threshold, "small": small,
            "sigmas": sigmas, "describe": describe}
