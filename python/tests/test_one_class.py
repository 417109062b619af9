"""fwsvm.OneClassSVM against the command line's `train -s 2`."""
import pickle

import numpy as np
import pytest

import fwsvm
from test_svc import HEART, cli, heart


def test_fit_gives_the_cli_model_and_labels(tmp_path):
    X, _ = heart()
    oc = fwsvm.OneClassSVM(C=0.5, gamma=0.05).fit(X)
    model = tmp_path / "oc.model"
    cli("train", "-q", "--backend", "cpu", "-s", 2, "-c", 0.5, "-g", 0.05, HEART, model)
    assert oc._native.to_libsvm() == model.read_text()
    pred = tmp_path / "oc.pred"
    cli("predict", "-q", HEART, model, pred)
    assert np.array_equal(oc.predict(X), np.loadtxt(pred).astype(int))
    assert set(np.unique(oc.predict(X))) <= {-1, 1}


def test_scores_offset_and_support():
    from sklearn.metrics.pairwise import rbf_kernel

    X, _ = heart()
    oc = fwsvm.OneClassSVM(C=0.5, gamma=0.05).fit(X)
    d = oc.decision_function(X)
    assert np.allclose(oc.score_samples(X) - oc.offset_, d)
    assert np.array_equal(np.where(d > 0, 1, -1), oc.predict(X))
    manual = (oc.dual_coef_ @ rbf_kernel(oc.support_vectors_, X, gamma=0.05)).ravel()
    assert np.allclose(manual + oc.intercept_, d, atol=1e-6)
    # The points outside the ball are the support vectors.
    outside = np.flatnonzero(d < -1e-9)
    assert set(outside) <= set(oc.support_)
    # Smaller C lets more of the training data lie outside.
    loose = fwsvm.OneClassSVM(C=0.05, gamma=0.05).fit(X)
    assert (loose.predict(X) < 0).sum() > (oc.predict(X) < 0).sum()


def test_save_load_and_pickle(tmp_path):
    X, _ = heart()
    oc = fwsvm.OneClassSVM(C=0.5, gamma=0.05).fit(X)
    path = tmp_path / "oc.model"
    oc.save(path)
    back = fwsvm.OneClassSVM.load(path)
    assert np.allclose(back.decision_function(X), oc.decision_function(X))
    with pytest.raises(ValueError, match="one-class"):
        fwsvm.SVC.load(path)
    svc_path = tmp_path / "svc.model"
    fwsvm.SVC(C=1.0, gamma=0.05).fit(*heart()).save(svc_path)
    with pytest.raises(ValueError, match="not a one-class"):
        fwsvm.OneClassSVM.load(svc_path)
    again = pickle.loads(pickle.dumps(oc))
    assert np.array_equal(again.predict(X), oc.predict(X))


def test_only_the_rbf_kernel():
    X, _ = heart()
    with pytest.raises(ValueError, match="rbf"):
        fwsvm.OneClassSVM(kernel="linear").fit(X)
