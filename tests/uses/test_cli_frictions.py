"""Command-line frictions a new user met (issue 27, item 4), each through
``riskengine.cli.main``: a table with its totals protected, every numeric option checked
as it is read, subtotal groups given as text, ``;``-separated CSVs with decimal commas,
the infinite candidate set of noisy counts, and numbers in ``assess``'s text for people."""

from __future__ import annotations

import json
from itertools import product

import numpy as np
import pytest

import riskengine as rk
from riskengine._io import read_published
from riskengine.cli import main
from riskengine.cli.output import count_text, log_text
from tests.uses.test_cli_refusals import one_line_error


def _release(path) -> dict:
    return json.loads(path.read_text())


# --- 1. protect reads a table with its totals ----------------------------------------------
WIDE = "v\\w,a,b\nx1,3,4\nx2,5,6\n"
WIDE_TOTALS = "v\\w,a,b,Total\nx1,3,4,7\nx2,5,6,11\nTotal,8,10,18\n"
LONG_TOTALS = "v,w,n\nx1,a,3\nx1,b,4\nx2,a,5\nx2,b,6\nTotal,a,8\nTotal,b,10\n"


@pytest.mark.parametrize("text", [WIDE_TOTALS, LONG_TOTALS,
                                  "v\\w,a,b,Total\nx1,3,4,7\nx2,5,6,11\n",   # column only
                                  WIDE_TOTALS.replace(",", ";")])
def test_protect_takes_a_table_with_consistent_totals(text, tmp_path, capsys):
    """The interior is protected, as if the file had no totals (same seed, same release);
    the release's own totals are the mechanism's; its CSV reads back."""
    (tmp_path / "plain.csv").write_text(WIDE)
    (tmp_path / "totals.csv").write_text(text)
    for name in ("plain", "totals"):
        assert main(["protect", str(tmp_path / f"{name}.csv"), "--mechanism", "rounding",
                     "--base", "3", "--seed", "4", "--out", str(tmp_path / f"{name}.json")]) == 0
    capsys.readouterr()
    got, want = _release(tmp_path / "totals.json"), _release(tmp_path / "plain.json")
    assert got == want
    assert got["coords"] == {"v": ["x1", "x2"], "w": ["a", "b"]}
    assert (tmp_path / "totals.csv").read_text().startswith("v\\w,a,b,Total\n")


@pytest.mark.parametrize("text, where, numbers", [
    (WIDE_TOTALS.replace("x2,5,6,11", "x2,5,6,12"), "v=x2, w=Total", ("is 12", "add up to 11")),
    (WIDE_TOTALS.replace("Total,8,10,18", "Total,8,10,19"), "v=Total, w=Total",
     ("is 19", "add up to 18")),
    (LONG_TOTALS.replace("Total,b,10", "Total,b,11"), "v=Total, w=b", ("is 11", "add up to 10")),
])
def test_protect_refuses_totals_that_contradict_the_cells(text, where, numbers, tmp_path,
                                                           capsys):
    path = tmp_path / "t.csv"
    path.write_text(text)
    assert main(["protect", str(path), "--mechanism", "rounding", "--base", "3",
                 "--out", str(tmp_path / "r.json")]) == 2
    line = one_line_error(capsys)
    assert f"the total at {where} " in line and all(n in line for n in numbers)
    assert not (tmp_path / "r.json").exists()


def test_protect_refuses_a_suppressed_cell_of_the_original(tmp_path, capsys):
    path = tmp_path / "t.csv"
    path.write_text(WIDE_TOTALS.replace("x1,3,4,7", "x1,x,4,7"))
    assert main(["protect", str(path), "--mechanism", "rounding", "--base", "3"]) == 2
    assert "cell {'v': 'x1', 'w': 'a'} is suppressed" in one_line_error(capsys)


