"""The pieces of the suppression solvers (riskengine/magnitude/csp/) against plain
references: fixed-cell propagation against a loop over the published sums
(tests/reference/suppression.py), certificates, the heuristic's pool of deviations and the
clean-up's drop decisions against independent LP intervals (tests/reference/intervals.py)."""

import numpy as np
import pytest

from riskengine.magnitude.csp import heuristic as H
from riskengine.magnitude.csp.network import network_form
from riskengine.magnitude.csp.problem import MARGIN, REACH, capacity_cut, proves
from riskengine.tabular import tabular_system
from tests.magnitude.suppression_cases import capped, csp_problem, random_case
from tests.reference.intervals import reaches, reference_intervals, sums_2d, sums_3d
from tests.reference.suppression import fixed_closure

TOL = 1e-6


def case_of(k, rng):
    shape = [(4, 5), (3, 3, 2), (5, 3), (3, 2, 3)][k % 4]
    dims = ("a", "b", "c")[: len(shape)]
    sums = sums_2d if len(shape) == 2 else sums_3d
    return shape, dims, sums


@pytest.mark.parametrize("case", range(40))
def test_incidence_matches_fixed_closure(case):
    rng = np.random.default_rng(900 + case)
    shape, dims, sums = case_of(case, rng)
    x = rng.integers(1, 30, shape).astype(float)
    supp = rng.random(shape) < rng.uniform(0.2, 0.7)
    prob = csp_problem(x, np.zeros(shape, bool), np.zeros(shape), np.zeros(shape), dims)
    n_int = x.size
    vec = np.zeros(prob.n, bool)
    vec[:n_int] = supp.ravel()
    ref = fixed_closure(supp, sums(x))
    inc = H._Incidence(prob.A, vec, np.zeros(prob.n, bool))
    gone = inc.drop(np.flatnonzero(vec))
    got = np.zeros(prob.n, bool)
    got[gone] = True
    assert np.array_equal(got[:n_int].reshape(shape), ref)
    assert np.array_equal(inc.supp[:n_int].reshape(shape), supp & ~ref)
    # the dropped cells are exactly disclosed by the pattern (independent LP)
    if ref.any():
        lo, hi = reference_intervals(x, supp, sums(x), only=ref)
        assert np.allclose(lo[ref], x[ref], atol=TOL) and np.allclose(hi[ref], x[ref], atol=TOL)
    # a sensitive cell among them: drop refuses and changes nothing
    if ref.any():
        sens = np.zeros(prob.n, bool)
        sens[np.flatnonzero(ref.ravel())[0]] = True
        inc2 = H._Incidence(prob.A, vec, sens)
        assert inc2.drop(np.flatnonzero(vec)) is None
        assert np.array_equal(inc2.supp, vec)


@pytest.mark.parametrize("case", range(20))
def test_incidence_trial_and_commit(case):
    rng = np.random.default_rng(950 + case)
    shape, dims, sums = case_of(case, rng)
    x = rng.integers(1, 30, shape).astype(float)
    supp = rng.random(shape) < 0.6
    prob = csp_problem(x, np.zeros(shape, bool), np.zeros(shape), np.zeros(shape), dims)
    vec = np.zeros(prob.n, bool)
    vec[: x.size] = supp.ravel()
    inc = H._Incidence(prob.A, vec, np.zeros(prob.n, bool))
    inc.drop(np.flatnonzero(vec))
    for j in rng.permutation(np.flatnonzero(inc.supp)):
        if not inc.supp[j]:
            continue
        before = inc.supp.copy()
        gone = inc.trial(j)
        assert gone[0] == j and np.array_equal(inc.supp, before)     # nothing changed
        trial = before[: x.size].reshape(shape).copy()
        trial.ravel()[j] = False
        ref = fixed_closure(trial, sums(x)) | (before[: x.size].reshape(shape) & ~trial)
        got = np.zeros(x.size, bool)
        got[gone] = True
        assert np.array_equal(got.reshape(shape), ref)
        if rng.random() < 0.5:
            inc.commit(gone)
            assert np.array_equal(inc.supp, before & ~np.isin(np.arange(prob.n), gone))
            counts = np.asarray(abs(prob.A).astype(bool).astype(int) @ inc.supp.astype(int))
            assert np.array_equal(counts.ravel(), inc.count)


