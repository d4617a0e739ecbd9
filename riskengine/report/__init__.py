"""Self-contained HTML reports for the uses: assess, compare, simulate, analyze, audit,
reconstruct.

:func:`write_report` takes a result (an :class:`~riskengine.Posterior`, a result
``xarray.Dataset`` or the path of its netCDF file) and writes the report, named after its
kind (``assess.html``, ``compare.html``, ``simulate.html``, ``analyze.html``,
``audit.html``, ``reconstruct.html``, ``census.html``: one folder holds one of each), plus each plot as a PNG into a folder.  Each kind's plots have their
own names (:data:`FIGURES`), so :func:`remove_report` can take a kind's report away with
its plots.  The HTML needs nothing else: images are
embedded as ``data:image/png;base64`` URIs, the style is inline, there is no
script and no external reference, so the file can be mailed or archived alone.

Which report a dataset gets is read from ``attrs["riskengine_kind"]``
(``"assess"``, ``"compare"``, ``"simulate"``, ``"analyze"``, ``"audit"``,
``"reconstruct"`` or ``"census"``); without it the
kind is recognised from the variables (``pmf`` -> assess, ``risk``/``utility`` over
``mechanism`` -> compare, ``map_hit`` over ``table`` -> simulate, ``suppressed`` /
``lower`` / ``exact`` of :func:`riskengine.audit` -> audit, ``record_k`` / ``certain`` /
``unit`` of :func:`riskengine.reconstruct` -> reconstruct, ``prob_exact_se`` /
``n_similar`` of the census posterior -> census).
"""

import importlib

#: public name -> the module of this package that defines it (loaded when first used, so
#: ``riskengine assess --no-report`` reads a release's description without loading the
#: report writers)
_NAMES = {"FIGURES": "_page", "KINDS": "_page", "KIND_ATTR": "_page",
          "describe_release": "_page", "remove_report": "_files", "render_report": "_write",
          "report_name": "_files", "write_report": "_write", "_kind": "_write",
          "audit_rows": "audit", "audit_verdict": "audit", "magnitude": "audit"}

__all__ = ["FIGURES", "KINDS", "KIND_ATTR", "audit_rows", "audit_verdict", "describe_release",
           "magnitude", "remove_report", "render_report", "report_name", "write_report"]


def __getattr__(name):
    if name not in _NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_NAMES[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
