# update.numpy.py: anneal's update (docs/anneal.md) computed in NumPy, for the
# round trip of tests/check_command_test.sh (ops/sumsq.numpy.py says how the
# test uses it): the momentum step of each anchor in float64 from float32
# inputs, anchors with no point left in place. The shape of a, 6x5, is what
# the test's refusals name.
import numpy as np


def update(rng):
    a, v, mean = (rng.standard_normal((6, 5)).astype(np.float32) for _ in range(3))
    count = np.array([3, 0, 1, 7, 0, 2], dtype=np.int32)
    T, lr, mu = 0.75, 0.125, 0.5
    v64, a64, m64 = v.astype(np.float64), a.astype(np.float64), mean.astype(np.float64)
    v_next = mu * v64 + np.where(count[:, None] > 0, m64 - a64, 0.0)
    a_next = a64 + lr * T * v_next
    return (dict(a=a, v=v, mean=mean, count=count), [f"temperature={T}", f"learning_rate={lr}", f"momentum={mu}"],
            dict(a_next=a_next.astype(np.float32), v_next=v_next.astype(np.float32)))


makers = dict(update=update)