# --- 2. every numeric option checked as it is read -----------------------------------------
@pytest.mark.parametrize("argv, message", [
    (["assess", "--threshold", "1.5"], "--threshold must be a probability in (0, 1]"),
    (["assess", "--threshold", "0"], "--threshold must be a probability in (0, 1]"),
    (["assess", "--threshold", "half"], "--threshold must be a number, got 'half'"),
    (["assess", "--max-expected", "-1"], "--max-expected must be a number >= 0"),
    (["assess", "--level", "nan"], "--level must be a finite number"),
    (["assess", "--memory", "lots"], "--memory must be bytes or a size like '8GB'"),
    (["assess", "--memory", "0"], "--memory must be a positive, finite size"),
    (["protect", "T", "--seed", "-1"], "--seed must be an integer >= 0 (a random seed), got -1"),
    (["protect", "T", "--seed", "1.5"], "--seed must be an integer, got '1.5'"),
    (["protect", "T", "--alpha", "1.5"], "--alpha must be a probability in [0, 1]"),
    (["protect", "T", "--beta", "-0.1"], "--beta must be a probability in [0, 1]"),
    (["protect", "T", "--base", "1"], "--base must be an integer >= 2, got 1"),
    (["count", "R", "--sis", "0"], "--sis must be an integer >= 1, got 0"),
    (["count", "R", "--memory", "8 parsecs"], "--memory must be bytes or a size"),
    (["analyze", "--draws", "-5"], "--draws must be an integer >= 1, got -5"),
    (["analyze", "--seed", "-1"], "--seed must be an integer >= 0"),
    (["analyze", "--level", "1.2"], "--level must be a probability in (0, 1]"),
    (["compare", "--draws", "0"], "--draws must be an integer >= 1, got 0"),
    (["compare", "--seed", "x"], "--seed must be an integer, got 'x'"),
    (["simulate", "--n-tables", "0"], "--n-tables must be an integer >= 1, got 0"),
    (["simulate", "--memory", "3 lightyears"], "--memory must be bytes or a size"),
    (["suppress", "M", "--dims", "a", "--value", "v", "--rule", "p:15", "--time-limit", "0"],
     "--time-limit must be a number > 0, got 0"),
])
def test_numeric_options_are_refused_when_read(argv, message, capsys):
    """Refused by the parser (SystemExit 2, one line naming the option) before any file is
    read or any work starts: the positional files here do not exist."""
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    line = one_line_error(capsys)
    assert message in line, line


def test_good_numeric_options_pass_unchanged():
    from riskengine.cli import build_parser
    args = build_parser().parse_args(["assess", "--threshold", "1", "--max-expected", "0",
                                      "--memory", "512 MiB", "--level", "0.9"])
    assert (args.threshold, args.max_expected, args.memory, args.level) == \
        (1.0, 0.0, "512 MiB", 0.9)
    args = build_parser().parse_args(["protect", "t.csv", "--seed", "0", "--alpha", "0",
                                      "--beta", "1", "--base", "2"])
    assert (args.seed, args.alpha, args.beta, args.base) == (0, 0.0, 1.0, 2)


# --- 3. subtotal groups as text --------------------------------------------------------------
MAGNITUDES = "v\\w,a,b,c\nx1,30,4,10\nx2,50,6,20\nx3,10,10,10\n"
SENSITIVE = "v\\w,a,b,c\nx1,0,1,0\nx2,0,0,0\nx3,0,0,0\n"


@pytest.mark.parametrize("groups", ["v:x1,x2;x3", '{"v": [["x1", "x2"], ["x3"]]}',
                                    '{"v": [[0, 1], [2]]}'])
def test_protect_takes_groups_as_text(groups, tmp_path, capsys):
    (tmp_path / "m.csv").write_text(MAGNITUDES)
    (tmp_path / "s.csv").write_text(SENSITIVE)
    out = tmp_path / "g.json"
    assert main(["protect", str(tmp_path / "m.csv"), "--mechanism", "cell_suppression",
                 "--param", f"sensitive={tmp_path / 's.csv'}", "--param", "protection=2",
                 "--param", f"groups={groups}", "--out", str(out)]) == 0
    assert "no published CSV" in capsys.readouterr().out
    assert rk.Release.load(out).groups == {"v": ((0, 1), (2,))}


@pytest.mark.parametrize("groups, message", [
    ("v:0,1", "'v' has no category '0'; its categories: x1, x2, x3"),
    ("v:x1;x2", "each in exactly one group: 'x3' in no group"),
    ("v:x1,x2;x2,x3", "'x2' is in two groups"),
    ("q:x1;x2,x3", "no dim 'q'; the table's dims are v, w"),
    ("x1,x2", "expected DIM:A,B;C"),
    ('{"v": "x1"}', "the groups of 'v' must be a list of nonempty lists"),
    ("[[0, 1]]", "expected DIM:A,B;C"),
    ('{"v": [[0, 1], [7]]}', "position 7 of 'v' is not among its 3 categories"),
])
def test_bad_groups_are_one_line_with_the_syntax(groups, message, tmp_path, capsys):
    (tmp_path / "m.csv").write_text(MAGNITUDES)
    (tmp_path / "s.csv").write_text(SENSITIVE)
    assert main(["protect", str(tmp_path / "m.csv"), "--mechanism", "cell_suppression",
                 "--param", f"sensitive={tmp_path / 's.csv'}", "--param", "protection=2",
                 "--param", f"groups={groups}"]) == 2
    line = one_line_error(capsys)
    assert "--param groups" in line and message in line, line
    assert "int()" not in line


def test_groups_syntax_is_in_the_help(capsys):
    for cmd, text in ((["protect", "--help"], "DIM:A,B;C"),
                      (["assess", "--help"], "LABEL the coarse category")):
        with pytest.raises(SystemExit):
            main(cmd)
        assert text in " ".join(capsys.readouterr().out.split())


