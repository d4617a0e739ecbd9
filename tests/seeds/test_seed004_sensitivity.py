"""Seed 004 (Cox, course notes), §3.1 "Examples" of the linear sensitivity measures:
x1 = 70, x2 = 15, x3 = 5, x4+ = 10, with the (3,80)-dominance, 20-percent and 20%-50%
rules' values S and protections.  Seed numbers: riskengine/data/seeds.py (S004); exact
comparison (every weight is a power-of-two fraction here)."""

import riskengine as rk
from riskengine.data.seeds import S004
from riskengine.magnitude.sensitivity import PQ, Dominance, PPercent

# seed 004 (004_566d03f14fee8ba2.txt, "Examples" after "Measuring Disclosure"):
# x1 = 70, x2 = 15, x3 = 5, x4+ = 10 (here the tail is two contributions of 5)
X = [*S004.EXAMPLE_LARGEST, S004.EXAMPLE_TAIL / 2, S004.EXAMPLE_TAIL / 2]


def test_seed004_worked_example_exactly():
    # exact in binary floating point: every weight is a power-of-two fraction here
    s_dom, p_dom = S004.EXAMPLE_DOMINANCE_3_80
    s_pq, p_pq = S004.EXAMPLE_PQ_20_50
    assert rk.sensitivity.nk_dominance(X, 3, 80) == s_dom
    assert rk.sensitivity.protection(X, Dominance(3, 80)) == p_dom
    assert rk.sensitivity.p_percent(X, 20) == S004.EXAMPLE_P_PERCENT_20
    assert rk.sensitivity.pq(X, 20, 50) == s_pq
    assert rk.sensitivity.protection(X, PQ(20, 50)) == p_pq
    # the tail split differently gives the same numbers (only x4+ = 10 matters)
    assert rk.sensitivity.nk_dominance([5, 70, 3, 15, 2, 5], 3, 80) == s_dom
    # q = 100 is the p-percent rule (seed 004: "When q = 100, S_pq = S_p%")
    assert PQ(20, 100).sensitivity(X) == PPercent(20).sensitivity(X)