def certified(cert, prob, supp):
    """Each task's certificate checked one by one by problem.proves (the scalar reference
    of the vectorised _Certificates.valid_all, which must agree)."""
    out = []
    for k, task in enumerate(prob.tasks):
        y = np.zeros(prob.n)
        y[cert.cols] = cert.Y[k]
        out.append(k not in cert.unproven and proves(prob, y, task, supp, 1.0))
    out = np.array(out)
    assert np.array_equal(cert.valid_all(supp), out)
    return out


@pytest.mark.parametrize("route", ["auto", "lp"])
@pytest.mark.parametrize("case", [case if case < 5 else pytest.param(case, marks=pytest.mark.slow)
                                  for case in range(16)])
def test_pool_and_certificates_are_sound(case, route):
    # whatever the pool or a certificate claims, the independent LP confirms; a drop is
    # refused only when the trial pattern really falls short (of p (1 + MARGIN));
    # 2-D tables by flows ("auto") and by LPs
    rng = np.random.default_rng(1000 + case)
    shape, dims, sums = case_of(case, rng)
    x, sens, prot = random_case(rng, shape, 2 + case % 3)
    if len(shape) == 3:
        prot = capped(x, prot, dims)
    prob = csp_problem(x, sens, prot, prot, dims, route=route)
    supp = H.heuristic(prob)
    n_int = x.size
    # the pool's claims
    pool = H._Pool(prob)
    intr = H.make_intruder(prob)
    intr.pattern(supp)
    for task in prob.tasks:
        pool.add(intr.move(task[0], task[1], task[2])[1])
    below, above = reaches(x, supp[:n_int].reshape(shape), sens, sums(x))
    for s, d, p in prob.tasks:
        claim = pool.proves((s, d, p), supp)
        room = (above if d > 0 else below).ravel()[s] / prob.scale
        if claim:
            assert room >= p - TOL
    # certificates
    inc = H._Incidence(prob.A, supp, prob.sens)
    assert inc.drop(np.flatnonzero(supp & ~prob.sens)) is not None
    supp = inc.supp.copy()
    cert = H._Certificates(prob, supp, prob.tasks)
    below, above = reaches(x, supp[:n_int].reshape(shape), sens, sums(x))
    valid = certified(cert, prob, supp)
    for k, (s, d, p) in enumerate(prob.tasks):
        room = (above if d > 0 else below).ravel()[s] / prob.scale
        if k in cert.unproven:
            # protected, but not with the clean-up's margin: nothing may be dropped
            assert not valid[k]
            assert p - TOL <= room < p * (1 + MARGIN) + TOL
        else:
            assert valid[k]
    if cert.unproven:
        return
    for j in np.flatnonzero(supp & ~prob.sens):
        if not supp[j]:                 # fixed by an earlier drop
            continue
        gone = inc.trial(j)
        if gone is None:
            continue
        trial = supp.copy()
        trial[gone] = False
        ok = cert.drop(j, gone, trial)
        b, a = reaches(x, trial[:n_int].reshape(shape), sens, sums(x))
        # reach of every task relative to its protection (the reference LP to ~1e-9)
        ratio = np.array([(a if d > 0 else b).ravel()[s] / prob.scale / p
                          for s, d, p in prob.tasks])
        short = ratio < 1 + MARGIN + 1e-7
        if ok:
            assert (ratio >= 1 + MARGIN - 1e-7).all()
            assert certified(cert, prob, trial).all()
            inc.commit(gone)
            supp = trial
        else:
            assert any(short)
            assert certified(cert, prob, supp).all()


def test_proves_rejects_bad_deviations():
    x = np.array([[5.0, 3.0], [2.0, 4.0]])
    sens = np.array([[True, False], [False, False]])
    prob = csp_problem(x, sens, np.full((2, 2), 1.0) * sens, np.full((2, 2), 1.0) * sens,
                       ("a", "b"))
    supp = np.zeros(prob.n, bool)
    supp[:4] = True
    y = np.zeros(prob.n)
    y[:4] = np.array([1.0, -1.0, -1.0, 1.0]) / prob.scale      # a 2x2 cycle
    task = (0, +1, 1.0 / prob.scale)
    assert proves(prob, y, task, supp, 1.0)
    assert not proves(prob, y, (0, -1, 1.0 / prob.scale), supp, 1.0)   # wrong way
    assert not proves(prob, 0.5 * y, task, supp, 1.0)                 # too short
    bad = y.copy()
    bad[1] = 0.0                                                           # not a table
    assert not proves(prob, bad, task, supp, 1.0)
    off = supp.copy()
    off[3] = False                                                         # off pattern
    assert not proves(prob, y, task, off, 1.0)
    assert not proves(prob, 4 * y, (0, +1, 4.0 / prob.scale), supp, 1.0)  # 2 - 4 < 0


