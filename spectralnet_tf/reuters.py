"""The Reuters (RCV1-v2) data set of the paper's Sec. 5.2, as in DEC and VaDE:
documents with exactly one of the four top categories CCAT, GCAT, MCAT, ECAT
(labels 0..3), as tf-idf vectors over the 2000 most frequent words, stored as
float32 HDF5 (``data``, ``labels``) written in chunks.

The source files are RCV1-v2's token files and topic qrels (Lewis, Yang, Rose
and Li, JMLR 5, 2004, online appendices 8 and 12). Both are read line by line;
the count matrix is sparse; only one chunk of rows is ever dense (float32).
"""

import array
import collections
import gzip
import os

import h5py
import numpy as np
import scipy.sparse as sp
from sklearn.feature_extraction.text import TfidfTransformer

from .atomic import atomic_file

TOKEN_FILES = tuple(f"lyrl2004_tokens_test_pt{i}.dat" for i in range(4)) + ("lyrl2004_tokens_train.dat",)
QRELS_FILE = "rcv1-v2.topics.qrels"
CATEGORIES = ("CCAT", "GCAT", "MCAT", "ECAT")
SOURCE = ("RCV1-v2 (Lewis et al., JMLR 5, 2004), online appendices 8 (topic qrels) and 12 "
          "(token files): http://www.ai.mit.edu/projects/jmlr/papers/volume5/lewis04a/"
          "lyrl2004_rcv1v2_README.htm")


def _find(src, name):
    """``name`` or ``name.gz`` in ``src``, or None."""
    for candidate in (name, name + ".gz"):
        path = os.path.join(src, candidate)
        if os.path.exists(path):
            return path
    return None


def source_files(src):
    """Paths of the qrels and the token files; a clear error if any is missing."""
    names = (QRELS_FILE, *TOKEN_FILES)
    paths = {name: _find(src, name) for name in names}
    missing = [name for name, path in paths.items() if path is None]
    if missing:
        raise FileNotFoundError(
            f"--src {src} lacks {', '.join(missing)} (plain or .gz). Needed: "
            f"{', '.join(names)}. They are published with {SOURCE}; this program "
            "cannot download them, so fetch them once into that folder."
        )
    return paths[QRELS_FILE], [paths[name] for name in TOKEN_FILES]


def _open(path):
    return gzip.open(path, "rt") if path.endswith(".gz") else open(path)


def read_labels(qrels_path):
    """docid -> label for documents with exactly one of the four categories."""
    cats = collections.defaultdict(set)
    with _open(qrels_path) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 2 and parts[0] in CATEGORIES:
                cats[int(parts[1])].add(parts[0])
    return {doc: CATEGORIES.index(next(iter(c))) for doc, c in cats.items() if len(c) == 1}


def iter_documents(token_paths):
    """(docid, tokens) for every document of the token files, streamed."""
    for path in token_paths:
        doc, tokens = None, []
        with _open(path) as f:
            for line in f:
                if line.startswith(".I "):
                    if doc is not None:
                        yield doc, tokens
                    doc, tokens = int(line.split()[1]), []
                elif not line.startswith(".W"):
                    tokens.extend(line.split())
        if doc is not None:
            yield doc, tokens


def make_reuters(src, out, n_words=2000, chunk_rows=10000):
    """Build ``out`` (HDF5: ``data`` float32 (n, n_words), ``labels`` int64 (n,))."""
    qrels, token_paths = source_files(src)
    labels_of = read_labels(qrels)
    counts = collections.Counter()
    for doc, tokens in iter_documents(token_paths):
        if doc in labels_of:
            counts.update(tokens)
    vocab = {w: i for i, (w, _) in enumerate(counts.most_common(n_words))}
    # Typed arrays, not lists: 4-8 bytes a nonzero instead of a Python object each.
    indptr, indices, values, labels = array.array("q", [0]), array.array("i"), \
        array.array("f"), array.array("q")
    for doc, tokens in iter_documents(token_paths):
        if doc not in labels_of:
            continue
        row = collections.Counter(vocab[t] for t in tokens if t in vocab)
        indices.extend(row.keys())
        values.extend(row.values())
        indptr.append(len(indices))
        labels.append(labels_of[doc])
    matrix = sp.csr_matrix(
        (np.frombuffer(values, np.float32), np.frombuffer(indices, np.int32),
         np.frombuffer(indptr, np.int64)),
        shape=(len(labels), len(vocab)),
    )
    tfidf = TfidfTransformer(norm="l2").fit_transform(matrix).astype(np.float32).tocsr()
    with atomic_file(out, "wb") as f, h5py.File(f, "w") as h5:
        data = h5.create_dataset("data", shape=tfidf.shape, dtype="float32",
                                 chunks=(min(chunk_rows, max(1, tfidf.shape[0])), tfidf.shape[1]))
        for start in range(0, tfidf.shape[0], chunk_rows):
            data[start:start + chunk_rows] = tfidf[start:start + chunk_rows].toarray()
        h5.create_dataset("labels", data=np.asarray(labels, np.int64))
        h5.attrs["categories"] = np.array([c.encode() for c in CATEGORIES])
        h5.attrs["vocabulary"] = np.array([w.encode() for w in vocab])
    return tfidf.shape
