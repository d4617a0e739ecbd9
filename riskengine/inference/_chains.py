"""Markov chains run side by side on the machine's cores (or on a dask cluster).

Each chain is a function ``one(ch, tick) -> draws`` whose randomness comes only from its
own seed (drawn in chain order before any chain starts), so the result for a seed is the
same whatever the number of threads.  The compiled kernels release the GIL, so threads run
the chains in parallel.  ``tick(k)`` reports ``k`` more sweeps done (the progress callback
is called from the chains' threads) and raises :class:`Stopped` once the run is stopped:
Ctrl-C in the main thread stops every chain at its next tick instead of waiting for the
end.  ``scheduler="dask"`` (a local cluster of processes), a cluster address or a
``distributed.Client`` runs the chains as dask tasks instead: the same draws for a seed.

Threading layers: a chain may call numba's parallel kernels (each 2-D Gibbs chain's block
redraw runs the table DP).  numba's ``workqueue`` layer, its fallback without OpenMP or
TBB, aborts the process when two threads are inside parallel regions at once; every
parallel kernel of the package is entered through :func:`kernels.table_dp.parallel_region`,
which lets one thread in at a time under that layer (and does not wait under ``omp`` or
``tbb``).  The other chains' kernels (3-D, cyclic, linked, joint) are serial.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

__all__ = ["Stopped", "close_client", "dask_client", "run", "schedule"]

DASK_HINT = 'pip install "riskengine[dask]"'


class Stopped(Exception):
    """Raised inside a chain when the run was stopped (Ctrl-C or another chain's error)."""


def _idle(k: int):
    return None


def dask_client(scheduler, n_workers: int = 2):
    """``(client, owned)`` for a dask scheduler spec: a ``distributed.Client`` as given,
    ``"dask"`` a local cluster of ``n_workers`` processes, an address a client of that
    cluster (``owned``: close it with :func:`close_client`)."""
    try:
        import distributed
    except ImportError:
        raise ImportError(f"scheduler={scheduler!r} needs dask.distributed: {DASK_HINT}") \
            from None
    if isinstance(scheduler, distributed.Client):
        return scheduler, False
    if scheduler == "dask":
        # the dashboard on a free port: None means distributed's 8787, which a second
        # cluster on the machine (another run, a test beside it) finds taken, and the
        # cluster then fails to start (the workers' dashboards likewise)
        cluster = distributed.LocalCluster(n_workers=n_workers, threads_per_worker=1,
                                           processes=True, dashboard_address=":0",
                                           worker_dashboard_address=":0")
        return distributed.Client(cluster), True
    return distributed.Client(scheduler), True


def close_client(client, owned: bool) -> None:
    if owned:
        cluster = getattr(client, "cluster", None)
        client.close()
        if cluster is not None:
            cluster.close()


def _run_dask(n, one, total, progress, scheduler) -> list:
    import distributed
    client, owned = dask_client(scheduler, min(n, os.cpu_count() or 1))
    try:
        futures = [client.submit(one, ch, _idle, pure=False) for ch in range(n)]
        out = {}
        for fut in distributed.as_completed(futures):
            out[futures.index(fut)] = fut.result()
            if progress is not None:
                progress(total * len(out) // n, total)
        return [out[ch] for ch in range(n)]
    finally:
        close_client(client, owned)


def run(n: int, one, total: int, progress=None, workers: int | None = None,
        scheduler=None) -> list:
    """The results of ``one(ch, tick)`` for ``ch = 0 .. n - 1``, in chain order."""
    if scheduler is not None:
        return _run_dask(n, one, total, progress, scheduler)
    lock = threading.Lock()
    stop = threading.Event()
    done = [0]

    def tick(k: int):
        if stop.is_set():
            raise Stopped("stopped")
        with lock:
            done[0] += k
            d = done[0]
        if progress is not None:
            progress(d, total)

    workers = min(n, os.cpu_count() or 1) if workers is None else max(1, int(workers))
    if workers == 1 or n == 1:
        return [one(ch, tick) for ch in range(n)]
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="riskengine-chain") as ex:
        futures = [ex.submit(one, ch, tick) for ch in range(n)]
        try:
            return [f.result() for f in futures]
        except BaseException:
            stop.set()
            for f in futures:
                f.cancel()
            raise


def schedule(warmup: int, draws: int, size: int = 50):
    """The sweeps of a chain in chunks of at most ``size``: ``(at, n, keep)``, ``keep``
    for the kept ones (``at``: the index of the chunk's first kept draw) and a warm-up
    chunk never straddling the warm-up's end."""
    it, total = 0, warmup + draws
    while it < total:
        n = min(size, total - it)
        keep = it >= warmup
        if not keep and it + n > warmup:
            n = warmup - it
        yield (it - warmup if keep else it), n, keep
        it += n
