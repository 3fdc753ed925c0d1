import gzip
import hashlib
import os

import h5py
import numpy as np
import pytest

from harness import reproduce as cli
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


@pytest.mark.slow
@pytest.mark.research
def test_synthetic_corpus_end_to_end_clusters_above_chance(tmp_path, load_script):
    """Token files -> make_reuters.py -> pretrain_ae.py --dset reuters ->
    spectralnet --dset reuters --split (streamed from the HDF5, code space, Siamese)."""
    _write_corpus(str(tmp_path / "src"), n_docs=600)
    data_dir = tmp_path / "data"
    load_script("make_reuters").main(["--src", str(tmp_path / "src"),
                                      "--out", str(data_dir / "reuters.h5")])
    ae = str(tmp_path / "ae_reuters.h5")
    provenance = load_script("pretrain_ae").main(
        ["--dset", "reuters", "--data-dir", str(data_dir), "--epochs", "30", "--out", ae,
         "--checkpoint-dir", str(tmp_path / "ae_ckpt"), "--quiet"])
    assert provenance["architecture"].startswith("121-500-500-2000-10")  # 4x30 words + "the"
    results = cli.run_command(
        ["--dset", "reuters", "--data-dir", str(data_dir), "--ae-weights", ae, "--split",
         "--out", str(tmp_path / "run"), "--batch-size", "128", "--epochs", "20",
         "--siamese-epochs", "20", "--no-plots", "--quiet"])
    assert results["space"] == "code" and results["affinity"] == "siamese"
    with open(ae, "rb") as f:  # the result names the autoencoder it used
        assert results["autoencoder"] == {"file": "ae_reuters.h5",
                                          "sha256": hashlib.sha256(f.read()).hexdigest()}
    assert results["config"]["hidden_units"] == [512, 256]  # the paper's Reuters net
    assert 0.05 < results["n_test"] / (results["n"] + results["n_test"]) < 0.15
    # Four topics with distinct vocabularies: chance is about 0.25, and the
    # topics are separable, so nearly every document should be placed right.
    assert results["acc"] > 0.9 and results["test_acc"] > 0.9
