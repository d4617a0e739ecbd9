"""The quick suite (``pytest -m "not slow"``) still reaches every module.

A module of ``riskengine/`` or ``kernels/`` is reached when a quick test uses it: a test
module that is not slow as a whole (no ``pytestmark = pytest.mark.slow``, and at least
one test not marked slow) imports it, or imports a module that imports it (the import
graph of ``tests/test_layers.py``, function-level imports included); a test helper
module (``tests/reference/...``) a quick test module imports counts as part of it.  The
doctests of ``riskengine/`` run in the quick suite too: a module with a doctest is
reached, and so is what its examples import.

Beside the import statements, a name used through a project module (``rk.Table``,
``rk.cycles.diagonal``, ``from riskengine import Table``) reaches the module that defines
it (looked up at run time): the package namespace is lazy and the mechanism modules are
loaded by name, so an import of ``riskengine`` alone does not say which modules a test
uses.  Imports inside a test or class marked slow do not count.
"""

from __future__ import annotations

import ast
import doctest
import importlib
import inspect
import types

from tests.test_layers import EDGES, MODULES, ROOT, _resolve, module_name

TESTS = ROOT / "tests"


# --- what a test module imports --------------------------------------------------------

def _is_slow_mark(node: ast.AST) -> bool:
    """``node`` is ``pytest.mark.slow`` (or ``mark.slow``), or a list / tuple holding it
    (a ``pytestmark`` value)."""
    if isinstance(node, (ast.List, ast.Tuple)):
        return any(_is_slow_mark(e) for e in node.elts)
    return (isinstance(node, ast.Attribute) and node.attr == "slow"
            and (isinstance(node.value, ast.Attribute) and node.value.attr == "mark"
                 or isinstance(node.value, ast.Name) and node.value.id == "mark"))


def _slow_def(node: ast.AST) -> bool:
    return (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and any(_is_slow_mark(d) for d in node.decorator_list))


def _slow_module(tree: ast.Module) -> bool:
    """The whole module is slow: ``pytestmark`` holds the slow mark, or every test in it
    is marked slow (a module with no test is not a test module)."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets):
            if _is_slow_mark(node.value):
                return True
    tests = [n for n in tree.body
             if (isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and n.name.startswith("test"))
             or (isinstance(n, ast.ClassDef) and n.name.startswith("Test"))]
    return bool(tests) and all(_slow_def(n) for n in tests)


def _quick_nodes(tree: ast.AST):
    """Every node of ``tree`` outside the functions and classes marked slow."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(c for c in ast.iter_child_nodes(node) if not _slow_def(c))


TEST_HELPERS = {".".join(p.relative_to(ROOT).with_suffix("").parts): p
                for p in TESTS.rglob("*.py")}


def _test_modules(mod: str, node: ast.AST) -> list:
    """The ``tests`` helper modules an import statement of module ``mod`` loads."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    elif node.level:
        base = mod.split(".")[: len(mod.split(".")) - node.level]
        pkg = ".".join(base + ([node.module] if node.module else []))
        names = [f"{pkg}.{a.name}" for a in node.names] + [pkg]
    else:
        pkg = node.module or ""
        names = [f"{pkg}.{a.name}" for a in node.names] + [pkg]
    return [n for n in names if n.split(".")[0] == "tests" and n in TEST_HELPERS]


def _runtime_targets(obj) -> set:
    """The project module that defines ``obj`` (or is ``obj``)."""
    if isinstance(obj, types.ModuleType):
        name = obj.__name__
    else:
        name = getattr(inspect.unwrap(obj) if callable(obj) else type(obj), "__module__", None)
    return {name} if name in MODULES else set()


def _lookup(module: str, attrs: list) -> set:
    """The project modules ``module.attr1.attr2...`` passes through, looked up at run time."""
    out = set()
    try:
        obj = importlib.import_module(module)
    except ImportError:
        return out
    for a in attrs:
        obj = getattr(obj, a, None)
        if obj is None:
            break
        found = _runtime_targets(obj)
        out |= found
        if not isinstance(obj, types.ModuleType):
            break
    return out


def _attribute_chain(node: ast.Attribute) -> tuple:
    """``rk.cycles.diagonal`` -> ``("rk", ["cycles", "diagonal"])``; None if not rooted
    at a plain name."""
    attrs = []
    while isinstance(node, ast.Attribute):
        attrs.append(node.attr)
        node = node.value
    return (node.id, attrs[::-1]) if isinstance(node, ast.Name) else (None, [])


def direct_uses(source: str, mod: str) -> tuple:
    """``(project modules, tests helper modules)`` that code ``source`` (of module
    ``mod``) uses outside its slow tests."""
    tree = ast.parse(source)
    project, helpers, aliases = set(), set(), {}
    nodes = list(_quick_nodes(tree))
    for node in nodes:
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        helpers.update(_test_modules(mod, node))
        found = _resolve(mod, node)
        project.update(found)
        if isinstance(node, ast.Import):
            for a in node.names:
                root = a.name.split(".")[0]
                if root in ("riskengine", "kernels"):
                    # "import riskengine.cycles" binds "riskengine"; "... as c" the module
                    aliases[a.asname or root] = a.name if a.asname else root
        elif not node.level and (node.module or "").split(".")[0] in ("riskengine", "kernels"):
            for a in node.names:
                if a.name == "*":
                    continue
                target = f"{node.module}.{a.name}"
                if target in MODULES:
                    aliases[a.asname or a.name] = target
                else:                                   # a name: where it is defined
                    project |= _lookup(node.module, [a.name])
    for node in nodes:
        if isinstance(node, ast.Attribute):
            root, attrs = _attribute_chain(node)
            if root in aliases:
                project |= _lookup(aliases[root], attrs)
        elif isinstance(node, (ast.List, ast.Tuple)):     # [sys.executable, "-m", "pkg.mod"]
            args = [e.value if isinstance(e, ast.Constant) else None for e in node.elts]
            for flag, target in zip(args, args[1:]):
                if flag == "-m" and target in MODULES:
                    project.add(f"{target}.__main__" if f"{target}.__main__" in MODULES
                                else target)
    return project, helpers


def _doctest_source(tree: ast.Module) -> str | None:
    """The code of every doctest example in the module's docstrings (None: no doctest)."""
    parser, parts = doctest.DocTestParser(), []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc and ">>>" in doc:
                parts += [ex.source for ex in parser.get_examples(doc)]
    if not parts:
        return None
    code = []
    for src in parts:                    # an example that does not parse alone is skipped
        try:
            ast.parse(src)
        except SyntaxError:
            continue
        code.append(src)
    return "\n".join(code)


