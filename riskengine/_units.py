"""Independent units of work, run serially, on local processes or on dask -- written as
they finish, resumed after a crash.

A reconstruction of a country is thousands of independent problems (one per tract).
:func:`run_units` runs a list of picklable tasks through one pure function:

* ``scheduler=None, workers=None``: in this process, in order;
* ``workers=N``: a pool of N local processes (``spawn``: no thread state of the parent
  -- numba's, OpenMP's -- is copied into the workers);
* ``scheduler="dask"`` (a local cluster), ``"tcp://host:port"`` or a
  ``distributed.Client``: one dask task per unit, retried ``retries`` times when it
  raises; a worker that dies mid-task has its task run again elsewhere by dask's
  scheduler.  A unit that still fails is reported by name (an error, never a result
  with the unit missing).

With ``out=``, each unit's result is written to ``out/units/<key>.nc`` (netCDF, written
atomically) the moment it arrives, and ``out/summary.csv`` (one line per finished unit)
is rewritten beside it.  A run started again with the same ``out`` reads back every unit
whose file carries the same task digest (same inputs, same settings) and runs only the
rest, so a Ctrl-C or a crash loses at most the units in flight.

Progress inside a unit: with ``unit_progress=``, each task is given a file
(``progress_file``, beside its result, or in a temporary folder without ``out``) where a
long unit writes ``done total`` now and then (:func:`progress_writer`); a thread of this
process reads the files of the units in flight about once a second and calls
``unit_progress(key, done, total)`` when one has moved.  Workers of another machine (a
remote dask cluster) write to their own disks: their units report only when they finish.
"""

from __future__ import annotations

import contextlib
import os
import re
import warnings
from pathlib import Path

import numpy as np

__all__ = ["progress_writer", "run_units"]

#: seconds between a unit's progress writes, and between the watcher's reads
PROGRESS_EVERY = 1.0

#: what a result holds besides per-cell arrays (kept as netCDF attributes)
_SCALARS = ("key", "digest", "n_candidates", "posterior", "n_programs", "seconds", "n_cells",
            "mc_summary", "mc_converged")