@pytest.mark.parametrize(("dims", "shape", "margins", "groups", "network"), [
    (("v", "w"), (3, 4), None, None, True),
    (("v", "w"), (2, 5), [("v",)], None, True),               # row totals only
    (("v", "w"), (3, 2), [("v",), ()], None, True),
    (("v",), (4,), None, None, True),                          # 1-D: a ground node
    (("a", "b", "c"), (2, 3, 2), None, None, False),           # 3 equations per cell
    (("v", "w"), (4, 3), None, {"v": [[0, 1], [2, 3]]}, False),   # subtotals
])
def test_network_form_reproduces_the_equations(dims, shape, margins, groups, network):
    system = tabular_system(dims, shape, margins, groups)
    net = network_form(system.A)
    assert (net is not None) == network
    if net is None:
        return
    # signed equation r = (inflow - outflow) at node r: +1 at the head, -1 at the tail
    A = system.A.toarray() * net.sign[:, None]
    n_rows, n = A.shape
    B = np.zeros((net.n_nodes, n))
    B[net.head, np.arange(n)] += 1.0
    B[net.tail, np.arange(n)] -= 1.0
    assert np.array_equal(B[:n_rows], A)
    single = (np.abs(system.A).sum(axis=0) == 1).any()       # a cell in one equation
    assert net.n_nodes == n_rows + bool(single)


@pytest.mark.parametrize("case", range(30))
def test_flow_route_matches_lp_route(case):
    # the intruder's reach (up to the protection), the capacity cuts and the cheapest
    # completions / certificates: flows and LPs agree on random 2-D problems
    rng = np.random.default_rng(1200 + case)
    shape = (int(rng.integers(2, 6)), int(rng.integers(2, 6)))
    if case % 5 == 4:
        shape = shape[:1] + (1,) if case % 2 else (int(rng.integers(3, 8)),)   # ground node
    dims = ("a", "b")[: len(shape)]
    x, sens, prot = random_case(rng, shape, int(rng.integers(1, 4)), zeros=0.15)
    totals = case % 3 == 0
    kw = {"suppress_totals": totals}
    net = csp_problem(x, sens, prot, 0.5 * prot + 1, dims, **kw)
    lp = csp_problem(x, sens, prot, 0.5 * prot + 1, dims, route="lp", **kw)
    assert net.net is not None and lp.net is None
    ni, li = H.make_intruder(net), H.make_intruder(lp)
    ni.sparse_cuts = True
    nc, lc = H.make_completion(net), H.make_completion(lp)
    for _ in range(4):
        z = np.where(net.cand, rng.random(net.n), 0.0)
        if rng.random() < 0.5:
            z = (z > 0.5).astype(float)
        z[net.sens] = 1.0
        ni.pattern(z)
        li.pattern(z)
        supp = z > 0.5
        for task in net.tasks:
            s, d, p = task
            vn, yn, un = ni.move(s, d, p)
            vl, _, _ = li.move(s, d, p)
            assert vn == pytest.approx(min(vl, p), abs=1e-9)
            assert proves(net, yn, task, z > 0, vn / p) if vn > 0 else True
            if vn < p * (1 - REACH):
                cut = capacity_cut(net, task, un, z)
                assert cut is not None           # violated at z
            for within in (False, True):
                a = nc.solve(supp, task, within=within)
                b = lc.solve(supp, task, within=within)
                assert (a is None) == (b is None)
                if a is None:
                    continue
                wn = net.w / net.w.max()
                c = (np.where(net.sens, 0.0, wn) * supp if within
                     else np.where(supp, 0.0, wn))
                assert c @ np.abs(a) == pytest.approx(c @ np.abs(b), rel=1e-7, abs=1e-12)
                reach = 1 + MARGIN if within else 1.0
                room = supp if within else supp | net.cand
                assert proves(net, a, task, room, reach)
