"""Protection mechanisms: one module each, the same small surface (``_base.Mechanism``).

:func:`load` (called once by ``riskengine/__init__``) imports every public module of
this package, and the names in its ``__all__`` (the mechanism classes, and functional
forms such as ``rk.suppress``) become names of this package and of ``riskengine``:
adding a mechanism is one module (with ``@register`` on its class) plus its tests.
``mechanism_from_dict`` resolves a registry name; an unknown name is an error listing
the known ones.  Importing this package alone loads only the protocol (``_base``), so
the core modules may import the protocol without importing any mechanism.
"""

from __future__ import annotations

import importlib
import pkgutil

from ._base import REGISTRY, Cost, Mechanism, Route, mechanism_from_dict, register

__all__ = ["REGISTRY", "Cost", "Mechanism", "Route", "mechanism_from_dict", "register"]



#: the mechanism modules, by name (filled by :func:`load`)
MODULES: dict = {}
#: the names the mechanism modules export (their ``__all__``), for ``riskengine``
EXPORTS: dict = {}


def load() -> dict:
    """Import every public module of this package once and collect the names of their
    ``__all__`` (:data:`EXPORTS`; those that are not also a module name become names of
    this package).  Returns :data:`EXPORTS`."""
    if MODULES:
        return EXPORTS
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        mod = importlib.import_module(f".{info.name}", __name__)
        MODULES[info.name] = mod
        for name in getattr(mod, "__all__", ()):
            obj = getattr(mod, name)
            if EXPORTS.get(name, obj) is not obj:
                raise ImportError(f"mechanisms.{info.name} exports {name!r}, which another "
                                  "mechanism module already exports")
            EXPORTS[name] = obj
    for name, obj in EXPORTS.items():
        if name not in MODULES:
            globals()[name] = obj
            __all__.append(name)
    return EXPORTS
