import importlib.util
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# The suite runs on two worker processes (pytest.ini); on a GPU each would
# otherwise reserve nearly all of its memory at start (TensorFlow's GPU guide).
os.environ.setdefault("TF_FORCE_GPU_ALLOW_GROWTH", "true")
# Under pytest-xdist (pytest.ini: two workers) each worker is one process of
# TensorFlow; with its default thread pools (one thread per core each) two of
# them on two cores oversubscribe the CPU. One thread per pool and worker
# instead, set before TensorFlow is imported (this file is imported before
# the test modules); subprocesses inherit it. A test that needs other thread
# counts sets them explicitly (tests/test_mnist.py). `-n 0` keeps the defaults.
if os.environ.get("PYTEST_XDIST_WORKER"):
    for _var in ("TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS", "OMP_NUM_THREADS"):
        os.environ.setdefault(_var, "1")
# The package's TensorFlow CPU setting (oneDNN on; spectralnet_tf.hardware),
# set as a user's process gets it: importing the package sets it, and this
# file is imported before TensorFlow is. The subprocesses that compare
# replicas turn oneDNN off themselves (tests/cluster_runs.py), and
# tests/test_mnist.py runs both settings.
import spectralnet_tf  # noqa: E402

# TensorFlow's CPU memory from its BFC pool instead of malloc, for those
# oneDNN-off subprocesses: there each op's buffers were fresh pages from the
# kernel, and a large share of the time went to page faults
# (tests/mnist_variant.py with oneDNN off gave the same output to the last
# digit either way). Only where memory comes from changes, not the arithmetic.
os.environ.setdefault("TF_CPU_ALLOCATOR_USE_BFC", "true")

#: Seconds of each file's tests, not marked slow and marked slow, as measured
#: on one of two workers (a scheduling weight, not a limit: refresh it with
#: ``--durations=0`` when files change much). With
#: ``--dist loadfile`` a file goes whole to one worker and a free worker takes
#: the next file in collection order (pytest.ini: --no-loadscope-reorder), so
#: the longest files go first: a long one last would leave the other worker
#: idle at the end. A file not listed counts as 0 and keeps its place.
FILE_SECONDS = {
    "test_estimator.py": (41, 237), "test_mnist.py": (0, 172), "test_distribute.py": (0, 139),
    "test_sklearn_checks.py": (0, 78), "test_export.py": (9, 62), "test_cli.py": (20, 30),
    "test_packaging.py": (0, 41), "test_nclusters.py": (9, 30),
    "test_autoencoder_training.py": (11, 27), "test_graphs.py": (2, 28),
    "test_selection.py": (25, 3), "test_workers_agree.py": (0, 25),
    "test_streaming.py": (8, 13), "test_run.py": (1, 17), "test_checkpoint.py": (15, 0),
    "test_report.py": (1, 13), "test_labelscores.py": (7, 7), "test_parts.py": (12, 0),
    "test_views.py": (1, 11), "test_autoencoder.py": (4, 7), "test_train.py": (10, 0),
    "test_spectral.py": (2, 7), "test_infimnist.py": (7, 0), "test_summaries.py": (4, 0),
    "test_semisup_script.py": (4, 0), "test_siamese.py": (4, 0), "test_affinity.py": (3, 0),
    "test_reproduce.py": (2, 0), "test_networks.py": (1, 0),
}


@pytest.hookimpl(trylast=True)  # after -m and -k have deselected
def pytest_collection_modifyitems(items):
    kinds = {}
    for item in items:
        kinds.setdefault(item.path.name, set()).add(item.get_closest_marker("slow") is not None)
    weight = {name: sum(FILE_SECONDS.get(name, (0, 0))[slow] for slow in found)
              for name, found in kinds.items()}
    items.sort(key=lambda item: -weight[item.path.name])  # stable: files stay whole, in order


@pytest.fixture
def load_script():
    """``load_script(name)``: the module behind scripts/NAME.py: the harness
    module a thin entry point runs, else the script file itself."""

    def load(name):
        if importlib.util.find_spec(f"harness.{name}") is not None:
            return importlib.import_module(f"harness.{name}")
        spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "scripts", f"{name}.py"))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    return load
