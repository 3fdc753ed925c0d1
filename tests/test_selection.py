"""Unsupervised model selection (issue 18 item 1, paper Sec. 5): the choice
follows the label-free criterion alone, and the criteria are what they claim."""

import json
import re

import numpy as np
import pytest
import scipy.linalg
import scipy.sparse as sp
from sklearn.datasets import make_blobs

from spectralnet_tf import Schedule, SpectralNet

from spectralnet_tf.selection import (EigengapCriterion, UnsupervisedSearch, correlation,
                                      relative_eigengap, split_stability)
from spectralnet_tf.spectral import laplacian_matrix

FAST = dict(hidden_units=(32,), schedule=Schedule(max_epochs=2, steps_per_epoch=5), batch_size=128)


@pytest.fixture(scope="module")
def blobs():
    x, y = make_blobs(400, centers=[[0, 0], [6, 0], [0, 6]], cluster_std=0.6, random_state=0)
    return x.astype(np.float32), y


@pytest.fixture(scope="module")
def lr_search(blobs):
    x, y = blobs
    return UnsupervisedSearch(SpectralNet(n_clusters=3, random_state=0, **FAST),
                              {"schedule__learning_rate": [1e-4, 1e-3, 1e-2]}).fit(
                                  x, report_labels=y)


def test_the_choice_is_the_lowest_validation_loss_and_its_fitted_estimator(lr_search):
    losses = [t["val_loss"] for t in lr_search.trials_]
    assert lr_search.best_index_ == int(np.argmin(losses))
    assert lr_search.best_score_ == -min(losses)
    best = lr_search.best_estimator_
    assert best.schedule.learning_rate == lr_search.best_params_["schedule__learning_rate"]
    assert best.history_["val_loss"][-1] == min(losses)
    assert [t["params"] for t in lr_search.trials_] == [{"schedule__learning_rate": v}
                                                        for v in (1e-4, 1e-3, 1e-2)]


def test_labels_are_recorded_but_never_change_the_choice(blobs, lr_search):
    x, y = blobs
    wrong = np.random.default_rng(1).permutation(y)
    other = UnsupervisedSearch(SpectralNet(n_clusters=3, random_state=0, **FAST),
                               {"schedule__learning_rate": [1e-4, 1e-3, 1e-2]}).fit(
                                   x, report_labels=wrong)
    assert other.best_params_ == lr_search.best_params_
    assert [t["val_loss"] for t in other.trials_] == [t["val_loss"] for t in lr_search.trials_]
    assert [t["acc"] for t in other.trials_] != [t["acc"] for t in lr_search.trials_]
    accs = [t["acc"] for t in lr_search.trials_]
    assert lr_search.correlation_ == correlation([t["val_loss"] for t in lr_search.trials_], accs)


def test_correlation_is_pearson_and_spearman():
    c = correlation([1.0, 2.0, 3.0, 10.0], [0.9, 0.8, 0.7, 0.6])
    assert c["spearman"] == pytest.approx(-1.0) and c["trials"] == 4
    assert c["pearson"] == pytest.approx(np.corrcoef([1, 2, 3, 10], [0.9, 0.8, 0.7, 0.6])[0, 1])
    assert correlation([1.0, 2.0], [0.5, 0.6])["pearson"] is None


def test_settings_that_do_not_touch_the_hold_out_give_the_same_validation_loss(blobs):
    # patience cannot act within 2 epochs: the trials are the same run, so the
    # hold-out, its affinity and the weights are shared, and so is the loss.
    search = UnsupervisedSearch(SpectralNet(n_clusters=3, random_state=0, **FAST),
                                {"schedule__patience": [10, 20]}).fit(blobs[0])
    first, second = (t["val_loss"] for t in search.trials_)
    assert first == second and search.best_index_ == 0


