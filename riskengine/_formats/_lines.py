"""What every reader of a line-oriented format shares: the error that names file, line,
value and rule, and reading a source (a path or the text itself)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["FormatError", "read_source"]


class FormatError(ValueError):
    """A malformed input file: one line saying where (file, line), what (the value) and
    which rule it breaks.

    Parameters
    ----------
    file : str
        The file name (``"<text>"`` for text given directly).
    line : int or None
        1-based line number (None: the file as a whole).
    message : str
        The value and the rule, e.g. ``"depth 3 after depth 1: a line may be at most one
        level deeper than the line before"``.

    Examples
    --------
    >>> str(FormatError("t.hrc", 4, "empty code"))
    't.hrc, line 4: empty code'
    """

    def __init__(self, file, line, message: str):
        self.file, self.line, self.rule = str(file), line, message
        where = self.file if line is None else f"{self.file}, line {line}"
        super().__init__(f"{where}: {message}")


def read_source(source, encoding: str = "utf-8") -> tuple:
    """``(name, text)`` of a path or of text given directly (a str holding a newline, or
    that names no file).

    Parameters
    ----------
    source : str or os.PathLike
        A file path, or the content itself.
    encoding : str, default "utf-8"
        The file's encoding (tau-Argus files are often ``"latin-1"``).

    Returns
    -------
    (str, str)
        The name used in error messages and the text, newlines normalised to ``"\\n"``.
    """
    if isinstance(source, os.PathLike) or (isinstance(source, str) and "\n" not in source
                                           and Path(source).is_file()):
        path = Path(source)
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise FormatError(path, None, f"cannot read the file ({exc.strerror})") from None
        try:
            text = raw.decode(encoding)
        except UnicodeDecodeError as exc:
            raise FormatError(path, raw[:exc.start].count(b"\n") + 1,
                              f"byte {raw[exc.start]:#04x} is not {encoding}; give "
                              "encoding= (tau-Argus files are often latin-1)") from None
        name = str(path)
    elif isinstance(source, str):
        # one line that names no file: most likely a path typo
        if ("\n" not in source and source.strip() and not source.strip().startswith(("@", "<"))
                and source.lower().endswith((".rda", ".tab", ".hst", ".hrc", ".asc", ".arb",
                                             ".jj", ".csv", ".txt"))):
            raise FormatError(source, None, "no such file")
        text, name = source, "<text>"
    else:
        raise TypeError(f"source must be a path or the file's text, got "
                        f"{type(source).__name__}")
    text = text.removeprefix("\ufeff")
    return name, text.replace("\r\n", "\n").replace("\r", "\n")
