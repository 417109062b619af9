"""scikit-learn is optional: with it hidden, the estimators still fit, predict, pickle and
validate their input (a child interpreter where `import sklearn` fails)."""
import subprocess
import sys
import textwrap

from test_svc import HEART

CHILD = textwrap.dedent(f"""
    import sys
    sys.modules["sklearn"] = None          # any `import sklearn...` now raises ImportError
    import pickle
    import numpy as np
    import fwsvm
    from fwsvm import _base
    assert not _base.HAVE_SKLEARN
    X, y = fwsvm.load_svmlight({str(HEART)!r})
    clf = fwsvm.SVC(C=1.0, gamma=0.05, probability=True).fit(X, y)
    assert clf.score(X, y) > 0.8
    assert clf.predict_proba(X[:4]).shape == (4, 2)
    back = pickle.loads(pickle.dumps(clf))
    assert np.array_equal(back.predict(X), clf.predict(X))
    assert clf.get_params()["C"] == 1.0 and clf.set_params(C=2.0).C == 2.0
    oc = fwsvm.OneClassSVM(C=0.5, gamma=0.05).fit(X)
    assert set(np.unique(oc.predict(X))) <= {{-1, 1}}
    for bad in (np.array([[np.nan, 1.0], [1.0, 2.0]]), np.ones(3)):
        try:
            fwsvm.SVC().fit(bad, [0, 1])
        except ValueError:
            pass
        else:
            raise AssertionError("no ValueError")
    try:
        fwsvm.SVC().predict(X)
    except ValueError as e:
        assert "not fitted" in str(e)
    else:
        raise AssertionError("unfitted predict went through")
    print("OK")
""")


def test_the_estimators_work_without_scikit_learn():
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "OK", out.stdout + out.stderr
