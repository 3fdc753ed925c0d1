import gzip
import os

import h5py
import numpy as np
import pytest

from spectralnet_tf.reuters import CATEGORIES, QRELS_FILE, TOKEN_FILES, make_reuters

VOCAB = {c: [f"{c.lower()}word{i}" for i in range(30)] for c in CATEGORIES}


def _write_corpus(src, n_docs=400, seed=0):
    """A small corpus in the RCV1-v2 token and qrels formats: four topics with
    distinct vocabularies, a shared common word, and some multi-topic documents."""
    rng = np.random.default_rng(seed)
    os.makedirs(src, exist_ok=True)
    qrels, docs = [], {name: [] for name in TOKEN_FILES}
    truth = {}
    for doc in range(1, n_docs + 1):
        cat = CATEGORIES[rng.integers(4)]
        words = list(rng.choice(VOCAB[cat], size=20)) + ["the"] * 5
        qrels.append(f"{cat} {doc} 1")
        qrels.append(f"C15 {doc} 1")  # a sub-topic: not one of the four
        if doc % 10 == 0:  # multi-labeled: must be dropped
            qrels.append(f"{CATEGORIES[(CATEGORIES.index(cat) + 1) % 4]} {doc} 1")
        else:
            truth[doc] = CATEGORIES.index(cat)
        lines = [" ".join(words[i:i + 8]) for i in range(0, len(words), 8)]
        docs[TOKEN_FILES[doc % len(TOKEN_FILES)]].append(f".I {doc}\n.W\n" + "\n".join(lines) + "\n")
    with open(os.path.join(src, QRELS_FILE), "w") as f:
        f.write("\n".join(qrels) + "\n")
    for i, (name, texts) in enumerate(docs.items()):
        opener = gzip.open if i == 0 else open  # the published files come gzipped
        with opener(os.path.join(src, name + (".gz" if i == 0 else "")), "wt") as f:
            f.write("\n".join(texts))
    return truth


def test_make_reuters_keeps_single_category_documents_as_tfidf(tmp_path):
    truth = _write_corpus(str(tmp_path / "src"))
    out = str(tmp_path / "reuters.h5")
    shape = make_reuters(str(tmp_path / "src"), out, n_words=50, chunk_rows=64)
    with h5py.File(out, "r") as f:
        data, labels = f["data"][:], f["labels"][:]
        vocab = [w.decode() for w in f.attrs["vocabulary"]]
    assert data.dtype == np.float32 and shape == data.shape == (len(truth), 50)
    assert sorted(np.bincount(labels)) == sorted(np.bincount(list(truth.values())))
    np.testing.assert_allclose(np.linalg.norm(data, axis=1), 1.0, rtol=1e-5)
    assert vocab[0] == "the"  # the most frequent word comes first
    # Each document's weight lies on its own topic's words.
    for row, label in zip(data[:50], labels[:50]):
        own = [vocab.index(w) for w in VOCAB[CATEGORIES[label]] if w in vocab]
        assert row[own].sum() > 0.9 * row.sum() - row[vocab.index("the")]


def test_missing_files_are_listed_with_their_source(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"lacks rcv1-v2.topics.qrels.*lyrl2004_tokens_train.dat.*JMLR"):
        make_reuters(str(tmp_path), str(tmp_path / "out.h5"))
    assert not (tmp_path / "out.h5").exists()
