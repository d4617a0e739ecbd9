"""Files written atomically: a temporary file beside the target, renamed into place (a
reader never sees half a file; an error leaves the old file as it was)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["atomic_write_bytes", "atomic_write_text"]


def _write_atomically(path, write) -> None:
    """``write(tmp_path)`` into a temporary file beside ``path``, then rename it into place.

    The file gets the mode of the file it replaces, or the usual 0644 (``mkstemp``
    alone would leave 0600).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, path.stat().st_mode & 0o777 if path.exists() else 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def atomic_write_text(path, text: str) -> None:
    def write(tmp):
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
    _write_atomically(path, write)


def atomic_write_bytes(path, data: bytes) -> None:
    def write(tmp):
        with open(tmp, "wb") as fh:
            fh.write(data)
    _write_atomically(path, write)
