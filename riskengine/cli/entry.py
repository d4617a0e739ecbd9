"""``main``: run one command; every failure a user can cause is one line on stderr and
exit code 2."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from .output import cli_hints
from .parser import build_parser

#: arguments that name an input file: checked before the library loads (a fast answer)
_INPUT_FILES = ("release", "truth", "table", "config", "results", "microdata", "policy")


def _check_inputs(args) -> None:
    for name in _INPUT_FILES:
        path = getattr(args, name, None)
        if path is None:
            continue
        if not Path(path).exists():
            raise FileNotFoundError(f"no such file: {path}")
        if Path(path).is_dir():
            raise IsADirectoryError(f"{path} is a folder; a file is needed")


def _compiling(module: str) -> None:
    from kernels._jit import compile_estimate
    print(f"riskengine: compiling numerical kernels ({module.rpartition('.')[2]}) once for "
          f"this machine, ~{compile_estimate(module):.0f} s (later runs load them from the "
          "cache; riskengine warmup compiles them all ahead)", file=sys.stderr, flush=True)


#: the exit status when the reader of the output has gone (``riskengine assess | head -1``):
#: that of a command ended by SIGPIPE, as the shell reports it
EXIT_BROKEN_PIPE = 128 + 13


def main(argv=None) -> int:
    """Run one ``riskengine`` command (the console script's entry point).

    Parameters
    ----------
    argv : list of str, optional
        The command and its options, e.g. ``["assess", "release.json", "--no-report"]``
        (default: the process's arguments, ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit status: 0 success, 2 an error the user can fix (one line on stderr,
        ``riskengine: error: ...``), 3 ``--strict`` found a disclosure or a posterior
        that has not converged, 130 interrupted, 141 the reader of the output has gone.

    Examples
    --------
    >>> from riskengine.cli import main
    >>> main(["--version"])  # doctest: +SKIP
    riskengine 0.1.0
    """
    try:
        code = _main(argv)
        sys.stdout.flush()        # a reader that has gone is found here, not at exit
        return code
    except BrokenPipeError:
        # the reader (e.g. head) has what it wanted: no traceback, and nothing more to
        # write (the interpreter's last flush would fail again)
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):   # stdout is no file (captured)
            pass
        return EXIT_BROKEN_PIPE


def _main(argv) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        _check_inputs(args)
        if args.command == "report":
            return args.func(args)
        from kernels._jit import watch_compiles

        # no mechanism is loaded here: a release, a config or --mechanism names its own,
        # and riskengine.protocol.lookup imports that module alone
        with watch_compiles(None if args.command == "warmup" else _compiling):
            return args.func(args)
    except BrokenPipeError:
        raise                          # not an error of the user's: main() ends quietly
    except KeyboardInterrupt:
        print("riskengine: error: interrupted", file=sys.stderr)
        return 130
    except MemoryError as exc:
        msg = str(exc).splitlines()[0] if str(exc) else "an allocation failed"
        tip = ("; a smaller --memory budget refuses routes that do not fit before they start"
               if hasattr(args, "memory") else "")
        print(f"riskengine: error: out of memory ({msg}){tip}", file=sys.stderr)
        return 2
    except (ValueError, TypeError, FileNotFoundError, RuntimeError, FloatingPointError,
            OSError, KeyError, ImportError) as exc:
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        print(f"riskengine: error: {cli_hints(msg, args)}", file=sys.stderr)
        return 2

