"""Releases on the command line: read from the release JSON, or from the published table
(CSV, as a board receives it) with the mechanism named by ``--mechanism`` / ``--param``;
written as the JSON and the published CSV beside it."""

from __future__ import annotations

import json
from pathlib import Path


def param(text: str) -> tuple:
    """``key=value`` with the value read as JSON where it parses (numbers, lists, true)."""
    key, sep, val = text.partition("=")
    if not sep or not key.strip():
        raise ValueError(f"--param needs key=value, got {text!r}")
    try:
        return key.strip(), json.loads(val)
    except json.JSONDecodeError:
        return key.strip(), val


def protect_inputs(cls) -> dict:
    """The keyword-only arguments of ``cls.protect`` (the agency's confidential inputs,
    e.g. suppression's sensitive cells), by name: True where required."""
    import inspect
    return {k: p.default is inspect.Parameter.empty
            for k, p in inspect.signature(cls.protect).parameters.items()
            if p.kind is inspect.Parameter.KEYWORD_ONLY}


def build_mechanism(name: str, params: dict, shape, dims, inputs=()):
    """The mechanism ``--mechanism NAME --param ...`` names, from the registry; a
    misspelt key is one line listing the valid ones (``inputs``: the protect inputs,
    which ``--param`` also takes)."""
    from .. import _config
    try:
        return _config.mechanism({"type": name, **params}, shape, f"--mechanism {name}",
                                 dims=dims)
    except ValueError as exc:
        if inputs and "unknown parameter" in str(exc):
            raise ValueError(f"{exc}; inputs of protect: {', '.join(inputs)}") from None
        raise


def _is_json(path) -> bool:
    with open(path, encoding="utf-8-sig") as fh:
        head = fh.read(4096).lstrip()
    return head.startswith("{")


def load_release(path, args):
    """The release in ``path``: a release JSON (its mechanism recorded in it), or a
    published table (CSV, wide or long, totals as a ``Total`` row / column / category)
    with the mechanism of ``--mechanism`` and ``--param``."""
    from .._io import read_published
    from ..protocol import lookup
    from ..release import Release
    name = getattr(args, "mechanism", None)
    params = dict(param(p) for p in getattr(args, "param", None) or ())
    if _is_json(path):
        if name is not None or params:
            raise ValueError(f"{path} is a release JSON: it records its mechanism; "
                             "--mechanism and --param describe a published table (CSV)")
        return Release.load(path)
    if name is None:
        raise ValueError(f"{path} is a published table: say how it was protected with "
                         "--mechanism NAME (and --param KEY=VALUE for its parameters, as "
                         "riskengine protect takes them), or give the release JSON")
    try:
        inputs = protect_inputs(lookup(name))
    except ValueError:
        inputs = {}                         # an unknown name: build_mechanism says so
    given = [k for k in params if k in inputs]
    if given:
        raise ValueError(f"--param {given[0]}: an input of protect (the agency's "
                         "confidential data), not a parameter of the published release")
    published, margins, coords = read_published(path)
    dims = tuple(coords)
    mech = build_mechanism(name, params, tuple(len(c) for c in coords.values()), dims)
    if not margins:
        # no total in the file: an additive release's totals are those of its cells (the
        # file says no more); other mechanisms published only these cells
        import numpy as np
        hidden = published is None or np.isnan(published.values).any()
        margins = None if (mech.additive and not hidden) else {}
    try:
        return Release(published=None if published is None else published.values,
                       margins=None if margins is None else
                       {k: v.values for k, v in margins.items()},
                       mechanism=mech, dims=dims, coords=coords)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{path} with --mechanism {name}: {exc}") from None


