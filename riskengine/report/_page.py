"""The pieces every report is built of: the page (:class:`_Doc`, inline CSS, HTML tables
and definition lists, embedded PNGs), number and cell formatting, the release in words,
and the names of the report kinds and of the plots each one writes."""

from __future__ import annotations

import base64
import fnmatch
import html
import io
import math
import re
from decimal import Decimal

import numpy as np
import xarray as xr

from .._version import __version__

#: the dataset attribute that says which kind of result a dataset is
KIND_ATTR = "riskengine_kind"
KINDS = ("assess", "compare", "simulate", "analyze", "audit", "reconstruct", "census")
#: the PNG names (without ``.png``; shell patterns) each kind of report writes: no two
#: kinds share one, so a folder holds every kind's report and plots side by side
FIGURES = {"assess": ("heatmap_max_prob", "heatmap_prob_exact", "posterior_bars"),
           "compare": ("ru_map",),
           "simulate": ("calibration", "hit_rates"),
           "analyze": ("statistic_*",),
           "audit": (),
           "reconstruct": (),
           "census": ()}
_MAX_ROWS = 200  # per-cell tables longer than this show the riskiest rows only

_CSS = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; color: #222;
       max-width: 1150px; margin: 2em auto; padding: 0 1em; line-height: 1.45; }
