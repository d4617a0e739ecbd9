"""simulate(generator, mechanism, intruder, n_tables, rng): intruder-simulation studies.

Table i is drawn, protected and attacked with generators derived from the seed
by its index alone: ``SeedSequence(entropy, spawn_key=(i, 0))`` draws the
original, ``spawn_key=(i, 1)`` protects it (``entropy`` is drawn once from
``rng``).  Results therefore do not depend on execution order, chunking or
scheduler: serial and dask runs give identical datasets.

Dataset: dims ``("table", *table dims)``; per cell ``true``, ``published`` (NaN
where not published), ``map_value`` (the intruder's posterior mode), ``map_prob``
(its posterior probability), ``map_hit`` (``map_value == true``), ``prob_exact``;
per table ``n_candidates`` (float; NaN if the route cannot count) and
``log_evidence``.  :func:`calibration` bins ``map_prob`` and compares it with
the ``map_hit`` rate: the intruder's claimed vs observed success.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np
import xarray as xr
from scipy import stats

from . import _validate as V
from ._budget import budget
from ._seeding import derived_rng, root_entropy
from .inference._chains import close_client, dask_client
from .inference.resolve import _prior, posterior

__all__ = ["calibration", "simulate"]



@dataclass(frozen=True)
class _Job:
    generator: object
    mechanism: object
    assumed: object
    intruder: object
    entropy: int
    memory: object = None
    route: str = "auto"
    mcmc: object = None


def _run_one(job: _Job, i: int) -> dict:
    from .release import Release
    how = {"memory": job.memory, "route": job.route, "mcmc": job.mcmc}
    table = job.generator.draw(derived_rng(job.entropy, i, 0))
    rel = job.mechanism.protect(table, derived_rng(job.entropy, i, 1))
    truth = table.values
    if job.assumed is not None:   # the intruder analyses with a (mis)stated mechanism
        # a release impossible under the intruder's model refutes the model on this table:
        # recorded (it is what a misstated model does), not an error
        try:
            rel = Release(published=rel.published, margins=rel.margins,
                          mechanism=job.assumed, dims=rel.dims, coords=rel.coords,
                          kind=rel.kind)
        except ValueError as e:              # validate_release: not from this mechanism
            return _refuted(table, rel, str(e))
        try:
            post = posterior(rel, job.intruder, **how)
        except ValueError as e:
            if not str(e).startswith("no original table"):
                raise
            return _refuted(table, rel, str(e))
    else:
        post = posterior(rel, job.intruder, **how)
    mode = post.mode().values
    n = post.n_candidates
    return {
        "dims": table.dims, "coords": table.coords,
        "true": truth,
        "published": (np.full(truth.shape, np.nan) if rel.published is None
                      else np.asarray(rel.published, dtype=float)),
        "map_value": mode,
        "map_prob": post.max_prob().values,
        "map_hit": mode == truth,
        "prob_exact": post.prob_exact(truth).values,
        "n_candidates": _as_float(n),
        "log_evidence": post.log_evidence,
        "refuted": "",
        "approximate": int(bool(post.attrs.get("approximate"))),
        # a Monte Carlo posterior that failed the usual rules (exact ones have no verdict)
        "not_converged": int(not bool(post.attrs.get("converged", True))),
        "route": str(post.attrs.get("route")),
    }


def _refuted(table, rel, why: str) -> dict:
    """The row of a table whose release the intruder's (misstated) model cannot explain."""
    truth = table.values
    nan = np.full(truth.shape, np.nan)
    return {
        "dims": table.dims, "coords": table.coords, "true": truth,
        "published": (nan if rel.published is None
                      else np.asarray(rel.published, dtype=float)),
        "map_value": np.full(truth.shape, -1, dtype=truth.dtype), "map_prob": nan,
        "map_hit": np.zeros(truth.shape, bool), "prob_exact": nan,
        "n_candidates": 0.0, "log_evidence": -math.inf, "refuted": why,
        "approximate": 0, "not_converged": 0, "route": "",
    }


def _as_float(n) -> float:
    if n is None:
        return float("nan")
    try:
        return float(n)
    except OverflowError:
        return math.inf


def _run_chunk(job: _Job, start: int, stop: int) -> list:
    return [_run_one(job, i) for i in range(start, stop)]


def _check_scheduler(scheduler):
    if scheduler is None or scheduler == "serial":
        return None
    if isinstance(scheduler, str):
        if scheduler != "dask" and "://" not in scheduler:
            raise ValueError(f"unknown scheduler {scheduler!r}; known: None (serial), 'dask' "
                             "(local cluster), or a cluster address 'tcp://host:port'")
        return scheduler
    try:
        import distributed
    except ImportError:
        distributed = None
    if distributed is not None and isinstance(scheduler, distributed.Client):
        return scheduler
    raise TypeError("scheduler must be None, 'dask', an address 'tcp://host:port' or a "
                    f"distributed.Client, got {type(scheduler).__name__}")


