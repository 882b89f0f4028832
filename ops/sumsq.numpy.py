# sumsq.numpy.py: sumsq (docs/sumsq.md) computed in NumPy, for the round trip
# of tests/check_command_test.sh: inputs, parameters and the expected output
# that `kcs check` must pass, then fail with one element moved beyond its
# bound. The test finds every ops/*.numpy.py and takes its `makers`: op name ->
# function(rng) -> (inputs, params, outputs), the outputs computed more
# precisely than the type (long double) and rounded once.
import numpy as np


def sumsq(rng):
    x = rng.standard_normal(1001)
    return dict(x=x), [], dict(s=np.float64(np.sum(np.square(x.astype(np.longdouble)))))


makers = dict(sumsq=sumsq)
