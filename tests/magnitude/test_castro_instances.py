"""Castro's CSP/CTA test tables (CUTEst SIF, benchmarks/data/castro; read by
benchmarks/castro_instances.py): every heuristic pattern passes the audit, and the optimal
route proves table8's optimum, whose value an explicit MILP over every protection
constraint confirms (262: 8 cells; before the master's objective was scaled to the
incumbent, the search stalled at 264 with 10 cells)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import castro_instances as ci  # noqa: E402

from riskengine.magnitude.csp import find_pattern  # noqa: E402
from riskengine.magnitude.intervals import intervals, protection_tol  # noqa: E402


def _protection(t):
    return np.minimum(t.upl, t.a), t.upl


@pytest.mark.parametrize("name", ["TARGUS", "TABLE7", "TABLE8", "HIE1372D"])
def test_heuristic_patterns_pass_the_audit(name):
    t = ci.load(name)
    lo, hi = _protection(t)
    pat = find_pattern(t.system, t.a, t.sens, protection=(lo, hi), method="heuristic",
                       suppress_totals=True)
    x = np.where(pat.mask, np.nan, t.a)
    lower, upper = intervals(t.system, x)
    tol = protection_tol(t.a)
    s = np.flatnonzero(t.sens)
    assert pat.mask[s].all()
    assert np.all(t.a[s] - lower[s] >= lo[s] - tol)
    assert np.all(upper[s] - t.a[s] >= hi[s] - tol)


@pytest.mark.slow
def test_table8_optimal_is_proven_at_262():
    t = ci.load("TABLE8")
    lo, hi = _protection(t)
    pat = find_pattern(t.system, t.a, t.sens, protection=(lo, hi), method="optimal",
                       suppress_totals=True, time_limit=300)
    assert pat.info["status"] == "optimal"
    assert int(pat.mask.sum()) == 8
    assert float(t.a[pat.mask].sum()) == pytest.approx(262.0)