def _safe(key: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", key)[:80] or "unit"


def _path(out, i, key) -> Path:
    return Path(out) / "units" / f"{i:05d}_{_safe(key)}.nc"


def _write(result: dict, path: Path) -> None:
    import xarray as xr

    from ._io import atomic_write_netcdf
    data = {}
    for k, v in result.items():
        if k in _SCALARS:
            continue
        a = np.asarray(v)
        if a.size == 0:            # netCDF3 takes a dim of length 0 as its record dim
            continue
        if a.ndim == 1:
            data[k] = (("cell",), a)
        elif a.ndim == 2:
            data[k] = (("cell", "w") if a.shape[0] == result["n_cells"] else
                       ("row0", "w"), a)
    ds = xr.Dataset(data, attrs={k: result[k] for k in _SCALARS if k in result})
    atomic_write_netcdf(ds, path)


def _read(path: Path, task) -> dict | None:
    """The stored result of ``task``, or None when absent, unreadable or made from other
    inputs."""
    import xarray as xr
    if not path.exists():
        return None
    try:
        with xr.open_dataset(path, engine="scipy", mask_and_scale=False) as ds:
            ds = ds.load()
            if ds.attrs.get("digest") != task.digest():
                return None
            out = {k: ds.attrs[k] for k in _SCALARS if k in ds.attrs}
            for k, v in ds.variables.items():
                a = np.asarray(v.values)
                out[k] = a.astype(bool) if k in ("certain", "exact", "decided") else a
    except (OSError, ValueError, KeyError):
        return None
    for k in ("lower", "upper", "solution"):
        out[k] = np.asarray(out.get(k, ()), np.int64)
    for k in ("certain", "exact", "decided"):
        out[k] = np.asarray(out.get(k, ()), bool)
    for k in ("rhat", "ess"):
        out[k] = np.asarray(out.get(k, ()), float)
    out["mc_summary"] = str(out.get("mc_summary", ""))
    out["mc_converged"] = int(out.get("mc_converged", -1))
    out["n_candidates"] = int(out["n_candidates"])
    out["n_programs"] = int(out["n_programs"])
    out["n_cells"] = int(out["n_cells"])
    out["seconds"] = float(out["seconds"])
    if "probs" not in out:
        out["probs"] = np.zeros((0, 0))
    out["resumed"] = True
    return out


def _summary(out, tasks, results) -> None:
    from ._atomic import atomic_write_text
    lines = ["unit,cells,certain,persons_certain,integer_programs,seconds,posterior"]
    for t, r in zip(tasks, results):
        if r is None:
            continue
        cert = np.asarray(r["certain"], bool)
        pc = int(np.asarray(r["lower"])[cert].sum())
        post = str(r["posterior"]).replace('"', "'")
        lines.append(f'"{t.key}",{t.cells.size},{int(cert.sum())},{pc},{r["n_programs"]},'
                     f'{float(r["seconds"]):.3f},"{post}"')
    atomic_write_text(Path(out) / "summary.csv", "\n".join(lines) + "\n")


def progress_writer(path):
    """``progress(done, total)`` writing ``"done total"`` to ``path`` (atomically, at
    most once per :data:`PROGRESS_EVERY` seconds, and at the end), or None without a
    path.  Safe to call from several threads."""
    if not path:
        return None
    import threading
    import time

    from ._atomic import atomic_write_text
    lock = threading.Lock()
    last = [0.0]

    def progress(done, total):
        now = time.monotonic()
        with lock:
            if now - last[0] < PROGRESS_EVERY and done < total:
                return
            last[0] = now
            try:
                atomic_write_text(path, f"{int(done)} {int(total)}\n")
            except OSError:                  # progress is never worth failing a unit
                pass
    return progress


class _Watcher:
    """Reads the units' progress files in a thread and reports the ones that moved."""

    def __init__(self, tasks, report):
        import threading
        self.tasks, self.report = tasks, report
        self.seen: dict = {}
        self.finished: set = set()
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True,
                                       name="riskengine-unit-progress")

    def _loop(self):
        while not self.stop.wait(PROGRESS_EVERY):
            self.poll()

    def poll(self):
        for i, t in enumerate(self.tasks):
            with self.lock:
                if i in self.finished:
                    continue
                try:
                    done, total = map(int, Path(t.progress_file).read_text().split())
                except (OSError, ValueError):
                    continue
                if self.seen.get(i) != (done, total):
                    self.seen[i] = (done, total)
                    with contextlib.suppress(Exception):   # the units decide, not a report
                        self.report(t.key, done, total)

    def close(self, i):
        """Unit ``i`` finished: no more reads; a unit that reported is reported done."""
        with self.lock:
            self.finished.add(i)
            seen = self.seen.get(i)
            if seen is not None and seen[0] < seen[1]:
                with contextlib.suppress(Exception):
                    self.report(self.tasks[i].key, seen[1], seen[1])

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()
        for t in self.tasks:
            Path(t.progress_file).unlink(missing_ok=True)


