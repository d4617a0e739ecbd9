"""What every command shares: progress on stderr, the bundled files, text tables,
the output folder and its report, and the library's messages in the command's words."""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path


class Progress:
    """A one-line progress report on stderr, shown only when work takes a while."""

    def __init__(self, label: str, after: float = 1.0, stream=None):
        self.label, self.after = label, after
        self.stream = stream or sys.stderr
        self.t0 = time.monotonic()
        self.shown = False
        self.last = (0, 0)
        self.details: dict = {}
        self.width = 0

    def __call__(self, done: int, total: int):
        self.last = (done, total)
        el = time.monotonic() - self.t0
        if el < self.after and done < total:
            return
        if el >= self.after:
            self.shown = True
            count = f"{done}/{total}" if total else "started"    # total not known yet
            line = f"{self.label}: {count} ({el:.1f} s)"
            if self.details:
                line += "; " + ", ".join(f"{k} {v}" for k, v in self.details.items())
            self.stream.write("\r" + line.ljust(self.width))
            self.width = len(line)
            self.stream.flush()

    def detail(self, key, done: int, total: int, what: str = "sweeps"):
        """Show the progress of one part in flight (``key done/total what``) after the
        count, until the part is done."""
        if done >= total:
            self.details.pop(key, None)
        else:
            self.details[key] = f"{done}/{total} {what}"
        self(*self.last)

    def close(self):
        if self.shown:
            self.stream.write("\n")
            self.stream.flush()


def bundled(name: str) -> Path:
    from importlib import resources
    return Path(str(resources.files("riskengine.data") / name))


def fmt_cell(labels) -> str:
    return "(" + ", ".join(str(x) for x in labels) + ")"



def text_table(header, rows) -> list:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    def line(cells):
        return "  ".join(c.rjust(w) for c, w in zip(cells, widths))
    return [line(header), line(["-" * w for w in widths])] + [line(r) for r in rows]



def count_text(n) -> str:
    """A count for people: thousands separators up to 15 digits (``12,345,678``), else
    scientific with the number of digits (``about 1.23e+27 (28 digits)``); counts too
    long to write in decimal as :func:`riskengine._posterior._count_text` gives them.

    >>> count_text(37), count_text(1234567), count_text(10 ** 27 + 5)
    ('37', '1,234,567', 'about 1.00e+27 (28 digits; exact in posterior.nc)')
    """
    import math
    from decimal import Decimal
    n = int(n)
    if abs(n) < 10 ** 15:
        return f"{n:,}"
    if n.bit_length() >= 13000:         # decimal conversion of huge ints is capped
        return f"about 10^{(n.bit_length() - 1) * math.log10(2):.1f}"
    digits = len(str(n))
    return f"about {Decimal(n):.2e} ({digits} digits; exact in posterior.nc)"


def log_text(x: float) -> str:
    """A log probability for people: six significant digits, and float noise around 0
    (``1.1e-16``: an evidence of 1 computed in floats) written 0.

    >>> log_text(1.1102230246251565e-16), log_text(-12.345678912), log_text(-3e-5)
    ('0', '-12.3457', '-3e-05')
    """
    return "0" if abs(x) < 1e-12 else f"{x:.6g}"


def diagnostics_text(post) -> str:
    """The Monte Carlo route's convergence, in words (R-hat, ESS, MCSE, the verdict)."""
    dg = post.diagnostics
    verdict = ("converged by the usual rules (R-hat <= 1.01, bulk and tail ESS >= 400)"
               if post.attrs.get("converged") else
               "NOT CONVERGED by the usual rules (R-hat <= 1.01, bulk and tail ESS >= 400): "
               "treat these numbers as rough")
    return (f"APPROXIMATE (Monte Carlo): {post.attrs.get('approximation', '')}\n"
            f"  {post.attrs.get('diagnostics', '')}; largest MCSE of a cell's mean "
            f"{float(dg['mcse_mean'].max()):.3g}, of a cell's P(mode) "
            f"{float(dg['mcse_max_prob'].max()):.3g}\n  {verdict}")



def out_dir(out) -> Path:
    """``--out``: a folder (created when results are written), not a file."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {str(out)!r} exists and is not a folder")
    return out


def maybe_report(args, ds, path, kind: str) -> None:
    if getattr(args, "report", True):
        sys.stdout.flush()
        from ..report import write_report
        html = write_report(ds, Path(path).parent)
        print(f"report written to {html}")
    else:
        remove_report(Path(path).parent, kind)


def remove_report(out: Path, kind: str) -> None:
    """``--no-report``: this command's report of an earlier run would describe other
    results; it goes (with its plots)."""
    from ..report import remove_report
    gone = remove_report(out, kind)
    if gone:
        print(f"earlier report removed: {', '.join(str(p) for p in gone)}")



def cmd_report(args) -> int:
    from ..report import write_report
    src = Path(args.results)
    html = write_report(src, out_dir(args.out) if args.out else src.parent)
    print(f"report written to {html}")
    return 0


def cli_hints(msg: str, args) -> str:
    """The library's way forward in the command's words (``memory=`` -> ``--memory``)."""
    if hasattr(args, "memory"):
        msg = msg.replace("memory=", "--memory")
    else:
        msg = msg.replace("; raise memory= if the machine has more",
                          f"; riskengine {args.command} uses the default memory budget "
                          "(half the available memory)")
    if hasattr(args, "prior"):
        msg = msg.replace("Flat(low, high)", "--prior flat:LOW,HIGH")
    if args.command == "suppress":
        msg = msg.replace("suppress_totals=True", "--suppress-totals")
    if hasattr(args, "route"):             # "routes that apply: gibbs, dp" (a named route)
        msg = re.sub(r"(routes that apply: [\w-]+(?:, [\w-]+)*)",
                     r"\1 (--route NAME chooses one)", msg)
    return msg
