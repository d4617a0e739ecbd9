"""The pieces every report is built of: the page (:class:`_Doc`, inline CSS, HTML tables
and definition lists, embedded PNGs), number and cell formatting, the release in words,
and the names of the report kinds and of the plots each one writes."""

from __future__ import annotations

import base64
import fnmatch
import html
import io

import numpy as np
import xarray as xr

from .._version import __version__

#: the dataset attribute that says which kind of result a dataset is
KIND_ATTR = "riskengine_kind"
KINDS = ("assess", "compare", "simulate", "analyze", "audit")
#: the PNG names (without ``.png``; shell patterns) each kind of report writes: no two
#: kinds share one, so a folder holds every kind's report and plots side by side
FIGURES = {"assess": ("heatmap_max_prob", "heatmap_prob_exact", "posterior_bars"),
           "compare": ("ru_map",),
           "simulate": ("calibration", "hit_rates"),
           "analyze": ("statistic_*",),
           "audit": ()}
_MAX_ROWS = 200  # per-cell tables longer than this show the riskiest rows only

_CSS = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; color: #222;
       max-width: 1150px; margin: 2em auto; padding: 0 1em; line-height: 1.45; }
h1 { font-size: 1.6em; border-bottom: 2px solid #c0392b; padding-bottom: .2em; }
h2 { font-size: 1.25em; margin-top: 1.8em; color: #333; }
table { border-collapse: collapse; margin: .6em 0 1.2em; font-size: .9em; }
div.wide { max-width: 100%; overflow-x: auto; }  /* a wide table scrolls inside the page */
th, td { border: 1px solid #ccc; padding: .25em .6em; text-align: right; }
th { background: #f3f3f3; }
td.l, th.l { text-align: left; }
dl { display: grid; grid-template-columns: max-content auto; gap: .2em 1.2em; }
dt { font-weight: 600; } dd { margin: 0; font-family: monospace; white-space: pre-wrap; }
figure { margin: 1em 0; } figcaption { font-size: .9em; color: #555; }
img { max-width: 100%; height: auto; border: 1px solid #eee; }
p.note { font-size: .9em; color: #555; }
footer { margin-top: 3em; font-size: .8em; color: #777; }
"""


# --- small HTML helpers ----------------------------------------------------------------
def _e(x) -> str:
    return html.escape(str(x), quote=True)


_LEFT = ' class="l"'


def _table(header, rows, left=1) -> str:
    def cells(tag, row):
        return "".join(f"<{tag}{_LEFT if i < left else ''}>{_e(c)}</{tag}>"
                       for i, c in enumerate(row))
    body = "".join(f"<tr>{cells('td', r)}</tr>" for r in rows)
    # in a horizontally scrolling box: a table wider than the page (compare's measures
    # with many mechanisms or columns) scrolls inside it instead of widening the page
    return (f'<div class="wide"><table><thead><tr>{cells("th", header)}</tr></thead>'
            f"<tbody>{body}</tbody></table></div>")


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
def _num(x, digits: int = 4) -> str:
    x = float(x)
    if np.isnan(x):
        return "-"
    return f"{int(x)}" if x == int(x) and abs(x) < 1e15 else f"{x:.{digits}g}"


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

