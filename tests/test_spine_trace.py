"""The spine at run time: one ``rk.posterior`` call climbs no layer.

A profile hook follows the project's frames (riskengine/, kernels/) of one call on seed
003's 4 x 4 controlled-rounding release; a call from a module of a lower layer into one of
a higher layer (layers as in tests/test_layers.py) is a climb.  The only calls up are the
protocol's own dispatch (``riskengine.protocol`` asking the mechanism, through its
declared methods, for its inputs and its description): no route calls its mechanism, no
kernel calls Python.  ``benchmarks/spine_trace.py`` prints the whole trace.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import riskengine as rk
from tests.test_layers import ROOT, layer


def module_of(code) -> str | None:
    try:
        rel = Path(code.co_filename).resolve().relative_to(ROOT)
    except ValueError:
        return None
    if rel.parts[0] not in ("riskengine", "kernels") or rel.suffix != ".py":
        return None
    parts = list(rel.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def trace(fn) -> dict:
    """What ``fn()`` visits: ``order`` (modules, first entry order), ``moves`` between
    modules, ``returns`` to a module already left, ``climbs`` (``caller -> callee.function``)
    and among them ``dispatch`` (from riskengine.protocol)."""
    stack, path, climbs = [], [], []

    def prof(frame, event, arg):
        if event == "call":
            m = module_of(frame.f_code)
            caller = next((s for s in reversed(stack) if s is not None), None)
            stack.append(m)
            if m is None:
                return
            if caller is not None and m != caller and layer(m) > layer(caller):
                climbs.append(f"{caller} -> {m}.{frame.f_code.co_name}")
            if not path or path[-1] != m:
                path.append(m)
        elif event == "return" and stack:
            stack.pop()
            m = next((s for s in reversed(stack) if s is not None), None)
            if m is not None and path and path[-1] != m:
                path.append(m)

    old = sys.getprofile()
    sys.setprofile(prof)
    try:
        fn()
    finally:
        sys.setprofile(old)
    seen, again = set(), 0
    for i, m in enumerate(path):
        if m in seen and path[i - 1] != m:
            again += 1
        seen.add(m)
    return {"order": list(dict.fromkeys(path)), "moves": len(path) - 1, "returns": again,
            "climbs": climbs,
            "dispatch": [c for c in climbs if c.startswith("riskengine.protocol ->")]}


def rounding_release():
    t = rk.Table(np.array([[15, 1, 3, 1], [20, 10, 10, 15], [3, 10, 10, 2], [12, 14, 7, 2]]),
                 dims=("v", "w"))
    return rk.ControlledRounding(base=3).protect(t, np.random.default_rng(0))


def test_a_posterior_climbs_no_layer_but_through_the_protocol():
    rel = rounding_release()
    rk.posterior(rel)                       # imports and compiles first
    tr = trace(lambda: rk.posterior(rel))
    assert tr["climbs"] == tr["dispatch"], tr["climbs"]
    called = {c.rpartition(".")[2] for c in tr["dispatch"]}
    # the mechanism's declared inputs: its windows and their cost (``window_cost``)
    assert called <= {"entry_windows", "window_cost", "_params", "describe", "inputs"}, called
    assert tr["order"][0] == "riskengine.inference.resolve"
    assert "riskengine.inference._label" in tr["order"]
