"""Issue 19's acceptance, from the command line: every registered mechanism goes through
``protect -> assess -> report`` on a small CSV, and the report opens with a verdict.

The cases come from the registry: each mechanism's own example (``Mechanism.example()``:
its table written as a CSV, its parameters and protect inputs as ``--param KEY=VALUE``;
``tests/reference/registry_cases.py``), so a new mechanism is covered with no edit here.
``--strict``'s exit codes on the bundled example (with the original table) are tested in
``test_verdict``; here: on a release the CLI made, without the original, at the rule's
boundary.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import xarray as xr

import riskengine as rk
from riskengine.cli import main
from riskengine.cli.releases import param
from riskengine.mechanisms import REGISTRY
from tests.reference.registry_cases import cli_case, cli_cases, names

#: the input files of the tests on one mechanism, written into each test's folder: a 3 x 3
#: count table with small counts, magnitudes for CTA, and the sensitive cells (0/1 in the
#: table's layout) of the two suppressing mechanisms (each mechanism's own case writes its
#: example's table beside them)
FILES = {
    "counts.csv": "\\,a,b,c\nx,3,0,2\ny,1,4,1\nz,2,2,5\n",
    "magnitudes.csv": "\\,a,b,c\nx,20.5,5.2,30.1\ny,40.3,8.4,10.2\nz,6.1,25.7,12.3\n",
    "sensitive.csv": "\\,a,b,c\nx,0,0,1\ny,1,0,0\nz,0,0,0\n",
    "sensitive_mag.csv": "\\,a,b,c\nx,0,1,0\ny,0,1,0\nz,0,0,0\n",
}

#: release kinds without a posterior: ``assess`` gives the audit instead (``audit.nc``,
#: ``audit.html``, exit 0), saying why in these words
AUDITED = {"cta": "magnitude releases have no integer posterior"}

THRESHOLD = 0.5


@pytest.fixture
def files(tmp_path, monkeypatch):
    for name, text in FILES.items():
        (tmp_path / name).write_text(text)
    monkeypatch.chdir(tmp_path)            # --param sensitive=FILE is relative, as a user's
    return tmp_path


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("riskengine: error: "), err
    return lines[0]


def test_every_registered_mechanism_has_cli_arguments():
    cases = cli_cases()
    missing = sorted(set(REGISTRY) - set(cases))
    assert not missing, f"give {missing} an example (Mechanism.example)"
    assert not set(cases) - set(REGISTRY), "a case names a mechanism not registered"
    for name, case in cases.items():   # --param KEY=VALUE: every parameter and input
        assert case.args[::2] == ("--param",) * (len(case.args) // 2), name
        given = dict(param(a) for a in case.args[1::2])
        ex = REGISTRY[name].example()
        assert set(given) == {*ex.params, *ex.inputs}, name
    assert set(AUDITED) == {n for n, c in REGISTRY.items() if not c.routes}


def _protect(name, files, seed, out) -> tuple:
    """``riskengine protect`` of the mechanism's own example (its table written into the
    test's folder): ``(case, exit code)``."""
    case = cli_case(name)
    (files / case.table).write_text(case.text)
    code = main(["protect", case.table, "--mechanism", name, "--seed", str(seed), *case.args,
                 "--out", str(out)])
    return case, code


@pytest.mark.slow
@pytest.mark.parametrize("name", names())
def test_protect_assess_report(name, files, capsys):
    rel, out = files / f"{name}.json", files / f"{name}-out"
    case, code = _protect(name, files, 1, rel)
    assert code == 0
    assert json.loads(rel.read_text())["mechanism"]["name"] == name
    release = rk.Release.load(rel)
    assert release.shape == case.shape and isinstance(release.mechanism, REGISTRY[name])
    capsys.readouterr()
    code = main(["assess", str(rel), "--out", str(out), "--threshold", str(THRESHOLD)])
    assert code == 0
    if name in AUDITED:
        stdout = capsys.readouterr().out
        assert AUDITED[name] in stdout and type(release.mechanism).__name__ in stdout
        assert "the audit is the answer" in stdout and "AUDIT: NOT CHECKED" in stdout
        assert (out / "audit.nc").is_file() and not (out / "posterior.nc").exists()
        html = (out / "audit.html").read_text(encoding="utf-8")
        assert "Verdict: " in html and type(release.mechanism).__name__ in html
        return
    stdout = capsys.readouterr().out
    with xr.open_dataset(out / "posterior.nc") as ds:
        ds.load()
    np.testing.assert_allclose(ds["pmf"].sum("value"), 1.0, rtol=1e-9)
    assert ds.attrs["threshold"] == THRESHOLD
    # the verdict the report states is the policy's on the posterior written beside it
    v = rk.verdict(ds, policy=rk.Policy.from_dict(json.loads(ds.attrs["policy"])))
    assert v.label == ds.attrs["verdict"]
    html = (out / "assess.html").read_text(encoding="utf-8")
    assert f">{v.label}</span>" in html and "<p>Policy: sensitive cells judged" in html
    assert "Pr(best guess) &gt;= 0.5" in html
    assert f"VERDICT: {v.label}" in stdout and f"under the policy: {v.rule}" in stdout
    assert html.index("Verdict: ") < html.index("<h2>Release</h2>")
    for c, _, _ in v.failing:                         # the cells that fail are named
        assert f"<td class=\"l\">{c}</td>" in html
    assert type(release.mechanism).__name__ in html     # mechanism and parameters