def test_group_labels_that_are_integers(tmp_path, capsys):
    """``--group r:1=11,12`` names the categories 1, 11, 12 a CSV's reader reads as
    integers (the text '1' alone matched none)."""
    (tmp_path / "fine.csv").write_text("r,n\n11,5\n12,7\n2,4\n")
    (tmp_path / "coarse.csv").write_text("r,n\n1,12\n2,4\n")
    assert main(["assess", str(tmp_path / "fine.csv"), "--mechanism", "noise", "--param",
                 "distribution=geometric", "--param", "scale=1", "--also",
                 str(tmp_path / "coarse.csv"), "--group", "r:1=11,12", "--no-report",
                 "--out", str(tmp_path / "o")]) == 0
    assert "2 releases of the same records together" in capsys.readouterr().out
    assert main(["assess", str(tmp_path / "fine.csv"), "--mechanism", "noise", "--also",
                 str(tmp_path / "coarse.csv"), "--group", "r:1", "--no-report"]) == 2
    assert "expected DIM:LABEL=A,B" in one_line_error(capsys)


# --- 4. separators and decimal commas --------------------------------------------------------
def test_semicolon_table_with_decimal_commas_is_read_right(tmp_path, capsys):
    """';' with decimal commas (thousands points) reads as the ',' file with decimal
    points; a tab-separated file too."""
    eu = tmp_path / "eu.csv"
    eu.write_text("v\\w;a;b;Total\nx1;1.234,5;2,25;1.236,75\nx2;3;4;7\n")
    t = rk.read_table(eu)
    assert t.values.tolist() == [[1234.5, 2.25, 1236.75], [3.0, 4.0, 7.0]]
    pub, margins, _ = read_published(eu)
    assert pub.values.tolist() == [[1234.5, 2.25], [3.0, 4.0]]
    assert margins[("v",)].values.tolist() == [1236.75, 7.0]
    tab = tmp_path / "tab.csv"
    tab.write_text(WIDE.replace(",", "\t"))
    (tmp_path / "plain.csv").write_text(WIDE)
    assert rk.read_table(tab) == rk.read_table(tmp_path / "plain.csv")
    # through the command: a ';' count table with totals and thousands points
    (tmp_path / "c.csv").write_text("v\\w;a;b;Total\nx1;1.200;3;1.203\nx2;5,0;6;11\n")
    (tmp_path / "p.csv").write_text("v\\w,a,b\nx1,1200,3\nx2,5,6\n")
    for name in ("c", "p"):
        assert main(["protect", str(tmp_path / f"{name}.csv"), "--mechanism", "rounding",
                     "--base", "3", "--seed", "2", "--out", str(tmp_path / f"{name}.json")]) == 0
    capsys.readouterr()
    assert _release(tmp_path / "c.json") == _release(tmp_path / "p.json")


@pytest.mark.parametrize("text, message", [
    ("v\\w;a;b\nx1;1,5;2.5\nx2;3;4\n", ("line 2 writes '1,5' with a decimal comma, line 2 "
     "'2.5' with a decimal point: a ';'-separated table uses one of them")),
    ("v\\w;a;b\nx1;1.234;2\nx2;3;4\n", ("'1.234' in a ';'-separated table: a thousands "
     "separator (1234) or a decimal point?")),
    ("v\\w,a;b\nx1,1;2\nx2,3;4\n", "the fields may be separated by ',' or ';'"),
    ('v\\w,a,b\nx1,"1,5",2\nx2,3,4\n', ("(a decimal comma? in a comma-separated table "
     "write 1.5; or separate the fields with ';' and keep the decimal commas)")),
])
def test_separators_and_decimal_marks_that_are_not_clear_are_refused(text, message, tmp_path,
                                                                     capsys):
    """Never read as other numbers: one line that says what was seen."""
    path = tmp_path / "t.csv"
    path.write_text(text)
    assert main(["protect", str(path), "--mechanism", "rounding", "--base", "3"]) == 2
    assert message in one_line_error(capsys)
    assert main(["count", str(path), "--mechanism", "rounding", "--param", "base=3"]) == 2
    assert message in one_line_error(capsys)


# --- 5. the candidates of noisy counts --------------------------------------------------------
@pytest.fixture
def noisy(tmp_path):
    t = rk.Table(np.array([[30, 4], [5, 60]]), dims=("v", "w"))
    out = {}
    for scale in (2.0, 1e9):            # 1e9: its windows would need terabytes
        rel = rk.NoisyCounts("geometric", scale).protect(t, np.random.default_rng(1))
        out[scale] = tmp_path / f"noise{scale:g}.json"
        rel.save(out[scale])
    return out


