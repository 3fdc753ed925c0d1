"""The package as a user installs it: pip install, the spectralnet command, and
examples/quickstart.ipynb run in a real Jupyter kernel from a folder outside
the repository."""

import json
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}


@pytest.mark.slow
def test_pip_install_target_gives_the_package_weights_and_command(tmp_path):
    src, target, elsewhere = tmp_path / "src", tmp_path / "site", tmp_path / "elsewhere"
    # A copy of the checkout's files, so the build leaves nothing in the repository.
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(
        ".git", "runs", "build", "*.egg-info", "__pycache__", ".pytest_cache"))
    elsewhere.mkdir()
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                    "--no-build-isolation", "--target", str(target), str(src)],
                   check=True, env=ENV, capture_output=True, timeout=600)
    shutil.rmtree(src)  # nothing may come from the source tree any more
    env = {**ENV, "PYTHONPATH": str(target)}
    probe = subprocess.run(
        [sys.executable, "-c",
         "import json, spectralnet_tf\n"
         "from spectralnet_tf.resources import pretrained_path\n"
         "print(json.dumps({'file': spectralnet_tf.__file__,\n"
         "                  'ae': pretrained_path('ae_mnist_shift2_seed1_weights.h5')}))"],
        cwd=elsewhere, env=env, capture_output=True, text=True, timeout=300)
    assert probe.returncode == 0, probe.stderr[-2000:]
    found = json.loads(probe.stdout.strip().splitlines()[-1])
    assert found["file"].startswith(str(target))
    assert found["ae"] == str(target / "spectralnet_tf" / "pretrained_ae" / "ae_mnist_shift2_seed1_weights.h5")
    assert os.path.getsize(found["ae"]) == os.path.getsize(
        os.path.join(ROOT, "pretrained_ae", "ae_mnist_shift2_seed1_weights.h5"))
    helped = subprocess.run([str(target / "bin" / "spectralnet"), "--help"], cwd=elsewhere,
                            env=env, capture_output=True, text=True, timeout=300)
    assert helped.returncode == 0, helped.stderr[-2000:]
    assert "usage: spectralnet" in helped.stdout
    assert all(command in helped.stdout for command in ("fit", "predict", "transform", "export"))


@pytest.mark.slow
def test_quickstart_notebook_runs_in_a_jupyter_kernel_outside_the_repository(tmp_path):
    import nbclient
    import nbformat

    work = tmp_path / "notebooks"
    work.mkdir()
    shutil.copy(os.path.join(ROOT, "examples", "quickstart.ipynb"), work)
    nb = nbformat.read(str(work / "quickstart.ipynb"), as_version=4)
    # The kernel sees only the installed package: no repository on its path.
    env = {key: v for key, v in ENV.items() if key != "PYTHONPATH"}
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(work)}})
    client.execute(env=env)  # a failing assert in a cell raises CellExecutionError
    text = "\n".join(out.get("text", "") for cell in nb.cells if cell.cell_type == "code"
                     for out in cell.outputs)
    assert "reloaded .keras reproduces transform: True" in text
    # The kernel imported what pip installed, as a plain process in that folder does.
    installed = subprocess.run(
        [sys.executable, "-c", "import os, spectralnet_tf; print(os.path.dirname(spectralnet_tf.__file__))"],
        cwd=work, env=env, capture_output=True, text=True, timeout=300)
    assert installed.returncode == 0, "spectralnet_tf is not installed (pip install -r requirements.txt)"
    banner = next(line for line in text.splitlines() if line.startswith("spectralnet_tf "))
    assert banner.split(" from ")[1] == installed.stdout.strip().splitlines()[-1]
    assert any(out.get("output_type") == "display_data" and "image/png" in out.get("data", {})
               for cell in nb.cells if cell.cell_type == "code" for out in cell.outputs)
