"""A magnitude table's contributions from microdata, by plain loops over the rows."""

from collections import defaultdict


def contributions_by_loops(rows, dims, margins_keep, respondent=False):
    """{(keep, index labels): contributions, largest first} for every margin ``keep`` (a
    tuple of dims) in ``margins_keep``: each row adds its value ``row["v"]`` to the cell its
    labels name; with ``respondent`` the rows of one ``row["id"]`` are one contribution."""
    out = {}
    for keep in margins_keep:
        cells = defaultdict(lambda: defaultdict(float))
        for k, row in enumerate(rows):
            key = tuple(row[d] for d in keep)
            who = row["id"] if respondent else k
            cells[key][who] += row["v"]
        for key, by in cells.items():
            out[(keep, key)] = sorted(by.values(), reverse=True)
    return out
