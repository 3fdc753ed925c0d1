import importlib.util
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# The suite runs on two worker processes (pytest.ini); on a GPU each would
# otherwise reserve nearly all of its memory at start (TensorFlow's GPU guide).
os.environ.setdefault("TF_FORCE_GPU_ALLOW_GROWTH", "true")


@pytest.fixture
def load_script():
    """``load_script(name)``: the module behind scripts/NAME.py: the harness
    module a thin entry point runs, else the script file itself."""

    def load(name):
        harness_module = {"run": "reproduce", "vc_check": "vc"}.get(name, name)
        if importlib.util.find_spec(f"harness.{harness_module}") is not None:
            return importlib.import_module(f"harness.{harness_module}")
        spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "scripts", f"{name}.py"))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    return load
