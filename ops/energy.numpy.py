# energy.numpy.py: anneal's energy (docs/anneal.md) computed in NumPy, for the
# round trip of tests/check_command_test.sh (ops/sumsq.numpy.py says how the
# test uses it): the mean of float32 distances in float64, rounded once.
import numpy as np


def energy(rng):
    dist = rng.uniform(0, 4, 1000).astype(np.float32)
    return dict(dist=dist), [], dict(e=np.float32(np.mean(dist.astype(np.float64))))


makers = dict(energy=energy)