# --- the quick suite's reach -------------------------------------------------------------

def quick_roots() -> dict:
    """``{quick test module or doctest module: project modules it uses directly}``."""
    roots = {}
    collect_ignore = _collect_ignore()
    for path in sorted(TESTS.rglob("test_*.py")):
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if _slow_module(tree):
            continue
        project, helpers = direct_uses(path.read_text(encoding="utf-8"), name)
        seen = set()
        while helpers:                              # helper modules, transitively
            h = helpers.pop()
            if h in seen:
                continue
            seen.add(h)
            p, more = direct_uses(TEST_HELPERS[h].read_text(encoding="utf-8"), h)
            project |= p
            helpers |= more - seen
        roots[name] = project
    for name, path in MODULES.items():
        if not name.startswith("riskengine") or path.relative_to(ROOT).as_posix() in \
                collect_ignore:
            continue
        src = _doctest_source(ast.parse(path.read_text(encoding="utf-8")))
        if src is not None:
            project, _ = direct_uses(src, name)
            roots[f"doctests of {name}"] = project | {name}
    return roots


def _collect_ignore() -> set:
    """Files the root conftest keeps out of collection (their doctests do not run)."""
    tree = ast.parse((ROOT / "conftest.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "collect_ignore" for t in node.targets):
            return set(ast.literal_eval(node.value))
    return set()


def reached(roots: dict) -> set:
    """Every project module reached from ``roots`` along the import graph (importing a
    module imports its parent packages first)."""
    out, stack = set(), [m for ms in roots.values() for m in ms]
    while stack:
        m = stack.pop()
        if m in out:
            continue
        out.add(m)
        stack.extend(EDGES.get(m, ()))
        parent = m.rpartition(".")[0]
        if parent:
            stack.append(parent)
    return out


def test_the_quick_suite_reaches_every_module():
    missing = sorted(set(MODULES) - reached(quick_roots()))
    assert not missing, (
        "modules no quick test reaches (only slow tests import them; keep or add a fast "
        "test of each outside the slow mark):\n" + "\n".join(missing))


# --- the check itself ----------------------------------------------------------------------

def test_the_check_sees_slow_marks():
    slow_file = ast.parse("import pytest\npytestmark = [pytest.mark.slow]\ndef test_a(): pass\n")
    all_slow = ast.parse("import pytest\n@pytest.mark.slow\ndef test_a(): pass\n"
                         "@pytest.mark.slow\nclass TestB:\n    pass\n")
    mixed = ast.parse("import pytest\n@pytest.mark.slow\ndef test_a(): pass\n"
                      "def test_b(): pass\n")
    params = ast.parse("import pytest\n@pytest.mark.parametrize('x', [1, pytest.param(2, "
                       "marks=pytest.mark.slow)])\ndef test_a(x): pass\n")
    assert _slow_module(slow_file) and _slow_module(all_slow)
    assert not _slow_module(mixed) and not _slow_module(params)
    listed = ast.parse("import pytest\npytestmark = [pytest.mark.filterwarnings('error'), "
                       "pytest.mark.slow]\ndef test_a(): pass\n")
    assert _slow_module(listed)


def test_the_check_sees_names_and_skips_slow_tests():
    src = ("import pytest, subprocess, sys\nimport riskengine as rk\n"
           "from riskengine import Table\n"
           "def test_a():\n    rk.cycles.diagonal(3)\n"
           "def test_cli():\n    subprocess.run([sys.executable, '-m', 'riskengine.cli'])\n"
           "@pytest.mark.slow\ndef test_b():\n    from riskengine import statistics\n")
    project, _ = direct_uses(src, "tests.core.test_x")
    assert {"riskengine", "riskengine.cycles", "riskengine.cli.__main__"} <= project
    assert module_name(ROOT / "riskengine" / "table.py") in project   # where Table lives
    assert "riskengine.statistics" not in project