def test_the_eigengap_is_the_normalized_laplacians_relative_gap(blobs):
    x, y = blobs
    search = UnsupervisedSearch(SpectralNet(n_clusters=3, random_state=0, **FAST),
                                {"affinity__n_nbrs": [5, 10]}, criterion="eigengap").fit(x)
    criterion = EigengapCriterion()
    criterion.prepare(x, np.random.default_rng(0))  # the subsample the search scored
    w = search.best_estimator_.affinity_.graph(criterion.subset_)
    vals = scipy.linalg.eigvalsh(laplacian_matrix(w, "normalized").toarray())
    trial = search.trials_[search.best_index_]
    assert trial["lambda_k"] == pytest.approx(vals[2], abs=1e-9)
    assert trial["eigengap"] == pytest.approx(1 - vals[2] / vals[3], abs=1e-6)
    # Three separated blobs: the third eigenvalue is near 0, the fourth is not.
    assert trial["eigengap"] > 0.9


def test_a_graph_in_more_than_k_pieces_has_no_eigengap():
    path = sp.diags([np.ones(4), np.ones(4)], [1, -1], shape=(5, 5))  # a path of 5 nodes
    pieces = sp.block_diag([path] * 5)
    assert relative_eigengap(pieces, 3)["eigengap"] == 0.0  # 5 pieces, k = 3
    five = relative_eigengap(pieces, 5)
    assert five["lambda_k"] == pytest.approx(0.0, abs=1e-9) and five["eigengap"] == pytest.approx(1.0)


@pytest.mark.parametrize("grid, criterion, message", [
    ({"affinity__n_nbrs": [5, 10]}, "val_loss",
     "criterion='val_loss' compares the validation loss of trials that share the affinity, "
     "the loss and the hold-out, but the search varies ['affinity__n_nbrs']"),
    ({"random_state": [0, 1]}, "eigengap", "param_grid must not vary 'random_state'"),
    ({"schedule__learning_rate": [1e-3]}, "loss",
     "criterion must be one of ['eigengap', 'val_loss']"),
    ({"gradient": ["plain", "projected"]}, "val_loss", "but the search varies ['gradient']"),
    ({"affinity__n_nbrs": [5, 10], "schedule__learning_rate": [1e-3, 1e-2]}, "eigengap",
     "criterion='eigengap' scores the affinity alone, so it cannot choose "
     "['schedule__learning_rate']"),
])
def test_bad_searches_are_refused_before_any_fit(blobs, grid, criterion, message):
    search = UnsupervisedSearch(SpectralNet(n_clusters=3, random_state=0, **FAST), grid,
                                criterion=criterion)
    with pytest.raises(ValueError, match=re.escape(message)):
        search.fit(blobs[0])
    assert not hasattr(search, "trials_")


def test_the_hold_out_must_be_fixed(blobs):
    with pytest.raises(ValueError, match="estimator.random_state must be an int, .* got random_state=None"):
        UnsupervisedSearch(SpectralNet(n_clusters=3),
                           {"schedule__learning_rate": [1e-3]}).fit(blobs[0])
    with pytest.raises(ValueError, match="n_iter must be None or an int >= 1, got n_iter=0"):
        UnsupervisedSearch(SpectralNet(n_clusters=3, random_state=0),
                           {"schedule__learning_rate": [1e-3]}, n_iter=0).fit(blobs[0])


def test_val_loss_refuses_a_siamese_net_trained_per_trial(blobs):
    search = UnsupervisedSearch(
        SpectralNet(n_clusters=3, random_state=0, affinity_embedding="siamese", **FAST),
        {"schedule__learning_rate": [1e-3, 1e-2]})
    with pytest.raises(ValueError, match="affinity_embedding='siamese' trains a new Siamese net "
                                         "in each; train one"):
        search.fit(blobs[0])


def test_a_single_value_is_not_a_varied_parameter(blobs):
    search = UnsupervisedSearch(SpectralNet(n_clusters=3, random_state=0, **FAST),
                                {"affinity__n_nbrs": [10],
                                 "schedule__learning_rate": [1e-3, 1e-2]}).fit(blobs[0])
    assert len(search.trials_) == 2


