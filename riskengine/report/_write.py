"""Render, write and remove a report: which kind a result is, and the file names."""

from __future__ import annotations

from pathlib import Path

import xarray as xr

from .._io import atomic_write_bytes
from ._files import _figures, report_name
from ._page import KIND_ATTR, KINDS, _Doc
from .analyze import _analyze
from .assess import _assess
from .audit import _audit
from .census import _census
from .compare import _compare
from .reconstruct import _reconstruct
from .simulate import _simulate


def _kind(ds: xr.Dataset) -> str:
    k = ds.attrs.get(KIND_ATTR)
    if k is not None:
        if k not in KINDS:
            raise ValueError(f"attrs[{KIND_ATTR!r}] is {k!r}; known kinds: {', '.join(KINDS)}")
        return str(k)
    if "pmf" in ds and "max_prob" in ds:
        return "assess"
    if "mechanism" in ds.dims and "risk" in ds and "utility" in ds:
        return "compare"
    if "table" in ds.dims and "map_hit" in ds:
        return "simulate"
    if "stat0_summary" in ds and "quantity" in ds.dims:
        return "analyze"
    if "suppressed" in ds and "lower" in ds and "exact" in ds:
        return "audit"
    if "record_k" in ds and "certain" in ds and "unit" in ds:
        return "reconstruct"
    if "prob_exact_se" in ds and "n_similar" in ds:
        return "census"
    raise ValueError(f"cannot tell which riskengine result this is: no attrs[{KIND_ATTR!r}] and "
                     f"variables {sorted(ds.data_vars)} fit none of {', '.join(KINDS)}")


def _load(obj, truth, level):
    """(kind, dataset, posterior or None)."""
    from .._posterior import Posterior
    if isinstance(obj, Posterior):
        return "assess", obj.to_dataset(truth, level), obj
    if truth is not None:
        raise ValueError("truth= is only used with a Posterior")
    if isinstance(obj, (str, Path)):
        path = Path(obj)
        if not path.exists():
            raise FileNotFoundError(f"no such file: {path}")
        try:
            with xr.open_dataset(path) as f:
                ds = f.load()
        except (ValueError, OSError, TypeError) as exc:
            raise ValueError(f"{path}: cannot read it as netCDF ({exc})") from None
        return _kind(ds), ds, None
    if isinstance(obj, xr.Dataset):
        return _kind(obj), obj, None
    raise TypeError("write_report needs an rk.Posterior, a result xarray.Dataset or the path "
                    f"of its netCDF file, got {type(obj).__name__}")


_TITLES = {"assess": "Disclosure-risk assessment of a release",
           "compare": "Comparison of protection mechanisms: risk and utility",
           "simulate": "Intruder simulation study",
           "analyze": "The user's analysis: statistics of the original table",
           "audit": "Audit of a magnitude release: what an intruder can derive",
           "reconstruct": "Reconstruction audit of a table set: the persons it pins down",
           "census": ("A census publication under swapping and the cell key method: what an "
                      "intruder infers")}


def render_report(obj, *, release=None, truth=None, level: float = 0.95,
                  title: str | None = None, threshold: float | None = None,
                  max_expected: float | None = None) -> tuple[str, dict]:
    """The report's HTML text and its images ``{file name: PNG bytes}``, without writing.

    Arguments as for :func:`write_report`.
    """
    _, text, images = _render(obj, release=release, truth=truth, level=level, title=title,
                              threshold=threshold, max_expected=max_expected)
    return text, images


