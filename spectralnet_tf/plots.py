"""PNG figures as in the paper's Appendix A (nested C's figure)."""

import matplotlib

matplotlib.use("Agg")  # headless: files only
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from sklearn.decomposition import PCA  # noqa: E402


def _points_2d(x):
    return x[:, :2] if x.shape[1] <= 3 else PCA(2, random_state=0).fit_transform(x)


def plot_clusters(path, x, panels):
    """Side-by-side scatter plots; ``panels`` maps a title to labels.

    3-D data is drawn in 3-D; higher dimensions are projected by PCA.
    """
    fig = plt.figure(figsize=(4 * len(panels), 4))
    three_d = x.shape[1] == 3
    pts = x if three_d else _points_2d(x)
    for i, (title, labels) in enumerate(panels.items()):
        ax = fig.add_subplot(1, len(panels), i + 1, projection="3d" if three_d else None)
        ax.scatter(*pts.T, c=labels, s=3, cmap="tab10")
        ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def align(y, v):
    """y @ R with R the least-squares map onto v (the net's outputs span the
    eigenvectors' subspace only up to an invertible k×k map)."""
    r, *_ = np.linalg.lstsq(y, v, rcond=None)
    return y @ r


def plot_eigenvectors(path, y, v, max_cols=4):
    """Network outputs (aligned) against the true eigenvectors, point by point,
    points sorted by cluster of the first non-constant eigenvector."""
    y_al = align(y, v)
    k = min(v.shape[1], max_cols)
    order = np.lexsort(v[:, ::-1].T[-k:])
    fig, axes = plt.subplots(1, k, figsize=(4 * k, 3), squeeze=False)
    for j, ax in enumerate(axes[0]):
        ax.plot(v[order, j], lw=2, label="true eigenvector")
        ax.plot(y_al[order, j], lw=1, label="SpectralNet")
        ax.set_title(f"eigenvector {j + 1}")
    axes[0, 0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def plot_training(path, history):
    """Loss, validation loss and (if known) Grassmann distance per iteration."""
    fig, ax = plt.subplots(figsize=(6, 4))
    it = history["iteration"]
    ax.semilogy(it, np.maximum(history["loss"], 1e-12), label="loss")
    ax.semilogy(it, np.maximum(history["val_loss"], 1e-12), label="validation loss")
    if history.get("grassmann"):
        ax.semilogy(it, np.maximum(history["grassmann"], 1e-12), label="Grassmann distance")
    ax.set_xlabel("iteration (ortho + gradient step)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