def test_a_diverged_trial_is_recorded_and_not_chosen(blobs, monkeypatch):
    real_fit = SpectralNet.fit

    def fit(self, X, *args, **kwargs):
        if self.schedule.learning_rate == 1e-2:
            raise FloatingPointError("SpectralNet failed in epoch 1: NaN")
        return real_fit(self, X, *args, **kwargs)

    monkeypatch.setattr(SpectralNet, "fit", fit)
    search = UnsupervisedSearch(SpectralNet(n_clusters=3, random_state=0, **FAST),
                                {"schedule__learning_rate": [1e-2, 1e-3]}).fit(blobs[0])
    failed, done = search.trials_
    assert failed["score"] == float("-inf") and "epoch 1: NaN" in failed["error"]
    assert search.best_index_ == 1 and search.best_params_ == {"schedule__learning_rate": 1e-3}


@pytest.mark.slow
def test_the_script_records_and_renders_a_search(load_script, monkeypatch, tmp_path, capsys):
    selection = load_script("selection")
    from harness import records

    monkeypatch.setattr(records, "RESULTS", str(tmp_path / "benchmarks" / "results"))
    monkeypatch.setitem(selection.GRIDS, "net", {"schedule__learning_rate": [1e-3, 1e-2]})
    from harness import configs
    monkeypatch.setitem(configs.CONFIGS, "digits", {
        "hidden_units": (32,), "schedule": Schedule(max_epochs=1, steps_per_epoch=3)})
    record = selection.main(["digits", "--grid", "net"])
    [path] = (tmp_path / "benchmarks" / "results").glob("*-selection-select-digits-net.json")
    saved = json.loads(path.read_text())
    assert saved["trials"] == json.loads(json.dumps(record["trials"]))
    assert saved["criterion"] == "val_loss" and saved["n"] == 1797
    capsys.readouterr()
    selection.main(["table", str(path)])
    out = capsys.readouterr().out
    chosen = saved["trials"][saved["best_index"]]
    assert f"**{chosen['val_loss']:.4g}**" in out and f"**{chosen['acc']:.4f}**" in out


def test_the_script_refuses_a_bad_subset_in_one_line(load_script, capsys):
    with pytest.raises(SystemExit) as exit_:
        load_script("selection").main(["mnist", "--grid", "net", "--n", "50"])
    assert exit_.value.code == 2
    assert "--n must be in [100, 70000], got 50" in capsys.readouterr().err


def test_split_stability_is_one_for_clusters_and_near_chance_for_one_gaussian():
    blobs, _ = make_blobs(600, centers=3, n_features=10, cluster_std=0.5, random_state=0)
    got = split_stability(blobs, 3, pairs=3)
    assert got["aris"] == [1.0, 1.0, 1.0] and got["stability"] == got["stability_min"] == 1.0
    # One Gaussian has no 3 clusters: each sample's cuts fall elsewhere.
    noise = split_stability(np.random.default_rng(0).normal(size=(600, 10)), 3, pairs=3)
    assert noise["stability"] < 0.3
    assert noise["stability_min"] == min(noise["aris"])
    assert noise["stability"] == pytest.approx(np.mean(noise["aris"]))
    assert split_stability(np.random.default_rng(0).normal(size=(600, 10)), 3,
                           pairs=3) == noise  # the same draws from the same random_state


def test_split_stability_uses_a_copy_of_the_affinity_given():
    from spectralnet_tf.affinity import GaussianKNNAffinity

    blobs, _ = make_blobs(300, centers=2, n_features=4, random_state=1)
    affinity = GaussianKNNAffinity(n_nbrs=5, scale="global")
    assert split_stability(blobs, 2, affinity=affinity, pairs=1)["stability"] == 1.0
    assert not hasattr(affinity, "scale_")  # the object given is left unfitted


