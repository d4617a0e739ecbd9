"""Where reports go: their file names and their plots' (one folder holds one report of
each kind), and taking a kind's report away (``--no-report``); nothing here renders."""

from __future__ import annotations

import fnmatch
from pathlib import Path

from ._page import FIGURES, KINDS

__all__ = ["remove_report", "report_name"]


def report_name(kind: str) -> str:
    """The file name of a report of ``kind``: ``"assess.html"`` and so on."""
    if kind not in KINDS:
        raise ValueError(f"unknown report kind {kind!r}; known: {', '.join(KINDS)}")
    return f"{kind}.html"


def _figures(out: Path, kind: str) -> list:
    if not out.is_dir():
        return []
    return sorted(p for p in out.iterdir() if p.suffix == ".png" and any(
        fnmatch.fnmatchcase(p.stem, pat) for pat in FIGURES[kind]))


def remove_report(out_dir, kind: str) -> list:
    """Remove the report of ``kind`` from ``out_dir`` with its plots (``riskengine ...
    --no-report``: a report of an earlier run would describe other results).  Returns
    the paths removed; nothing else in the folder is touched."""
    out = Path(out_dir)
    gone = [p for p in [out / report_name(kind), *_figures(out, kind)] if p.is_file()]
    for p in gone:
        p.unlink()
    return gone
