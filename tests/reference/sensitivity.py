"""Cell sensitivity rules from their definitions (seed 004 §3.1), by brute force over
coalitions and intruders in exact rational arithmetic (fractions.Fraction)."""

from fractions import Fraction
from itertools import combinations


def brute_dominance(x, n, k):
    """(n, k)-dominance: some coalition of at most n respondents holds more than k % of
    the cell value."""
    x = [Fraction(v) for v in x]
    V = sum(x)
    return any(sum(c) * 100 > Fraction(k) * V
               for m in range(1, min(n, len(x)) + 1) for c in combinations(x, m))


def brute_pq(x, p, q):
    """pq rule: some intruder (a respondent, or an outsider with nothing of its own),
    knowing every other contribution to within q %, gets an upper estimate of some
    target's contribution within p % of it: V - x_j - (1 - q/100) * (others) <
    (1 + p/100) x_i.  q = 100 is the p-percent rule."""
    x = [Fraction(v) for v in x]
    V, p, q = sum(x), Fraction(p), Fraction(q)
    intruders = list(range(len(x))) + [None]
    for i in range(len(x)):
        for j in intruders:
            if j == i:
                continue
            own = x[j] if j is not None else 0
            others = V - x[i] - own
            upper = V - own - (1 - q / 100) * others
            if upper * 100 < (100 + p) * x[i]:
                return True
    return False
