"""What a command imports: ``riskengine assess`` loads the one mechanism module its
release names (and what that module imports itself), and with ``--no-report`` neither
matplotlib, the plots, the report writers nor the simulation module.  (dask may load: xarray's netCDF writer
asks it for its scheduler when it is installed.)

Each run is a fresh interpreter (this test process has imported everything already).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import riskengine as rk

PRELUDE = """
import json, sys

def loaded(prefix="riskengine.mechanisms."):
    return sorted(m[len(prefix):] for m in sys.modules if m.startswith(prefix))
"""


def fresh(code: str):
    r = subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(code)],
                       capture_output=True, text=True, check=False, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def assess_loads(args: list) -> dict:
    return fresh(f"""
        import contextlib, io
        from riskengine.cli import main
        with contextlib.redirect_stdout(io.StringIO()) as out:
            code = main({args!r})
        print(json.dumps({{"code": code, "out": out.getvalue(), "mechanisms": loaded(),
                          "others": sorted(m for m in sys.modules if m in (
                              "matplotlib", "riskengine.plots", "riskengine._simulate",
                              "arviz", "riskengine.report._write",
                              "riskengine.report.assess"))}}))
    """)


def alone(module: str) -> list:
    """The mechanism modules loaded by importing ``module`` alone."""
    return fresh(f"""
        import riskengine.mechanisms.{module}
        print(json.dumps(loaded()))
    """)


def with_baseline(module: str) -> list:
    """The mechanism modules of ``module`` and of the verdict's baseline (a margins-only
    release of the same totals: riskengine.mechanisms.margins_only)."""
    return sorted(set(alone(module)) | set(alone("margins_only")))


def test_assess_of_the_bundled_example_loads_its_mechanism_alone(tmp_path):
    run = assess_loads(["assess", "--no-report", "--out", str(tmp_path)])
    assert run["code"] == 0 and "bundled example" in run["out"], run["out"]
    assert (tmp_path / "posterior.nc").is_file() and not (tmp_path / "assess.html").exists()
    assert run["mechanisms"] == with_baseline("cyclic")
    run = assess_loads(["assess", "--no-report", "--out", str(tmp_path), "--baseline",
                        "none"])
    assert run["code"] == 0 and run["mechanisms"] == alone("cyclic")
    assert run["others"] == []


# rounding perturbs the totals: no baseline, no margins_only module; a margins-only
# release is its own baseline
@pytest.mark.parametrize("mech, module", [(rk.ControlledRounding(3), "rounding"),
                                          (rk.MarginsOnly(), "margins_only")])
def test_assess_of_a_release_loads_its_mechanism_alone(tmp_path, mech, module):
    t = rk.Table(np.array([[3, 1, 2], [2, 4, 1], [1, 2, 5]]), dims=("v", "w"))
    rel = tmp_path / "release.json"
    mech.protect(t, np.random.default_rng(1)).save(rel)
    run = assess_loads(["assess", str(rel), "--no-report", "--out", str(tmp_path / "o")])
    assert run["code"] == 0, run["out"]
    assert run["mechanisms"] == alone(module)
    assert run["others"] == []
