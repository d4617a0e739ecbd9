"""The layered house (shared/ARCHITECTURE.md), checked on the import graph.

Every import of a riskengine or kernels module is an edge, wherever it is written
(module level or inside a function), so an import moved into a function to dodge a
cycle still counts.  The rules:

* no import cycle;
* a module imports only from its own layer or below (L0 kernels, L1 core, L2 inference
  and magnitude, L3 mechanisms, L4 uses; the package ``__init__`` sits on top);
* ``inference`` and ``magnitude`` never import each other;
* ``kernels`` never imports riskengine or xarray;
* the ``mechanisms`` package's ``__init__`` imports at module level nothing of riskengine
  but the protocol (today: nothing), so importing it loads no mechanism.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

CORE = {"_validate", "table", "tabular", "priors", "release", "release_set", "_posterior",
        "cycles", "generators", "_io", "_seeding", "_budget", "_version", "data", "protocol",
        "statistics", "_arviz", "hierarchy", "cell_system", "table_set", "_atomic", "_formats",
        "census", "_highs_quiet", "census_blocks"}
# report is a package (riskengine/report/): every module of it is L4
USES = {"cli", "_batch", "_publication", "_census_posterior", "_census_exact", "_argus_micro", "_config", "_compare", "_simulate", "measures", "_analyze", "report", "plots",
        "_verdict", "_policy", "_reconstruct", "_units"}


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


def test_mechanisms_package_loads_at_most_the_protocol():
    """riskengine/mechanisms/__init__.py imports at module level only riskengine.protocol
    (or nothing of riskengine): importing the package loads no mechanism module."""
    tree = ast.parse(MODULES["riskengine.mechanisms"].read_text(encoding="utf-8"))
    top = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    deps = {d for n in top for d in _resolve("riskengine.mechanisms", n)}
    assert deps <= {"riskengine.protocol"}, deps


def test_the_package_imports_nothing_at_module_level():
    """riskengine/__init__.py is a lazy namespace: at module level it imports its version
    string only (every other name is imported when first used)."""
    tree = ast.parse(MODULES["riskengine"].read_text(encoding="utf-8"))
    top = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    deps = {d for n in top for d in _resolve("riskengine", n)}
    assert deps <= {"riskengine._version"}, deps


@pytest.mark.parametrize("name", ["riskengine._posterior", "riskengine.protocol"])
def test_core_modules_named_by_the_architecture(name):
    assert name in MODULES and layer(name) == 1


def test_the_check_sees_function_level_imports(tmp_path):
    """The graph is built from every import statement, at any depth."""
    src = "def f():\n    from ._posterior import Posterior\n"
    tree = ast.parse(src)
    (node,) = [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert _resolve("riskengine.table", node) == ["riskengine._posterior"]


def _calls_of(tree, name: str) -> list:
    """Line numbers of calls ``name(...)`` / ``x.name(...)`` in ``tree``."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            called = f.id if isinstance(f, ast.Name) else f.attr if isinstance(
                f, ast.Attribute) else None
            if called == name:
                out.append(node.lineno)
    return out


def test_one_place_builds_a_posterior():
    """Only the labeller (riskengine/inference/_label.py) calls the Posterior constructor;
    routes return a RouteResult, mixtures go through the resolver and are labelled there."""
    builders = {}
    for name, path in MODULES.items():
        lines = _calls_of(ast.parse(path.read_text(encoding="utf-8")), "Posterior")
        if lines:
            builders[name] = lines
    assert set(builders) == {"riskengine.inference._label"}, builders


def test_no_module_patches_a_posterior():
    """Nothing assigns the attributes a Posterior carries after it is built (``post.attrs[k]
    = ...``, ``post._sampler = ...``, ``post.totals[k] = ...``): the result is built once."""
    names = {"_sampler", "diagnostics", "chains", "releases", "mechanism_weights",
             "n_candidates", "totals", "attrs"}
    bad = []
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = node.targets if isinstance(node, ast.Assign) else (
                [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else [])
            for t in targets:
                while isinstance(t, ast.Subscript):
                    t = t.value
                if isinstance(t, ast.Attribute) and t.attr in names and isinstance(
                        t.value, ast.Name) and t.value.id in ("post", "posterior", "p"):
                    bad.append(f"{name}:{node.lineno}")
    assert not bad, bad


def test_routes_keep_nothing_between_calls():
    """No route or route module keeps a cache of the last release (``self._last``,
    module-level ``_LAST``): what a route prepares lives in the call's Plan."""
    bad = []
    for name, path in MODULES.items():
        if not name.startswith("riskengine.inference"):
            continue
        text = path.read_text(encoding="utf-8")
        for needle in ("self._last", "_LAST"):
            if needle in text:
                bad.append(f"{name}: {needle}")
    assert not bad, bad