def tidy_release(rel):
    """A magnitude release with its numbers written to 12 significant digits
    (:func:`riskengine._io.tidy`: sums such as 11144.199999999999 become 11144.2)."""
    if rel.kind != "magnitude":
        return rel
    from .._io import tidy
    from ..release import Release
    out = Release(published=None if rel.published is None else tidy(rel.published),
                  margins={k: tidy(v) for k, v in rel.margins.items()},
                  mechanism=rel.mechanism, dims=rel.dims, coords=rel.coords, kind=rel.kind,
                  groups=rel.groups or None,
                  subtotals={k: tidy(v) for k, v in rel.subtotals.items()} or None)
    out.info = {k: float(tidy(v)) if isinstance(v, float) else v for k, v in rel.info.items()}
    return out


def csv_path(out) -> Path:
    """The published CSV beside the release JSON ``out`` (same name, ``.csv``)."""
    out = Path(out)
    if out.suffix.lower() == ".csv":
        raise ValueError(f"--out {out} names the release JSON (the published table is "
                         "written beside it as .csv): give a .json name")
    return out.with_suffix(".csv")


def save_release(rel, out) -> tuple:
    """Write the release JSON to ``out`` and the published table beside it (CSV);
    returns both paths."""
    from .._io import write_published
    table = csv_path(out)
    write_published(rel, table)      # first: a release with no CSV form writes nothing
    rel.save(out)
    return Path(out), table


#: the syntax of ``--param groups=`` (protect's subtotal groups), as the help gives it
GROUPS_SYNTAX = ("DIM:A,B;C (one dim: ';' between the groups, ',' between their "
                 "categories; quote it for the shell), or JSON for several dims, "
                 "'{\"DIM\": [[\"A\", \"B\"], [\"C\"]]}' (categories by label, or by "
                 "0-based position as integers)")


def protect_groups(value, table, where: str = "--param groups") -> dict:
    """``--param groups=...`` (:data:`GROUPS_SYNTAX`) as the mechanisms take it:
    ``{dim: [[category positions], ...]}``, each group checked against the table's
    labels; every category in exactly one group."""
    if isinstance(value, str):
        dim, sep, rest = value.partition(":")
        parts = [[m.strip() for m in g.split(",") if m.strip()] for g in rest.split(";")]
        if not sep or not dim.strip() or not parts or not all(parts):
            raise ValueError(f"{where}={value}: expected {GROUPS_SYNTAX}")
        value = {dim.strip(): parts}
    if not isinstance(value, dict) or not value:
        raise ValueError(f"{where}={json.dumps(value)}: expected {GROUPS_SYNTAX}")
    out = {}
    for dim, groups in value.items():
        if dim not in table.dims:
            raise ValueError(f"{where}: no dim {dim!r}; the table's dims are "
                             f"{', '.join(table.dims)}")
        if not isinstance(groups, list) or not groups or not all(
                isinstance(g, list) and g for g in groups):
            raise ValueError(f"{where}: the groups of {dim!r} must be a list of nonempty "
                             f"lists of categories, got {json.dumps(groups)}; expected "
                             f"{GROUPS_SYNTAX}")
        labels = [str(c) for c in table.coords[dim]]
        members = [m for g in groups for m in g]
        if all(str(m) in labels for m in members):
            pos = [[labels.index(str(m)) for m in g] for g in groups]
        elif all(isinstance(m, int) and not isinstance(m, bool) for m in members):
            bad = [m for m in members if not 0 <= m < len(labels)]
            if bad:
                raise ValueError(f"{where}: position {bad[0]} of {dim!r} is not among its "
                                 f"{len(labels)} categories (0..{len(labels) - 1})")
            pos = groups
        else:
            bad = next(m for m in members if str(m) not in labels)
            raise ValueError(f"{where}: {dim!r} has no category {bad!r}; its categories: "
                             f"{', '.join(labels)}")
        seen = [i for g in pos for i in g]
        twice = sorted({i for i in seen if seen.count(i) > 1})
        left = [i for i in range(len(labels)) if i not in seen]
        if twice or left:
            what = (f"{labels[twice[0]]!r} is in two groups" if twice else
                    f"{', '.join(repr(labels[i]) for i in left)} in no group")
            raise ValueError(f"{where}: the groups of {dim!r} must split its categories "
                             f"({', '.join(labels)}), each in exactly one group: {what}")
        out[dim] = pos
    return out