h1 { font-size: 1.6em; border-bottom: 2px solid #c0392b; padding-bottom: .2em; }
h2 { font-size: 1.25em; margin-top: 1.8em; color: #333; }
table { border-collapse: collapse; margin: .6em 0 1.2em; font-size: .9em; }
div.wide { max-width: 100%; overflow-x: auto; }  /* a wide table scrolls inside the page */
th, td { border: 1px solid #ccc; padding: .25em .6em; text-align: right; vertical-align: top; }
td { font-variant-numeric: tabular-nums; }
th { background: #f3f3f3; vertical-align: bottom; }
td.l, th.l { text-align: left; }
span.pm { display: block; font-size: .85em; color: #555; white-space: nowrap; }
dl { display: grid; grid-template-columns: max-content minmax(0, 1fr); gap: .2em 1.2em; }
dt { font-weight: 600; }
dd { margin: 0; font-family: monospace; white-space: pre-wrap; overflow-wrap: anywhere; }
figure { margin: 1em 0; } figcaption { font-size: .9em; color: #555; }
img { max-width: 100%; height: auto; border: 1px solid #eee; }
p.note { font-size: .9em; color: #555; overflow-wrap: anywhere; }
footer { margin-top: 3em; font-size: .8em; color: #777; }
@media print {
  body { max-width: none; margin: 0; padding: 0 1px; font-size: 10pt; }  /* 1px: borders */
  div.wide { overflow: visible; }       /* print every column: nothing scrolled away */
  table { font-size: 8pt; }
  th, td { overflow-wrap: anywhere; padding: .15em .3em; }  /* a wide table shrinks */
  span.pm { white-space: normal; }     /* to the paper instead */
  thead { display: table-header-group; }          /* the header again on each page */
  tr, figure, img, dt, dd { break-inside: avoid; page-break-inside: avoid; }
  h1, h2 { break-after: avoid; page-break-after: avoid; }
  img { border: none; }
}
"""


# --- small HTML helpers ----------------------------------------------------------------
class _Html(str):
    """Text that is already HTML (built by this package from escaped pieces): the table
    and list helpers put it in as it is."""


def _e(x) -> str:
    return x if isinstance(x, _Html) else html.escape(str(x), quote=True)


_LEFT = ' class="l"'
# a cell that reads as a number: 1,234 | -0.5 | 1.2e+27 | [0, 3] | 12.5 ± 0.3 | 3% | - (none)
_NUMERIC = re.compile(r"[-+]?(\d[\d,]*(\.\d*)?|\.\d+)([eE][-+]?\d+)?%?|-|nan|[-+]?inf")


#: cells that say there is no number (a failed mechanism's row): they leave a column numeric
_PLACEHOLDERS = ("", "-", "failed", "unknown")


def _numeric(text: str) -> bool:
    """Whether a cell's text reads as a number, an interval of numbers or a number with
    its ± (to be right-aligned)."""
    text = re.sub(r"<[^>]*>", " ", text).replace("±", " ").replace("[", " ").replace(
        "]", " ").replace("~", " ")
    words = text.replace(", ", " ").split()
    return bool(words) and all(_NUMERIC.fullmatch(w) for w in words)


def _table(header, rows, left=1) -> str:
    """An HTML table in a box that scrolls sideways when the table is wider than the page.

    The first ``left`` columns are labels (left-aligned); any other column is
    right-aligned when every one of its cells reads as a number (:func:`_numeric`), else
    left-aligned.  Cells are text (escaped) or :class:`_Html`."""
    rows = [list(r) for r in rows]
    ncol = max([len(header)] + [len(r) for r in rows])
    is_left = [i < left or not all(_numeric(_e(r[i])) for r in rows if i < len(r)
                                   and str(r[i]) not in _PLACEHOLDERS)
               for i in range(ncol)]

    def cells(tag, row):
        return "".join(f"<{tag}{_LEFT if is_left[i] else ''}>{_e(c)}</{tag}>"
                       for i, c in enumerate(row))
    body = "".join(f"<tr>{cells('td', r)}</tr>" for r in rows)
    # in a horizontally scrolling box: a table wider than the page (compare's measures
    # with many mechanisms or columns) scrolls inside it instead of widening the page
    return (f'<div class="wide"><table><thead><tr>{cells("th", header)}</tr></thead>'
            f"<tbody>{body}</tbody></table></div>")


def _breakable(name: str) -> _Html:
    """A column name that may break after its underscores (``prob_published_mean``): a
    table of many such columns fits the page."""
    return _Html("_<wbr>".join(_e(part) for part in str(name).split("_")))


def _dl(pairs) -> str:
    return "<dl>" + "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in pairs) + "</dl>"


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    return buf.getvalue()


class _Doc:
    """HTML body parts plus the PNGs they embed."""

    def __init__(self, title: str, kind: str):
        self.title, self.kind = title, kind
        self.parts: list[str] = []
        self.images: dict[str, bytes] = {}

    def add(self, s: str) -> None:
        self.parts.append(s)

    def figure(self, name: str, fig, caption: str) -> None:
        if not any(fnmatch.fnmatchcase(name, pat) for pat in FIGURES[self.kind]):
            raise AssertionError(f"plot {name!r} of a {self.kind} report is not in "
                                 f"report.FIGURES[{self.kind!r}]")
        data = _png(fig)
        self.images[f"{name}.png"] = data
        uri = "data:image/png;base64," + base64.b64encode(data).decode("ascii")
        self.add(f'<figure><img src="{uri}" alt="{_e(caption)}">'
                 f"<figcaption>{_e(caption)} ({_e(name)}.png)</figcaption></figure>")

    def html(self) -> str:
        return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                f"<title>{_e(self.title)}</title><style>{_CSS}</style></head><body>"
                f"<h1>{_e(self.title)}</h1>" + "".join(self.parts)
                + f"<footer>riskengine {_e(__version__)}</footer></body></html>\n")


# --- shared pieces ---------------------------------------------------------------------
#: float noise: a value within _NOISE x its scale of 0 is 0 (about 1000 roundings of
#: float64, e.g. a log evidence of 1.1e-16 or a sd of 2.5e-15 beside 31.23)
_NOISE = 1000 * float(np.finfo(float).eps)
#: integers with more digits than this are shown in scientific notation (1.23e+27)
_MAX_DIGITS = 12


def _is_noise(x: float, scale: float = 1.0) -> bool:
    """Whether ``x`` is float noise around 0 for a quantity of magnitude ``scale``."""
    return abs(x) <= _NOISE * abs(scale)


def _num(x, digits: int = 4, *, scale: float = 1.0) -> str:
    """A number for people: ``-`` for NaN; ``0`` within float noise of 0 (relative to
    ``scale``, the magnitude of the numbers ``x`` was computed from; ``scale=0`` never
    rounds to 0); integers with thousands separators (``1,234,567``) up to
    ``_MAX_DIGITS`` digits, beyond that scientific (``1.235e+27``); other numbers to
    ``digits`` significant digits, whole numbers of more than ``digits`` digits in full
    with separators (``123,457``)."""
    x = float(x)
    if math.isnan(x):
        return "-"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if x == 0 or _is_noise(x, scale):
        return "0"
    if abs(x) >= 10.0 ** _MAX_DIGITS:
        return f"{x:.{max(digits - 1, 0)}e}"
    if x == int(x):
        return f"{int(x):,}"
    if abs(x) >= 10.0 ** digits:
        return f"{x:,.0f}"
    return f"{x:,.{digits}g}"


def _pm(value, err, digits: int = 4, err_digits: int = 2, *, scale: float = 1.0,
        html_out: bool = False) -> str:
    """``value ± err`` (a mean and its standard error, a mean and its sd): ``err`` that
    is float noise next to the value (or to ``scale``) is ``± 0``; a NaN ``err`` is left
    out.  ``html_out``: the ``± err`` on a line of its own (a narrow column)."""
    value, err = float(value), float(err)
    big = max(abs(value), abs(scale)) if math.isfinite(value) else abs(scale)
    v = _num(value, digits, scale=scale)
    if math.isnan(err):
        return _Html(_e(v)) if html_out else v
    e = "0" if _is_noise(err, big) else _num(err, err_digits, scale=0)
    if html_out:
        return _Html(f'{_e(v)}<span class="pm">± {_e(e)}</span>')
    return f"{v} ± {e}"


def _count(n) -> str:
    """A count of candidate tables for people: ``1,234,567``; beyond ``_MAX_DIGITS``
    digits ``1.23e+27``, with the exact integer (:func:`riskengine._posterior._count_text`)
    in the title (shown on hover).  ``n``: an int, its decimal text (a netCDF attribute),
    ``"~1eX ..."`` (too long to write out) or ``"unknown"``/None."""
    from .._posterior import _count_text
    if n is None:
        return "unknown"
    if isinstance(n, (int, np.integer)):
        text = _count_text(int(n))
    else:
        text = str(n).strip()
    if not text.isdigit():                 # "unknown", "~1e4012.3 (exact value in memory)"
        return text
    if len(text) <= _MAX_DIGITS:
        return f"{int(text):,}"
    return _Html(f'<span title="exactly {text}">{_e(f"{Decimal(text):.2e}")}</span>')


def _cell_name(ds, dims, idx) -> str:
    return "(" + ", ".join(str(ds[d].values[i]) if d in ds.coords else str(i)
                           for d, i in zip(dims, idx)) + ")"


def _attr_pairs(ds: xr.Dataset, skip=()) -> list:
    return [(k, v) for k, v in ds.attrs.items() if k not in (KIND_ATTR, *skip)]


def describe_release(release) -> dict:
    """What a release publishes, in words: ``{field: text}`` (table, published, totals,
    mechanism)."""
    from ..release import Release
    from ..release_set import ReleaseSet
    if isinstance(release, ReleaseSet):
        dims = " x ".join(f"{d} ({n})" for d, n in zip(release.dims, release.shape))
        out = {"table": f"{len(release)} tables of the same records, analysed together; "
                        f"finest table {dims}"}
        for i, r in enumerate(release.releases):
            one = describe_release(r)
            out[f"table {i + 1}"] = (f"{one['table']}; {one['published']}; totals: "
                                     f"{one['published totals']}")
        for d, g in release.groups.items():
            out[f"groups of {d}"] = "; ".join(f"{k} = {' + '.join(map(str, v))}"
                                             for k, v in g.items())
        out["mechanism"] = release.mechanism.describe()
        return out
    if not isinstance(release, Release):
        raise TypeError(f"release must be an rk.Release, got {type(release).__name__}")
    dims = " x ".join(f"{d} ({n})" for d, n in zip(release.dims, release.shape))
    out = {"table": f"{release.kind} table, {dims}"}
    if release.published is None:
        out["published"] = "totals only (no interior cell)"
    else:
        pub = np.asarray(release.published, dtype=float)
        ns = int(np.isnan(pub).sum())
        out["published"] = (f"all {pub.size} interior cells" if ns == 0 else
                            f"{pub.size - ns} of {pub.size} interior cells ({ns} suppressed)")
    tot = ["grand total" if not k else "by " + " x ".join(k) for k in release.margins]
    out["published totals"] = ", ".join(tot) if tot else "none"
    out["mechanism"] = release.mechanism.describe()
    return out

