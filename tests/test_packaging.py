"""The installed package holds every subpackage of the source tree: ``pip install .`` (not
editable) must install ``riskengine.cli`` & co., or the console script fails on a fresh
machine while the tests, importing from the checkout, pass."""

from __future__ import annotations

import tomllib
from fnmatch import fnmatch
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_subpackage_is_installed():
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())
    setuptools = cfg["tool"]["setuptools"]
    listed = setuptools.get("packages")
    patterns = (setuptools.get("packages", {}).get("find", {}).get("include")
                if isinstance(listed, dict) else None)
    found = sorted(".".join(p.parent.relative_to(ROOT).parts)
                   for top in ("riskengine", "kernels")
                   for p in (ROOT / top).rglob("__init__.py")
                   if "__pycache__" not in p.parts)
    assert found and "riskengine.cli" in found
    for name in found:
        if patterns is not None:
            assert any(fnmatch(name, pat) for pat in patterns), name
        else:
            assert name in listed, f"{name} is not in pyproject's packages"
