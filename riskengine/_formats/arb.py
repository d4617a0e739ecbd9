"""tau-Argus batch (``.arb``) files: the commands, their arguments and their order.

A batch file is one command a line (``<KEYWORD> arguments``); lines starting with ``//``
and blank lines are skipped; tabs count as spaces.  The syntax of every command and the
order in which tau-Argus accepts them follow the batch interpreter of tau-Argus 4.2
(``tauargus.model.batch.runBatchProcess`` and its helpers ``specifyTableBatch``,
``readSafetyRuleBatch``, ``readTablesBatch``, ``suppressBatch``, ``writeTableBatch``;
sdcTools/tauargus @ 52aa410).  The order is a small state machine:

* ``<OPENMICRODATA>`` / ``<OPENTABLEDATA>`` (a data file) comes first (a table file may
  also follow a safety rule: a second table set), then ``<OPENMETADATA>``;
* ``<SPECIFYTABLE>`` after the metadata or after a safety rule; ``<SAFETYRULE>`` right
  after each ``<SPECIFYTABLE>``;
* ``<READMICRODATA>`` / ``<READTABLE>`` after a safety rule (``<READTABLE>`` may follow a
  ``<SPECIFYTABLE>`` directly: the status column is then the only rule);
* ``<SUPPRESS>`` after the tables are read; ``<APRIORI>``, ``<WRITETABLE>`` anywhere
  after that; ``<CLEAR>`` starts over.

This module reads the syntax only (:func:`read_arb` -> :class:`Batch`); running the jobs
is :func:`riskengine.run_batch`'s.  Every malformed line is a
:class:`~riskengine._formats._lines.FormatError` naming file, line, value and rule.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ._lines import FormatError, read_source

__all__ = [
    "COMMANDS",
    "OUTPUT_TYPES",
    "SUPPRESS_METHODS",
    "Batch",
    "Command",
    "read_arb",
    "write_arb",
]

#: every command tau-Argus's batch interpreter knows (``<APRIORY>`` is read as ``<APRIORI>``)
COMMANDS = ("<OPENMICRODATA>", "<OPENTABLEDATA>", "<OPENMETADATA>", "<SPECIFYTABLE>",
            "<SAFETYRULE>", "<READMICRODATA>", "<READTABLE>", "<APRIORI>", "<SUPPRESS>",
            "<WRITETABLE>", "<RECODE>", "<SOLVER>", "<CLEAR>", "<GOINTERACTIVE>",
            "<LOGBOOK>", "<VERSIONINFO>", "<SILENT>", "<ANCO>", "<JJ>", "<COVER>")
#: ``<SUPPRESS> METHOD(...)``: the methods tau-Argus knows
SUPPRESS_METHODS = ("GH", "MOD", "OPT", "NET", "RND", "CTA", "CKM")
#: ``<WRITETABLE>`` output types (1-based, as in the batch file)
OUTPUT_TYPES = {1: "csv", 2: "csv_pivot", 3: "code_value", 4: "sbs", 5: "intermediate",
                6: "jj", 7: "ckm"}
#: ``<WRITETABLE>`` options (two letters and + or -)
WRITE_OPTIONS = {"HL": "hierarchical_levels", "SO": "status_only", "AR": "add_audit",
                 "HI": "holding_info", "AS": "add_status", "SE": "suppress_empty",
                 "FL": "names_first_line", "QU": "quotes", "TR": "remove_trivial",
                 "AO": "ckm_original", "AD": "ckm_difference", "AC": "ckm_cell_key"}
#: ``<SAFETYRULE>`` rule names and their number of parameters (min, max)
RULE_ARITY = {"P": (1, 3), "NK": (2, 2), "FREQ": (2, 2), "ZERO": (1, 1), "REQ": (4, 4),
              "WGT": (1, 1), "MIS": (1, 1), "MAN": (1, 1)}
COSTS = {"-1": "frequency", "-2": "unity", "-3": "distance"}


@dataclass(frozen=True)
class Command:
    """One command of a batch file.

    Parameters
    ----------
    keyword : str
        The command, upper case with its brackets (``"<SUPPRESS>"``).
    args : dict
        Its arguments, parsed (see :func:`read_arb` for each command's keys).
    line : int
        1-based line in the file.
    text : str
        The line as written (stripped).
    """

    keyword: str
    args: dict
    line: int
    text: str


@dataclass(frozen=True)
class Batch:
    """A parsed batch file: its commands in order.

    Parameters
    ----------
    commands : tuple of Command
        In file order (comments dropped).
    name : str
        The file name (for messages).
    directory : pathlib.Path or None
        The file's directory: relative file names in the commands are looked up there
        first, as tau-Argus does.
    """

    commands: tuple
    name: str = "<text>"
    directory: Path | None = None
    tables: tuple = field(default=())

    def resolve(self, filename: str) -> Path:
        """The path of a file a command names: as given when it has a directory part, else
        next to the batch file (tau-Argus's ``giveRightFile``).

        Parameters
        ----------
        filename : str
            The name as written in the batch file.

        Returns
        -------
        pathlib.Path
            The path (not checked for existence).
        """
        p = Path(filename)
        if p.is_absolute() or any(c in filename for c in ":/\\") or self.directory is None:
            return p
        return self.directory / p


class _Line:
    """The tokenizer of tau-Argus (``tauargus.utils.Tokenizer``) over one line."""

    def __init__(self, name, lineno, rest):
        self.name, self.lineno, self.rest = name, lineno, rest.strip()

    def fail(self, message):
        raise FormatError(self.name, self.lineno, message)

    def token(self) -> str:
        s = self.rest
        if not s:
            return ""
        if s.startswith('"'):
            end = s.find('"', 1)
            if end < 0:
                self.fail(f"unterminated quoted string {s!r}: a quote opened must be closed "
                          "on the same line")
            value, self.rest = s[1:end], s[end + 1:].strip()
        elif s[0] in ",|()":
            value, self.rest = s[0], s[1:].strip()
        else:
            m = re.match(r"[^\s,|()\"]+", s)
            value, self.rest = m.group(0), s[m.end():].strip()
        return value

    def char(self) -> str:
        if not self.rest:
            return ""
        c, self.rest = self.rest[0], self.rest[1:].strip()
        return c

    def peek(self) -> str:
        return self.rest[:1]

    def expect(self, c, what):
        got = self.char()
        if got != c:
            self.fail(f"{c!r} expected {what}, got {got or 'the end of the line'!r}")

    def field(self, sep) -> str:
        i = self.rest.find(sep)
        if i < 0:
            value, self.rest = self.rest.strip(), ""
        else:
            value, self.rest = self.rest[:i].strip(), self.rest[i + 1:].strip()
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = value[1:-1]
        return value

    def integer(self, text, what, low=None, high=None) -> int:
        try:
            v = int(text)
        except ValueError:
            self.fail(f"{what} must be a whole number, got {text!r}")
        if (low is not None and v < low) or (high is not None and v > high):
            rng = (f">= {low}" if high is None else f"in {low}..{high}")
            self.fail(f"{what} must be {rng}, got {v}")
        return v

    def number(self, text, what) -> float:
        try:
            return float(text)
        except ValueError:
            self.fail(f"{what} must be a number, got {text!r}")

    def done(self, what):
        if self.rest and not self.rest.startswith("//"):
            self.fail(f"unexpected {self.rest!r} after {what}")


def _specify(ln: _Line) -> dict:
    expl = []
    while True:
        if ln.peek() != '"':
            ln.fail("a quoted explanatory variable name expected (e.g. \"Size\"\"Region\"|"
                    f"\"Var2\"), got {ln.rest or 'the end of the line'!r}")
        expl.append(ln.token())
        if ln.peek() == "|":
            break
        if ln.peek() != '"':
            ln.fail(f"'|' or '\"' expected after the explanatory variable {expl[-1]!r}, got "
                    f"{ln.rest or 'the end of the line'!r}")
    ln.char()
    resp = ln.field("|")
    if not resp:
        ln.fail("the response variable is missing: give a numeric variable or <FREQ>")
    out = {"explanatory": expl, "response": None if resp.upper() == "<FREQ>" else resp,
           "frequency_table": resp.upper() == "<FREQ>", "shadow": None, "cost": None,
           "lambda": None}
    if not ln.rest:
        return out
    shadow = ln.field("|")
    out["shadow"] = shadow or None
    if not ln.rest:
        return out
    cost = ln.field(",")
    if cost:
        out["cost"] = COSTS.get(cost, cost)
        if cost.startswith("-") and cost not in COSTS:
            ln.fail(f"cost {cost!r}: a cost is a variable name or -1 (frequency), -2 (unity) "
                    "or -3 (distance)")
    if ln.rest:
        out["lambda"] = ln.number(ln.rest, "the cost function's lambda")
        ln.rest = ""
    return out


def _rules(ln: _Line) -> dict:
    rules = []
    if not ln.rest:
        return {"rules": rules}
    while True:
        name = ln.field("(").upper()
        if name not in RULE_ARITY:
            ln.fail(f"unknown safety rule {name!r}; tau-Argus's rules are "
                    f"{', '.join(RULE_ARITY)}")
        body_end = ln.rest.find(")")
        if body_end < 0:
            ln.fail(f"a ')' is expected to close {name}(")
        body, ln.rest = ln.rest[:body_end], ln.rest[body_end + 1:].strip()
        parts = [p.strip() for p in body.split(",")]
        lo, hi = RULE_ARITY[name]
        if not lo <= len(parts) <= hi or any(p == "" for p in parts):
            n = f"{lo}" if lo == hi else f"{lo} to {hi}"
            ln.fail(f"{name}({body}) needs {n} parameters, got {len(parts)}")
        vals = [ln.number(p, f"a parameter of {name}") for p in parts]
        rules.append((name, tuple(vals)))
        c = ln.char()
        if c == "":
            break
        if c != "|":
            ln.fail(f"'|' expected between safety rules, got {c!r}")
    return {"rules": rules}


def _read_table(ln: _Line) -> dict:
    tok = ln.token()
    if tok == "":
        return {"additivity": 0, "keep_status": False}
    m = re.fullmatch(r"([012])([TtFf]?)", tok)
    if not m:
        ln.fail(f"<READTABLE> takes 0, 1 (compute totals, optionally followed by T to keep "
                f"the statuses) or 2; got {tok!r}")
    add, keep = int(m.group(1)), m.group(2).upper() == "T"
    if keep and add != 1:
        ln.fail(f"{tok!r}: keeping the statuses (T) is only allowed with 1 (compute totals)")
    return {"additivity": add, "keep_status": keep}


def _apriori(ln: _Line) -> dict:
    fname = ln.token()
    if not fname:
        ln.fail("<APRIORI> needs a file name, a table number and a separator")
    ln.expect(",", "after the apriori file name")
    tab = ln.integer(ln.field(","), "the table number", 1)
    if ln.peek() != '"':
        ln.fail("a quoted separator (e.g. \";\") is expected after the table number")
    sep = ln.token()
    if sep == "":
        ln.fail("no separator was specified")
    ignore, expand = True, False
    if ln.rest:
        ln.expect(",", "after the separator")
        v = ln.field(",")
        if v not in ("", "0", "1"):
            ln.fail(f"ignore-error flag must be 0 or 1, got {v!r}")
        ignore = v != "0"
        v = ln.field(",")
        if v not in ("", "0", "1"):
            ln.fail(f"expand-trivial flag must be 0 or 1, got {v!r}")
        expand = v == "1"
    ln.done("the apriori arguments")
    return {"file": fname, "table": tab, "separator": sep, "ignore_errors": ignore,
            "expand_trivial": expand}


def _suppress(ln: _Line) -> dict:
    method = ln.field("(").upper()
    if method not in SUPPRESS_METHODS:
        ln.fail(f"unknown suppression method {method!r}; tau-Argus's are "
                f"{', '.join(SUPPRESS_METHODS)}")
    end = ln.rest.find(")")
    if end < 0:
        ln.fail(f"a ')' is expected to close {method}(")
    body, ln.rest = ln.rest[:end], ln.rest[end + 1:].strip()
    parts = [p.strip() for p in body.split(",")]
    table = ln.integer(parts[0], "the table number", 0)
    if table == 0 and method not in ("GH", "MOD"):
        ln.fail(f"table 0 (linked tables) is only possible for GH and MOD, not {method}")
    params = parts[1:]
    for p in params:
        if p:
            ln.number(p, f"a parameter of {method}")
    if method == "RND" and (not params or not params[0]):
        ln.fail("RND needs the rounding base: <SUPPRESS> RND(table, base, ...)")
    extra = ln.rest
    ln.rest = ""
    return {"method": method, "table": table,
            "params": [float(p) if p else None for p in params], "extra": extra}


def _write_table(ln: _Line) -> dict:
    ln.expect("(", "after <WRITETABLE>")
    tab = ln.integer(ln.field(","), "the table number", 1)
    kind = ln.integer(ln.field(","), "the output type", 1, 7)
    opts = ln.field(",").upper().replace(" ", "")
    options = {}
    while opts:
        code, sign, opts = opts[:2], opts[2:3], opts[3:]
        if code not in WRITE_OPTIONS:
            ln.fail(f"unknown output option {code!r}; options are "
                    f"{', '.join(WRITE_OPTIONS)} each followed by + or -")
        if sign not in ("+", "-"):
            ln.fail(f"option {code} must be followed by + or -, got {sign or 'nothing'!r}")
        options[WRITE_OPTIONS[code]] = sign == "+"
    rest = ln.rest
    if not rest.endswith(")"):
        ln.fail("a ')' is expected at the end of <WRITETABLE> (table, type, options, "
                "\"file\")")
    fname = rest[:-1].strip()
    if len(fname) >= 2 and fname[0] == fname[-1] == '"':
        fname = fname[1:-1]
    if not fname:
        ln.fail("<WRITETABLE> needs an output file name")
    ln.rest = ""
    return {"table": tab, "type": kind, "format": OUTPUT_TYPES[kind], "options": options,
            "file": fname}


def _file(ln: _Line, what) -> dict:
    f = ln.token()
    if not f:
        ln.fail(f"{what} needs a file name")
    ln.done("the file name")
    return {"file": f}


def read_arb(source, encoding: str = "latin-1") -> Batch:
    """Read a tau-Argus batch file.

    Parameters
    ----------
    source : str or os.PathLike
        The ``.arb`` file, or its text.
    encoding : str, default "latin-1"
        The file's encoding.

    Returns
    -------
    Batch
        The commands in order, each with its arguments parsed:

        - ``<OPENMICRODATA>`` / ``<OPENTABLEDATA>`` / ``<OPENMETADATA>``: ``file``;
        - ``<SPECIFYTABLE>``: ``explanatory`` (names), ``response`` (None for ``<FREQ>``),
          ``frequency_table``, ``shadow``, ``cost`` (a variable name, or ``"frequency"``,
          ``"unity"``, ``"distance"`` for -1, -2, -3), ``lambda``;
        - ``<SAFETYRULE>``: ``rules``, a list of ``(name, parameters)`` in order (empty:
          the status column is the rule);
        - ``<READTABLE>``: ``additivity`` (0 check, 1 compute totals, 2 neither),
          ``keep_status``;
        - ``<APRIORI>``: ``file``, ``table`` (1-based), ``separator``, ``ignore_errors``,
          ``expand_trivial``;
        - ``<SUPPRESS>``: ``method`` (GH, MOD, OPT, NET, RND, CTA, CKM), ``table`` (0 =
          linked), ``params`` (numbers or None), ``extra`` (what follows the bracket);
        - ``<WRITETABLE>``: ``table``, ``type`` (1-7), ``format``, ``options``, ``file``;
        - ``<SOLVER>``: ``solver``; ``<LOGBOOK>``, ``<VERSIONINFO>``: ``file``;
          ``<RECODE>``: ``text``; others: no arguments.

    Examples
    --------
    >>> b = read_arb('<OPENTABLEDATA> "t.tab"\\n<OPENMETADATA> "t.rda"\\n'
    ...              '<SPECIFYTABLE> "Size""Region"|"Var2"||\\n'
    ...              '<SAFETYRULE> P(15,1)|FREQ(3,10)\\n<READTABLE> 1\\n'
    ...              '<SUPPRESS> MOD(1)\\n<WRITETABLE> (1, 3, AS+, "out.csv")\\n')
    >>> [c.keyword for c in b.commands][:3]
    ['<OPENTABLEDATA>', '<OPENMETADATA>', '<SPECIFYTABLE>']
    >>> b.commands[3].args["rules"]
    [('P', (15.0, 1.0)), ('FREQ', (3.0, 10.0))]
    """
    name, text = read_source(source, encoding)
    directory = Path(name).parent if name != "<text>" else None
    commands = []
    state = 0       # tau-Argus's: 0 start, 1 data file, 2 metadata, 3 table, 4 rule
    read = False
    for lineno, raw in enumerate(text.split("\n"), 1):
        line = raw.replace("\t", " ").strip()
        if not line or line.startswith(("//", "\\\\")):
            continue
        ln = _Line(name, lineno, line)
        kw = ln.token().upper()
        if not kw.startswith("<"):
            ln.fail(f"{kw!r}: a command starts with a keyword in angle brackets, e.g. "
                    "<SPECIFYTABLE>")
        if kw == "<APRIORY>":
            kw = "<APRIORI>"
        if kw not in COMMANDS:
            ln.fail(f"unknown command {kw}; tau-Argus's batch commands are "
                    f"{', '.join(COMMANDS)}")

        def order(ok, need, ln=ln, kw=kw):
            if not ok:
                ln.fail(f"{kw} is not allowed here: it must follow {need}")

        if kw == "<OPENMICRODATA>":
            order(state == 0, "the start of the file or <CLEAR>")
            args, state, read = _file(ln, kw), 1, False
            args["tabular"] = False
        elif kw == "<OPENTABLEDATA>":
            order(state in (0, 4), "the start of the file, <CLEAR> or a <SAFETYRULE>")
            args, state, read = _file(ln, kw), 1, False
            args["tabular"] = True
        elif kw == "<OPENMETADATA>":
            order(state == 1, "<OPENMICRODATA> or <OPENTABLEDATA>")
            args, state = _file(ln, kw), 2
        elif kw == "<SPECIFYTABLE>":
            order(state in (2, 4), "<OPENMETADATA> or a <SAFETYRULE>")
            args, state = _specify(ln), 3
        elif kw == "<SAFETYRULE>":
            order(state == 3, "<SPECIFYTABLE>")
            args, state = _rules(ln), 4
        elif kw == "<READMICRODATA>":
            order(state == 4, "a <SAFETYRULE>")
            ln.done(kw)
            args, read = {}, True
        elif kw == "<READTABLE>":
            order(state in (3, 4), "<SPECIFYTABLE> or a <SAFETYRULE>")
            args, state, read = _read_table(ln), 4, True
            ln.done(kw)
        elif kw == "<APRIORI>":
            order(read, "<READTABLE> or <READMICRODATA>")
            args = _apriori(ln)
        elif kw == "<SUPPRESS>":
            order(state == 4 and read, "the tables are read (<READTABLE> / <READMICRODATA>)")
            args = _suppress(ln)
        elif kw == "<WRITETABLE>":
            order(read, "<READTABLE> or <READMICRODATA>")
            args = _write_table(ln)
        elif kw == "<SOLVER>":
            solver = ln.field(",").upper()
            if solver not in ("FREE", "CPLEX", "XPRESS"):
                ln.fail(f"unknown solver {solver!r}; tau-Argus's are FREE, CPLEX, XPRESS")
            args = {"solver": solver, "licence": ln.field(",") or None}
        elif kw in ("<LOGBOOK>", "<VERSIONINFO>"):
            args = {"file": ln.field("\n")}
        elif kw == "<CLEAR>":
            args, state, read = {}, 0, False
            ln.done(kw)
        elif kw == "<RECODE>":
            args = {"text": ln.rest}
            ln.rest = ""
        else:           # <GOINTERACTIVE>, <SILENT>, <ANCO>, <JJ>, <COVER>
            args = {"text": ln.rest}
            ln.rest = ""
        commands.append(Command(kw, args, lineno, line))
    if not commands:
        raise FormatError(name, None, "no command: a batch file needs at least "
                          "<OPENTABLEDATA>/<OPENMICRODATA>, <OPENMETADATA>, <SPECIFYTABLE>")
    return Batch(tuple(commands), name, directory)


def _q(s) -> str:
    return f'"{s}"'


def write_arb(batch: Batch, path=None) -> str:
    """Write a batch file that :func:`read_arb` reads back to the same commands.

    Parameters
    ----------
    batch : Batch
        The commands.
    path : str or os.PathLike, optional
        Where to write (atomically); None returns the text only.

    Returns
    -------
    str
        The file's text: one command a line, keywords padded to 16 characters as
        tau-Argus writes them, file names quoted.
    """
    out = []
    for c in batch.commands:
        a, kw = c.args, c.keyword
        if kw in ("<OPENMICRODATA>", "<OPENTABLEDATA>", "<OPENMETADATA>"):
            body = _q(a["file"])
        elif kw == "<SPECIFYTABLE>":
            body = "".join(_q(v) for v in a["explanatory"]) + "|"
            body += "<FREQ>" if a["response"] is None else _q(a["response"])
            cost = {v: k for k, v in COSTS.items()}.get(a["cost"], a["cost"])
            body += "|" + (_q(a["shadow"]) if a["shadow"] else "")
            body += "|" + ((cost if cost in COSTS else _q(cost)) if cost else "")
            if a["lambda"] is not None:
                body += f",{a['lambda']:g}"
        elif kw == "<SAFETYRULE>":
            body = "|".join(f"{n}(" + ",".join(f"{v:g}" for v in p) + ")"
                            for n, p in a["rules"])
        elif kw == "<READTABLE>":
            body = str(a["additivity"]) + ("T" if a["keep_status"] else "")
        elif kw == "<APRIORI>":
            body = (f"{_q(a['file'])}, {a['table']}, {_q(a['separator'])}, "
                    f"{int(a['ignore_errors'])}, {int(a['expand_trivial'])}")
        elif kw == "<SUPPRESS>":
            ps = "".join("," + ("" if p is None else f"{p:g}") for p in a["params"])
            body = f"{a['method']}({a['table']}{ps})" + (" " + a["extra"] if a["extra"]
                                                         else "")
        elif kw == "<WRITETABLE>":
            inv = {v: k for k, v in WRITE_OPTIONS.items()}
            opts = "".join(inv[k] + ("+" if v else "-") for k, v in a["options"].items())
            body = f"({a['table']}, {a['type']}, {opts}, {_q(a['file'])})"
        elif kw == "<SOLVER>":
            body = a["solver"] + (f", {_q(a['licence'])}" if a["licence"] else "")
        elif kw in ("<LOGBOOK>", "<VERSIONINFO>"):
            body = a["file"] if a["file"].startswith('"') else _q(a["file"])
        else:
            body = a.get("text", "")
        out.append(f"{kw:<16} {body}".rstrip())
    text = "\n".join(out) + "\n"
    if path is not None:
        from .._atomic import atomic_write_text
        atomic_write_text(path, text)
    return text
