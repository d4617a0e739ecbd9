"""``riskengine routes``: the registry (``rk.routes()``) on the command line, as text and as
the README's markdown table, which must be the one in README.md; the command's grammar
loads no mechanism (the registry loads them when the command runs)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import riskengine as rk
from riskengine.cli import main
from riskengine.cli.routes import markdown
from riskengine.mechanisms import REGISTRY

README = Path(__file__).resolve().parents[2] / "README.md"


def test_routes_prints_every_mechanism_and_route(capsys):
    assert main(["routes"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    for name, cls in REGISTRY.items():
        head = [ln for ln in lines if ln.startswith(f"{name} (")]
        assert len(head) == 1 and f"({cls.__name__}; example: " in head[0], name
        at = lines.index(head[0])
        body = []
        for ln in lines[at + 1:]:
            if not ln.startswith("  "):
                break
            body.append(ln)
        if not cls.routes:
            assert body == [f"  no inference route: {cls.no_route}"]
            continue
        named = [ln.split()[0] if not ln.startswith("  set ") else "set " + ln.split()[1]
                 for ln in body[::2]]
        assert named == [r.name for r in cls.routes] + [f"set {r.name}" for r in cls.set_routes]
        for ln, r in zip(body[::2], [*cls.routes, *cls.set_routes]):
            assert (("exact" in ln or "approximate" in ln) if r.exact else
                    "Monte Carlo" in ln) and ln.endswith(f"needs: {r.needs}")
        assert all(ln.strip().startswith("cost:  ") for ln in body[1::2])


def test_the_readme_routes_table_is_the_registry_s(capsys):
    assert main(["routes", "--markdown"]) == 0
    table = capsys.readouterr().out.strip()
    assert table == markdown(rk.routes())
    assert table in README.read_text(encoding="utf-8"), (
        "the README's routes table is not current: paste `riskengine routes --markdown`")


def test_the_command_loads_no_mechanism_before_it_runs():
    code = ("import sys; from riskengine.cli import build_parser; "
            "args = build_parser().parse_args(['routes']); "
            "print(sorted(m for m in sys.modules if m.startswith('riskengine.mechanisms.') "
            "or m == 'pandas' or m == 'riskengine.inference.registry'))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       check=True, timeout=300)
    assert r.stdout.strip() == "[]", r.stdout
