"""The layered house (shared/ARCHITECTURE.md), checked on the import graph.

Every import of a riskengine or kernels module is an edge, wherever it is written
(module level or inside a function), so an import moved into a function to dodge a
cycle still counts.  The rules:

* no import cycle;
* a module imports only from its own layer or below (L0 kernels, L1 core, L2 inference
  and magnitude, L3 mechanisms, L4 uses; the package ``__init__`` and the deprecated
  alias modules sit on top);
* ``inference`` and ``magnitude`` never import each other;
* ``kernels`` never imports riskengine or xarray;
* nothing imports a deprecated alias module (only ``riskengine/__init__`` loads them);
* the ``mechanisms`` package's ``__init__`` imports only the protocol at import time, so
  a core module can import the protocol without importing any mechanism.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

CORE = {"_validate", "table", "tabular", "priors", "release", "release_set", "posterior", "cycles",
        "generators", "_io", "_seeding", "_budget", "_version", "data", "mechanisms._base",
        "statistics", "_arviz"}
USES = {"cli", "_config", "compare", "simulate", "measures", "analyze", "report", "plots",
        "verdict"}
ALIASES = {"linear", "audit", "suppress", "cta", "cta_bivariate", "sensitivity",
           "contributions"}


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def modules() -> dict:
    out = {}
    for top in ("riskengine", "kernels"):
        for p in sorted((ROOT / top).rglob("*.py")):
            out[module_name(p)] = p
    return out


MODULES = modules()


def _is_package(name: str) -> bool:
    return MODULES.get(name) is not None and MODULES[name].name == "__init__.py"


def _resolve(mod: str, node: ast.ImportFrom | ast.Import) -> list:
    """Names of the project modules an import statement loads."""
    if isinstance(node, ast.Import):
        targets = [a.name for a in node.names]
        out = []
        for t in targets:
            while t and t not in MODULES:
                t = t.rpartition(".")[0]
            if t:
                out.append(t)
        return out
    if node.level:
        base = mod.split(".")
        if not _is_package(mod):
            base = base[:-1]
        base = base[: len(base) - (node.level - 1)]
        pkg = ".".join(base + ([node.module] if node.module else []))
    else:
        pkg = node.module or ""
    if pkg.split(".")[0] not in ("riskengine", "kernels"):
        return []
    out = []
    for a in node.names:
        sub = f"{pkg}.{a.name}"
        if sub in MODULES:
            out.append(sub)
        else:
            t = pkg
            while t and t not in MODULES:
                t = t.rpartition(".")[0]
            if t:
                out.append(t)
    return out


def graph() -> dict:
    edges = {}
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        deps = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                deps.update(d for d in _resolve(name, node) if d != name)
        edges[name] = deps
    return edges


def layer(name: str) -> int:
    if name.startswith("kernels"):
        return 0
    if name == "riskengine":
        return 6
    rest = name[len("riskengine."):]
    if rest in ALIASES:
        return 6
    if rest in CORE or rest.split(".")[0] in CORE:
        return 1
    if rest.split(".")[0] in ("inference", "magnitude"):
        return 2
    if rest.split(".")[0] == "mechanisms":
        return 3
    if rest in USES or rest.split(".")[0] in USES:
        return 4
    raise AssertionError(f"module {name} has no layer: add it to tests/test_layers.py "
                         "and to shared/ARCHITECTURE.md's picture")


EDGES = graph()


def test_every_module_has_a_layer():
    for name in MODULES:
        layer(name)


def test_no_import_cycle():
    state, stack, cycles = {}, [], []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for d in sorted(EDGES[n]):
            if state.get(d) == 1:
                cycles.append(stack[stack.index(d):] + [d])
            elif d not in state:
                visit(d)
        stack.pop()
        state[n] = 2

    for n in sorted(EDGES):
        if n not in state:
            visit(n)
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_imports_only_run_down_the_layers():
    up = [f"{a} (L{layer(a)}) imports {b} (L{layer(b)})"
          for a, deps in EDGES.items() for b in deps if layer(b) > layer(a)]
    assert not up, "imports running up a layer:\n" + "\n".join(sorted(up))


@pytest.mark.parametrize("a,b", [("inference", "magnitude"), ("magnitude", "inference")])
def test_inference_and_magnitude_stay_apart(a, b):
    bad = [f"{x} imports {y}" for x, deps in EDGES.items() for y in deps
           if x.startswith(f"riskengine.{a}") and y.startswith(f"riskengine.{b}")]
    assert not bad, bad


def test_kernels_import_neither_riskengine_nor_xarray():
    for name, path in MODULES.items():
        if not name.startswith("kernels"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                roots = [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                roots = [(node.module or "").split(".")[0]]
            else:
                continue
            assert not {"riskengine", "xarray"} & set(roots), f"{name} imports {roots}"


def test_nothing_imports_a_deprecated_alias():
    bad = [f"{a} imports {b}" for a, deps in EDGES.items() for b in deps
           if b[len("riskengine."):] in ALIASES and a != "riskengine"]
    assert not bad, bad


def test_mechanisms_package_loads_only_the_protocol():
    tree = ast.parse(MODULES["riskengine.mechanisms"].read_text(encoding="utf-8"))
    top = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    deps = {d for n in top for d in _resolve("riskengine.mechanisms", n)}
    assert deps <= {"riskengine.mechanisms._base"}, deps


def test_the_check_sees_function_level_imports(tmp_path):
    """The graph is built from every import statement, at any depth."""
    src = "def f():\n    from .posterior import Posterior\n"
    tree = ast.parse(src)
    (node,) = [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert _resolve("riskengine.table", node) == ["riskengine.posterior"]
