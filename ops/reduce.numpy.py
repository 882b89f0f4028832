# reduce.numpy.py: anneal's reduce (docs/anneal.md) computed in NumPy, for the
# round trip of tests/check_command_test.sh (ops/sumsq.numpy.py says how the
# test uses it): each anchor's count, mean and variance of its points, in
# float64 from float32 points, anchor 6 left empty.
import numpy as np


def reduce(rng):
    x, idx = rng.standard_normal((300, 4)).astype(np.float32), rng.integers(0, 6, 300).astype(np.int32)
    count = np.bincount(idx, minlength=7).astype(np.int32)  # anchor 6 is empty
    mean, var = np.zeros((7, 4)), np.zeros((7, 4))
    for j in range(7):
        points = x[idx == j].astype(np.float64)
        if len(points):
            mean[j], var[j] = points.mean(axis=0), ((points - points.mean(axis=0)) ** 2).mean(axis=0)
    return dict(x=x, idx=idx), [], dict(count=count, mean=mean.astype(np.float32), var=var.astype(np.float32))


makers = dict(reduce=reduce)