def test_count_of_noisy_counts_says_infinite_not_a_memory_need(noisy, capsys):
    for path in noisy.values():
        assert main(["count", str(path)]) == 2
        line = one_line_error(capsys)
        assert "cannot be counted: infinitely many candidates" in line
        assert "no published total bounds a cell" in line
        assert "--prior flat:LOW,HIGH" in line
        assert "TB" not in line and "memory" not in line


def test_count_of_noisy_counts_under_a_bounded_prior(noisy, capsys):
    """Every nonnegative table has positive likelihood: under a prior that bounds every
    cell the candidates are the prior's box (brute force below)."""
    for path in noisy.values():
        assert main(["count", str(path), "--prior", "flat:2,9"]) == 0
        assert capsys.readouterr().out.strip() == str(8 ** 4)
    rel = rk.Release.load(noisy[2.0])
    prior = rk.priors.Flat(0, 3).at_most([(0, 0)], 1).at_least([(1, 1)], 2)
    box = [t for t in product(range(4), repeat=4)
           if np.isfinite(prior.log_weights(np.array(t).reshape(2, 2, 1)).sum())]
    assert rk.count_candidates(rel, prior) == len(box) == 2 * 4 * 4 * 2
    # knowledge alone bounds too; one unbounded cell leaves infinitely many
    known = rk.priors.Poisson(3.0).at_most([(0, 0), (0, 1), (1, 0), (1, 1)], 2)
    assert rk.count_candidates(rel, known) == 3 ** 4
    with pytest.raises(ValueError, match=r"infinitely many candidates .* cell \(v=1, w=1\)"):
        rk.count_candidates(rel, rk.priors.Poisson(3.0).at_most([(0, 0), (0, 1), (1, 0)], 2))
    with pytest.raises(ValueError, match="no original table is consistent"):
        rk.count_candidates(rel, rk.priors.Flat(2, 3).at_most([(0, 0)], 1))
    # a set of noisy releases: the same
    other = rk.NoisyCounts("discrete_gaussian", 1.5).protect(
        rk.Table(np.array([[30, 4], [5, 60]]), dims=("v", "w")), np.random.default_rng(2))
    both = rk.ReleaseSet([rel, other])
    assert rk.count_candidates(both, rk.priors.Flat(0, 3)) == 4 ** 4
    with pytest.raises(ValueError, match="infinitely many candidates"):
        rk.count_candidates(both)


# --- 6. numbers in assess's text for people ---------------------------------------------------
def test_count_and_log_evidence_text():
    assert count_text(37) == "37"
    assert count_text(2579765581) == "2,579,765,581"
    assert count_text(32067665307222924062189) == \
        "about 3.21e+22 (23 digits; exact in posterior.nc)"
    assert count_text(2 ** 20000).startswith("about 10^6020.")
    assert log_text(1.1102230246251565e-16) == "0"
    assert log_text(-2.220446049250313e-16) == "0"
    assert log_text(51.82213516403048) == "51.8221"
    assert log_text(-3e-5) == "-3e-05"


def test_assess_text_gives_a_huge_count_for_people(tmp_path, capsys):
    """A 2 x 12 margins-only release of cells of 60: 32067665307222924062189 candidate
    tables (the route's exact count, also in posterior.nc)."""
    t = rk.Table(np.full((2, 12), 60), dims=("v", "w"))
    path = tmp_path / "m.json"
    rk.MarginsOnly().protect(t).save(path)
    assert main(["assess", str(path), "--no-report", "--out", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    assert "candidate original tables: about 3.21e+22 (23 digits; exact in posterior.nc)" in out
    assert "32067665307222924062189" not in out
    assert "log evidence: 51.8221\n" in out


def test_protect_says_the_mechanism_and_noisy_counts_clip_by_default(tmp_path, capsys):
    """Noisy counts publish no negative count unless asked (clip=True by default), and
    protect says so; --param clip=false gives the raw measurements."""
    csv = tmp_path / "t.csv"
    csv.write_text("v\\w,a,b,c\nx,0,1,0\ny,1,0,2\n")
    out = tmp_path / "n.json"
    assert main(["protect", str(csv), "--mechanism", "noise", "--param", "scale=3",
                 "--seed", "2", "--out", str(out)]) == 0
    assert "protected with NoisyCounts(distribution=geometric, scale=3.0, clip=True)" in \
        capsys.readouterr().out
    rel = rk.Release.load(out)
    assert (rel.published >= 0).all() and all((m >= 0).all() for m in rel.margins.values())
    raw = []
    for seed in range(6):
        path = tmp_path / f"r{seed}.json"
        assert main(["protect", str(csv), "--mechanism", "noise", "--param", "scale=3",
                     "--param", "clip=false", "--seed", str(seed), "--out", str(path)]) == 0
        raw.append(rk.Release.load(path))
    assert any((r.published < 0).any() for r in raw)     # what clip=True keeps out
    assert "clip=False" in capsys.readouterr().out
