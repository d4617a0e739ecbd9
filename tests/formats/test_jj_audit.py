"""JJ files both ways with riskengine's tables: a protected tau-Argus table written as JJ
(rk.formats / riskengine._batch.to_jj), and any JJ file's pattern audited on its own
(audit_jj, riskengine audit --jj): intervals under a-priori bounds (magnitude.bounded)
against scipy's linprog solved cell by cell, and against the table audit."""

from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import linprog

import riskengine as rk
from riskengine._batch import audit_jj, to_jj
from riskengine._formats.jj import JJ, read_jj, write_jj
from riskengine.cli import main
from riskengine.magnitude.bounded import bounded_intervals

DATA = Path(__file__).resolve().parents[1] / "data"


def _linprog_interval(A, rhs, x, lb, ub, j):
    known = ~np.isnan(x)
    lo_b = np.where(known, x, lb)
    hi_b = np.where(known, x, ub)
    out = []
    for sign in (1.0, -1.0):
        c = np.zeros(len(x))
        c[j] = sign
        r = linprog(c, A_eq=A, b_eq=rhs, bounds=list(zip(lo_b, hi_b)), method="highs")
        assert r.status == 0
        out.append(sign * r.fun)
    return out


def test_bounded_intervals_equal_linprog_on_random_tables(rng):
    for _ in range(30):
        r, c = int(rng.integers(2, 5)), int(rng.integers(2, 5))
        t = rng.integers(0, 20, (r, c)).astype(float)
        s = rk.Table(t).system() if hasattr(rk.Table(t), "system") else None
        A = s.A.toarray()
        x = s.vector(t).astype(float)
        lb = np.maximum(x - rng.integers(0, 10, x.size), 0.0)
        ub = x + rng.integers(0, 10, x.size)
        hid = rng.random(x.size) < 0.4
        xs = np.where(hid, np.nan, x)
        lo, hi, tol = bounded_intervals(A, np.zeros(A.shape[0]), xs, lb, ub)
        for j in np.flatnonzero(hid):
            want = _linprog_interval(A, np.zeros(A.shape[0]), xs, lb, ub, j)
            assert lo[j] == pytest.approx(want[0], abs=1e-6)
            assert hi[j] == pytest.approx(want[1], abs=1e-6)
            assert lo[j] - tol[j] <= x[j] <= hi[j] + tol[j]
        np.testing.assert_array_equal(lo[~hid], x[~hid])


def test_an_inconsistent_file_is_refused():
    A = np.array([[-1.0, 1.0, 1.0]])
    with pytest.raises(ValueError, match="does not hold"):
        bounded_intervals(A, [0.0], [10.0, 3.0, 3.0], [0, 0, 0], [99, 99, 99])
    with pytest.raises(ValueError, match="inconsistent"):
        bounded_intervals(A, [0.0], [10.0, np.nan, 3.0], [0, 0, 0], [5, 5, 5])


@pytest.fixture(scope="module")
def pp():
    at = rk.read_argus(DATA / "argus" / "pp.rda", DATA / "argus" / "pp.tab",
                       additivity="compute")
    rules = [("NK", (2.0, 75.0)), ("FREQ", (3.0, 10.0))]
    rel, st = rk.protect_argus(at, rules)
    return at, rules, rel, st


def test_a_protected_table_written_as_jj_audits_as_the_table(pp, tmp_path):
    at, rules, rel, st = pp
    jj = to_jj(at, rel, st, rules)
    p = tmp_path / "pp.jj"
    write_jj(jj, p)
    back = read_jj(p)
    assert back.n_cells == int(at.system.published.sum()) == 162
    assert write_jj(back) == p.read_text()
    # every relation holds on the true values
    np.testing.assert_allclose(back.to_matrix() @ back.value, back.rhs, atol=1e-6)
    a = audit_jj(back)
    t = rk.audit_argus(at, rel, rules)
    pub = np.flatnonzero(at.system.published)
    np.testing.assert_array_equal(a.suppressed.values, t.suppressed.values[pub])
    hid = a.suppressed.values
    np.testing.assert_allclose(a.lower.values[hid], t.lower.values[pub][hid], atol=1e-6)
    np.testing.assert_allclose(a.upper.values[hid], t.upper.values[pub][hid], atol=1e-6)
    assert a.attrs["n_under_protected"] == 0 == t.attrs["n_under_protected"]
    assert (np.asarray(back.status)[hid] != "s").all()
    assert set(np.asarray(back.status)[np.asarray(st)[pub] == "primary"]) == {"u"}


def test_the_peers_jj_examples_audited(tmp_path, capsys):
    for f in ("libtauargus_raw.jj", "sdctable_style.jj", "tauargus_clean.jj"):
        a = audit_jj(DATA / "jj" / f)
        jj = read_jj(DATA / "jj" / f)
        hid = np.isin(np.asarray(jj.status), ("u", "m", "x"))
        assert a.attrs["n_suppressed"] == int(hid.sum())
        # a hidden cell's interval holds its true value and lies within its bounds
        assert np.all(a.lower.values[hid] <= jj.value[hid] + 1e-9)
        assert np.all(a.upper.values[hid] >= jj.value[hid] - 1e-9)
        assert np.all(a.lower.values[hid] >= jj.lower[hid] - 1e-9)
        assert np.all(a.upper.values[hid] <= jj.upper[hid] + 1e-9)
    assert main(["audit", "--jj", str(DATA / "jj" / "tauargus_clean.jj"), "--out",
                 str(tmp_path), "--strict"]) == 3
    assert "NOT PROTECTED" in capsys.readouterr().out


def test_a_well_protected_jj_pattern():
    """2 x 2 with totals: hiding all four interior cells protects each by the other three."""
    v = np.array([10.0, 6.0, 4.0, 5.0, 3.0, 2.0, 5.0, 3.0, 2.0])   # t, r1, r2, c1, ...
    # cells: 0 total, 1 row1, 2 row2, 3 col1, 4 (1,1), 5 (2,1), 6 col2, 7 (1,2), 8 (2,2)
    rel = [(0.0, [0, 1, 2], [-1, 1, 1]), (0.0, [0, 3, 6], [-1, 1, 1]),
           (0.0, [1, 4, 7], [-1, 1, 1]), (0.0, [2, 5, 8], [-1, 1, 1]),
           (0.0, [3, 4, 5], [-1, 1, 1]), (0.0, [6, 7, 8], [-1, 1, 1])]
    st = np.array(["s", "s", "s", "s", "u", "m", "s", "m", "m"])
    jj = JJ(value=v, cost=v, status=st, lower=np.zeros(9), upper=np.full(9, 10.0),
            lower_pl=np.where(st == "u", 1.0, 0), upper_pl=np.where(st == "u", 1.0, 0),
            sliding_pl=np.zeros(9), relations=rel)
    a = audit_jj(read_jj(write_jj(jj)))
    assert a.attrs["n_exact"] == 0 and a.attrs["n_under_protected"] == 0
    assert (a.lower.values[4], a.upper.values[4]) == (pytest.approx(1.0), pytest.approx(5.0))
