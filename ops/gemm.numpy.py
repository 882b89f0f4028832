# gemm.numpy.py: gemm (docs/gemm.md) computed in NumPy, for the round trip of
# tests/check_command_test.sh (ops/sumsq.numpy.py says how the test uses it):
# C_out = alpha * A B^T + beta * C in float64 from float32 operands, rounded
# once to float32. The shapes, A 7x5 and B 9x5, are what the test's refusals
# name.
import numpy as np


def gemm(rng):
    a, b, c = (rng.uniform(-1.0, 1.0, shape).astype(np.float32) for shape in ((7, 5), (9, 5), (7, 9)))
    out = 0.5 * (a.astype(np.float64) @ b.astype(np.float64).T) + 2.0 * c.astype(np.float64)
    return dict(a=a, b=b, c=c), ["transb=T", "alpha=0.5", "beta=2"], dict(c_out=out.astype(np.float32))


makers = dict(gemm=gemm)
