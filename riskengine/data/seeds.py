"""Every worked number of the source documents, once, with where it is printed.

The seeds (``shared/seeds/``, index in its README) are OCR'd slides and papers; the
numbers below were transcribed from them and are the reference values of the tests,
studies, benchmarks and the bundled example.  Each constant names its slide or table.
Nothing here is computed by riskengine.

>>> from riskengine.data import seeds
>>> int(seeds.S003.ORIGINAL_2D.sum()), seeds.S003.N_TABLES_MARGINS
(135, 18272363056)
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

__all__ = ["S000", "S001", "S003", "S004"]


def _frozen(a) -> np.ndarray:
    a = np.array(a)
    a.setflags(write=False)
    return a


# --- seed 003: Duncan & Roehrig (2006), slides "Protecting tabular data through cyclic
# perturbation" (003_b58d5cadb12aa364.txt) ----------------------------------------------
_O3 = [[1, 4, 66, 3, 2, 3, 2, 68, 4, 80, 2, 1],
       [1, 2, 3, 1, 228, 4, 78, 3, 4, 2, 2, 1],
       [4, 4, 3, 1, 1, 5, 6, 61, 3, 4, 4, 45],
       [2, 7, 1, 3, 10, 3, 1, 2, 61, 3, 55, 4]]
_P3 = [[1, 5, 65, 3, 2, 3, 3, 67, 4, 79, 2, 2],
       [1, 2, 4, 0, 227, 4, 78, 4, 5, 2, 1, 1],
       [3, 4, 3, 2, 2, 4, 6, 61, 3, 5, 4, 44],
       [3, 6, 1, 3, 10, 4, 0, 2, 60, 3, 56, 4]]

S003 = SimpleNamespace(
    #: slide "Table of Counts": rows v_1..v_4, columns w_1..w_4
    ORIGINAL_2D=_frozen([[15, 1, 3, 1], [20, 10, 10, 15], [3, 10, 10, 2], [12, 14, 7, 2]]),
    #: slides "Cyclic Perturbation: Details" / "Results for the Example": the perturbed table
    PERTURBED_2D=_frozen([[16, 0, 2, 2], [21, 11, 9, 14], [2, 11, 11, 1], [11, 13, 8, 3]]),
    #: the example's coin: alpha = beta = 1/4 (slide "Cyclic Perturbation: Details")
    ALPHA=0.25, BETA=0.25,
    #: slide "Results for the Example": Pr(t(i, j) = q | T^P), q = 0..5, two decimals
    #: (zero-based cells)
    CELL_TABLE_2D={
        (0, 1): (0.71, 0.25, 0.04, 0.00, 0.00, 0.00),
        (0, 3): (0.06, 0.25, 0.38, 0.25, 0.06, 0.00),
        (2, 3): (0.00, 0.71, 0.25, 0.04, 0.00, 0.00),
        (3, 3): (0.00, 0.05, 0.29, 0.44, 0.21, 0.01),
    },
    #: slide "Releasing Only the Margins": tables with the margins of ORIGINAL_2D
    N_TABLES_MARGINS=18_272_363_056,
    #: slide "Controlled Rounding" ("Example of base 3 rounding"): the rounded interior;
    #: its printed totals below are its sums
    ROUNDED_2D=_frozen([[15, 0, 3, 0], [21, 9, 12, 15], [3, 9, 9, 3], [12, 15, 6, 3]]),
    ROUNDED_ROW_TOTALS=(18, 57, 24, 36),
    ROUNDED_COL_TOTALS=(51, 33, 30, 21),
    ROUNDED_GRAND_TOTAL=135,
    ROUNDING_BASE=3,
    #: slide "Controlled Rounding": possible original tables of the base-3 rounding
    N_TABLES_ROUNDING=1_025_908_683,
    #: slide "Suppress Primary Cells + Complementary Cells": the cells printed as "s" in
    #: ORIGINAL_2D (zero-based; the slide's (1,2) (1,3) (1,4) (3,3) (3,4) (4,2) (4,4)); every
    #: total is published
    SUPPRESSED_CELLS=((0, 1), (0, 2), (0, 3), (2, 2), (2, 3), (3, 1), (3, 3)),
    #: same slide: "This may not be a good suppression pattern: only three possible
    #: original tables"
    N_TABLES_SUPPRESSION=3,
    #: slide "Original & Perturbed Tables" (3-way 4 x 4 x 3, dims (i, j, k)); the slide
    #: prints rows i with blocks k = 1..3 of columns j
    ORIGINAL_3D=_frozen(np.array(_O3).reshape(4, 3, 4).transpose(0, 2, 1)),
    PERTURBED_3D=_frozen(np.array(_P3).reshape(4, 3, 4).transpose(0, 2, 1)),
    #: slide "Results": "There are 28 tables that could have been the original"
    N_CANDIDATES_3D=28,
    #: slide "Results": cell (1,1,1), alpha = beta = gamma, values 0..3
    CELL_111_3D=(0.34, 0.39, 0.22, 0.05),
)

# --- seed 001: Domingo-Ferrer & Mateo-Sanz (1999), "Resampling for statistical
# confidentiality in contingency tables" (001_c2c1616e17aa0dac.txt) ---------------------
S001 = SimpleNamespace(
    #: Table 1: P(X_ij = k | X^M_ij = k) for n > 1000, rows k = 1, 2, 3; columns (M, S)
    #: in the order of TABLE1_MS
    TABLE1={1: (.40, .42, .47, .65, .65, .66, .76, .76, .76),
            2: (.27, .28, .28, .46, .46, .46, .58, .58, .58),
            3: (.22, .24, .27, .38, .38, .39, .48, .48, .48)},
    TABLE1_MS=((1, 3), (1, 2), (1, 1.5), (3, 3), (3, 2), (3, 1.5), (5, 3), (5, 2), (5, 1.5)),
)

# --- seed 000: Cox (2003), slides "Preserving confidentiality and quality of tabular
# data" (000_cc2a80de4935c67f.txt, "Examples").  OCR repairs: in "min L (Regress.)" the
# first cell of row 3 reads "040750" and row 4 is preceded by a stray duplicate line;
# both are restored from the printed row totals (616752 and 0). ----------------------------
S000 = SimpleNamespace(
    #: Table 1, interior (rows 1..4, columns 1..9); the printed totals below are its sums
    ORIGINAL=_frozen(np.array([
        [167500, 317501, 1283751, 587501, 4490751, 3981001, 2442001, 1150000, 70000],
        [56250, 1487000, 172500, 667503, 1006253, 327500, 1683000, 1138250, 46000],
        [616752, 202750, 1899502, 1098751, 2172251, 3825251, 4372753, 300000, 787500],
        [0, 35000, 0, 16250, 0, 0, 65000, 0, 140000],
    ], dtype=float)),
    ROW_TOTALS=(14490006, 6584256, 15275510, 256250),
    COL_TOTALS=(840502, 2042251, 3355753, 2370005, 7669255, 8133752, 8562754, 2588250, 1043500),
    GRAND_TOTAL=36606022,
    #: Table 1, "Protection (+/-)": (row, column) zero-based -> protection limit
    PROTECTION={(0, 8): 21000, (1, 0): 625, (1, 8): 7800, (2, 7): 40000,
                (3, 1): 10500, (3, 3): 4875, (3, 8): 42000},
    #: Table 2, "min sum |y_i|": the whole adjusted interior (row totals printed below)
    MIN_ABS=_frozen(np.array([
        [166875, 307001, 1283751, 587501, 4490751, 3981001, 2442001, 1150000, 91000],
        [56875, 1487000, 172500, 667503, 1006253, 327500, 1683000, 1141875, 38200],
        [616752, 202750, 1899502, 1103626, 2172251, 3825251, 4372753, 260000, 816300],
        [0, 45500, 0, 11375, 0, 0, 65000, 36375, 98000],
    ], dtype=float)),
    MIN_ABS_ROW_TOTALS=(14499881, 6580706, 15269185, 256250),
    #: Table 2, the sensitive cells of each variant, in the order of PROTECTION
    SENSITIVE_ADJUSTED={
        "min |y|": (91000, 56875, 38200, 260000, 45500, 11375, 98000),
        "min L-bound (var.)": (91003, 55625, 38200, 260000, 18791, 8125, 191756),
        "max L (corr.)": (91000, 55313, 34300, 359884, 19250, 8938, 94815),
        "min L (reg.)": (91000, 55625, 34420, 260000, 19250, 8938, 194267),
    },
    #: Table 3, sensitive cells: (Corr(a, a+y), regression slope, new var / original var)
    TABLE3={
        "min |y|": (0.98, 0.82, 0.70),
        "min L-bound (var.)": (0.95, 0.93, 0.94),
        "max L (corr.)": (0.97, 1.20, 1.52),
        "min L (reg.)": (0.95, 0.93, 0.95),
    },
    #: Table 3, all cells, every variant
    TABLE3_ALL=(1.00, 1.00, 1.00),
    #: slides "(Nearly) Actual Example of Magnitude Table with Disclosures" / "Example 1:
    #: 4x9 Table of Magnitude Data & Protection Limits for the 7 Disclosure Cells (red)":
    #: Table 1 in thousands as the slides print it (close to, not exactly, ORIGINAL / 1000);
    #: the printed totals below are its sums
    ROUNDED=_frozen(np.array([
        [167, 317, 1284, 587, 4490, 3981, 2442, 1150, 70],
        [57, 1487, 172, 667, 1006, 327, 1683, 1138, 46],
        [616, 202, 1899, 1098, 2172, 3825, 4372, 300, 787],
        [0, 36, 0, 16, 0, 0, 65, 0, 140],
    ], dtype=float)),
    ROUNDED_ROW_TOTALS=(14488, 6583, 15271, 257),
    ROUNDED_COL_TOTALS=(840, 2042, 3355, 2368, 7668, 8133, 8562, 2588, 1043),
    ROUNDED_GRAND_TOTAL=36599,
    #: same slide, the protection limits printed in parentheses: (row, column) zero-based
    ROUNDED_PROTECTION={(0, 8): 21, (1, 0): 1, (1, 8): 7, (2, 7): 40, (3, 1): 10,
                        (3, 3): 4, (3, 8): 40},
    #: slide "Example 1a: After Optimal Suppression: 11 Cells (30%) & 2759 Units (7.5%)
    #: Suppressed": the cells printed as "D" (the sensitive cells and four complements).
    #: The caption follows its table in the OCR text; that table's published cells differ
    #: from ROUNDED in column 7 ((2,7) 1679, (3,7) 4371, (4,7) 70, one-based) - transcribed
    #: here is the pattern only.
    SUPPRESSION_PATTERN=((0, 0), (0, 3), (0, 8), (1, 0), (1, 7), (1, 8), (2, 1), (2, 7),
                         (3, 1), (3, 3), (3, 8)),
    SUPPRESSION_N_CELLS=11,
    SUPPRESSION_VALUE=2759,
)

# --- seed 004: Cox (2000), course notes "Confidentiality and statistical data protection
# techniques" (004_566d03f14fee8ba2.txt): §2 "Statistical disclosure limitation for tabular
# frequency data. Rounding", §3 "Statistical disclosure limitation for tabular magnitude
# data" and, in §5, "Frechet Bounds" / "Counter examples".  Cells are zero-based. ---------
def _two_way(plane_rows, plane_cols, totals_plane) -> dict:
    """The 2-way margins of a 3-D table (dims a, b, c) printed as seed 004 prints them:
    each plane c = k shows its row totals (over b) and column totals (over a), then the
    "totals plane" (a x b).  Returns {"ab", "ac", "bc"}: the printed numbers, transposed
    to (a, c) and (b, c)."""
    return {"ab": _frozen(totals_plane), "ac": _frozen(np.array(plane_rows).T),
            "bc": _frozen(np.array(plane_cols).T)}


# plane totals that several "Counter examples" share
_PLANES3 = [(3, 1, 1), (1, 3, 1), (1, 1, 3)]
_PLANES4 = [(1, 1, 0, 0), (1, 0, 1, 0), (0, 1, 0, 1), (0, 0, 1, 1)]
_PLANES8 = [(2, 2, 0, 0, 2, 2, 0, 0), (2, 0, 2, 0, 2, 0, 2, 0), (0, 2, 0, 2, 0, 2, 0, 2),
            (0, 0, 2, 2, 0, 0, 2, 2)]
_DIAG8 = [[0, 0, 0, 2, 0, 0, 0, 2], [0, 0, 2, 0, 0, 0, 2, 0], [0, 2, 0, 0, 0, 2, 0, 0],
          [2, 0, 0, 0, 2, 0, 0, 0]] * 2

S004 = SimpleNamespace(
    #: §3.1 "Defining and measuring statistical disclosure", "Examples": "x_1 = 70,
    #: x_2 = 15, x_3 = 5, x_4+ = 10": the three largest contributions, then the tail
    EXAMPLE_LARGEST=(70, 15, 5),
    EXAMPLE_TAIL=10,
    #: same "Examples", "(3,80)-dominance rule": S = 50, "X requires 50/4 = 12.5 units of
    #: additional protection"
    EXAMPLE_DOMINANCE_3_80=(50.0, 12.5),
    #: same "Examples", "20-percent rule": S = -5 (a nondisclosure cell)
    EXAMPLE_P_PERCENT_20=-5.0,
    #: same "Examples", "20%-50% ambiguity rule": S = 32.5, "X requires 32.5/2.5 = 13
    #: units of additional protection"
    EXAMPLE_PQ_20_50=(32.5, 13.0),
    #: §3.1 "Complementary cell suppression", "Example", Table 1: the interior (the
    #: printed totals below are its sums)
    TABLE1=_frozen(np.array([[20, 10, 20, 10, 20], [10, 10, 20, 5, 15], [40, 10, 10, 20, 10],
                             [5, 5, 15, 10, 5]], dtype=float)),
    TABLE1_ROW_TOTALS=(80, 60, 90, 40),
    TABLE1_COL_TOTALS=(75, 35, 65, 45, 50),
    TABLE1_GRAND_TOTAL=270,
    #: Table 1's four disclosure cells ("Cells in italics", shown as P in the INTRA and
    #: network examples)
    TABLE1_SENSITIVE=((0, 0), (1, 2), (2, 3), (3, 3)),
    #: "Assume each of the 4 disclosure cells requires disclosure protection = 50% of
    #: cell value"
    TABLE1_PROTECTION_SHARE=0.5,
    #: "Combinatorial Method (INTRA)", "Example": the complementary cells C of the ideal
    #: pattern, which "suppresses the fewest number of cells possible (4)" and "the least
    #: total value possible (35)"
    TABLE1_IDEAL=((0, 3), (1, 0), (2, 2), (3, 0)),
    TABLE1_IDEAL_COUNT=4,
    TABLE1_IDEAL_VALUE=35,
    #: "Network Method (U.S. Bureau of the Census)", "Example": the complements C_1, C_2;
    #: "This pattern involves 6 complementary suppressions of total value 50 units"
    TABLE1_NETWORK=((0, 1), (1, 0), (1, 1), (2, 2), (3, 0), (3, 1)),
    TABLE1_NETWORK_COUNT=6,
    TABLE1_NETWORK_VALUE=50,
    #: §3.1 "EXERCISE": the published interior (NaN = D, suppressed) and its totals
    EXERCISE=_frozen([[np.nan, np.nan, np.nan, 0], [0, np.nan, np.nan, 0],
                      [np.nan, 0, 0, np.nan], [np.nan, 0, 0, np.nan]]),
    EXERCISE_ROW_TOTALS=(10, 9, 8, 7),
    EXERCISE_COL_TOTALS=(12, 8, 7, 7),
    EXERCISE_GRAND_TOTAL=34,
    #: same "EXERCISE": "INTRA Condition Satisfied But One Cell Disclosed Exactly"
    EXERCISE_N_EXACT=1,
    #: §2 "Controlled Random Rounding", "ORIGINAL TABLE": the interior (the printed totals
    #: below are its sums); "Solution: Round all counts to base 5"
    ROUNDING_TABLE=_frozen([[37, 3, 30, 6, 4], [1, 16, 23, 5, 15], [30, 15, 8, 27, 10],
                            [7, 1, 4, 7, 21]]),
    ROUNDING_ROW_TOTALS=(80, 60, 90, 40),
    ROUNDING_COL_TOTALS=(75, 35, 65, 45, 50),
    ROUNDING_GRAND_TOTAL=270,
    ROUNDING_BASE=5,
    #: "Frechet Bounds" / "Counter examples": 3-D tables given by their 2-way margins
    #: (interior values are not printed), see _two_way.  Each caption follows its table in
    #: the OCR text; read that way every example has the property its caption states.
    #: Infeasible: "Example 1a: Infeasible 3-D Table" (printed twice: 4x4x4 and 2x2x2),
    #: "Example 2" and "Example 2a: Infeasible Frechet Consistent 3-D Table" (8x8x4, 3x3x3)
    FRECHET_INFEASIBLE={
        "4x4x4": _two_way(_PLANES4, _PLANES4,
                          [[0, 0, 0, 2], [0, 0, 2, 0], [0, 2, 0, 0], [2, 0, 0, 0]]),
        "2x2x2": _two_way([(0, 1), (1, 0)], [(1, 0), (0, 1)], [[1, 0], [0, 1]]),
        "8x8x4": _two_way(_PLANES8, _PLANES8, _DIAG8),
        "3x3x3": _two_way(_PLANES3, _PLANES3, [[1, 1, 3], [3, 1, 1], [1, 3, 1]]),
    },
    #: the two captioned "Frechet Consistent"
    FRECHET_CONSISTENT=("8x8x4", "3x3x3"),
    #: Feasible: "Example 3" and "Example 3a: Feasible (unique) 3-D Table with Inexact Upper
    #: Bounds", "Example 4: Feasible (unique) 3-D Table with Inexact Frechet Bounds"
    #: (3 x 2 x 3), "Example 5: Feasible 3-D Table with 3 df and 4 Integer Solutions"
    FRECHET_FEASIBLE={
        "3": _two_way(_PLANES3, _PLANES3, [[1, 2, 2], [2, 1, 2], [2, 2, 1]]),
        "3a": _two_way([(3, 1, 1), (1, 3, 1), (1, 2, 3)], [(3, 1, 1), (1, 3, 1), (1, 2, 3)],
                       [[1, 1, 3], [3, 2, 1], [1, 3, 1]]),
        "4": _two_way([(2, 1, 0), (0, 1, 1), (2, 0, 0)], [(2, 1), (1, 1), (1, 1)],
                      [[3, 1], [1, 1], [0, 1]]),
        "5": _two_way(_PLANES3, _PLANES3, [[2, 1, 2], [1, 2, 2], [2, 2, 1]]),
    },
    #: the captions: "unique" (one table) for 3, 3a, 4; "4 Integer Solutions" for 5
    FRECHET_N_TABLES={"3": 1, "3a": 1, "4": 1, "5": 4},
    #: Example 5's "3 df"
    FRECHET_EX5_DF=3,
)
