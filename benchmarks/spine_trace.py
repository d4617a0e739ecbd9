"""Runtime trace of the spine: the riskengine / kernels modules one ``rk.posterior`` call on
seed 003's controlled-rounding 4 x 4 release visits, how often it returns to a module it
had left, and the calls that climb a layer (tests/test_spine_trace.py holds the tracer
and checks that the only climbs are the protocol's dispatch).

    python benchmarks/spine_trace.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import riskengine as rk  # noqa: E402
from tests.test_layers import layer  # noqa: E402
from tests.test_spine_trace import rounding_release, trace  # noqa: E402


def main() -> None:
    rel = rounding_release()
    rk.posterior(rel)                                   # compile and import first
    tr = trace(lambda: rk.posterior(rel))
    print(f"rk.posterior on a controlled-rounding 4 x 4 release: {len(tr['order'])} modules, "
          f"{tr['moves']} moves between modules, {tr['returns']} returns to a module already "
          f"left, {len(tr['climbs'])} calls up a layer ({len(tr['dispatch'])} of them the "
          "protocol's dispatch)")
    for m in tr["order"]:
        print(f"  L{layer(m)} {m}")
    for c in dict.fromkeys(tr["climbs"]):
        print(f"  climb: {c}")


if __name__ == "__main__":
    main()
