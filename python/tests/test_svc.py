"""fwsvm.SVC against the command line and scikit-learn's expectations.

Run by `cargo test --release` (tests/python.rs), which passes the CLI binary in FWSVM_BIN.
"""
import lzma
import os
import pickle
import subprocess
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import fwsvm

ROOT = Path(__file__).resolve().parents[2]
HEART = ROOT / "data" / "heart_scale.xz"


def heart():
    from sklearn.datasets import load_svmlight_file

    with lzma.open(HEART) as f:
        X, y = load_svmlight_file(f, n_features=13)
    return X, y


def cli(*args):
    exe = os.environ.get("FWSVM_BIN") or str(ROOT / "target" / "release" / "fwsvm")
    subprocess.run([exe, *map(str, args)], check=True, capture_output=True)


def test_fit_gives_the_cli_model_and_labels(tmp_path):
    X, y = heart()
    clf = fwsvm.SVC(C=2.0, gamma=0.05).fit(X, y)
    model = tmp_path / "cli.model"
    cli("train", "-q", "--backend", "cpu", "-c", 2, "-g", 0.05, HEART, model)
    assert clf._native.to_libsvm() == model.read_text()
    pred = tmp_path / "cli.pred"
    cli("predict", "-q", HEART, model, pred)
    assert np.array_equal(clf.predict(X), np.loadtxt(pred))
    assert clf.n_iter_.shape == (1,) and clf.certified_gap_[0] <= 1e-4
    assert clf.stop_reason_[0].startswith("converged")


def test_dense_csr_and_fortran_inputs_give_the_same_model():
    X, y = heart()
    texts = set()
    for data in (X, X.toarray(), np.asfortranarray(X.toarray()), X.toarray().astype(np.float32),
                 sp.csc_matrix(X)):
        texts.add(fwsvm.SVC(C=1.0, gamma=0.1).fit(data, y)._native.to_libsvm())
    assert len(texts) == 1


def test_probabilities_match_the_cli(tmp_path):
    X, y = heart()
    clf = fwsvm.SVC(C=1.0, gamma=0.05, probability=True).fit(X, y)
    p = clf.predict_proba(X)
    assert p.shape == (X.shape[0], 2) and np.allclose(p.sum(axis=1), 1.0)
    model, out = tmp_path / "p.model", tmp_path / "p.out"
    cli("train", "-q", "--backend", "cpu", "-b", 1, "-c", 1, "-g", 0.05, HEART, model)
    cli("predict", "-q", "-b", 1, HEART, model, out)
    lines = out.read_text().splitlines()
    order = [float(v) for v in lines[0].split()[1:]]
    theirs = np.array([[float(v) for v in l.split()[1:]] for l in lines[1:]])
    cols = [list(clf.classes_).index(c) for c in order]
    assert np.allclose(p[:, cols], theirs, atol=1e-12)
    assert np.allclose(np.exp(clf.predict_log_proba(X[:5])), p[:5])


def test_decision_function_sign_follows_scikit_learn():
    X, y = heart()
    clf = fwsvm.SVC(C=1.0, gamma=0.05).fit(X, y)
    d = clf.decision_function(X)
    assert np.array_equal(np.where(d > 0, clf.classes_[1], clf.classes_[0]), clf.predict(X))


def test_string_labels_and_many_classes():
    rng = np.random.default_rng(3)
    X = np.vstack([rng.normal(c, 0.3, size=(40, 2)) for c in ((0, 0), (3, 0), (0, 3))])
    y = np.repeat(np.array(["b", "a", "c"]), 40)
    clf = fwsvm.SVC(C=10.0).fit(X, y)
    assert list(clf.classes_) == ["a", "b", "c"]
    assert clf.score(X, y) > 0.95
    assert clf.decision_function(X).shape == (120, 3)
    assert clf.n_support_.sum() == clf.support_vectors_.shape[0]


def test_pickle_round_trip():
    X, y = heart()
    clf = fwsvm.SVC(C=1.0, gamma=0.05, probability=True).fit(X, y)
    back = pickle.loads(pickle.dumps(clf))
    assert np.array_equal(back.predict(X), clf.predict(X))
    assert np.allclose(back.predict_proba(X), clf.predict_proba(X))


def test_grid_search_and_pipeline():
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = heart()
    X = X.toarray()
    grid = GridSearchCV(fwsvm.SVC(), {"C": [0.5, 2.0], "gamma": [0.02, 0.1]}, cv=3).fit(X, y)
    assert grid.best_score_ > 0.75
    pipe = make_pipeline(StandardScaler(), fwsvm.SVC(C=1.0)).fit(X, y)
    assert pipe.score(X, y) > 0.8


@pytest.mark.parametrize(
    "X, y, says",
    [
        (np.array([[0.0, np.nan], [1.0, 2.0]]), [0, 1], "NaN"),
        (np.ones((4, 2)), [1, 1, 1, 1], "single class"),
        (np.ones((4, 2)), [0, 1, 0], "inconsistent"),
        (np.array([["a", "b"], ["c", "d"]]), [0, 1], "float"),
    ],
)
def test_bad_inputs_raise_value_error(X, y, says):
    with pytest.raises(ValueError, match=says):
        fwsvm.SVC().fit(X, y)


def test_predict_checks_the_feature_count():
    X, y = heart()
    clf = fwsvm.SVC(C=1.0, gamma=0.05).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        clf.predict(np.ones((2, 5)))


def test_class_weight_balanced_and_dict():
    X, y = heart()
    plain = fwsvm.SVC(C=1.0, gamma=0.05).fit(X, y)
    heavy = fwsvm.SVC(C=1.0, gamma=0.05, class_weight={1.0: 5.0}).fit(X, y)
    assert (heavy.predict(X) == 1.0).sum() > (plain.predict(X) == 1.0).sum()
    fwsvm.SVC(C=1.0, gamma=0.05, class_weight="balanced").fit(X, y)


def test_options_not_wired_yet_are_refused_and_verbose_reports(capsys):
    X, y = heart()
    for bad in ({"backend": "gpu"}, {"n_jobs": 2}, {"precision": "f64"}):
        with pytest.raises(ValueError, match="not available from Python yet"):
            fwsvm.SVC(**bad).fit(X, y)
    fwsvm.SVC(C=1.0, gamma=0.05, verbose=True).fit(X, y)
    assert "certified gap" in capsys.readouterr().err


def test_save_and_load_round_trip_with_the_cli(tmp_path):
    X, y = heart()
    clf = fwsvm.SVC(C=1.0, gamma=0.05, probability=True).fit(X, y)
    path = tmp_path / "py.model"
    clf.save(path)
    back = fwsvm.SVC.load(path)
    assert np.array_equal(back.predict(X), clf.predict(X))
    assert np.allclose(back.predict_proba(X), clf.predict_proba(X))
    assert np.allclose(back.decision_function(X), clf.decision_function(X))
    out = tmp_path / "cli.pred"
    cli("predict", "-q", HEART, path, out)
    assert np.array_equal(np.loadtxt(out), clf.predict(X))
