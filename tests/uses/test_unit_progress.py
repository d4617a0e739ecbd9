"""Progress from inside the units of rk.reconstruct's runner (riskengine/_units.py): each
unit in flight writes ``done total`` to its file, a thread of the caller's process reads
the files and reports the ones that moved -- serially and on a pool of processes -- and
the CLI shows it after the count of units."""

from __future__ import annotations

import io
import time

import numpy as np
import pytest

from riskengine._units import progress_writer, run_units
from riskengine.cli.output import Progress


class _Task:
    progress_file = None
    cells = np.zeros(0, np.int64)

    def __init__(self, key, steps=5):
        self.key, self.steps = key, steps

    def digest(self):
        return self.key


def _slow(task):
    """A unit of ``steps`` half-second steps reporting each one; an empty unit's result."""
    report = progress_writer(task.progress_file)
    for k in range(task.steps):
        time.sleep(0.5)
        if report is not None:
            report(k + 1, task.steps)
    return {"key": task.key, "digest": task.digest(), "certain": np.zeros(0, bool),
            "lower": np.zeros(0, np.int64), "n_programs": 0, "seconds": 0.0,
            "posterior": "", "n_cells": 0}


@pytest.mark.parametrize("workers", [None, 2])
def test_units_in_flight_report_their_progress(workers, tmp_path):
    seen = []
    tasks = [_Task("u1"), _Task("u2")]
    res = run_units(tasks, _slow, workers=workers,
                    unit_progress=lambda *a: seen.append(a))
    assert [r["key"] for r in res] == ["u1", "u2"]
    for key in ("u1", "u2"):
        mine = [(d, t) for k, d, t in seen if k == key]
        # read at least once in flight, never backwards, and reported done at the end
        assert mine and all(t == 5 for _, t in mine)
        assert [d for d, _ in mine] == sorted(d for d, _ in mine)
        assert mine[-1] == (5, 5)
    # the caller's tasks are not changed; the files are gone
    assert all(t.progress_file is None for t in tasks)
    assert not list(tmp_path.glob("*.progress"))


def test_progress_files_sit_beside_the_results_and_are_removed(tmp_path):
    seen = []
    run_units([_Task("a", 3)], _slow, out=tmp_path,
              unit_progress=lambda *a: seen.append(a))
    assert seen and seen[-1] == ("a", 3, 3)
    assert not list((tmp_path / "units").glob("*.progress"))
    assert len(list((tmp_path / "units").glob("*.nc"))) == 1
    # without unit_progress no file is written and nothing is reported
    assert progress_writer(None) is None


def test_the_cli_line_shows_the_units_in_flight():
    out = io.StringIO()
    p = Progress("reconstruct (units)", after=0.0, stream=out)
    p.detail("C1T01", 20, 5000)            # before any unit has finished
    assert out.getvalue().endswith("reconstruct (units): started (0.0 s); C1T01 20/5000 "
                                   "sweeps")
    p.detail("C1T01", 5000, 5000)
    p(1, 20)
    p.detail("C1T06", 300, 5000)
    assert out.getvalue().rstrip().endswith("reconstruct (units): 1/20 (0.0 s); "
                                            "C1T06 300/5000 sweeps")
    p.detail("C1T06", 5000, 5000)          # done: dropped from the line
    assert out.getvalue().split("\r")[-1].rstrip().endswith("1/20 (0.0 s)")


def test_a_failing_progress_callback_does_not_fail_the_units():
    calls = []

    def broken(key, done, total):
        calls.append(done)
        raise RuntimeError("a display that broke")
    res = run_units([_Task("u1", 4)], _slow, unit_progress=broken)
    assert [r["key"] for r in res] == ["u1"] and calls
