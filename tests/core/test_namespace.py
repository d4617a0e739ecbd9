"""The lazy namespace (riskengine/__init__.py, PEP 562) and the mechanism index
(riskengine/mechanisms/__init__.py): ``import riskengine`` loads almost nothing, a name
loads its module when first used, a mechanism name loads that mechanism alone.

What a fresh interpreter imports is checked in a subprocess (this test process has
imported everything already).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import subprocess
import sys
import textwrap
import types

import pytest

import riskengine as rk
from riskengine import mechanisms

#: never loaded by ``import riskengine`` (the architecture's rule, and the command line's
#: fast ``--help``: no NumPy)
NOT_AT_IMPORT = ("riskengine.mechanisms", "kernels", "matplotlib", "dask", "arviz", "numba",
                 "numpy", "scipy", "xarray", "pandas")


#: prepended to the code run by :func:`fresh`
PRELUDE = """
import json, sys

def loaded(prefix="riskengine.mechanisms."):
    return sorted(m[len(prefix):] for m in sys.modules if m.startswith(prefix))
"""


def fresh(code: str):
    """Run ``code`` in a fresh interpreter (after :data:`PRELUDE`); it prints one JSON
    value as its last line, returned."""
    r = subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(code)],
                       capture_output=True, text=True, check=False, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def _under(name: str, roots) -> bool:
    return any(name == r or name.startswith(r + ".") for r in roots)


def test_import_riskengine_loads_almost_nothing():
    out = fresh("""
        before = set(sys.modules)
        import riskengine
        print(json.dumps(sorted(set(sys.modules) - before)))
    """)
    bad = [m for m in out if _under(m, NOT_AT_IMPORT)]
    assert not bad, bad
    assert [m for m in out if m.startswith("riskengine")] == ["riskengine", "riskengine._version"]


def test_a_margins_only_posterior_does_not_import_the_optimizers():
    """scipy.optimize costs about 0.15 s of a fresh process's start (issue 30: at most 1 s
    of overhead before the first kernel); the routes import it where they solve a
    program (dispersed starts, exact bounds), not at import."""
    out = fresh("""
        import numpy as np
        import riskengine as rk
        t = rk.Table(np.array([[5, 3, 2], [4, 6, 1], [2, 2, 7]]))
        for route in ("dp", "auto"):
            rk.posterior(rk.MarginsOnly().protect(t), route=route)
        print(json.dumps("scipy.optimize" in sys.modules))
    """)
    assert out is False


def test_the_mechanisms_package_alone_loads_no_mechanism():
    out = fresh("""
        import riskengine.mechanisms as m
        idx = m.index()
        print(json.dumps({"loaded": loaded(), "numpy": "numpy" in sys.modules,
                          "cellkey": idx.names["ckm"]}))
    """)
    assert out == {"loaded": [], "numpy": False, "cellkey": "cell_key"}


def _public_mechanism_modules(loaded) -> set:
    return {m.split(".")[0] for m in loaded if not m.startswith("_")}


@pytest.mark.parametrize("code, module", [
    ("rk.CellKey", "cell_key"), ("rk.PTable", "cell_key"), ("rk.suppress", "suppression"),
    ("rk.frechet_bounds", "margins_only"), ("rk.cta_bivariate", "cta"),
    ("rk.mechanisms.mechanism_from_dict({'name': 'ckm', 'D': 2, 'V': 1})", "cell_key"),
    ("__import__('riskengine.protocol').protocol.lookup('rounding')", "rounding"),
])
def test_a_mechanism_name_loads_its_module_alone(code, module):
    """``rk.CellKey`` (or a registry name or alias looked up) imports the cell key module
    and what it imports itself, not the other mechanisms."""
    after_name = fresh(f"""
        import riskengine as rk
        import riskengine.mechanisms
        {code}
        print(json.dumps(loaded()))
    """)
    alone = fresh(f"""
        import riskengine.mechanisms.{module}
        print(json.dumps(loaded()))
    """)
    assert module in after_name
    assert after_name == alone


def test_every_public_name_resolves():
    for name in rk.__all__:
        assert getattr(rk, name) is not None, name
    assert set(rk.__all__) <= set(dir(rk))
    assert len(rk.__all__) == len(set(rk.__all__))
    star: dict = {}
    exec("from riskengine import *", star)  # noqa: S102
    assert set(rk.__all__) <= set(star)


def test_the_public_names_and_where_they_live():
    """Today's public names, the mechanism modules' names included."""
    want = {"Table", "Release", "ReleaseSet", "Posterior", "posterior", "count_candidates",
            "estimate_count", "CountEstimate", "MonteCarlo", "priors", "tabular",
            "read_table", "read_csv_long", "read_csv_wide", "read_netcdf", "__version__",
            "Mechanism", "cycles", "contributions", "Contributions", "sensitivity", "audit",
            "measures", "compare", "simulate", "reconstruct", "generators", "plots", "write_report",
            "analyze", "Analysis", "statistics", "verdict", "Verdict", "Policy",
            "Hierarchy", "TableSet", "TableSetRelease", "formats", "FormatError",
            "read_argus", "ArgusTable", "read_jj", "write_jj", "protect_argus",
            "audit_argus", "read_pattern", "write_argus_output", "run_batch",
            "status_pattern", "census"}
    assert want <= set(rk.__all__)
    assert set(rk.__all__) - want - {"routes"} == set(mechanisms.exports())
    assert rk.suppress is importlib.import_module("riskengine.mechanisms.suppression").suppress
    assert rk.cta is importlib.import_module("riskengine.mechanisms.cta").cta
    assert rk.cta_bivariate is importlib.import_module("riskengine.mechanisms.cta").cta_bivariate
    assert rk.audit is importlib.import_module("riskengine.magnitude.audit").audit
    assert rk.sensitivity is importlib.import_module("riskengine.magnitude.sensitivity")
    assert rk.contributions is importlib.import_module(
        "riskengine.magnitude.contributions").contributions
    assert rk.compare is importlib.import_module("riskengine._compare").compare
    assert rk.MonteCarlo is importlib.import_module("riskengine.protocol").MonteCarlo
    assert rk.Posterior is importlib.import_module("riskengine._posterior").Posterior


def test_no_public_name_is_both_a_module_and_something_else():
    """A name of ``rk.__all__`` that is also a module ``riskengine.<name>`` must be that
    module (``rk.priors``): ``rk.compare`` & co. are functions in private modules."""
    for name in rk.__all__:
        if name.startswith("__"):
            continue
        spec = importlib.util.find_spec(f"riskengine.{name}")
        if spec is not None:
            value = getattr(rk, name)
            assert isinstance(value, types.ModuleType) and value.__name__ == spec.name, name


@pytest.mark.parametrize("gone", ["riskengine.linear", "riskengine.audit", "riskengine.suppress",
                                  "riskengine.cta", "riskengine.cta_bivariate",
                                  "riskengine.sensitivity", "riskengine.contributions",
                                  "riskengine.compare", "riskengine.simulate",
                                  "riskengine.analyze", "riskengine.verdict",
                                  "riskengine._highs", "riskengine._csp", "riskengine._csp_lp",
                                  "riskengine._csp_network", "riskengine._csp_optimal"])
def test_old_module_paths_are_gone(gone):
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(gone)


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        rk.nope  # noqa: B018
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        mechanisms.nope  # noqa: B018
    assert not hasattr(rk, "_private_nope") and not hasattr(rk, "cell_key")


# --- the mechanism index ----------------------------------------------------------------

def test_the_index_agrees_with_the_imported_modules():
    """What the index reads from the source is what the modules say once imported."""
    idx = mechanisms.index()
    assert idx.opaque == (), "every mechanism module should be readable from its source"
    exports = mechanisms.load()
    for name in idx.modules:
        mod = importlib.import_module(f"riskengine.mechanisms.{name}")
        for export in getattr(mod, "__all__", ()):
            assert exports[export] is getattr(importlib.import_module(
                f"riskengine.mechanisms.{idx.exports[export]}"), export)
    registry = mechanisms.REGISTRY
    from riskengine.protocol import REGISTRY
    assert registry is REGISTRY
    names = {}
    for cls in registry.values():
        for n in (cls.name, *cls.aliases):
            names[n] = cls.__module__.rpartition(".")[2]
    assert names == idx.names


def test_mechanisms_namespace():
    assert mechanisms.cta is importlib.import_module("riskengine.mechanisms.cta")  # the module
    assert mechanisms.CellKey is rk.CellKey
    assert {"REGISTRY", "Mechanism", "register", "CellKey", "suppress"} <= set(mechanisms.__all__)
    assert "cta" not in mechanisms.__all__ and "cta" in dir(mechanisms)


def _reader(tmp_path, **files):
    for name, src in files.items():
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(src))
    return mechanisms._Reader(str(tmp_path))


def test_the_reader_follows_a_base_class_in_a_sibling_module(tmp_path):
    r = _reader(tmp_path, _base="""
        from ..protocol import Mechanism
        class _Family(Mechanism):
            aliases = ("fam",)
        """, one="""
        from ..protocol import register
        from ._base import _Family as F
        __all__ = ["One", "helper"]
        @register
        class One(F):
            name = "one"
        @register
        class Two(F):
            name = "two"
            aliases = ("deux", "zwei")
        """)
    assert r.read("one") == (("One", "helper"), ("one", "fam", "two", "deux", "zwei"))


@pytest.mark.parametrize("src", [
    '__all__ = ["A"] + OTHER\n',                                          # __all__ computed
    'from x import register\nclass A:\n    name = "a"\nregister(A)\n',    # called
    'from x import register\n@register\nclass A:\n    name = NAME\n',     # name computed
    'from x import register, Base\n@register\nclass A(Base):\n    name = "a"\n',  # base
    'from x import register\ndef f():\n    @register\n    class A:\n        name = "a"\n',
])
def test_what_the_reader_cannot_read_is_opaque(tmp_path, src):
    r = _reader(tmp_path, m=src)
    with pytest.raises(mechanisms._Opaque):
        r.read("m")


def test_an_opaque_module_is_imported_not_missed():
    """A module the index cannot read is imported when a name is not found elsewhere:
    here the index is told it cannot read ``rounding``, and ``lookup("rounding")`` and
    ``rk.ControlledRounding`` still find it (and load no other mechanism)."""
    out = fresh("""
import riskengine as rk
import riskengine.mechanisms as m
idx = m.index()
keep = {n: v for n, v in idx.names.items() if v != "rounding"}
exports = {n: v for n, v in idx.exports.items() if v != "rounding"}
m._INDEX = m.Index(idx.modules, exports, keep, ("rounding",))
from riskengine.protocol import lookup
cls = lookup("controlled_rounding")
print(json.dumps({"found": cls.__name__, "class": rk.ControlledRounding is cls,
                  "loaded": loaded()}))
""")
    assert out["found"] == "ControlledRounding" and out["class"]
    assert _public_mechanism_modules(out["loaded"]) == {"rounding"}


def test_an_unknown_mechanism_lists_every_known_name():
    out = fresh("""
from riskengine.protocol import lookup
try:
    lookup("nope")
except ValueError as e:
    print(json.dumps(str(e)))
""")
    assert out.startswith("unknown mechanism 'nope'; known: ")
    for name in mechanisms.index().names:
        assert name in out
