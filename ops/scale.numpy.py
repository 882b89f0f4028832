# scale.numpy.py: the test-only op scale (docs/scale.md) computed in NumPy,
# for the round trip of tests/check_command_test.sh (ops/sumsq.numpy.py says
# how the test uses it): y = 3 x, exact in float64.
import numpy as np


def scale(rng):
    x = rng.standard_normal(100)
    return dict(x=x), ["alpha=3"], dict(y=3.0 * x)


makers = dict(scale=scale)
