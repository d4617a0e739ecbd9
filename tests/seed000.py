"""Numbers transcribed from seed 000 (Cox 2003, slides; 000_cc2a80de4935c67f.txt, "Examples").

Table 1: the 4 x 9 magnitude table (interior; the row/column totals of the slide are its
sums, checked in tests/test_cta_seed000.py) and the protection limits (+/-) of its
seven sensitive cells.  Table 2: the adjusted tables of four LP variants, of which we
keep the sensitive cells (Table 3 summarises the sensitive cells only).  OCR repairs:
in "min L (Regress.)" the first cell of row 3 reads "040750" and row 4 is preceded by a
stray duplicate line; both are restored from the printed row totals (616752 and 0).
"""

import numpy as np

# Table 1, interior (rows 1..4, columns 1..9); printed totals in ROW_TOTALS / COL_TOTALS
ORIGINAL = np.array([
    [167500, 317501, 1283751, 587501, 4490751, 3981001, 2442001, 1150000, 70000],
    [56250, 1487000, 172500, 667503, 1006253, 327500, 1683000, 1138250, 46000],
    [616752, 202750, 1899502, 1098751, 2172251, 3825251, 4372753, 300000, 787500],
    [0, 35000, 0, 16250, 0, 0, 65000, 0, 140000],
], dtype=float)
ROW_TOTALS = [14490006, 6584256, 15275510, 256250]
COL_TOTALS = [840502, 2042251, 3355753, 2370005, 7669255, 8133752, 8562754, 2588250, 1043500]
GRAND_TOTAL = 36606022

# Table 1, "Protection (+/-)": (row, column) zero-based -> protection limit
PROTECTION = {(0, 8): 21000, (1, 0): 625, (1, 8): 7800, (2, 7): 40000,
              (3, 1): 10500, (3, 3): 4875, (3, 8): 42000}

# Table 2, "min sum |y_i|": the whole adjusted interior (its row/column totals are printed)
MIN_ABS = np.array([
    [166875, 307001, 1283751, 587501, 4490751, 3981001, 2442001, 1150000, 91000],
    [56875, 1487000, 172500, 667503, 1006253, 327500, 1683000, 1141875, 38200],
    [616752, 202750, 1899502, 1103626, 2172251, 3825251, 4372753, 260000, 816300],
    [0, 45500, 0, 11375, 0, 0, 65000, 36375, 98000],
], dtype=float)
MIN_ABS_ROW_TOTALS = [14499881, 6580706, 15269185, 256250]

# Table 2, the sensitive cells of each variant, in the order of PROTECTION
SENSITIVE_ADJUSTED = {
    "min |y|": [91000, 56875, 38200, 260000, 45500, 11375, 98000],
    "min L-bound (var.)": [91003, 55625, 38200, 260000, 18791, 8125, 191756],
    "max L (corr.)": [91000, 55313, 34300, 359884, 19250, 8938, 94815],
    "min L (reg.)": [91000, 55625, 34420, 260000, 19250, 8938, 194267],
}

# Table 3, sensitive cells: (Corr(a, a+y), regression slope, new var / original var)
TABLE3 = {
    "min |y|": (0.98, 0.82, 0.70),
    "min L-bound (var.)": (0.95, 0.93, 0.94),
    "max L (corr.)": (0.97, 1.20, 1.52),
    "min L (reg.)": (0.95, 0.93, 0.95),
}
# Table 3, all cells, every variant: (1.00, 1.00, 1.00)
TABLE3_ALL = (1.00, 1.00, 1.00)


def sensitive_mask():
    m = np.zeros(ORIGINAL.shape, bool)
    for ij in PROTECTION:
        m[ij] = True
    return m


def protection_array():
    p = np.zeros(ORIGINAL.shape)
    for ij, v in PROTECTION.items():
        p[ij] = v
    return p
