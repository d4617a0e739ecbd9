"""Numbers transcribed from seed 003 (Duncan & Roehrig 2006, slides)."""

import numpy as np

# slide "Table of Counts" (rows v_1..v_4, columns w_1..w_4)
ORIGINAL_2D = np.array([[15, 1, 3, 1], [20, 10, 10, 15], [3, 10, 10, 2], [12, 14, 7, 2]])
# slide "Cyclic Perturbation: Details" / "Results for the Example": the perturbed table
PERTURBED_2D = np.array([[16, 0, 2, 2], [21, 11, 9, 14], [2, 11, 11, 1], [11, 13, 8, 3]])
# slide "Results for the Example": Pr(t(i, j) = q | T^P), q = 0..5, two decimals
CELL_TABLE_2D = {
    (0, 1): [0.71, 0.25, 0.04, 0.00, 0.00, 0.00],
    (0, 3): [0.06, 0.25, 0.38, 0.25, 0.06, 0.00],
    (2, 3): [0.00, 0.71, 0.25, 0.04, 0.00, 0.00],
    (3, 3): [0.00, 0.05, 0.29, 0.44, 0.21, 0.01],
}
# slide "Releasing Only the Margins": 18,272,363,056 tables have the margins
N_TABLES_MARGINS = 18_272_363_056
# slide "Controlled Rounding": 1,025,908,683 possible original tables (base 3)
N_TABLES_ROUNDING = 1_025_908_683

# slide "Original & Perturbed Tables" (3-way, 4 x 4 x 3): rows i; blocks k = 1..3 of columns j
_O3 = [[1, 4, 66, 3, 2, 3, 2, 68, 4, 80, 2, 1],
       [1, 2, 3, 1, 228, 4, 78, 3, 4, 2, 2, 1],
       [4, 4, 3, 1, 1, 5, 6, 61, 3, 4, 4, 45],
       [2, 7, 1, 3, 10, 3, 1, 2, 61, 3, 55, 4]]
_P3 = [[1, 5, 65, 3, 2, 3, 3, 67, 4, 79, 2, 2],
       [1, 2, 4, 0, 227, 4, 78, 4, 5, 2, 1, 1],
       [3, 4, 3, 2, 2, 4, 6, 61, 3, 5, 4, 44],
       [3, 6, 1, 3, 10, 4, 0, 2, 60, 3, 56, 4]]
ORIGINAL_3D = np.array(_O3).reshape(4, 3, 4).transpose(0, 2, 1)   # dims (i, j, k)
PERTURBED_3D = np.array(_P3).reshape(4, 3, 4).transpose(0, 2, 1)
N_CANDIDATES_3D = 28                       # "There are 28 tables that could have been the original"
CELL_111_3D = [0.34, 0.39, 0.22, 0.05]     # cell (1,1,1), alpha = beta = gamma, values 0..3
