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
# The package's TensorFlow CPU settings (oneDNN on, the BFC memory pool;
# spectralnet_tf.hardware), set as a user's process gets them: importing the
# package sets them, and this file is imported before TensorFlow is. The
# subprocesses that compare replicas turn oneDNN off themselves
# (tests/cluster_runs.py), and tests/test_mnist.py runs both settings.
import spectralnet_tf  # noqa: E402

#: Seconds of each file's tests, not marked slow and marked slow, as measured
#: on one of two workers (a scheduling weight, not a limit: refresh it with
#: ``--durations=0`` when files change much). With
#: ``--dist loadfile`` a file goes whole to one worker and a free worker takes
#: the next file in collection order (pytest.ini: --no-loadscope-reorder), so
#: the longest files go first: a long one last would leave the other worker
#: idle at the end. A file not listed counts as 0 and keeps its place.
FILE_SECONDS = {
    "test_distribute_runs.py": (0, 129), "test_estimator.py": (13, 84), "test_mnist.py": (0, 97),
    "test_distribute.py": (0, 53), "test_autoencoder.py": (6, 32), "test_export.py": (12, 21),
    "test_sklearn_checks.py": (0, 31), "test_rundir.py": (0, 29), "test_infimnist.py": (3, 20),
    "test_cli.py": (8, 12), "test_packaging.py": (0, 18), "test_workers_agree.py": (0, 18),
    "test_autoencoder_training.py": (13, 0), "test_reproduce.py": (1, 12),
    "test_reuters.py": (0, 12), "test_graphs.py": (0, 11), "test_selection.py": (10, 1),
    "test_nclusters.py": (3, 5), "test_run.py": (7, 0), "test_streaming.py": (6, 0),
    "test_checkpoint.py": (6, 0), "test_report.py": (0, 5), "test_semisup_script.py": (1, 4),
    "test_spectral.py": (5, 0), "test_parts.py": (4, 0), "test_train.py": (4, 0),
    "test_siamese.py": (2, 0), "test_summaries.py": (1, 0), "test_affinity.py": (1, 0),
    "test_views.py": (3, 10),
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
