"""The command's fast start, its compile notice and ``riskengine warmup``.

The ``riskengine`` console script imports ``riskengine.cli``; ``riskengine/__init__`` is
a lazy namespace (PEP 562) and the command's modules import the library where a command
runs, so ``--help`` and argument errors import neither NumPy nor xarray, SciPy, Numba or
pandas.  The tests run a copy of the console script
that pip writes (named ``riskengine``, as installed) in a fresh interpreter.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import riskengine as rk
from riskengine.cli import main

HEAVY = ("numpy", "xarray", "scipy", "numba", "pandas", "matplotlib", "highspy")

#: what pip writes for ``[project.scripts] riskengine = "riskengine.cli:main"``
SCRIPT = """import re
import sys
from riskengine.cli import main
if __name__ == '__main__':
    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])
    sys.exit(main())
"""


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "bin" / "riskengine"
    path.parent.mkdir()
    path.write_text(SCRIPT)
    return path


def run(script, *args, env=None, importtime=False):
    cmd = [sys.executable, *(["-X", "importtime"] if importtime else []), str(script), *args]
    return subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=600,
                          env={**os.environ, **(env or {})})


def imported(stderr: str) -> set:
    """Top-level packages named by ``-X importtime``'s lines."""
    names = re.findall(r"^import time:\s+\d+ \|\s+\d+ \|\s+([\w.]+)", stderr,
                       flags=re.MULTILINE)
    return {n.split(".")[0] for n in names}


def messages(stderr: str) -> list:
    return [ln for ln in stderr.splitlines() if not ln.startswith("import time:")]


def test_help_and_argument_errors_import_no_heavy_package(script, tmp_path):
    r = run(script, "--help", importtime=True)
    assert r.returncode == 0 and "warmup" in r.stdout
    mods = imported(r.stderr)
    assert "riskengine" in mods and not mods & set(HEAVY), sorted(mods & set(HEAVY))
    for args, msg in [(["assess", "--level", "0"], "--level must be a probability"),
                      (["count"], "the following arguments are required: release"),
                      (["assess", "--nope"], "unrecognized arguments: --nope"),
                      (["count", str(tmp_path / "missing.json")], "no such file"),
                      (["report", str(tmp_path)], "is a folder; a file is needed")]:
        r = run(script, *args, importtime=True)
        err = messages(r.stderr)
        assert r.returncode == 2, (args, r.stderr[-500:])
        assert len(err) == 1 and err[0].startswith("riskengine: error: ") and msg in err[0]
        assert not imported(r.stderr) & set(HEAVY), args


@pytest.mark.slow
def test_the_console_script_runs_subcommands(script, tmp_path):
    t = tmp_path / "t.csv"
    t.write_text("\\,a,b,c\nx,3,0,2\ny,1,4,1\nz,2,2,5\n")
    rel = tmp_path / "rel.json"
    r = run(script, "protect", str(t), "--seed", "4", "--out", str(rel))
    assert r.returncode == 0, r.stderr
    r = run(script, "count", str(rel))
    assert r.returncode == 0, r.stderr
    assert int(r.stdout.strip().splitlines()[-1]) == rk.count_candidates(rk.Release.load(rel))


@pytest.mark.slow
def test_the_command_lines_lazy_package_is_the_library(script, tmp_path):
    """Under the console script, ``riskengine`` is the same lazy namespace as under
    ``import riskengine``: every name of ``rk.__all__`` is the same object kind."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import json, sys, types\n"
        "import riskengine as rk\n"
        "print(json.dumps({'numpy_before': 'numpy' in sys.modules,\n"
        "                  'names': {n: type(getattr(rk, n)).__name__ for n in rk.__all__},\n"
        "                  'suppress_is_module': isinstance(rk.suppress, types.ModuleType)}))\n")
    lazy_script = script.parent / "riskengine"
    lazy_script.write_text(SCRIPT.replace("    sys.exit(main())",
                                          f"    exec(open({str(probe)!r}).read())"))
    r = run(lazy_script)
    assert r.returncode == 0, r.stderr
    lazy = json.loads(r.stdout)
    r = subprocess.run([sys.executable, str(probe)], capture_output=True, text=True,
                       check=True, timeout=300)
    eager = json.loads(r.stdout)
    assert lazy["numpy_before"] is False and eager["numpy_before"] is False
    assert lazy["names"] == eager["names"]
    assert lazy["names"]["suppress"] == lazy["names"]["audit"] == "function"
    assert not lazy["suppress_is_module"]


@pytest.mark.slow
def test_a_first_compile_says_so_once(tmp_path):
    """An empty numba cache: the run that compiles prints one line naming the kernels and
    the time to expect; the next run loads them and says nothing."""
    rel = tmp_path / "margins.json"
    t = rk.Table(np.array([[3, 1, 2], [2, 4, 1], [1, 2, 5]]), dims=("v", "w"))
    rk.MarginsOnly().protect(t).save(rel)
    env = {"NUMBA_CACHE_DIR": str(tmp_path / "numba-cache")}
    cmd = [sys.executable, "-m", "riskengine.cli", "count", str(rel), "--sis", "100"]
    first = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=600,
                           env={**os.environ, **env})
    assert first.returncode == 0, first.stderr
    notes = [ln for ln in first.stderr.splitlines() if "compiling numerical kernels" in ln]
    assert len(notes) == 1, first.stderr
    assert re.fullmatch(r"riskengine: compiling numerical kernels \(sis\) once for this "
                        r"machine, ~\d+ s .*riskengine warmup.*", notes[0])
    again = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=600,
                           env={**os.environ, **env})
    assert again.returncode == 0 and "compiling" not in again.stderr
    assert again.stdout == first.stdout


@pytest.mark.slow
def test_warmup_runs_every_mechanisms_routes(capsys):
    from riskengine.mechanisms import REGISTRY
    assert main(["warmup"]) == 0
    out = capsys.readouterr().out
    lines = {ln.split()[0]: ln for ln in out.splitlines() if ln.startswith("  ")}
    for name, cls in REGISTRY.items():
        if not cls.routes:
            continue
        ran = re.search(r"routes ([\w, -]+):", lines[name]).group(1).split(", ")
        # grouped subtotals come from no mechanism's protect: a step of their own
        assert set(ran) == {r.name for r in cls.routes} - {"grouped-dp"}, (name, lines[name])
    assert "route grouped-dp" in lines["grouped"] and "count" in lines
    assert "gibbs (long lines)" in lines["large"]
    assert re.search(r"^warmup done in [\d.]+ s: ", out, flags=re.MULTILINE)
