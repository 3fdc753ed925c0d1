"""The peers' environment: a virtual environment of its own for the methods
that run in PyTorch or need packages this project does not install (the
authors' ``spectralnet`` 1.1.0, ``umap-learn``), and the calls into it.

``ensure()`` creates ``<repo>/.peers-venv`` (gitignored) on first use with
``python -m venv`` and installs ``PEERS_REQUIREMENTS`` into it, then writes
``MARKER`` (what was asked for and what got installed); later runs find the
marker and reuse the environment. None of these packages goes into
requirements.txt or pyproject.toml.

``run_peer(method, x, k, seed)`` writes the arrays to a temporary .npz, runs
``.peers-venv/bin/python harness/peer_worker.py METHOD DATA.npz OUT.json
--seed S`` and returns what the worker wrote: the labels, the seconds of the
fit and predict alone, the seconds of the worker's start-up (imports), and
the versions it ran.
"""

import json
import os
import subprocess
import sys
import tempfile

import numpy as np

#: The repository root (this file lives in ROOT/harness).
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV = os.path.join(ROOT, ".peers-venv")
WORKER = os.path.join(ROOT, "harness", "peer_worker.py")
MARKER = os.path.join(VENV, "peers-installed.json")

#: What the peers' environment installs. torch is pinned to 2.13.0: the CPU
#: wheel of that release lies on this machine's disk (pip's find-links), while
#: plain ``torch`` or a newer range pulls a multi-GB CUDA build. spectralnet
#: 1.1.0 requires ``torchvision>=0.15.1`` (its own code never imports it: only
#: its examples' data loader does); each torchvision release pins one torch
#: release, and the newest, 0.29.x, pins torch 2.14, so torchvision is pinned
#: to 0.28.0, the release built against torch 2.13.0, so that pip does not
#: backtrack through torchvision releases or replace the CPU torch.
PEERS_REQUIREMENTS = ("torch==2.13.0", "torchvision==0.28.0", "spectralnet==1.1.0",
                      "umap-learn", "scikit-learn", "numpy")
#: The distributions whose versions the marker (and each record) names.
PEERS_DISTRIBUTIONS = ("torch", "torchvision", "spectralnet", "umap-learn", "pynndescent",
                       "numba", "scikit-learn", "numpy")
#: The methods that run in the peers' environment (``peer_worker.py``'s).
PEER_METHODS = ("umap", "authors")


def venv_python(venv=VENV):
    return os.path.join(venv, "bin", "python")


def read_marker(venv=VENV):
    """The marker's contents, or None where the environment is not (fully)
    installed."""
    try:
        with open(os.path.join(venv, "peers-installed.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def installed_versions(python):
    """``{distribution: version}`` of ``PEERS_DISTRIBUTIONS`` as ``python``
    sees them (None for one not installed)."""
    code = ("import json, importlib.metadata as m\n"
            "out = {}\n"
            f"for name in {list(PEERS_DISTRIBUTIONS)!r}:\n"
            "    try:\n"
            "        out[name] = m.version(name)\n"
            "    except m.PackageNotFoundError:\n"
            "        out[name] = None\n"
            "print(json.dumps(out))")
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def ensure(venv=VENV, requirements=PEERS_REQUIREMENTS, quiet=False):
    """The peers' environment's Python, creating and installing the
    environment first where its marker is missing or names other
    requirements. Returns the marker (``requirements``, ``versions``,
    ``python``)."""
    marker = read_marker(venv)
    if marker and marker.get("requirements") == list(requirements) and os.path.exists(
            venv_python(venv)):
        return marker
    log = (lambda *a: None) if quiet else (lambda *a: print(*a, file=sys.stderr, flush=True))
    if not os.path.exists(venv_python(venv)):
        log(f"peers: creating {venv} (python -m venv)")
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    log(f"peers: pip install {' '.join(requirements)} (a few minutes, once)")
    subprocess.run([venv_python(venv), "-m", "pip", "install", *(["-q"] if quiet else []),
                    *requirements], check=True)
    versions = installed_versions(venv_python(venv))
    missing = [name for name in ("torch", "spectralnet", "umap-learn") if not versions.get(name)]
    if missing:
        raise RuntimeError(f"peers: {', '.join(missing)} not installed in {venv} after pip")
    marker = {"requirements": list(requirements), "versions": versions,
              "python": subprocess.run([venv_python(venv), "-c",
                                        "import sys; print(sys.version.split()[0])"],
                                       capture_output=True, text=True).stdout.strip()}
    with open(os.path.join(venv, "peers-installed.json"), "w") as f:
        json.dump(marker, f, indent=1)
    log(f"peers: installed {versions}")
    return marker


def write_data(path, x, k):
    """The worker's input: ``x`` float32 (n, d) and ``k``; no labels."""
    np.savez(path, x=np.asarray(x, np.float32), k=np.int64(k))


def read_result(path):
    """The worker's output, its keys checked and its labels an int array
    (that there is one per row is ``run_peer``'s to check: it knows n)."""
    with open(path) as f:
        out = json.load(f)
    for key in ("method", "labels", "fit_seconds", "startup_seconds", "versions"):
        if key not in out:
            raise ValueError(f"peer worker output {path!r} has no {key!r}")
    out["labels"] = np.asarray(out["labels"], np.int64)
    return out


def run_peer(method, x, k, seed, python=None, options=None, timeout=None):
    """Run ``method`` of ``peer_worker.py`` on ``x`` in the peers'
    environment (or in ``python``) and return its output: ``labels``,
    ``fit_seconds`` (the fit and predict alone), ``startup_seconds`` (the
    worker's imports), ``versions``, ``params``. ``options``: a dict passed
    as ``--options JSON`` (the authors' package's keyword arguments, for
    the MNIST command). Raises ``RuntimeError`` with the worker's stderr
    tail where it fails."""
    python = python or venv_python()
    with tempfile.TemporaryDirectory(prefix="peers-") as tmp:
        data, out = os.path.join(tmp, "data.npz"), os.path.join(tmp, "out.json")
        write_data(data, x, k)
        cmd = [python, WORKER, method, data, out, "--seed", str(seed)]
        if options:
            cmd += ["--options", json.dumps(options)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, "PYTHONHASHSEED": str(seed)})
        if proc.returncode != 0 or not os.path.exists(out):
            tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-15:])
            raise RuntimeError(f"peer {method} failed (exit {proc.returncode}):\n{tail}")
        result = read_result(out)
    if len(result["labels"]) != len(x):
        raise ValueError(f"peer {method} gave {len(result['labels'])} labels for {len(x)} rows")
    return result


def main(argv=None):
    """``python -m harness.peers``: build (or find) the environment, print its marker."""
    import argparse

    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.parse_args(argv)
    print(json.dumps(ensure(), indent=1))


if __name__ == "__main__":
    main()
