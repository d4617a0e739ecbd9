"""``riskengine routes``: every mechanism x inference route (``rk.routes()``), as text or
as the README's markdown table (``--markdown``).

Nothing of the library is imported until the command runs (the registry then loads every
mechanism module)."""

from __future__ import annotations


def _yes(flag) -> bool:
    """A nullable boolean of the table: missing (no route) is no."""
    try:
        return bool(flag)
    except TypeError:                     # pandas.NA
        return False


def text(table) -> str:
    """The routes, mechanism by mechanism: each route's kind, what it needs and its cost
    on the mechanism's own example."""
    width = max([len(str(r)) for r in table["route"].dropna()] + [5])
    out = []
    for name, rows in table.groupby("mechanism", sort=False):
        first = rows.iloc[0]
        out.append(f"{name} ({first['class']}; example: {first['example']})")
        for _, r in rows.iterrows():
            if not isinstance(r["route"], str):
                out.append(f"  {r['needs']}")
                continue
            kind = r["answer"]
            counts = "counts" if _yes(r["counts"]) else ""
            where = "set " if r["for"] == "release set" else ""
            out.append(f"  {where + r['route']:<{width + 4}} {kind:<11} {counts:<6}  "
                       f"needs: {r['needs']}")
            out.append(f"  {'':<{width + 4}} {'':<11} {'':<6}  cost:  {r['cost']}")
    return "\n".join(out)


def markdown(table) -> str:
    """The README's routes table: mechanism, what the route answers (a release or a set
    of releases), route, exact, counts, needs (the mechanism named on its first row)."""
    def cell(s) -> str:
        return str(s).replace("|", "\\|")

    lines = ["| mechanism | for | route | exact | counts | needs |", "|---|---|---|---|---|---|"]
    last = None
    for _, r in table.iterrows():
        name = "" if r["mechanism"] == last else f"`{r['mechanism']}` ({r['class']})"
        last = r["mechanism"]
        if not isinstance(r["route"], str):
            lines.append(f"| {name} | {r['for']} | none | | | {cell(r['needs'])} |")
            continue
        exact = "yes" if _yes(r["exact"]) else r["answer"]
        counts = "yes" if _yes(r["counts"]) else ""
        lines.append(f"| {name} | {r['for']} | `{r['route']}` | {exact} | {counts} | "
                     f"{cell(r['needs'])} |")
    return "\n".join(lines)


def cmd_routes(args) -> int:
    from ..inference.registry import routes
    table = routes()
    print(markdown(table) if args.markdown else text(table))
    return 0
