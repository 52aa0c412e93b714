"""The synthetic collection the vector search measurements run on."""

import numpy as np

from bench.perf.search import mixture


def test_mixture_is_unit_vectors_and_queries_share_its_clusters():
    data, queries = mixture(3000, 32, seed=1), mixture(20, 32, seed=2)
    assert data.shape == (3000, 32) and data.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(data, axis=1), 1, rtol=1e-5)
    # a held-out query lies close to some collection vector (same centres), far from most
    best = (queries @ data.T).max(axis=1)
    assert np.median(best) > 0.5 > np.median(queries @ data.T)
