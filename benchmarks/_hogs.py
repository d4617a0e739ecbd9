"""Two CPU hogs beside a benchmark (the machines are shared: a busy machine is measured
as well as an idle one), and the load average said at the start and the end."""

from __future__ import annotations

import contextlib
import multiprocessing
import os


def _hog():
    while True:
        pass


@contextlib.contextmanager
def hogs(n: int):
    """Start ``n`` busy-looping processes for the block; print the 1-minute load
    average when it starts and ends."""
    procs = [multiprocessing.Process(target=_hog, daemon=True) for _ in range(n)]
    for p in procs:
        p.start()
    print(f"load average at start: {os.getloadavg()[0]:.2f} (hogs: {n})", flush=True)
    try:
        yield
    finally:
        for p in procs:
            p.terminate()
        print(f"load average at end: {os.getloadavg()[0]:.2f}", flush=True)