def run_units(tasks, fn, out=None, workers=None, scheduler=None, progress=None,
              retries: int = 2, unit_progress=None) -> list:
    """``[fn(t) for t in tasks]``, run as the module says.

    Parameters
    ----------
    tasks : list
        Picklable tasks with ``key`` (str) and ``digest()``.
    fn : callable
        A module-level function (picklable by reference).
    out : path, optional
        Directory of per-unit results (written as they finish; reused when a rerun's
        task has the same digest).
    workers : int, optional
        Local worker processes.
    scheduler : "dask", address or distributed.Client, optional
    progress : callable, optional
        ``progress(done, total)`` after each unit (units read back count at once).
    retries : int
        Retries of a unit that raises on dask.
    unit_progress : callable, optional
        ``unit_progress(key, done, total)`` from inside units that report it (the
        module); each task in flight is copied with its ``progress_file`` set.

    Returns
    -------
    list
        The results, in the order of ``tasks``.
    """
    n = len(tasks)
    if workers is not None and scheduler is not None:
        raise ValueError("give workers= (local processes) or scheduler= (dask), not both")
    if workers is not None:
        workers = int(workers)
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
    results: list = [None] * n
    if out is not None:
        Path(out).mkdir(parents=True, exist_ok=True)
        for i, t in enumerate(tasks):
            results[i] = _read(_path(out, i, t.key), t)
    todo = [i for i in range(n) if results[i] is None]
    done = n - len(todo)
    if progress is not None and done:
        progress(done, n)
    if unit_progress is None or not todo:
        _run(tasks, fn, todo, workers, scheduler, retries,
             _finisher(tasks, results, out, progress, n, done))
        return results
    import copy
    import tempfile
    with contextlib.ExitStack() as stack:
        where = (Path(out) / "units" if out is not None
                 else Path(stack.enter_context(tempfile.TemporaryDirectory())))
        where.mkdir(parents=True, exist_ok=True)
        tasks = list(tasks)
        for i in todo:
            f = where / f"{i:05d}_{_safe(tasks[i].key)}.progress"
            f.unlink(missing_ok=True)               # left by a run that was stopped
            tasks[i] = copy.copy(tasks[i])
            tasks[i].progress_file = str(f)
        watcher = stack.enter_context(_Watcher([tasks[i] for i in todo], unit_progress))
        finish = _finisher(tasks, results, out, progress, n, done)

        def finish_watched(i, r):
            watcher.close(todo.index(i))
            finish(i, r)
        _run(tasks, fn, todo, workers, scheduler, retries, finish_watched)
    return results


def _finisher(tasks, results, out, progress, n, done):
    """``finish(i, result)``: keep it, write it (``out``), report it."""
    count = [done]

    def finish(i, r):
        results[i] = r
        count[0] += 1
        if out is not None:
            _write(r, _path(out, i, tasks[i].key))
            _summary(out, tasks, results)
        if progress is not None:
            progress(count[0], n)
    return finish


def _run(tasks, fn, todo, workers, scheduler, retries, finish) -> None:
    if scheduler is not None:
        _run_dask(tasks, fn, todo, scheduler, retries, finish)
    elif workers is not None and workers > 1 and len(todo) > 1:
        _run_pool(tasks, fn, todo, workers, finish)
    else:
        for i in todo:
            finish(i, fn(tasks[i]))


def _run_pool(tasks, fn, todo, workers, finish) -> None:
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor, as_completed
    ctx = mp.get_context("spawn")
    with ProcessPoolExecutor(max_workers=min(workers, len(todo), os.cpu_count() or 1),
                             mp_context=ctx) as ex:
        futs = {ex.submit(fn, tasks[i]): i for i in todo}
        try:
            for f in as_completed(futs):
                i = futs[f]
                try:
                    r = f.result()
                except Exception as e:
                    raise RuntimeError(f"unit {tasks[i].key!r} failed: {e}") from e
                finish(i, r)
        except BaseException:
            for f in futs:
                f.cancel()
            raise


def _run_dask(tasks, fn, todo, scheduler, retries, finish) -> None:
    import distributed

    from ._simulate import _check_scheduler
    from .inference._chains import close_client, dask_client
    client, owned = dask_client(_check_scheduler(scheduler))
    try:
        # each unit's arrays travel with its task (not scattered to one worker first): a
        # killed worker's units are sent again; dask's "large graph" warning says so
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Sending large graph",
                                    category=UserWarning)
            futs = {client.submit(fn, tasks[i], pure=False, retries=int(retries),
                                  key=f"unit-{i}-{_safe(tasks[i].key)}-"
                                      f"{tasks[i].digest()[:8]}"): i
                    for i in todo}
        for f in distributed.as_completed(futs):
            i = futs[f]
            try:
                r = f.result()
            except Exception as e:
                raise RuntimeError(f"unit {tasks[i].key!r} failed after {retries} retries: "
                                   f"{e}") from e
            finish(i, r)
    finally:
        close_client(client, owned)