def _render(obj, *, release, truth, level, title, threshold, max_expected) -> tuple:
    """``(kind, html, images)``."""
    kind, ds, post = _load(obj, truth, level)
    if threshold is not None or max_expected is not None:
        if kind != "assess":
            raise ValueError(f"threshold= / max_expected= set the verdict of an assess "
                             f"report, this is a {kind} result")
        ds = ds.copy()
        if post is not None:        # the verdict of the default policy, its baseline too
            from .._policy import Policy
            from .._verdict import annotate, verdict
            annotate(ds, verdict(post, truth, level=level, policy=Policy().with_(
                threshold=threshold, max_expected=max_expected)))
        else:
            ds.attrs["threshold"] = 0.5 if threshold is None else float(threshold)
            if max_expected is not None:
                ds.attrs["max_expected"] = float(max_expected)
    if release is not None and kind != "assess":
        raise ValueError(f"release= is only used for an assess report, this is a {kind} result")
    doc = _Doc(title or _TITLES[kind], kind)
    if kind == "assess":
        _assess(doc, ds, post, release)
    elif kind == "compare":
        _compare(doc, ds)
    elif kind == "analyze":
        _analyze(doc, ds)
    elif kind == "audit":
        _audit(doc, ds)
    elif kind == "reconstruct":
        _reconstruct(doc, ds)
    elif kind == "census":
        _census(doc, ds)
    else:
        _simulate(doc, ds)
    return kind, doc.html(), doc.images


def write_report(obj, out_dir, *, release=None, truth=None, level: float = 0.95,
                 title: str | None = None, threshold: float | None = None,
                 max_expected: float | None = None) -> Path:
    """Write a self-contained HTML report and its plots as PNG files.

    Parameters
    ----------
    obj : rk.Posterior, xarray.Dataset, str or Path
        A posterior (assess report), a result dataset of ``Posterior.to_dataset``,
        ``rk.compare``, ``rk.simulate``, ``rk.analyze``, ``rk.audit`` (the audit report
        of a suppressed or adjusted magnitude release) or ``rk.reconstruct``, or the path
        of such a dataset's
        netCDF file.  Datasets are dispatched on ``attrs["riskengine_kind"]``.
    out_dir : str or Path
        Folder to write the report (``KIND.html``, see :func:`report_name`) and the PNGs
        into (created if needed; files of the same names are replaced, and plots of an
        earlier report of the same kind that this one does not draw are removed).
    release : rk.Release, optional
        The release a posterior came from, described at the top of an assess report.
    truth : table, optional
        The original table, for exact-disclosure risk (a Posterior only).
    level : float
        Credible level of the intervals (a Posterior only).
    title : str, optional
        Report title.
    threshold, max_expected : float, optional
        An assess report opens with the verdict of this risk policy
        (:func:`riskengine.verdict`); default: the policy stored in the dataset's
        attrs (``riskengine assess`` stores its ``--threshold``), else none.

    Returns
    -------
    Path
        The report written (``assess.html``, ``compare.html``, ``simulate.html``,
        ``analyze.html`` or ``audit.html``).  Every file is written atomically, the HTML last.

    Examples
    --------
    >>> import numpy as np, riskengine as rk, tempfile
    >>> mech = rk.CyclicPerturbation(cycles=rk.cycles.diagonal(3), alpha=0.25, beta=0.25)
    >>> rel = rk.Release(np.array([[3, 1, 2], [2, 4, 1], [1, 2, 5]]), mechanism=mech)
    >>> with tempfile.TemporaryDirectory() as d:
    ...     path = rk.write_report(rk.posterior(rel), d, release=rel)
    ...     sorted(p.name for p in path.parent.iterdir())
    ['assess.html', 'heatmap_max_prob.png', 'posterior_bars.png']
    """
    kind, text, images = _render(obj, release=release, truth=truth, level=level, title=title,
                                 threshold=threshold, max_expected=max_expected)
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise ValueError(f"out_dir {str(out)!r} exists and is not a folder")
    for name, data in images.items():
        atomic_write_bytes(out / name, data)
    path = out / report_name(kind)
    atomic_write_bytes(path, text.encode("utf-8"))
    for stale in _figures(out, kind):       # plots of an earlier report this one lacks
        if stale.name not in images:
            stale.unlink(missing_ok=True)
    return path
