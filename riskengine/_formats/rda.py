"""tau-Argus ``.rda`` metadata files: read, validate line by line, write.

The grammar is that of tau-Argus ``src/tauargus/model/Metadata.java``
(``readMicroMetadata`` for microdata, ``readTableMetadata`` for tabular input) with the
tokenizer of ``src/tauargus/utils/Tokenizer.java``:

* a line is stripped, tabs count as spaces; blank lines and lines starting with ``//``
  are skipped; a token starting with ``//`` ends the line;
* a token is a ``"quoted string"`` (the quotes removed, spaces kept), one of the single
  characters ``, | ( )``, or the run of characters up to the next space; a token starting
  with ``<`` is a keyword and is upper-cased (keywords are case-insensitive);
* a line whose first token is not a keyword declares a variable: for fixed-width
  microdata ``Name start width [missing1 [missing2]]``, for separated microdata (the file
  has ``<SEPARATOR>``) ``Name width [missing1 [missing2]]``, for tabular metadata
  ``Name [missing1 [missing2]]`` (no width: ``readTableMetadata`` reads every token after
  the name as a missing code);
* a keyword line gives a property of the variable declared last; ``<SEPARATOR>``,
  ``<SPSS>``, ``<SAFE>``, ``<UNSAFE>`` and ``<PROTECT>`` are global.

Whether a file describes microdata or a table is not written in it (tau-Argus knows it
from the menu the user chose).  :func:`read_rda` takes ``kind=`` or infers it; see there.

Stricter than tau-Argus (which silently ignores or overwrites): a keyword given twice for
one variable, more than two missing codes, more than five distances, two incompatible
roles, ``<HIERCODELIST>``/``<HIERLEADSTRING>`` without ``<HIERARCHICAL>``, a duplicate
variable name in a separated file (tau-Argus checks only fixed-width files), more than
one ``WEIGHT`` or ``HOLDING`` variable, a code longer than the variable's width.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from riskengine._atomic import atomic_write_text
from riskengine._formats._lines import FormatError, read_source

__all__ = ["KEYWORDS", "Metadata", "Variable", "read_rda", "write_rda"]

#: Keywords of each kind of metadata (Metadata.java's two ``switch`` statements).
_GLOBAL_MICRO = ("SEPARATOR", "SPSS")
_GLOBAL_TABLE = ("SEPARATOR", "SAFE", "UNSAFE", "PROTECT")
_COMMON = ("RECODEABLE", "RECODABLE", "TOTCODE", "DISTANCE", "CODELIST", "HIERARCHICAL",
           "HIERLEVELS", "HIERLEADSTRING", "HIERCODELIST", "NUMERIC", "DECIMALS")
_MICRO_ONLY = ("WEIGHT", "HOLDING", "REQUEST", "TRUNCABLE", "RECORDKEY", "PFILE",
               "PFILE_FREQ", "PFILE_CONT", "PFILE_SEP", "CKM", "INCLUDEZEROS", "PARITY",
               "SCALING", "SEPARATION")
_TABLE_ONLY = ("FREQUENCY", "MAXSCORE", "STATUS")
#: Qualifiers after ``<NUMERIC>`` in tabular metadata.
_NUMERIC_QUALIFIERS = {"SHADOW": "shadow", "COST": "costvar", "COSTVAR": "costvar",
                       "LOWERPL": "lowerpl", "UPPERPL": "upperpl"}

#: Every keyword an ``.rda`` file may hold (without the angle brackets).
KEYWORDS = tuple(sorted(set(_GLOBAL_MICRO + _GLOBAL_TABLE + _COMMON + _MICRO_ONLY
                            + _TABLE_ONLY + tuple(_NUMERIC_QUALIFIERS))))

#: Roles that give a variable its tau-Argus ``Type`` (one per variable; only
#: recodeable + numeric may go together, microdata's ``CAT_RESP``).
_TYPE_ROLES = ("recodeable", "numeric", "weight", "holding", "request", "recordkey",
               "shadow", "costvar", "lowerpl", "upperpl", "frequency", "maxscore", "status")
#: Roles of which a file may hold at most one variable (Metadata.verify; WEIGHT and
#: HOLDING: tau-Argus uses only the first one found).
_SINGLE_ROLES = ("weight", "holding", "recordkey", "frequency", "status", "shadow",
                 "costvar", "lowerpl", "upperpl")
#: The CKM keywords kept raw in ``Variable.extra`` (keys: lower-case keyword).
_CKM_KEYS = ("ckm", "includezeros", "parity", "scaling", "separation")
_PFILE_KEYS = ("pfile", "pfile_freq", "pfile_cont", "pfile_sep")

_MAX_MISSINGS = 2       # Variable.MAX_NUMBER_OF_MISSINGS
_MAX_REQUESTS = 2       # Variable.MAX_NUMBER_OF_REQUESTS
_MAX_DIST = 5           # Variable.MAX_NUMBER_OF_DIST
_MAX_HIER_LEVELS = 10   # Variable.MAX_NUMBER_OF_HIER_LEVELS
_DEFAULT_LEAD = "."     # Variable.leadingString's initial value


@dataclass(frozen=True)
class Variable:
    """One variable of an ``.rda`` file.

    Equality compares the content, not where it was read (``line``, ``lines``).

    Parameters
    ----------
    name : str
        The variable's name.
    start : int or None
        1-based first column in a fixed-width microdata file (None otherwise).
    width : int or None
        Number of characters (fixed width) or code width (separated microdata); for
        tabular metadata None unless ``<HIERLEVELS>`` sets it to their sum (as
        ``readTableMetadata`` does).
    missing : tuple of str
        Up to two missing codes, as written (tau-Argus left-pads them to ``width`` when
        comparing: ``Variable.normaliseMissing``).
    roles : frozenset of str
        Lower-case keyword names: type roles ``recodeable`` (also for ``<RECODABLE>``),
        ``numeric``, ``weight``, ``holding``, ``request``, ``recordkey``, ``frequency``,
        ``maxscore``, ``status``, ``shadow``, ``costvar``, ``lowerpl``, ``upperpl``
        (the last four from ``<NUMERIC> <SHADOW>`` etc.; such a variable does not also
        get ``numeric``), and flags ``hierarchical``, ``truncable``.
    totcode : str, default "Total"
        ``<TOTCODE>`` (tau-Argus ``Variable.getTotalCode``: "Total" when not given).
    decimals : int, default 0
        ``<DECIMALS>``.
    hierlevels : tuple of int or None
        ``<HIERLEVELS>`` as written (zeros kept).
    hiercodelist : str or None
        ``<HIERCODELIST>``: the ``.hrc`` file.
    hierleadstring : str, default "."
        ``<HIERLEADSTRING>``; "." when absent, the initial value in tau-Argus's
        ``Variable.java`` (the files in the wild write "@" explicitly).
    codelist : str or None
        ``<CODELIST>``: a ``.cdl`` file of labels.
    distance : tuple of int or None
        ``<DISTANCE>``, filled to five values as tau-Argus does (a missing value repeats
        the one before; the first defaults to 1).
    request_codes : tuple of str
        ``<REQUEST>`` codes.
    extra : dict
        CKM keywords and p-table files, raw strings keyed by the lower-case keyword:
        ``ckm`` (e.g. ``"T(3)"``), ``includezeros``, ``parity``, ``separation``
        (``"Y"``/``"N"``), ``scaling`` (e.g. ``"F(0.03,0.3,1000,3,0.5,0.2)"``),
        ``pfile``, ``pfile_freq``, ``pfile_cont``, ``pfile_sep``.
    line : int
        The line that declares the variable (0 when built in code).
    lines : dict
        ``{keyword (lower case): line}`` of each property line.
    """

    name: str
    start: int | None = None
    width: int | None = None
    missing: tuple = ()
    roles: frozenset = frozenset()
    totcode: str = "Total"
    decimals: int = 0
    hierlevels: tuple | None = None
    hiercodelist: str | None = None
    hierleadstring: str = _DEFAULT_LEAD
    codelist: str | None = None
    distance: tuple | None = None
    request_codes: tuple = ()
    extra: dict = field(default_factory=dict, hash=False)
    line: int = field(default=0, compare=False)
    lines: dict = field(default_factory=dict, compare=False, hash=False)

    @property
    def is_explanatory(self) -> bool:
        """True for a ``<RECODEABLE>`` variable."""
        return "recodeable" in self.roles

    @property
    def is_hierarchical(self) -> bool:
        """True for a ``<HIERARCHICAL>`` (or ``<HIERLEVELS>``) variable."""
        return "hierarchical" in self.roles


@dataclass(frozen=True)
class Metadata:
    """The content of an ``.rda`` file.

    Equality compares the content, not the file name or line numbers.

    Parameters
    ----------
    variables : tuple of Variable
        In file order.
    separator : str or None
        ``<SEPARATOR>``; None for fixed-width microdata.
    safe, unsafe, protect : str
        Status letters of a ``.tab`` status column (``<SAFE>``, ``<UNSAFE>``,
        ``<PROTECT>``; tau-Argus's defaults "S", "U", "P").
    kind : {"micro", "table"}
        Microdata metadata (for ``.asc``/``.csv`` files) or tabular (``.tab``).
    spss : bool
        ``<SPSS>`` (microdata in an SPSS system file; :func:`read_asc` cannot read it).
    name : str
        The file name (``"<text>"`` for text given directly).
    lines : dict
        ``{global keyword (lower case): line}``.
    """

    variables: tuple
    separator: str | None = None
    safe: str = "S"
    unsafe: str = "U"
    protect: str = "P"
    kind: str = "micro"
    spss: bool = False
    name: str = field(default="<text>", compare=False)
    lines: dict = field(default_factory=dict, compare=False, hash=False)

    def variable(self, name: str) -> Variable:
        """The variable called ``name`` (exact match first, then ignoring case, as
        tau-Argus's ``Metadata.find``).

        Parameters
        ----------
        name : str
            The variable's name.

        Returns
        -------
        Variable

        Raises
        ------
        KeyError
            No variable has that name.
        """
        for var in self.variables:
            if var.name == name:
                return var
        for var in self.variables:
            if var.name.lower() == name.lower():
                return var
        raise KeyError(f"{self.name}: no variable {name!r}; the file has "
                       f"{', '.join(v.name for v in self.variables)}")

    def _with(self, role):
        return tuple(v for v in self.variables if role in v.roles)

    def _one(self, role):
        found = self._with(role)
        return found[0] if found else None

    @property
    def explanatory(self) -> tuple:
        """The ``<RECODEABLE>`` variables, in file order."""
        return self._with("recodeable")

    @property
    def numeric(self) -> tuple:
        """The plain ``<NUMERIC>`` (response) variables, in file order."""
        return self._with("numeric")

    @property
    def weight(self):
        """The ``<WEIGHT>`` variable or None."""
        return self._one("weight")

    @property
    def holding(self):
        """The ``<HOLDING>`` variable or None."""
        return self._one("holding")

    @property
    def record_key(self):
        """The ``<RECORDKEY>`` variable or None."""
        return self._one("recordkey")

    @property
    def request(self) -> tuple:
        """The ``<REQUEST>`` variables."""
        return self._with("request")

    @property
    def frequency(self):
        """The ``<FREQUENCY>`` variable or None."""
        return self._one("frequency")

    @property
    def maxscore(self) -> tuple:
        """The ``<MAXSCORE>`` variables in order: top 1, top 2, ..."""
        return self._with("maxscore")

    @property
    def status(self):
        """The ``<STATUS>`` variable or None."""
        return self._one("status")

    @property
    def lower_pl(self):
        """The ``<NUMERIC> <LOWERPL>`` variable or None."""
        return self._one("lowerpl")

    @property
    def upper_pl(self):
        """The ``<NUMERIC> <UPPERPL>`` variable or None."""
        return self._one("upperpl")

    @property
    def cost(self):
        """The ``<NUMERIC> <COSTVAR>`` variable or None."""
        return self._one("costvar")

    @property
    def shadow(self):
        """The ``<NUMERIC> <SHADOW>`` variable or None."""
        return self._one("shadow")


# ---------------------------------------------------------------------------- tokens


def _tokenize(name: str, lineno: int, line: str) -> list:
    """``[(text, quoted)]`` of one line, per ``Tokenizer.nextToken``."""
    rest = line.replace("\t", " ").strip()
    tokens = []
    while rest:
        if rest.startswith("//"):
            break
        if rest[0] == '"':
            end = rest.find('"', 1)
            if end < 0:
                raise FormatError(name, lineno, f"unterminated quoted string {rest!r}: a "
                                  "string opened with \" must close on the same line")
            tokens.append((rest[1:end], True))
            rest = rest[end + 1:].strip()
            continue
        if rest[0] in ",|()":
            tokens.append((rest[0], False))
            rest = rest[1:].strip()
            continue
        end = rest.find(" ")
        text, rest = (rest, "") if end < 0 else (rest[:end], rest[end + 1:].strip())
        if text.startswith("<"):
            text = text.upper()
        tokens.append((text, False))
    return tokens


def _raw_rest(line: str, keyword: str) -> str:
    """The text after the keyword (for the CKM keywords, parsed by fields in Java)."""
    text = line.replace("\t", " ").strip()
    rest = text[len(keyword) + 2:].strip()
    cut = rest.find("//")
    return rest[:cut].strip() if cut >= 0 else rest


def _int(name, lineno, text, what, minimum=0):
    if not re.fullmatch(r"[+-]?\d+", text):
        raise FormatError(name, lineno, f"{what} {text!r} is not an integer")
    value = int(text)
    if value < minimum:
        raise FormatError(name, lineno, f"{what} {value} is below {minimum}")
    return value


# ---------------------------------------------------------------------------- reading


def _infer_kind(name, parsed, separator):
    """Microdata or table, from the keywords used (see :func:`read_rda`)."""
    table_kw = micro_kw = None
    for lineno, tokens, _ in parsed:
        head = tokens[0][0]
        if not head.startswith("<"):
            continue
        kw = head[1:-1] if head.endswith(">") else head[1:]
        if kw in _TABLE_ONLY or kw in ("SAFE", "UNSAFE", "PROTECT") or (
                kw == "NUMERIC" and len(tokens) > 1):
            table_kw = table_kw or (lineno, head)
        elif kw in _MICRO_ONLY or kw == "SPSS":
            micro_kw = micro_kw or (lineno, head)
    if table_kw and micro_kw:
        later = max(table_kw, micro_kw)
        raise FormatError(name, later[0], f"{later[1]} cannot be in the same file as "
                          f"{min(table_kw, micro_kw)[1]} (line {min(table_kw, micro_kw)[0]}):"
                          " one is a keyword of tabular metadata, the other of microdata")
    if table_kw:
        return "table"
    if micro_kw or separator is None:
        return "micro"
    # separated, only keywords both kinds know: tau-Argus writes the width of separated
    # microdata as a bare integer and the missing codes of a table quoted
    for _, tokens, _ in parsed:
        declares = not tokens[0][0].startswith("<")
        if declares and (len(tokens) < 2 or tokens[1][1]
                         or not re.fullmatch(r"\d+", tokens[1][0])):
            return "table"
    return "micro"


def read_rda(source, encoding: str = "latin-1", *, kind: str | None = None) -> Metadata:
    """Read a tau-Argus ``.rda`` metadata file.

    Parameters
    ----------
    source : str or os.PathLike
        A path, or the file's text.
    encoding : str, default "latin-1"
        The file's encoding.
    kind : {"micro", "table"}, optional
        Whether the file describes microdata or tabular input.  By default inferred:
        "table" when a keyword only tabular metadata knows is used (``<SAFE>``,
        ``<UNSAFE>``, ``<PROTECT>``, ``<FREQUENCY>``, ``<MAXSCORE>``, ``<STATUS>``,
        ``<NUMERIC> <SHADOW>``...), "micro" when a microdata-only keyword is used
        (``<WEIGHT>``, ``<HOLDING>``, ``<REQUEST>``, ``<RECORDKEY>``, CKM keywords...) or
        there is no ``<SEPARATOR>``; otherwise "micro" when every variable line gives
        its width as a bare integer (``geo_m 2``) and "table" when not (``Size "99"``).

    Returns
    -------
    Metadata

    Raises
    ------
    FormatError
        A line breaks a rule: an unknown keyword (the message lists the known ones), a
        property before any variable, missing or extra arguments, a non-integer start,
        width, decimals, distance or hierarchical level, a duplicate name, two roles
        tau-Argus keeps apart, ``<HIERARCHICAL>`` with neither or both of
        ``<HIERLEVELS>``/``<HIERCODELIST>``, levels that do not add up to the width, a
        second variable of a role only one may have, an unterminated quote; and the
        checks of tau-Argus's ``Metadata.verify``.

    Examples
    --------
    >>> meta = read_rda('''<SEPARATOR> ";"
    ... Region "99"
    ...   <RECODEABLE>
    ...   <TOTCODE> "Total"
    ...   <HIERARCHICAL>
    ...   <HIERCODELIST> "region.hrc"
    ...   <HIERLEADSTRING> "@"
    ... Turnover
    ...   <NUMERIC>
    ...   <DECIMALS> 2
    ... ''')
    >>> meta.kind, meta.separator, [v.name for v in meta.explanatory]
    ('table', ';', ['Region'])
    >>> meta.variable("Turnover").decimals
    2
    """
    name, text = read_source(source, encoding)
    if kind not in (None, "micro", "table"):
        raise ValueError(f"kind must be 'micro', 'table' or None, not {kind!r}")
    parsed = []
    for lineno, line in enumerate(text.split("\n"), start=1):
        stripped = line.replace("\t", " ").strip()
        if not stripped or stripped.startswith("//"):
            continue
        tokens = _tokenize(name, lineno, line)
        if tokens:
            parsed.append((lineno, tokens, line))
    separator = None
    for lineno, tokens, _ in parsed:
        if tokens[0] == ("<SEPARATOR>", False):
            separator = tokens[1][0] if len(tokens) > 1 else None
    if kind is None:
        kind = _infer_kind(name, parsed, separator)
    return _Reader(name, kind, separator is not None).read(parsed)


class _Reader:
    def __init__(self, name, kind, has_separator):
        self.name, self.kind, self.has_separator = name, kind, has_separator
        self.globals = {"separator": None, "safe": "S", "unsafe": "U", "protect": "P",
                        "spss": False}
        self.global_lines: dict = {}
        self.variables: list = []
        self.current = None     # dict of the variable being read

    # -- helpers
    def fail(self, lineno, message):
        raise FormatError(self.name, lineno, message)

    def args(self, lineno, keyword, tokens, low, high):
        args = tokens[1:]
        if not low <= len(args) <= high:
            want = (f"{low}" if low == high else f"{low} to {high}")
            self.fail(lineno, f"<{keyword}> takes {want} argument{'s' * (high != 1)}, "
                      f"got {len(args)}: {' '.join(t for t, _ in args) or '(none)'}")
        return [t for t, _ in args]

    # -- main loop
    def read(self, parsed) -> Metadata:
        known = set(_COMMON) | set(_GLOBAL_MICRO if self.kind == "micro" else _GLOBAL_TABLE)
        known |= set(_MICRO_ONLY if self.kind == "micro" else _TABLE_ONLY)
        for lineno, tokens, line in parsed:
            head, quoted = tokens[0]
            if quoted or not head.startswith("<"):
                self.finish_variable()
                self.declare(lineno, tokens)
                continue
            if not head.endswith(">") or len(head) < 3:
                self.fail(lineno, f"keyword {head!r} is not closed by '>'")
            kw = head[1:-1]
            if kw not in known:
                other = "microdata" if self.kind == "table" else "tabular metadata"
                hint = (f" (it is a keyword of {other})" if kw in KEYWORDS else "")
                self.fail(lineno, f"unknown keyword {head}{hint}; known in {self.kind} "
                          f"metadata: {', '.join(f'<{k}>' for k in sorted(known))}")
            if kw in ("SEPARATOR", "SAFE", "UNSAFE", "PROTECT", "SPSS"):
                self.global_keyword(lineno, kw, tokens)
                continue
            if self.current is None:
                self.fail(lineno, f"{head} before any variable: a variable must be "
                          "declared before its properties")
            self.property(lineno, kw, tokens, line)
        self.finish_variable()
        return self.verify()

    def global_keyword(self, lineno, kw, tokens):
        key = kw.lower()
        if key in self.global_lines:
            self.fail(lineno, f"<{kw}> given twice (first on line "
                      f"{self.global_lines[key]})")
        self.global_lines[key] = lineno
        if kw == "SPSS":
            self.args(lineno, kw, tokens, 0, 0)
            self.globals["spss"] = True
            return
        (value,) = self.args(lineno, kw, tokens, 1, 1)
        if value == "":
            self.fail(lineno, f"<{kw}> \"\": the value may not be empty")
        if kw == "SEPARATOR" and value.strip() == "" and self.kind == "micro":
            self.fail(lineno, f"<SEPARATOR> {value!r}: tau-Argus cannot read microdata "
                      "separated by spaces (TauArgus.cpp ReadVariablesFreeFormat)")
        self.globals[key] = value

    def declare(self, lineno, tokens):
        name = tokens[0][0]
        if name == "":
            self.fail(lineno, "empty variable name")
        for other in self.variables:
            if other["name"].lower() == name.lower():
                self.fail(lineno, f"variable {name!r} declared twice (first on line "
                          f"{other['line']}; names are compared ignoring case)")
        args = [t for t, _ in tokens[1:]]
        fixed = self.kind == "micro" and not self.has_separator
        start = width = None
        if self.kind == "micro":
            need = ["start", "width"] if fixed else ["width"]
            if len(args) < len(need):
                form = "Name start width" if fixed else "Name width"
                self.fail(lineno, f"variable {name!r}: missing {need[len(args)]}; a "
                          f"{'fixed-width' if fixed else 'separated'} microdata variable "
                          f"line is '{form} [missing1 [missing2]]'")
            if fixed:
                start = _int(self.name, lineno, args.pop(0), f"{name}: start", 1)
            width = _int(self.name, lineno, args.pop(0), f"{name}: width", 1)
        if len(args) > _MAX_MISSINGS:
            self.fail(lineno, f"variable {name!r}: {len(args)} missing codes "
                      f"{args}; at most {_MAX_MISSINGS} are allowed")
        missing = []
        for i, code in enumerate(args):
            if code.strip() == "":
                if any(c.strip() for c in args[i + 1:]):
                    self.fail(lineno, f"variable {name!r}: empty first missing code "
                              "before a second one")
                continue
            if width is not None and len(code) > width:
                self.fail(lineno, f"variable {name!r}: missing code {code!r} is longer "
                          f"than the width {width}")
            missing.append(code)
        self.current = {"name": name, "line": lineno, "start": start, "width": width,
                        "missing": tuple(missing), "roles": set(), "lines": {},
                        "extra": {}}

    def add_role(self, lineno, role):
        var = self.current
        types = [r for r in var["roles"] if r in _TYPE_ROLES]
        if role in _TYPE_ROLES and types:
            pair = {role, *types}
            if not (pair == {"recodeable", "numeric"} and self.kind == "micro"):
                self.fail(lineno, f"variable {var['name']!r} is already {types[0]}; it "
                          f"cannot also be {role} (tau-Argus keeps one type per "
                          "variable; only microdata allow recodeable + numeric)")
        var["roles"].add(role)

    def property(self, lineno, kw, tokens, line):
        var = self.current
        key = {"RECODABLE": "recodeable", "PFILE_FREQ": "pfile_freq"}.get(kw, kw.lower())
        same = ("pfile", "pfile_freq") if key in ("pfile", "pfile_freq") else (key,)
        for k in same:
            if k in var["lines"]:
                self.fail(lineno, f"<{kw}> given twice for variable {var['name']!r} "
                          f"(first on line {var['lines'][k]})")
        var["lines"][key] = lineno
        vname = var["name"]
        if kw in ("RECODEABLE", "RECODABLE", "WEIGHT", "HOLDING", "RECORDKEY",
                  "FREQUENCY", "MAXSCORE", "STATUS", "TRUNCABLE", "HIERARCHICAL"):
            self.args(lineno, kw, tokens, 0, 0)
            self.add_role(lineno, key)
        elif kw == "NUMERIC":
            if self.kind == "micro":
                self.args(lineno, kw, tokens, 0, 0)
                self.add_role(lineno, "numeric")
            else:
                args = self.args(lineno, kw, tokens, 0, 1)
                if args:
                    qual = args[0].strip("<>").upper()
                    if not (args[0].startswith("<") and qual in _NUMERIC_QUALIFIERS):
                        self.fail(lineno, f"<NUMERIC> {args[0]}: the only words allowed "
                                  "after <NUMERIC> are "
                                  + ", ".join(f"<{q}>" for q in _NUMERIC_QUALIFIERS))
                    self.add_role(lineno, _NUMERIC_QUALIFIERS[qual])
                else:
                    self.add_role(lineno, "numeric")
        elif kw in ("TOTCODE", "CODELIST", "HIERLEADSTRING", "HIERCODELIST") + _PFILE_KEYS_UP:
            (value,) = self.args(lineno, kw, tokens, 1, 1)
            if value.strip() == "":
                self.fail(lineno, f"<{kw}> of {vname!r} is empty")
            if kw.startswith("PFILE"):
                var["extra"][key] = value
            else:
                var[key] = value
        elif kw == "DECIMALS":
            (value,) = self.args(lineno, kw, tokens, 1, 1)
            var["decimals"] = _int(self.name, lineno, value, f"<DECIMALS> of {vname}")
        elif kw == "DISTANCE":
            args = self.args(lineno, kw, tokens, 1, _MAX_DIST)
            dist = [_int(self.name, lineno, a, f"<DISTANCE> of {vname}", 1) for a in args]
            while len(dist) < _MAX_DIST:
                dist.append(dist[-1])
            var["distance"] = tuple(dist)
        elif kw == "HIERLEVELS":
            args = self.args(lineno, kw, tokens, 1, _MAX_HIER_LEVELS)
            levels = tuple(_int(self.name, lineno, a, f"<HIERLEVELS> of {vname}")
                           for a in args)
            total = sum(levels)
            if total == 0:
                self.fail(lineno, f"<HIERLEVELS> {' '.join(args)} of {vname!r}: the "
                          "levels' digits add up to 0")
            if var["width"] is None:
                var["width"] = total        # readTableMetadata: varLen = sum
            elif total != var["width"]:
                self.fail(lineno, f"<HIERLEVELS> {' '.join(args)} of {vname!r} add up to "
                          f"{total}, not to the width {var['width']}: the levels' digits "
                          "must add up to the width")
            var["hierlevels"] = levels
            var["roles"].add("hierarchical")
        elif kw == "REQUEST":
            args = self.args(lineno, kw, tokens, 1, _MAX_REQUESTS)
            self.add_role(lineno, "request")
            codes = tuple(a for a in args if a != "")
            if not codes:
                self.fail(lineno, f"<REQUEST> of {vname!r} gives no request code")
            var["request_codes"] = codes
        else:                                   # CKM family
            self.ckm(lineno, kw, key, tokens, line)

    def ckm(self, lineno, kw, key, tokens, line):
        var = self.current
        vname = var["name"]
        value = _raw_rest(line, kw)
        if kw == "CKM":
            if "numeric" not in var["roles"]:
                self.fail(lineno, f"<CKM> for {vname!r}, which is not (yet) <NUMERIC>: "
                          "the <CKM> tag is only allowed after <NUMERIC>")
            m = re.fullmatch(r"([NMDVnmdv])|[Tt]\s*\(\s*(\d+)\s*\)", value)
            if not m or (m.group(2) is not None and int(m.group(2)) < 1):
                self.fail(lineno, f"<CKM> {value!r}: the type must be N, M, D, V or "
                          "T(k) with an integer k >= 1")
            var["extra"]["ckm"] = re.sub(r"\s+", "", value).upper()
            return
        ckm = var["extra"].get("ckm", "N")
        if "ckm" not in var["extra"] or ckm == "N":
            self.fail(lineno, f"<{kw}> for {vname!r} is only allowed after <CKM> with a "
                      "type other than N")
        if kw in ("INCLUDEZEROS", "PARITY", "SEPARATION"):
            if value.upper() not in ("Y", "N"):
                self.fail(lineno, f"<{kw}> {value!r}: the value must be Y or N")
            var["extra"][key] = value.upper()
            return
        # SCALING F(sigma0,sigma1,xstar,q[,eps2..epsT]) or N(sigma1[,eps2..epsT])
        m = re.fullmatch(r"([FNfn])\s*\((.*)\)", value)
        topk = int(ckm[2:-1]) if ckm.startswith("T") else 1
        if not m:
            self.fail(lineno, f"<SCALING> {value!r}: expected F(sigma0,sigma1,xstar,q,"
                      "eps...) or N(sigma1,eps...)")
        kind = m.group(1).upper()
        parts = [p.strip() for p in m.group(2).split(",")]
        want = (4 if kind == "F" else 1) + topk - 1
        if len(parts) != want:
            self.fail(lineno, f"<SCALING> {value!r}: {kind} scaling with <CKM> {ckm} "
                      f"takes {want} numbers, got {len(parts)}")
        for p in parts:
            if not _NUMBER.fullmatch(p):
                self.fail(lineno, f"<SCALING> {value!r}: {p!r} is not a number")
        var["extra"]["scaling"] = f"{kind}({','.join(parts)})"

    def finish_variable(self):
        var = self.current
        if var is None:
            return
        self.current = None
        name, lines = var["name"], var["lines"]
        hier = "hierarchical" in lines
        if hier and "hierlevels" not in lines and "hiercodelist" not in lines:
            self.fail(lines["hierarchical"], f"<HIERARCHICAL> for {name!r} without "
                      "<HIERLEVELS> or <HIERCODELIST>: say how the hierarchy is given")
        if "hierlevels" in lines and "hiercodelist" in lines:
            self.fail(max(lines["hierlevels"], lines["hiercodelist"]),
                      f"{name!r} has both <HIERLEVELS> and <HIERCODELIST>: give one way "
                      "to build the hierarchy")
        for kw in ("hiercodelist", "hierleadstring"):
            if kw in lines and not hier:
                self.fail(lines[kw], f"<{kw.upper()}> for {name!r} without "
                          "<HIERARCHICAL> (tau-Argus would ignore it)")
        roles = frozenset(var.pop("roles"))
        self.variables.append(dict(var, roles=roles))

    def verify(self) -> Metadata:
        """Metadata.verify, with line numbers."""
        name = self.name
        if not self.variables:
            raise FormatError(name, None, "no variables: an .rda file declares at least "
                              "one variable")
        vars_ = []
        for v in self.variables:
            v = dict(v)
            v["missing"] = tuple(v["missing"])
            vars_.append(Variable(**v))
        if not any(v.is_explanatory for v in vars_):
            raise FormatError(name, None, "no explanatory variables: at least one "
                              "variable must be <RECODEABLE>")
        for role in _SINGLE_ROLES:
            with_role = [v for v in vars_ if role in v.roles]
            if len(with_role) > 1:
                second = with_role[1]
                raise FormatError(name, second.lines.get(role, second.line),
                                  f"{second.name!r} is a second {role} variable (first: "
                                  f"{with_role[0].name!r}); only one is allowed")
        if self.kind == "table":
            if not any({"numeric", "frequency"} & v.roles for v in vars_):
                raise FormatError(name, None, "no <NUMERIC> or <FREQUENCY> variable: a "
                                  "table needs a response or a frequency")
            for v in vars_:
                if v.is_explanatory and "totcode" not in v.lines:
                    raise FormatError(name, v.line, f"explanatory variable {v.name!r} "
                                      "has no <TOTCODE>: tabular metadata must name the "
                                      "total code")
        key = next((v for v in vars_ if "recordkey" in v.roles), None)
        for v in vars_:
            if v.extra.get("ckm", "N") != "N":
                if key is None:
                    raise FormatError(name, v.lines["ckm"], f"<CKM> for {v.name!r} "
                                      "without a <RECORDKEY> variable")
                if "pfile_cont" not in key.extra:
                    raise FormatError(name, v.lines["ckm"], f"<CKM> for {v.name!r} but "
                                      f"record key {key.name!r} has no <PFILE_CONT>")
                if "scaling" not in v.extra:
                    raise FormatError(name, v.lines["ckm"], f"<CKM> for {v.name!r} "
                                      "without <SCALING>: scaling must be set")
        if key is not None and not ({"pfile", "pfile_freq"} & set(key.extra)):
            raise FormatError(name, key.lines.get("recordkey", key.line),
                              f"record key {key.name!r} has no <PFILE>: a ptable file "
                              "for frequency CKM is needed")
        g = self.globals
        separator = g["separator"]
        if self.kind == "table" and separator is None:
            separator = ";"             # readTableMetadata's default fieldSeparator
        return Metadata(variables=tuple(vars_), separator=separator, safe=g["safe"],
                        unsafe=g["unsafe"], protect=g["protect"], kind=self.kind,
                        spss=g["spss"], name=name, lines=dict(self.global_lines))


_PFILE_KEYS_UP = tuple(k.upper() for k in _PFILE_KEYS)
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


# ---------------------------------------------------------------------------- writing


def _q(text: str, what: str) -> str:
    if '"' in text:
        raise ValueError(f"{what} {text!r} contains '\"', which an .rda file cannot hold")
    return f'"{text}"'


def _name(text: str) -> str:
    if '"' in text or text == "" or text.startswith("<"):
        raise ValueError(f"variable name {text!r} cannot be written to an .rda file")
    return f'"{text}"' if (" " in text or "\t" in text or text.startswith("//")
                           or text[0] in ",|()") else text


def write_rda(meta: Metadata, path=None) -> str:
    """Write metadata as an ``.rda`` file, in the layout of tau-Argus's
    ``Metadata.write``.

    Normalisation: global keywords first, indented by three spaces; variable lines
    unindented; properties indented by four spaces in a fixed order (``<RECODEABLE>``,
    ``<TOTCODE>``, ``<DISTANCE>``, ``<CODELIST>``, ``<HIERARCHICAL>``,
    ``<HIERLEVELS>``, ``<HIERCODELIST>``, ``<HIERLEADSTRING>``, ``<NUMERIC>`` [with
    qualifier], CKM keywords, the other role, p-table files, ``<DECIMALS>`` when not 0,
    ``<TRUNCABLE>``); strings (missing codes, total code, file names, request codes,
    the separator and status letters) in double quotes, numbers bare; ``<SAFE>``,
    ``<UNSAFE>``, ``<PROTECT>`` only when not "S", "U", "P"; ``<TOTCODE>`` always for an
    explanatory variable; ``<HIERLEADSTRING>`` always for a hierarchy from a file;
    ``<RECODABLE>`` is written ``<RECODEABLE>``, ``<COST>`` ``<COSTVAR>``; comments and
    blank lines are not kept.  ``write_rda(read_rda(write_rda(m)))`` is ``write_rda(m)``
    and ``read_rda(write_rda(m)) == m``.

    Parameters
    ----------
    meta : Metadata
        What to write.
    path : str or os.PathLike, optional
        Where to write (atomically); when None only the text is returned.

    Returns
    -------
    str
        The text of the file.
    """
    out = []
    if meta.separator is not None:
        out.append(f"   <SEPARATOR> {_q(meta.separator, 'separator')}")
    if meta.spss:
        out.append("   <SPSS>")
    for kw, value, default in (("SAFE", meta.safe, "S"), ("UNSAFE", meta.unsafe, "U"),
                               ("PROTECT", meta.protect, "P")):
        if value != default:
            out.append(f"   <{kw}> {_q(value, kw)}")
    micro = meta.kind == "micro"
    for v in meta.variables:
        head = [_name(v.name)]
        if micro:
            if meta.separator is None:
                head.append(str(v.start))
            head.append(str(v.width))
        head += [_q(m, "missing code") for m in v.missing]
        out.append(" ".join(head))
        props = []
        if "recodeable" in v.roles:
            props.append("<RECODEABLE>")
        if "recodeable" in v.roles or v.totcode != "Total":
            props.append(f"<TOTCODE> {_q(v.totcode, 'total code')}")
        if v.distance is not None:
            props.append("<DISTANCE> " + " ".join(map(str, v.distance)))
        if v.codelist is not None:
            props.append(f"<CODELIST> {_q(v.codelist, 'code list')}")
        if "hierarchical" in v.roles:
            props.append("<HIERARCHICAL>")
        if v.hierlevels is not None:
            props.append("<HIERLEVELS> " + " ".join(map(str, v.hierlevels)))
        if v.hiercodelist is not None:
            props.append(f"<HIERCODELIST> {_q(v.hiercodelist, 'hierarchy file')}")
        if v.hiercodelist is not None or v.hierleadstring != _DEFAULT_LEAD:
            props.append(f"<HIERLEADSTRING> {_q(v.hierleadstring, 'lead string')}")
        if "numeric" in v.roles:
            props.append("<NUMERIC>")
        for key in _CKM_KEYS:
            if key in v.extra:
                props.append(f"<{key.upper()}> {v.extra[key]}")
        for role, text in (("shadow", "<NUMERIC> <SHADOW>"),
                           ("costvar", "<NUMERIC> <COSTVAR>"),
                           ("lowerpl", "<NUMERIC> <LOWERPL>"),
                           ("upperpl", "<NUMERIC> <UPPERPL>"),
                           ("weight", "<WEIGHT>"), ("holding", "<HOLDING>"),
                           ("recordkey", "<RECORDKEY>"), ("frequency", "<FREQUENCY>"),
                           ("maxscore", "<MAXSCORE>"), ("status", "<STATUS>")):
            if role in v.roles:
                props.append(text)
        if "request" in v.roles:
            props.append("<REQUEST> " + " ".join(_q(c, "request code")
                                                 for c in v.request_codes))
        for key in _PFILE_KEYS:
            if key in v.extra:
                props.append(f"<{key.upper()}> {_q(v.extra[key], 'ptable file')}")
        if v.decimals:
            props.append(f"<DECIMALS> {v.decimals}")
        if "truncable" in v.roles:
            props.append("<TRUNCABLE>")
        out += ["    " + p for p in props]
    text = "\n".join(out) + "\n"
    if path is not None:
        atomic_write_text(path, text)
    return text
