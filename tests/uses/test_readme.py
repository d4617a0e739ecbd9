"""The README's examples as a reader meets them: every Python snippet runs on its own (its
own imports, a fresh namespace, an empty folder), and every file a snippet or a shell
example reads is bundled with the package (``riskengine/data``) or written before by the
example itself."""

from __future__ import annotations

import itertools
import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
BUNDLED = {p.name for p in (ROOT / "riskengine" / "data").iterdir()}
#: files the examples read or write, by extension
FILE = re.compile(r"[\w./-]+\.(?:csv|json|toml|nc|txt)\b")


def _blocks(lang: str) -> list:
    return re.findall(rf"```{lang}\n(.*?)```", README.read_text(), flags=re.DOTALL)


def test_readme_has_python_examples():
    assert len(_blocks("python")) >= 3


@pytest.mark.parametrize("k", [k if k == 0 else pytest.param(k, marks=pytest.mark.slow)
                               for k in range(len(_blocks("python")))])
def test_each_python_example_runs_on_its_own(k, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code = _blocks("python")[k]
    try:
        exec(compile(code, f"README.md python block {k}", "exec"), {})  # noqa: S102
    except Exception as exc:  # noqa: BLE001  (name the block that failed)
        pytest.fail(f"README python block {k} failed: {type(exc).__name__}: {exc}\n{code}")
    for name in FILE.findall(code):       # read from the package, or written just now
        assert Path(name).name in BUNDLED or (tmp_path / name).exists(), (k, name)


def _written(words: list) -> set:
    """Files one command writes: ``--out`` (a release JSON also writes its CSV beside it)
    and everything under an output folder."""
    out = set()
    for a, b in itertools.pairwise(words):
        if a == "--out":
            out.add(b.rstrip("/"))
            if b.endswith(".json"):
                out.add(b[:-len(".json")] + ".csv")
    return out


def test_every_file_a_shell_example_reads_is_bundled_or_written_first():
    """``cp "$DATA"/x.csv .`` brings a bundled file; ``--out`` writes one; any other file
    an example names must be one of those (no ``table.csv`` the reader does not have)."""
    missing = []
    for k, block in enumerate(_blocks("bash")):
        have = set()
        text = block.replace("\\\n", " ")
        for line in text.splitlines():
            words = shlex.split(line.split(" #", 1)[0]) if line.strip() else []
            if words[:1] == ["cp"]:
                have |= {Path(w).name for w in words[1:-1] if Path(w).name in BUNDLED}
                continue
            outs = _written(words)
            for w in words:
                for name in FILE.findall(w):
                    ok = (name in have or name in outs
                          or any(name.startswith(o + "/") for o in have | outs))
                    if not ok:
                        missing.append((k, line.strip(), name))
            have |= outs
    assert not missing, missing
