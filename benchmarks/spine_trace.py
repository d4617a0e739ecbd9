"""Runtime trace of the spine: which riskengine / kernels modules one ``rk.posterior``
call on a controlled-rounding release visits, how often it returns to a module it had
left, and whether any call climbs a layer (a function of a lower layer calling one of a
higher layer).  Layers as in tests/test_layers.py.  Run: ``python benchmarks/spine_trace.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import riskengine as rk  # noqa: E402
from tests.test_layers import layer  # noqa: E402


def module_of(code) -> str | None:
    f = Path(code.co_filename)
    try:
        rel = f.resolve().relative_to(ROOT)
    except ValueError:
        return None
    if rel.parts[0] not in ("riskengine", "kernels") or rel.suffix != ".py":
        return None
    parts = list(rel.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def trace(fn):
    """(modules in the order first entered, transitions, returns to a module already left,
    climbs): the project's frames only (library code in between is skipped)."""
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

    sys.setprofile(prof)
    try:
        fn()
    finally:
        sys.setprofile(None)
    seen, again = set(), 0
    for i, m in enumerate(path):
        if m in seen and (i == 0 or path[i - 1] != m):
            again += 1
        seen.add(m)
    order = list(dict.fromkeys(path))
    return order, len(path) - 1, again, climbs


def main() -> None:
    t = rk.Table(np.array([[15, 1, 3, 1], [20, 10, 10, 15], [3, 10, 10, 2], [12, 14, 7, 2]]),
                 dims=("v", "w"))
    rel = rk.ControlledRounding(base=3).protect(t, np.random.default_rng(0))
    rk.posterior(rel)                                   # compile and import first
    order, moves, again, climbs = trace(lambda: rk.posterior(rel))
    print(f"rk.posterior on a controlled-rounding 4 x 4 release: {len(order)} modules, "
          f"{moves} moves between modules, {again} returns to a module already left, "
          f"{len(climbs)} calls up a layer")
    for m in order:
        print(f"  L{layer(m)} {m}")
    for c in dict.fromkeys(climbs):
        print(f"  climb: {c}")


if __name__ == "__main__":
    main()
