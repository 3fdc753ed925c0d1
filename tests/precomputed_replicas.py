"""W's submatrix built by the replicas of a MirroredStrategy over two logical
CPUs (run as a subprocess by tests/test_graphs.py: the CPU must be split
before TensorFlow starts). Prints one JSON line: the largest difference
between the gathered rows and the submatrix built on one device."""

import json

from spectralnet_tf import distribute

devices = distribute.split_logical_cpus(2)

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402
import tensorflow as tf  # noqa: E402

from spectralnet_tf import PrecomputedAffinity  # noqa: E402

n = 200
graph = sp.random(n, n, density=0.05, random_state=0, format="csr")
graph = graph + graph.T + sp.eye(n, k=1) + sp.eye(n, k=-1)  # no isolated vertex
affinity = PrecomputedAffinity().fit(np.zeros((n, 1)), 64, graph=graph)
ids = np.random.default_rng(0).choice(n, 64, replace=False)
z = tf.constant(ids.astype(np.float32)[:, None])
strategy = tf.distribute.MirroredStrategy(devices)


@tf.function
def rows():
    return strategy.run(lambda: distribute.all_gather(affinity.kernel_matrix(z)))


gathered = strategy.experimental_local_results(rows())[0].numpy()
dense = graph.toarray()
np.fill_diagonal(dense, 0.0)
print(json.dumps({"replicas": strategy.num_replicas_in_sync,
                  "max_diff": float(np.abs(gathered - dense[np.ix_(ids, ids)]).max()),
                  "one_device": float(np.abs(affinity.kernel_matrix(z).numpy()
                                             - dense[np.ix_(ids, ids)]).max())}))
