"""Protection mechanisms: one module each, the same small surface (:mod:`riskengine.protocol`).

Adding a mechanism is one module (``@register`` on its class, the names it offers in its
``__all__``) plus its tests.  Nothing here imports a mechanism module ahead of need:

* :func:`index` reads every public module of this package as source (``ast``), without
  importing it: the names of its ``__all__`` and the registry ``name`` / ``aliases`` of
  each ``@register`` class.  It is built once per process.  A module whose names cannot
  be read that way (``__all__`` or ``name`` not a literal, ``register`` called rather than
  used as a decorator, a subpackage, no source) is listed in :attr:`Index.opaque` and is
  imported whenever a name is not found elsewhere, so no mechanism is ever missed.
* :func:`discover` (called by :func:`riskengine.protocol.lookup` for a name not
  registered yet) imports the one module that registers the name.
* A name of a module's ``__all__`` (``CellKey``, ``suppress``, ``frechet_bounds``, ...)
  is a name of this package and of ``riskengine``; asking for it imports its module only.
* :func:`load` imports every module, for what lists all mechanisms; :data:`REGISTRY`,
  :data:`EXPORTS` and :data:`MODULES` read through this package call it first, so they
  are complete.  (:data:`riskengine.protocol.REGISTRY` holds what is loaded so far.)

At import time this package imports nothing of riskengine (not even the protocol), so
``riskengine`` can read the index without loading NumPy.
"""

from __future__ import annotations

import ast
import importlib
import os
import pkgutil

#: the protocol's names offered here too (from :mod:`riskengine.protocol`)
_PROTOCOL = ("REGISTRY", "Cost", "Mechanism", "Route", "mechanism_from_dict", "register")


class Index:
    """What the public mechanism modules offer, read from their source.

    Attributes
    ----------
    modules : tuple of str
        The public modules of the package (short names, sorted).
    exports : dict
        Each name of a module's ``__all__`` -> the module offering it (the first, in
        sorted order, if two offer it; :func:`load` checks they offer the same object).
    names : dict
        Each registry name and alias -> the module registering it.
    opaque : tuple of str
        The modules that could not be read from source: imported whenever a name is
        not found in ``exports`` / ``names``.
    """

    __slots__ = ("exports", "modules", "names", "opaque")

    def __init__(self, modules, exports, names, opaque):
        self.modules, self.exports, self.names, self.opaque = modules, exports, names, opaque

    def __repr__(self) -> str:
        return (f"Index({len(self.modules)} modules, {len(self.names)} registry names, "
                f"{len(self.exports)} exports, opaque: {list(self.opaque)})")


_INDEX: Index | None = None
_MODULES: dict = {}      # filled by load()
_EXPORTS: dict = {}      # filled by load()


class _Opaque(Exception):
    """This module's names cannot be read from its source."""