@pytest.mark.parametrize("kwargs, message", [
    ({"k": 0}, "k must be an integer >= 1, got k=0."),
    ({"pairs": 1.5}, "pairs must be an integer >= 1, got pairs=1.5."),
    ({"fraction": 0}, "fraction must lie in (0, 1], got fraction=0."),
    ({"fraction": 0.01}, "fraction=0.01 of 300 rows leaves 3, not more than k=3: too few to "
                         "cluster."),
])
def test_split_stability_names_bad_arguments(kwargs, message):
    z = np.random.default_rng(0).normal(size=(300, 4))
    with pytest.raises(ValueError) as err:
        split_stability(z, **{"k": 3, **kwargs})
    assert str(err.value) == message


@pytest.mark.slow
@pytest.mark.research  # the harness command end to end: a dozen exact clusterings
def test_the_digits_validation_scores_each_code_space_by_both_criteria(load_script,
                                                                        monkeypatch):
    selection = load_script("selection")
    monkeypatch.setattr(selection, "DIGITS_CODES_GRID",
                        {"epochs": [1], "max_shift": [0.0, 1.0], "seed": [0]})
    record = selection.main(["digits-codes", "--no-record"])
    assert [t["params"] for t in record["trials"]] == [
        {"epochs": 1, "max_shift": 0.0, "seed": 0}, {"epochs": 1, "max_shift": 1.0, "seed": 0}]
    for t in record["trials"]:
        assert 0 < t["acc"] <= 1 and -1 <= t["stability_min"] <= t["stability"] <= 1
        assert t["stability"] == pytest.approx(np.mean(t["aris"])) and len(t["aris"]) == 5
    assert record["best_index"] == int(np.argmax([t["stability"] for t in record["trials"]]))
    assert record["correlation"]["trials"] == record["correlation_eigengap"]["trials"] == 2


def test_autoencoders_are_compared_on_the_same_digits(load_script):
    from spectralnet_tf.resources import pretrained_path, sha256

    from harness.reproduce import AE_ALL, AE_TRAIN60K

    files = [pretrained_path(AE_TRAIN60K), pretrained_path(AE_ALL)]
    record = load_script("selection").main(["codes", "--split", "train", "--n", "400",
                                            "--no-record", files[0], files[1], files[0]])
    first, second, again = record["trials"]
    assert first == again  # the same file on the same digits: the same figures
    assert [t["params"]["sha256"] for t in record["trials"]] == [sha256(f)[:12] for f in files + files[:1]]
    assert record["best_index"] == int(np.argmax([t["eigengap"] for t in record["trials"]]))
    assert record["correlation"]["trials"] == 3
    # By split stability: the same digits, the same graphs, another choice rule.
    by_stability = load_script("selection").main(
        ["codes", "--split", "train", "--n", "400", "--no-record", "--criterion", "stability",
         files[1], files[0]])
    assert by_stability["criterion"] == "stability"
    assert [t["acc"] for t in by_stability["trials"]] == [second["acc"], first["acc"]]
    assert by_stability["best_index"] == int(np.argmax(
        [t["stability"] for t in by_stability["trials"]]))


def test_a_tagged_code_comparison_keeps_the_untagged_record(load_script, monkeypatch, tmp_path,
                                                            capsys):
    from spectralnet_tf.resources import pretrained_path

    selection = load_script("selection")
    from harness import records

    monkeypatch.setattr(records, "RESULTS", str(tmp_path / "benchmarks" / "results"))
    from harness.reproduce import AE_ALL

    weights = pretrained_path(AE_ALL)
    base = ["codes", "--split", "train", "--n", "200", weights]
    selection.main(base)
    selection.main([*base, "--tag", "second"])
    names = sorted(p.name[11:] for p in (tmp_path / "benchmarks" / "results").glob("*.json"))
    assert names == ["selection-select-codes-train-second.json", "selection-select-codes-train.json"]
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        selection.main([*base, "--tag", "a/b"])
    assert exit_.value.code == 2
    assert ("--tag must be a name of letters, digits, '_', '.' or '-', got --tag 'a/b'"
            in capsys.readouterr().err)