def simulate(generator, mechanism, intruder=None, n_tables: int = 100,
             rng: np.random.Generator | None = None, scheduler=None, progress=None,
             chunk: int | None = None, assumed=None, memory=None, route: str = "auto",
             mcmc=None) -> xr.Dataset:
    """Draw ``n_tables`` originals, protect each, attack each with the intruder's posterior.

    Parameters
    ----------
    generator : rk.generators.Generator
        Anything with ``draw(rng) -> rk.Table``.
    mechanism : rk.Mechanism
        Anything with ``protect(table, rng) -> rk.Release``: how each table is protected.
    intruder : rk.priors.Prior, default ``Uniform()``
        The intruder's prior.
    n_tables : int >= 1
        Tables drawn, protected and attacked.
    rng : numpy.random.Generator
        Only its first draw (the root entropy) is used.
    scheduler : None, "dask", "tcp://host:port" or distributed.Client
        ``None``: serial in this process; ``"dask"``: a local cluster (2 worker
        processes); an address: an existing cluster (needs ``riskengine[dask]``).
    progress : callable(done, total) or None
        Called after each table (serial) or each chunk (dask).
    chunk : int, optional
        Tables per dask task (default about n_tables / 16, at most 100).
    assumed : mechanism, optional
        The mechanism the intruder *believes* was used (default: the true one);
        a misstated parameter here shows what a wrong likelihood does.
    memory : int or str, optional
        Memory budget of each table's posterior (as :func:`riskengine.posterior`'s
        ``memory=``; default: half the available memory).
    route : str, default ``"auto"``
        The posterior route of every table (as :func:`riskengine.posterior`'s ``route=``).
    mcmc : rk.MonteCarlo, optional
        Chains, draws and seed of the Monte Carlo routes (as :func:`riskengine.posterior`'s
        ``mcmc=``): a study of many tables under a Monte Carlo route (the cell key
        method's ``keys_mcmc``) may run shorter chains; the tables whose Monte Carlo
        posterior failed the usual rules are marked in ``not_converged``.

    Returns
    -------
    xarray.Dataset
        Dims ``("table", *table dims)``; see the module docstring for the variables.
        A release the intruder's mechanism cannot explain is recorded as refuted
        (``map_prob`` / ``prob_exact`` NaN, ``map_value`` -1; ``attrs["n_refuted"]``).

    Examples
    --------
    >>> import numpy as np, riskengine as rk
    >>> ds = rk.simulate(rk.generators.Poisson(3.0, shape=(3, 3)),
    ...                  rk.CyclicPerturbation(rk.cycles.diagonal(3), alpha=0.25, beta=0.25),
    ...                  intruder=rk.priors.Poisson(3.0), n_tables=5,
    ...                  rng=np.random.default_rng(0))
    >>> ds["map_hit"].dims
    ('table', 'dim_0', 'dim_1')
    >>> bool(((ds["map_value"] == ds["true"]) == ds["map_hit"]).all())
    True
    """
    if not callable(getattr(generator, "draw", None)):
        raise TypeError(f"generator must have draw(rng) -> rk.Table (rk.generators.*), "
                        f"got {type(generator).__name__}")
    for name, m in (("mechanism", mechanism), ("assumed", assumed)):
        if m is not None and not callable(getattr(m, "protect", None)):
            raise TypeError(f"{name} must be a mechanism with protect(table, rng), got {m!r}")
    if mechanism is None:
        raise TypeError("simulate needs a mechanism")
    intruder = _prior(intruder)
    n_tables = V.integer(n_tables, "n_tables", 1)
    if rng is None:
        raise TypeError("simulate needs rng=np.random.default_rng(seed)")
    scheduler = _check_scheduler(scheduler)
    if chunk is None:
        chunk = max(1, min(100, -(-n_tables // 16)))
    chunk = V.integer(chunk, "chunk", 1)
    if memory is not None:
        budget(memory)                  # a bad budget is refused before any table is drawn
    job = _Job(generator, mechanism, assumed, intruder, root_entropy(rng), memory, route, mcmc)

    if scheduler is None:
        rows = []
        for i in range(n_tables):
            rows.append(_run_one(job, i))
            if progress is not None:
                progress(i + 1, n_tables)
    else:
        rows = _run_dask(job, n_tables, chunk, scheduler, progress)
    return _assemble(rows, job)


def _run_dask(job, n_tables, chunk, scheduler, progress) -> list:
    client, owned = dask_client(scheduler)
    import distributed
    try:
        [job_f] = client.scatter([job], broadcast=True)
        starts = list(range(0, n_tables, chunk))
        futs = {client.submit(_run_chunk, job_f, a, min(a + chunk, n_tables), pure=False): a
                for a in starts}
        out, done = {}, 0
        for fut in distributed.as_completed(futs):
            a = futs[fut]
            out[a] = fut.result()
            done += len(out[a])
            if progress is not None:
                progress(done, n_tables)
    finally:
        close_client(client, owned)
    return [r for a in starts for r in out[a]]


def _assemble(rows, job) -> xr.Dataset:
    dims, coords = rows[0]["dims"], rows[0]["coords"]
    for i, r in enumerate(rows):
        if r["dims"] != dims or r["coords"] != coords:
            raise ValueError(f"the generator drew table {i} with dims {r['dims']} and labels "
                             f"{r['coords']}, table 0 had {dims} and {coords}: every table "
                             "must have the same dims and labels")
    cell = ("table",) + tuple(dims)

    def stack(k):
        return np.stack([r[k] for r in rows])

    defs = {
        "true": "original cell value",
        "published": "published cell value; NaN where not published",
        "map_value": "intruder's posterior mode (MAP guess; smallest value among ties; -1 "
                     "where refuted)",
        "map_prob": "intruder's posterior probability of map_value",
        "map_hit": "map_value == true",
        "prob_exact": "intruder's posterior probability of the true value",
    }
    data = {k: (cell, stack(k), {"definition": v}) for k, v in defs.items()}
    data["n_candidates"] = (("table",), stack("n_candidates"),
                            {"definition": "original tables with nonzero posterior "
                                           "(float; inf beyond float range; NaN unknown)"})
    data["log_evidence"] = (("table",), stack("log_evidence"),
                            {"definition": "log sum over candidates of prior x likelihood"})
    approx = np.array([r.get("approximate", 0) for r in rows], dtype=np.int8)
    data["approximate"] = (("table",), approx,
                           {"definition": "1 where the intruder's posterior of this table "
                                          "is approximate (Monte Carlo, or an approximate "
                                          "likelihood), 0 where exact"})
    unconv = np.array([r.get("not_converged", 0) for r in rows], dtype=np.int8)
    data["not_converged"] = (("table",), unconv,
                             {"definition": "1 where the intruder's posterior of this table "
                                            "is Monte Carlo and failed the usual rules "
                                            "(R-hat <= 1.01, bulk and tail ESS >= 400), 0 "
                                            "otherwise"})
    refuted = np.array([bool(r["refuted"]) for r in rows])
    data["refuted"] = (("table",), refuted,
                       {"definition": "the intruder's (misstated) mechanism cannot have made "
                                      "this release: no posterior (map_prob and prob_exact "
                                      "NaN, map_value -1); calibration leaves these out"})
    return xr.Dataset(data, coords={"table": np.arange(len(rows)), **coords}, attrs={
        "riskengine_kind": "simulate",
        "generator": _describe(job.generator),
        "mechanism": _describe(job.mechanism),
        "intruder_mechanism": _describe(job.assumed if job.assumed is not None
                                        else job.mechanism),
        "prior": job.intruder.describe(),
        "n_tables": len(rows),
        "n_refuted": int(refuted.sum()),
        "n_approximate": int(approx.sum()),
        "n_not_converged": int(unconv.sum()),
        "routes": ", ".join(sorted({r.get("route", "") for r in rows} - {""})),
        "seed_entropy": str(job.entropy),
        "seeding": "table i: original drawn with PCG64(SeedSequence(seed_entropy, "
                   "spawn_key=(i, 0))), protected with spawn_key=(i, 1)",
    })


def _describe(obj) -> str:
    f = getattr(obj, "describe", None)
    return f() if callable(f) else repr(obj)


def calibration(ds: xr.Dataset, bins=10, level: float = 0.95) -> xr.Dataset:
    """Claimed (mean ``map_prob``) vs observed (mean ``map_hit``) per ``map_prob`` bin.

    With the intruder's model right, E[map_hit | release] = map_prob cell by cell,
    so every bin's difference has mean 0.  Tables are independent, cells within a
    table are not: the standard error is cluster-robust,
    se = sqrt(sum_t D_t^2) / n_bin with D_t = sum over the bin's cells of table t of
    (map_hit - map_prob); ``z = (observed - claimed) / se``; ``ci_low`` / ``ci_high`` is
    the interval ``claimed +- q se`` (q the normal quantile of ``level``) that a
    calibrated intruder's observed rate falls in.  The same statistic over all cells is
    in ``attrs`` (``overall_*``).  ``bins``: a number of equal bins on [0, 1] or
    increasing edges (the right edge belongs to the last bin).  Cells with NaN
    ``map_prob`` are left out.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> ds = xr.Dataset({"map_prob": (("table", "c"), [[0.5, 0.5], [0.5, 0.5]]),
    ...                  "map_hit": (("table", "c"), [[True, False], [False, True]])})
    >>> cal = calibration(ds, bins=2)
    >>> float(cal["observed"].sel(bin=1)), float(cal["claimed"].sel(bin=1))
    (0.5, 0.5)
    """
    if not isinstance(ds, xr.Dataset):
        raise TypeError(f"calibration needs the xarray.Dataset of rk.simulate, got "
                        f"{type(ds).__name__}")
    for k in ("map_prob", "map_hit"):
        if k not in ds:
            raise ValueError(f"calibration needs variable {k!r} (an rk.simulate dataset)")
    if "table" not in ds["map_prob"].dims:
        raise ValueError("calibration needs the 'table' dim of rk.simulate's output")
    level = V.probability(level, "level")
    if isinstance(bins, (numbers.Integral,)) and not isinstance(bins, bool):
        bins = V.integer(bins, "bins", 1)
        edges = np.linspace(0.0, 1.0, bins + 1)
    else:
        edges = np.asarray(bins, dtype=float)
        if edges.ndim != 1 or edges.size < 2 or np.any(np.diff(edges) <= 0):
            raise ValueError(f"bins must be an int or increasing edges, got {bins!r}")
    mp = ds["map_prob"]
    p = mp.values.reshape(mp.sizes["table"], -1).astype(float)
    h = ds["map_hit"].transpose(*mp.dims).values.reshape(p.shape).astype(float)
    ok = np.isfinite(p) & np.isfinite(h)
    if np.any(ok & ((p < edges[0]) | (p > edges[-1]))):
        raise ValueError(f"map_prob outside the bin edges [{edges[0]}, {edges[-1]}]")
    nb = edges.size - 1
    b = np.clip(np.searchsorted(edges, np.where(ok, p, edges[0]), side="right") - 1, 0, nb - 1)
    p, h = np.where(ok, p, 0.0), np.where(ok, h, 0.0)
    out = {k: np.full(nb, np.nan) for k in ("claimed", "observed", "se", "z")}
    n = np.zeros(nb, dtype=np.int64)
    hits = np.zeros(nb)
    for j in range(nb):
        m = ok & (b == j)
        n[j] = m.sum()
        hits[j] = h[m].sum()
        if n[j]:
            out["claimed"][j] = p[m].mean()
            out["observed"][j] = h[m].mean()
            out["se"][j], out["z"][j] = _cluster_z(p, h, m)
    se, z = _cluster_z(p, h, ok)
    q = float(stats.norm.ppf(0.5 + level / 2))
    lo = np.clip(out["claimed"] - q * out["se"], 0.0, 1.0)
    hi = np.clip(out["claimed"] + q * out["se"], 0.0, 1.0)
    return xr.Dataset(
        {"claimed": ("bin", out["claimed"], {"definition": "mean map_prob of the bin's cells"}),
         "observed": ("bin", out["observed"], {"definition": "mean map_hit of the bin's cells"}),
         "n": ("bin", n, {"definition": "cells in the bin"}),
         "hits": ("bin", hits, {"definition": "cells of the bin whose MAP guess was right"}),
         "se": ("bin", out["se"], {"definition": "cluster-robust s.e. of observed - claimed"}),
         "z": ("bin", out["z"], {"definition": "(observed - claimed) / se"}),
         "ci_low": ("bin", lo, {"definition": f"claimed - {q:.3g} se"}),
         "ci_high": ("bin", hi, {"definition": f"claimed + {q:.3g} se"})},
        coords={"bin": np.arange(nb), "lower": ("bin", edges[:-1]),
                "upper": ("bin", edges[1:])},
        attrs={"overall_claimed": float(p[ok].mean()) if ok.any() else float("nan"),
               "overall_observed": float(h[ok].mean()) if ok.any() else float("nan"),
               "overall_se": se, "overall_z": z, "n_tables": int(p.shape[0]),
               "n_cells": int(ok.sum()), "level": level,
               "interval": "claimed +- normal quantile x cluster-robust s.e. (tables are the "
                           "clusters)"})


def _cluster_z(p, h, mask):
    nb = mask.sum()
    if nb == 0:
        return float("nan"), float("nan")
    d = np.where(mask, h - p, 0.0).sum(axis=1)
    se = float(np.sqrt((d ** 2).sum()) / nb)
    diff = float(d.sum() / nb)
    z = diff / se if se > 0 else (0.0 if diff == 0 else math.copysign(math.inf, diff))
    return se, z
