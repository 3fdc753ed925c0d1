import importlib.util
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# The suite runs on two worker processes (pytest.ini); on a GPU each would
# otherwise reserve nearly all of its memory at start (TensorFlow's GPU guide).
os.environ.setdefault("TF_FORCE_GPU_ALLOW_GROWTH", "true")
sys.path.insert(0, ROOT)


@pytest.fixture
def load_script():
    """``load_script(name)``: scripts/NAME.py imported as a module."""

    def load(name):
        spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "scripts", f"{name}.py"))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    return load
