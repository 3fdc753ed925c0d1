"""PNG figures: clusters as in the paper's Appendix A (nested C's figure), the
embedding, the Laplacian's spectrum, and for image data sample images per
cluster and the confusion matrix against the labels.

matplotlib (Agg backend, files only) is loaded with this module: callers
import it only when they write plots.
"""

import matplotlib

matplotlib.use("Agg")  # headless: files only
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from sklearn.decomposition import PCA  # noqa: E402

#: A scatter of more points than this shows a random subset of them.
MAX_SCATTER_POINTS = 10000


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


def subset(n, max_points, seed=0):
    """Sorted random row indices, at most ``max_points`` of ``n``."""
    if n <= max_points:
        return np.arange(n)
    return np.sort(np.random.default_rng(seed).choice(n, max_points, replace=False))


def plot_embedding(path, embedding, labels, max_panels=5, max_points=MAX_SCATTER_POINTS):
    """The embedding's coordinates in pairs (1 against 2, 3 against 4, ...),
    points coloured by cluster. SpectralNet's coordinates approximate the
    Laplacian's smallest eigenvectors, which are near-constant on each
    cluster, so clusters show as separate blobs; with k > 2 each pair
    separates some of them."""
    embedding, labels = np.asarray(embedding), np.asarray(labels)
    keep = subset(len(embedding), max_points)
    y, c = embedding[keep], labels[keep]
    k = y.shape[1]
    pairs = [(j, j + 1) for j in range(0, k - 1, 2)][:max_panels] or [(0, 0)]
    if k % 2 and len(pairs) < max_panels and k > 1:  # the odd last coordinate against the first
        pairs.append((k - 1, 0))
    # Cluster i gets the i-th colour of a qualitative map, whatever k is.
    size = 10 if c.max() < 10 else 20
    colours = ({"cmap": f"tab{size}", "vmin": 0, "vmax": size - 1} if c.max() < 20
               else {"cmap": "viridis"})
    fig, axes = plt.subplots(1, len(pairs), figsize=(4 * len(pairs), 4), squeeze=False)
    for ax, (a, b) in zip(axes[0], pairs):
        scatter = ax.scatter(y[:, a], y[:, b], c=c, s=3, **colours)
        ax.set_xlabel(f"coordinate {a + 1}")
        ax.set_ylabel(f"coordinate {b + 1}")
    axes[0, 0].legend(*scatter.legend_elements(), title="cluster", fontsize="small",
                      markerscale=0.8, loc="best")
    shown = f" ({len(keep)} of {len(embedding)} points)" if len(keep) < len(embedding) else ""
    fig.suptitle(f"SpectralNet embedding, coloured by cluster{shown}")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def plot_spectrum(path, eigenvalues, k, n_points=None, n_total=None, runner_up=None,
                  laplacian=None):
    """The Laplacian's smallest eigenvalues (ascending), k marked: a gap after
    the k-th eigenvalue says the graph has about k clusters. ``n_points`` of
    ``n_total`` points made the graph (for the title). With ``runner_up``
    (k chosen by the eigengap), the second candidate is marked too, and the
    eigenvalues are drawn on a log scale, where the gap is measured."""
    values = np.asarray(eigenvalues)
    fig, ax = plt.subplots(figsize=(6, 4))
    idx = np.arange(1, len(values) + 1)
    if runner_up is not None:
        from .nclusters import EIGENVALUE_FLOOR

        values = np.maximum(values, EIGENVALUE_FLOOR)
        ax.set_yscale("log")
    ax.plot(idx, values, "o-", ms=4)
    ax.axvline(k + 0.5, color="C3", ls="--",
               label=f"k = {k}" + (" (largest eigengap)" if runner_up is not None else ""))
    if runner_up is not None:
        ax.axvline(runner_up + 0.5, color="C7", ls=":", label=f"runner-up: {runner_up}")
    ax.set_xlabel("index")
    ax.set_ylabel("eigenvalue")
    ax.set_xticks(idx if len(idx) <= 30 else idx[::max(1, len(idx) // 15)])
    if not n_points:
        on = ""
    elif n_points == n_total or not n_total:
        on = f"\n(the graph of all {n_points} points)"
    else:
        on = f"\n(the graph of {n_points} random points of {n_total})"
    which = f"{laplacian} graph Laplacian" if laplacian else "graph Laplacian"
    ax.set_title(f"Smallest eigenvalues of the {which}{on}", fontsize=10)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def plot_cluster_images(path, rows, labels, image_shape, per_cluster=12, seed=0):
    """A grid of sample images: one row per cluster, ``per_cluster`` random
    members each. ``rows`` is any row source that slices (numpy, h5py, lazy
    rows); only the shown rows are read."""
    labels = np.asarray(labels)
    clusters = np.unique(labels)
    rng = np.random.default_rng(seed)
    fig, axes = plt.subplots(len(clusters), per_cluster, squeeze=False,
                             figsize=(0.8 * per_cluster, 0.8 * len(clusters) + 0.4))
    for r, cluster in enumerate(clusters):
        members = np.flatnonzero(labels == cluster)
        shown = np.sort(rng.choice(members, min(per_cluster, len(members)), replace=False))
        for c, ax in enumerate(axes[r]):
            ax.set_xticks([])
            ax.set_yticks([])
            for side in ax.spines.values():
                side.set_visible(False)
            if c < len(shown):
                i = int(shown[c])
                ax.imshow(np.asarray(rows[i:i + 1], dtype=np.float32).reshape(image_shape),
                          cmap="gray_r")
        axes[r, 0].set_ylabel(f"{cluster}\n({len(members)})", rotation=0, ha="right",
                              va="center", fontsize=8)
    fig.suptitle("Random members of each cluster (cluster id, size)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def plot_confusion(path, labels_true, labels_pred):
    """Counts of each true label (rows) in each cluster (columns); clusters are
    ordered by the label ACC matches them to, so the matched pairs lie on the
    diagonal."""
    from sklearn.metrics.cluster import contingency_matrix

    from .metrics import acc, matched

    labels_true, labels_pred = np.asarray(labels_true), np.asarray(labels_pred)
    names, clusters = np.unique(labels_true), np.unique(labels_pred)
    renamed = matched(labels_true, labels_pred)
    label_of = [renamed[np.argmax(labels_pred == c)] for c in clusters]
    order = np.argsort(label_of, kind="stable")
    counts = contingency_matrix(labels_true, labels_pred)[:, order]
    fig, ax = plt.subplots(figsize=(1 + 0.55 * len(clusters), 1 + 0.5 * len(names)))
    ax.imshow(counts, cmap="Blues")
    for (i, j), v in np.ndenumerate(counts):
        ax.text(j, i, str(v), ha="center", va="center", fontsize=7,
                color="white" if v > counts.max() / 2 else "black")
    ax.set_xticks(range(len(clusters)), [str(c) for c in clusters[order]])
    ax.set_yticks(range(len(names)), [str(v) for v in names])
    ax.set_xlabel("cluster")
    ax.set_ylabel("label")
    ax.set_title(f"Labels against clusters (ACC {acc(labels_true, labels_pred):.3f})")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
