# elementwise.numpy.py: add, mul, relu and sigmoid (docs/elementwise.md)
# computed in NumPy, for the round trip of tests/check_command_test.sh
# (ops/sumsq.numpy.py says how the test uses it): add and relu in float64,
# mul as the exact float64 product of two float32 rounded once, sigmoid in
# long double from float32 inputs rounded once.
import numpy as np


def add(rng):
    x, y = rng.uniform(-8, 8, 1000), rng.uniform(-8, 8, 1000)
    return dict(x=x, y=y), [], dict(out=x + y)


def mul(rng):
    x, y = (rng.uniform(-8, 8, 1000).astype(np.float32) for _ in range(2))
    return dict(x=x, y=y), [], dict(out=(x.astype(np.float64) * y.astype(np.float64)).astype(np.float32))


def relu(rng):
    x = rng.uniform(-8, 8, 1000)
    return dict(x=x), [], dict(out=np.where(x < 0, 0.0, x))


def sigmoid(rng):
    x = rng.uniform(-8, 8, 1000).astype(np.float32)
    return dict(x=x), [], dict(out=(1 / (1 + np.exp(-x.astype(np.longdouble)))).astype(np.float32))


makers = dict(add=add, mul=mul, relu=relu, sigmoid=sigmoid)
