# assign.numpy.py: anneal's assign (docs/anneal.md) computed in NumPy, for the
# round trip of tests/check_command_test.sh (ops/sumsq.numpy.py says how the
# test uses it): each point's nearest anchor, distances in float64 from
# float32 inputs, the index as NumPy gives it (int64).
import numpy as np


def assign(rng):
    x, a = rng.standard_normal((200, 3)).astype(np.float32), rng.standard_normal((9, 3)).astype(np.float32)
    distances = ((x.astype(np.float64)[:, None, :] - a.astype(np.float64)[None, :, :]) ** 2).sum(axis=2)
    return dict(x=x, a=a), [], dict(idx=distances.argmin(axis=1), dist=distances.min(axis=1).astype(np.float32))


makers = dict(assign=assign)
