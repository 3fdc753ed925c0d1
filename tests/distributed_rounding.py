"""How far one and two logical CPUs part, per variant and draw of the moons:
the measurement that sized the tolerances of ``test_distribute.py``.

    python tests/distributed_rounding.py OUT_DIR --draws 0 1 2 3 4 5 6 7

Runs ``distributed_fit.py`` on one and on two devices for each draw, and
prints, per draw and variant, the largest differences the tests compare:
weights (absolute), the Orthonorm kernel (relative to its largest entry),
the losses and the warm start's values (relative), labels that differ.
"""

import argparse
import os
import subprocess
import sys

import numpy as np

from cluster_runs import run_env

FIT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "distributed_fit.py")
VARIANTS = ["knn", "labels", "normalized-local", "full", "spectral-init", "spectral-undo",
            "groups"]


def relative(a, b):
    return float((np.abs(a - b) / np.abs(a)).max())


def differences(one, two):
    weights = sorted((k for k in one.files if k.startswith("weight")), key=lambda k: int(k[6:]))
    kernel = one[weights[-1]]
    out = {"weight": max(float(np.abs(two[k] - one[k]).max()) for k in weights[:-1]),
           "kernel": float(np.abs(two[weights[-1]] - kernel).max() / np.abs(kernel).max())}
    for key in ("loss", "val_loss", "init_grassmann", "start_distance", "group_weight"):
        if key in one.files:
            out[key] = relative(one[key], two[key])
    out["labels differing"] = int((two["labels"] != one["labels"]).sum())
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--draws", type=int, nargs="+", default=[0])
    args = parser.parse_args()
    for draw in args.draws:
        runs = []
        for devices in (1, 2):
            folder = os.path.join(args.out, f"draw{draw}-devices{devices}")
            subprocess.run([sys.executable, FIT, folder, "--devices", str(devices), "--draw",
                            str(draw), "--variants", *VARIANTS], env=run_env(), check=True,
                           capture_output=True)
            runs.append(folder)
        for variant in VARIANTS:
            one, two = (np.load(os.path.join(folder, f"{variant}.npz")) for folder in runs)
            figures = ", ".join(f"{k} {v:.2g}" for k, v in differences(one, two).items())
            print(f"draw {draw} {variant}: {figures}", flush=True)


if __name__ == "__main__":
    main()