def test_strict_exit_codes_at_the_rule_s_boundary(files, capsys):
    """A cell with Pr(best guess) equal to the threshold fails the rule (>=): exit 3 under
    --strict; a hair above the largest Pr(best guess), the same release passes: exit 0."""
    rel = files / "cyclic.json"
    assert main(["protect", "counts.csv", "--seed", "1", "--out", str(rel)]) == 0
    assert main(["assess", str(rel), "--no-report", "--out", str(files / "probe")]) == 0
    with xr.open_dataset(files / "probe" / "posterior.nc") as ds:
        best = ds["pmf"].max("value").values
    top = float(best.max())
    n_top = int((best >= top).sum())          # 3: cells tie at 0.625 on this release
    assert 0.5 < top < 1.0                  # a threshold above it exists (no sure cell)
    capsys.readouterr()
    out = files / "strict"
    absolute = ["--cells", "all", "--baseline", "none"]
    assert main(["assess", str(rel), "--strict", "--threshold", repr(top),
                 "--out", str(out), *absolute]) == 3
    cap = capsys.readouterr()
    assert "VERDICT: FAIL" in cap.out
    assert (f"--strict: the verdict is FAIL ({n_top} of 9 judged cells have Pr(best guess) "
            ">= " in cap.err)
    assert ">FAIL</span>" in (out / "assess.html").read_text(encoding="utf-8")
    assert main(["assess", str(rel), "--strict", "--threshold", repr(top + 1e-9),
                 "--out", str(out), *absolute]) == 0
    cap = capsys.readouterr()
    assert "VERDICT: PASS" in cap.out and cap.err == ""
    assert ">PASS</span>" in (out / "assess.html").read_text(encoding="utf-8")
    # without --strict a FAIL is still exit 0 (the verdict is in the report, not the code)
    assert main(["assess", str(rel), "--threshold", repr(top), "--no-report",
                 "--out", str(out), *absolute]) == 0


def test_protect_names_the_inputs_a_mechanism_needs(files, capsys):
    """Suppression without its sensitive cells: one line naming the --param to give (it
    was Python's 'missing 1 required keyword-only argument'); a mask that is not 0/1 or
    not in the table's layout is refused, naming the option."""
    assert main(["protect", "counts.csv", "--mechanism", "cell_suppression"]) == 2
    line = one_line_error(capsys)
    assert "needs the protect input sensitive: --param sensitive=FILE.csv" in line
    assert "optional: protection, groups, time_limit" in line
    assert main(["protect", "magnitudes.csv", "--mechanism", "cta"]) == 2
    assert "inputs sensitive, protection, capacity" in one_line_error(capsys)
    bad = {"counts.csv": "--param sensitive=counts.csv marks cells with 0/1 (or true/false), got 3",
           "[[0, 1, 0], [0, 0, 0]]": "--param sensitive has shape (2, 3), expected (3, 3)"}
    for value, msg in bad.items():
        assert main(["protect", "counts.csv", "--mechanism", "cell_suppression",
                     "--param", f"sensitive={value}"]) == 2
        assert msg in one_line_error(capsys)
    # a JSON mask is the same as the file (true/false or 0/1)
    a, b = files / "a.json", files / "b.json"
    assert main(["protect", "counts.csv", "--mechanism", "cell_suppression", "--param",
                 "sensitive=sensitive.csv", "--param", "protection=1", "--out", str(a)]) == 0
    assert main(["protect", "counts.csv", "--mechanism", "cell_suppression", "--param",
                 "sensitive=[[false,false,true],[true,false,false],[false,false,false]]",
                 "--param", "protection=1", "--out", str(b)]) == 0
    assert a.read_text() == b.read_text()


@pytest.mark.slow
@pytest.mark.parametrize("name", names())
def test_the_published_csv_is_the_release(name, files, capsys):
    """protect writes the published table beside the JSON; that CSV with --mechanism and
    the mechanism's parameters is the same release (every number, the totals included),
    and assess answers the same from either (the same pmf, or the same audit)."""
    from riskengine.cli.releases import load_release
    rel = files / f"{name}.json"
    case, code = _protect(name, files, 2, rel)
    assert code == 0
    published = files / f"{name}.csv"
    assert f"(the published table: {published})" in capsys.readouterr().out
    # protect inputs (the agency's confidential data) are no parameters of the release
    params = [a for flag, a in zip(case.args[::2], case.args[1::2])
              if flag == "--param" and a.partition("=")[0] not in case.inputs]
    args = ["--mechanism", name, *(x for p in params for x in ("--param", p))]
    from_csv = load_release(published, __import__("argparse").Namespace(
        mechanism=name, param=params))
    assert from_csv == rk.Release.load(rel)
    # the JSON's info (how the release was made, e.g. bootstrap regenerations) is no
    # published number, but it seeds Monte Carlo routes (_seeding.release_seed): compare
    # with the JSON without it, so both runs draw the same chains
    bare = rk.Release.load(rel)
    bare.info = {}
    bare.save(rel)
    outs = {}
    for src, more in ((rel, []), (published, args)):
        out = files / f"out-{src.suffix[1:]}"
        assert main(["assess", str(src), *more, "--no-report", "--out", str(out)]) == 0
        result = "audit.nc" if name in AUDITED else "posterior.nc"
        with xr.open_dataset(out / result) as ds:
            outs[src.suffix] = ds.load()
    key = "upper" if name in AUDITED else "pmf"
    if name in AUDITED and key not in outs[".json"]:
        key = "published"
    np.testing.assert_array_equal(outs[".json"][key].values, outs[".csv"][key].values)