def _strings(node) -> tuple:
    """The strings of a literal list / tuple of strings (else :class:`_Opaque`)."""
    if isinstance(node, (ast.List, ast.Tuple)) and all(
            isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
        return tuple(e.value for e in node.elts)
    raise _Opaque


def _assigned(body, target: str):
    """The value assigned to ``target`` in a class or module body (None: not assigned)."""
    found = None
    for node in body:
        if isinstance(node, ast.Assign):
            if any(isinstance(t, ast.Name) and t.id == target for t in node.targets):
                if len(node.targets) != 1 or found is not None:
                    raise _Opaque
                found = node.value
        elif (isinstance(node, (ast.AnnAssign, ast.AugAssign))
              and isinstance(node.target, ast.Name) and node.target.id == target):
            if isinstance(node, ast.AugAssign) or node.value is None or found is not None:
                raise _Opaque
            found = node.value
    return found


def _is_register(node) -> bool:
    return ((isinstance(node, ast.Name) and node.id == "register")
            or (isinstance(node, ast.Attribute) and node.attr == "register"))


class _Reader:
    """The source of this package's modules (private ones too, for base classes), each
    parsed once: module-level classes, and names imported from sibling modules."""

    def __init__(self, folder: str):
        self.folder = folder
        self.trees: dict = {}

    def tree(self, module: str):
        if module not in self.trees:
            path = os.path.join(self.folder, module + ".py")
            if not os.path.isfile(path):
                raise _Opaque            # a subpackage, or no source
            with open(path, encoding="utf-8") as fh:
                self.trees[module] = ast.parse(fh.read())
        return self.trees[module]

    def find_class(self, module: str, name: str, depth: int = 0):
        """(module, ``ast.ClassDef``) of class ``name`` as seen from ``module``: defined
        there, or imported from a sibling (``from ._x import name``)."""
        if depth > 10:
            raise _Opaque
        for node in self.tree(module).body:
            if isinstance(node, ast.ClassDef) and node.name == name:
                return module, node
            if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
                for a in node.names:
                    if (a.asname or a.name) == name:
                        return self.find_class(node.module, a.name, depth + 1)
        return None

    def aliases(self, module: str, cls, depth: int = 0) -> tuple:
        """The ``aliases`` of class ``cls`` (an ``ast.ClassDef`` of ``module``): its own,
        else its base's (defined in this package); the protocol's default is ``()``."""
        value = _assigned(cls.body, "aliases")
        if value is not None:
            return _strings(value)
        if len(cls.bases) != 1 or depth > 10:
            raise _Opaque                # several bases: which one's aliases win
        base = cls.bases[0]
        if isinstance(base, ast.Name) and base.id == "Mechanism":
            return ()
        found = self.find_class(module, base.id) if isinstance(base, ast.Name) else None
        if found is None:
            raise _Opaque                # a base from elsewhere may set aliases
        return self.aliases(*found, depth + 1)

    def read(self, module: str) -> tuple:
        """(``__all__`` names, registry names and aliases) of a module."""
        tree = self.tree(module)
        value = _assigned(tree.body, "__all__")
        exports = () if value is None else _strings(value)
        top = [n for n in tree.body if isinstance(n, ast.ClassDef)]
        registered = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and _is_register(node.func):
                raise _Opaque            # register(cls) called, not a decorator
            if isinstance(node, ast.ClassDef) and any(map(_is_register, node.decorator_list)):
                if not any(node is t for t in top):
                    raise _Opaque        # registered inside a function or a class
                name = _assigned(node.body, "name")
                if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
                    raise _Opaque
                registered += [name.value, *self.aliases(module, node)]
        return exports, tuple(registered)


def index() -> Index:
    """The :class:`Index` of this package's public modules (read once per process).

    Returns
    -------
    Index
    """
    global _INDEX
    if _INDEX is not None:
        return _INDEX
    modules, exports, names, opaque = [], {}, {}, []
    readers: dict = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        modules.append(info.name)
        folder = getattr(info.module_finder, "path", None)
        try:
            if info.ispkg or folder is None:
                raise _Opaque
            reader = readers.setdefault(folder, _Reader(folder))
            mod_exports, mod_names = reader.read(info.name)
        except (_Opaque, SyntaxError, UnicodeDecodeError, OSError):
            opaque.append(info.name)     # imported when a name is not found elsewhere
            continue
        for n in mod_exports:
            exports.setdefault(n, info.name)
        for n in mod_names:
            names.setdefault(n, info.name)
    _INDEX = Index(tuple(modules), exports, names, tuple(opaque))
    return _INDEX


def _import(module: str):
    return importlib.import_module(f"{__name__}.{module}")


def discover(name: str) -> None:
    """Import the mechanism module that registers ``name`` (a registry name or alias).

    Called by :func:`riskengine.protocol.lookup` for a name not registered yet.  A name
    the index does not know imports the modules it could not read, then, if the name is
    still unknown, every module (so the error lists every known name).

    Parameters
    ----------
    name : str
        A registry name or alias, e.g. ``"cell_key"`` or ``"ckm"``.

    Returns
    -------
    None
    """
    idx = index()
    if name in idx.names:
        _import(idx.names[name])
        return
    for module in idx.opaque:
        _import(module)
    from ..protocol import REGISTRY
    if name in REGISTRY or any(name in cls.aliases for cls in REGISTRY.values()):
        return
    load()


def load() -> dict:
    """Import every public module of this package (once) and collect the names of their
    ``__all__``.

    For what lists all mechanisms (``riskengine warmup``, the registry tests); a single
    mechanism is found by :func:`discover`.

    Returns
    -------
    dict
        :data:`EXPORTS`: every name of a mechanism module's ``__all__`` -> its object.

    Raises
    ------
    ImportError
        When two modules export one name for two different objects.
    """
    if _MODULES:
        return _EXPORTS
    modules, exports = {}, {}
    for name in index().modules:
        mod = _import(name)
        modules[name] = mod
        for export in getattr(mod, "__all__", ()):
            obj = getattr(mod, export)
            if exports.get(export, obj) is not obj:
                raise ImportError(f"mechanisms.{name} exports {export!r}, which another "
                                  "mechanism module already exports")
            exports[export] = obj
    _EXPORTS.update(exports)
    _MODULES.update(modules)
    return _EXPORTS


def exports() -> dict:
    """Every name of a mechanism module's ``__all__`` -> its module (short name).

    Read from the source (:func:`index`); only the modules the index could not read are
    imported to list theirs.

    Returns
    -------
    dict
    """
    idx = index()
    if not idx.opaque:
        return idx.exports
    out = dict(idx.exports)
    for module in idx.opaque:
        for n in getattr(_import(module), "__all__", ()):
            out.setdefault(n, module)
    return out


def _public() -> list:
    modules = index().modules
    return [*_PROTOCOL, *sorted(n for n in exports() if n not in modules)]


def __getattr__(name: str):
    if name in _PROTOCOL:
        if name == "REGISTRY":
            load()                       # the listing of every mechanism: all of them
        return getattr(importlib.import_module("riskengine.protocol"), name)
    if name == "EXPORTS":
        return load()
    if name == "MODULES":
        load()
        return _MODULES
    if name == "__all__":
        return _public()
    if name.startswith("_"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if name in index().modules:          # a submodule (mechanisms.cta is the module)
        return _import(name)
    module = exports().get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    obj = getattr(_import(module), name)
    globals()[name] = obj
    return obj


def __dir__() -> list:
    return sorted({*globals(), *_public(), "EXPORTS", "MODULES"})
