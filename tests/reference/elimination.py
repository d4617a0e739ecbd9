"""Sum-product over a factor graph by brute force: every joint assignment of the
variables (itertools.product), independent of kernels/elimination.py."""

import itertools

import numpy as np


def log_joint(factors, sizes):
    """{assignment: log weight} over every assignment of the variables 0..len(sizes)-1;
    the log weight is the sum over ``factors`` (scope, log table) of the table's entry at
    the assignment's values on the scope (-inf entries allowed)."""
    joint = {}
    for a in itertools.product(*[range(sizes[v]) for v in range(len(sizes))]):
        joint[a] = sum(t[tuple(a[v] for v in s)] for s, t in factors)
    return joint


def marginal(joint, vars_, sizes, logz):
    """The normalised marginal over the variables ``vars_`` (an array in their order):
    exp(log weight - logz) summed over every assignment."""
    want = np.zeros(tuple(sizes[v] for v in vars_))
    for a, lv in joint.items():
        want[tuple(a[v] for v in vars_)] += np.exp(lv - logz)
    return want
