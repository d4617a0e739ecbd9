"""The README's Python examples run as written (in order, one namespace, in a temporary
folder for the files they write)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


def _blocks() -> list:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)


def test_readme_has_python_examples():
    assert len(_blocks()) >= 3


def test_readme_python_examples_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ns: dict = {}
    for k, code in enumerate(_blocks()):
        try:
            exec(compile(code, f"README.md python block {k}", "exec"), ns)  # noqa: S102
        except Exception as exc:  # noqa: BLE001  (name the block that failed)
            pytest.fail(f"README python block {k} failed: {type(exc).__name__}: {exc}\n{code}")
