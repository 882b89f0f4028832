# softmax.numpy.py: softmax over the last axis (docs/softmax.md) computed in
# NumPy, for the round trip of tests/check_command_test.sh (ops/sumsq.numpy.py
# says how the test uses it): in long double from float32 inputs, rounded once
# to float32. The shape, 9x33, is what the test's refusals name.
import numpy as np


def softmax(rng):
    x = (rng.standard_normal((9, 33)) * 3).astype(np.float32)
    e = np.exp(x.astype(np.longdouble) - x.max(axis=1, keepdims=True))
    return dict(x=x), [], dict(y=(e / e.sum(axis=1, keepdims=True)).astype(np.float32))


makers = dict(softmax=softmax)
