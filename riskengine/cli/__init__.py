"""The ``riskengine`` command.

    riskengine assess [RELEASE.json] [--prior SPEC] [--truth TABLE.csv] [--out DIR] [--no-report]
    riskengine report RESULTS.nc [--out DIR]
    riskengine protect TABLE.csv --mechanism cyclic [--design diagonal] [--alpha A] [--beta B]
    riskengine count RELEASE.json [--prior SPEC]
    riskengine suppress MICRO.csv --dims D1,D2 --value V --rule p:15 [--rule nk:3,80]
                        [--method heuristic|optimal] [--cost value|count] [--out REL.json]
    riskengine audit RELEASE.json [--microdata MICRO.csv --value V --rule R] [--out DIR]
                     [--no-report]
    riskengine analyze [RELEASE.json] [--statistic S ...] [--prior SPEC] [--draws N] [--seed S]
                       [--truth TABLE.csv] [--out DIR] [--no-report]
    riskengine compare [CONFIG.toml] [--out DIR] [--draws N] [--seed S] [--no-report]
    riskengine simulate [CONFIG.toml] [--out DIR] [--n-tables N] [--scheduler S] [--seed S]
                        [--no-report]
    riskengine reconstruct [CONFIG.toml] [--out DIR] [--workers N] [--scheduler S]
    riskengine warmup
    riskengine routes [--markdown]

``assess`` with no arguments runs the bundled example of seed 003 (Duncan &
Roehrig): the published perturbed 4 x 4 table, its diagonal cycle set,
alpha = beta = 1/4, and the original table as the truth.  ``assess`` writes
``posterior.nc`` and the HTML report (``assess.html`` + PNGs) into ``--out``.
``compare`` and ``simulate`` read a TOML config (format: ``riskengine._config``;
bundled examples ``compare_example.toml`` / ``simulate_example.toml`` run when no
config is given) and write ``compare.nc`` / ``simulate.nc`` and the report
(``compare.html`` / ``simulate.html``) into ``--out``.  ``analyze`` draws original tables from the posterior and reports the posterior of
statistics of the table (``--statistic``, repeatable: chi2, chi2_pvalue, g2, g2_pvalue,
cramers_v, row_proportions, col_proportions, loglinear,
log_odds_ratio:DIM=A,B;DIM=C,D), writing ``analysis.nc`` and its report (``analyze.html``) into ``--out``
(default ``riskengine-out/analyze``; the bundled example without a release).
``report`` turns any results netCDF (assess, compare, simulate, analyze) into
the report of its kind.  Each command writes its own report name, so one folder holds
them all; ``--no-report`` removes that command's earlier report from the folder.
``suppress`` builds a magnitude table from microdata (one row per contribution), finds
its sensitive cells by sensitivity rules (``--rule p:P | pq:P,Q | nk:N,K``, repeatable),
suppresses them and complementary cells, audits the pattern and writes the release;
``audit`` gives the LP interval of every suppressed cell of a suppression release (or the
published cells of a CTA release) and, with the microdata, whether each sensitive cell
is protected (``audit.nc``, ``audit.html``).  ``assess`` of such a magnitude release gives
the audit (no integer posterior exists); ``count`` refuses it, pointing to ``audit``.
``warmup`` compiles every numerical kernel ahead (e.g. in a container build): the
first run on a machine otherwise says so while it compiles.  ``routes`` prints the
registry (``rk.routes()``): every mechanism x inference route, what it needs, whether it
is exact, and its cost on the mechanism's own example (``--markdown``: the README's
table).

Every failure a user can cause (bad input, a file that is not there or not readable, a
route that does not fit the memory budget) is one line on stderr,
``riskengine: error: ...``, and exit code 2; where the library's message names the way
forward, it is given as the command's option (``--memory``, ``--route``).

The package: ``parser`` (the grammar), ``entry`` (``main``), ``counts`` (protect, count,
assess, analyze), ``releases`` (a release from JSON, or from a published CSV and the
mechanism), ``magnitude`` (suppress, audit), ``rules`` (``--rule``), ``experiments``
(compare, simulate), ``warmup``, ``routes`` and ``output`` (what the commands share).
Each command imports the library where it runs: ``--help`` and argument errors load no
NumPy, a release loads only its own mechanism module
(:func:`riskengine.protocol.lookup`), only ``warmup`` and ``routes`` load them all, and
``--no-report`` loads neither matplotlib nor the plots.
"""

from .entry import main
from .output import bundled as _bundled  # noqa: F401  (tests and the bundled examples)
from .parser import build_parser

__all__ = ["build_parser", "main"]
