"""The main job's recipe on an MNIST subset, in one numeric variant (run as a
subprocess by tests/test_mnist.py: oneDNN and the thread pools are set
before TensorFlow starts, from the environment).

    python tests/mnist_variant.py N [--init spectral|random] [--seed S]

Prints one JSON line: SpectralNet's ACC, exact spectral clustering's ACC on
the graph the minibatches sample (in the trained Siamese distance, as
``run.py --grassmann``) and the Grassmann distance between the two.
"""

import argparse
import json
import os

from spectralnet_tf import SpectralNet, acc, grassmann
from spectralnet_tf.autoencoder import load_encoder
from harness.configs import config_for
from harness.reproduce import AE_ALL
from spectralnet_tf.datasets import load_dataset
from spectralnet_tf.spectral import spectral_clustering
from spectralnet_tf.streaming import map_batches

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

parser = argparse.ArgumentParser()
parser.add_argument("n", type=int)
parser.add_argument("--init", default=None)
parser.add_argument("--seed", type=int, default=0)
args = parser.parse_args()

x, y, k = load_dataset("mnist")
x, y = x[:args.n], y[:args.n]
encoder = load_encoder(os.path.join(ROOT, "pretrained_ae", AE_ALL))
config = config_for("mnist")
# A smaller net and fewer Siamese epochs than the main job, for test time.
# Full passes over the subset's pairs, up to 100 epochs, float32, no view
# positives: the settings its thresholds were measured with over seeds and
# oneDNN settings. Views change which graph the net learns, not whether it
# lands on that graph's eigenvectors, and they doubled the Siamese pairs.
config.update(hidden_units=(256, 256), batch_size=512, dtype_policy="float32")
config["schedule"].set_params(max_epochs=100)
config["affinity_embedding"].set_params(schedule__max_epochs=20, schedule__steps_per_epoch=None,
                                        dtype_policy="float32", views=None)
if args.init:
    config["init"] = args.init
net = SpectralNet(k, encoder=encoder, random_state=args.seed, **config).fit(x)
z = map_batches(encoder, x)
full = net.affinity_.for_full_data(len(z), config["batch_size"])
exact, eigvecs = spectral_clustering(z, k, full, neighbors="exact", random_state=args.seed)
print(json.dumps({"acc": acc(y, net.labels_), "exact_acc": acc(y, exact),
                  "grassmann": grassmann(net.embedding_, eigvecs),
                  "epochs": len(net.history_["loss"]), "init": str(net.init),
                  "onednn": os.environ.get("TF_ENABLE_ONEDNN_OPTS")}))
