"""fwsvm: kernel SVMs trained by Frank-Wolfe methods (Rust, CPU and wgpu GPU backends).

``fwsvm.SVC`` is a scikit-learn estimator over the same library the ``fwsvm`` command line
uses; models are LIBSVM model files (``save``/``load``), so LIBSVM, the CLI and this package
read each other's models.
"""

import numpy as np
import scipy.sparse as sp

from . import _native

try:  # scikit-learn is optional: the estimator works without it
    from sklearn.base import BaseEstimator, ClassifierMixin
    from sklearn.utils.validation import check_is_fitted, validate_data

    _HAVE_SKLEARN = True
except ImportError:  # pragma: no cover - exercised without scikit-learn
    _HAVE_SKLEARN = False

    class BaseEstimator:  # the two methods GridSearchCV-like code relies on
        def get_params(self, deep=True):
            return {k: getattr(self, k) for k in _PARAMS}

        def set_params(self, **params):
            for k, v in params.items():
                setattr(self, k, v)
            return self

    class ClassifierMixin:
        def score(self, X, y):
            return float(np.mean(self.predict(X) == np.asarray(y)))

__all__ = ["SVC", "__version__"]
__version__ = "0.1.0"

_PARAMS = (
    "C", "kernel", "degree", "gamma", "coef0", "tol", "probability", "cache_size",
    "class_weight", "verbose", "max_iter", "random_state", "algorithm", "rel_tol", "sample",
    "time_limit", "backend", "device", "precision", "n_jobs",
)


class SVC(ClassifierMixin, BaseEstimator):
    """Kernel SVM classifier trained by fwsvm (one-versus-one for more than two classes).

    Parameters keep scikit-learn's ``SVC`` names where the meaning is the same. ``gamma``:
    ``'scale'`` = 1 / (n_features · X.var()) and ``'auto'`` = 1 / n_features, as in
    scikit-learn; ``'fwsvm'`` = the papers' heuristic the CLI uses (1 / mean squared distance
    over 10,000 seeded pairs). ``tol`` is the duality-gap ε of the CLI's ``-e``; ``algorithm``
    picks the solver (``'partan'`` default, ``'simplesvm'`` solves LIBSVM's C-SVC exactly).
    """

    def __init__(self, C=1.0, kernel="rbf", degree=3, gamma="scale", coef0=0.0, tol=1e-4,
                 probability=False, cache_size=1024, class_weight=None, verbose=False,
                 max_iter=-1, random_state=None, algorithm="partan", rel_tol=1.0, sample=0,
                 time_limit=None, backend="cpu", device=None, precision=None, n_jobs=None):
        self.C = C
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.tol = tol
        self.probability = probability
        self.cache_size = cache_size
        self.class_weight = class_weight
        self.verbose = verbose
        self.max_iter = max_iter
        self.random_state = random_state
        self.algorithm = algorithm
        self.rel_tol = rel_tol
        self.sample = sample
        self.time_limit = time_limit
        self.backend = backend
        self.device = device
        self.precision = precision
        self.n_jobs = n_jobs

    # -- input handling ---------------------------------------------------------------------
    def _validate(self, X, y=None, reset=True):
        if _HAVE_SKLEARN:
            if y is None:
                return validate_data(self, X, accept_sparse="csr", dtype=[np.float32, np.float64],
                                     reset=reset), None
            return validate_data(self, X, y, accept_sparse="csr",
                                 dtype=[np.float32, np.float64], reset=reset)
        X = X if sp.issparse(X) else np.asarray(X, dtype=np.float64)
        if X.ndim != 2:
            raise ValueError(f"expected a 2-D array, got {X.ndim} dimensions")
        if reset:
            self.n_features_in_ = X.shape[1]
        return X, (None if y is None else np.asarray(y))

    @staticmethod
    def _dense32(X):
        return np.ascontiguousarray(X, dtype=np.float32)

    @staticmethod
    def _csr_parts(X):
        X = sp.csr_matrix(X)
        X.sort_indices()
        return (np.ascontiguousarray(X.indptr, dtype=np.int64),
                np.ascontiguousarray(X.indices, dtype=np.int32),
                np.ascontiguousarray(X.data, dtype=np.float32))

    def _gamma_value(self, X):
        g = self.gamma
        if g == "scale":
            var = (X.multiply(X)).mean() - X.mean() ** 2 if sp.issparse(X) else X.var()
            return 1.0 / (X.shape[1] * var) if var > 0 else 1.0
        if g == "auto":
            return 1.0 / X.shape[1]
        if g == "fwsvm":
            return None
        g = float(g)
        if not g > 0:
            raise ValueError(f"gamma must be positive, 'scale', 'auto' or 'fwsvm', got {self.gamma!r}")
        return g

    def _class_weights(self, y_idx):
        cw = self.class_weight
        if cw is None:
            return None
        k = len(self.classes_)
        if cw == "balanced":
            counts = np.bincount(y_idx, minlength=k)
            return [(float(c), len(y_idx) / (k * counts[c])) for c in range(k)]
        out = []
        for label, w in dict(cw).items():
            hit = np.flatnonzero(self.classes_ == label)
            if hit.size:
                out.append((float(hit[0]), float(w)))
        return out

    # -- training ----------------------------------------------------------------------------
    def fit(self, X, y, sample_weight=None):
        """Trains on X (dense or CSR, n_samples × n_features) and labels y."""
        if sample_weight is not None:
            raise ValueError("sample_weight is not supported by fwsvm.SVC yet")
        # Not wired through yet: refused rather than ignored.
        for name, value, default in (("backend", self.backend, "cpu"), ("device", self.device, None),
                                     ("precision", self.precision, None),
                                     ("n_jobs", self.n_jobs, None)):
            if value != default:
                raise ValueError(f"{name}={value!r} is not available from Python yet "
                                 f"(only {default!r}); the fwsvm command line has it")
        X, y = self._validate(X, y, reset=True)
        if X.shape[0] == 0:
            raise ValueError("no training rows")
        self.classes_, y_idx = np.unique(y, return_inverse=True)
        if len(self.classes_) < 2:
            raise ValueError(
                f"the training data have a single class ({self.classes_[0]!r}); at least two are needed")
        opts = {
            "C": float(self.C), "kernel": self.kernel, "degree": int(self.degree),
            "gamma": self._gamma_value(X), "coef0": float(self.coef0), "tol": float(self.tol),
            "rel_tol": float(self.rel_tol), "max_iter": int(self.max_iter),
            "random_state": None if self.random_state is None else int(self.random_state),
            "time_limit": self.time_limit, "algorithm": self.algorithm,
            "sample": int(self.sample), "cache_size": float(self.cache_size),
            "class_weight": self._class_weights(y_idx), "probability": bool(self.probability),
        }
        # Numeric labels travel as themselves (the model file is the CLI's and LIBSVM's);
        # others as class indices.
        self._numeric = np.issubdtype(self.classes_.dtype, np.number)
        labels = (self.classes_[y_idx] if self._numeric else y_idx).astype(np.float64).tolist()
        if sp.issparse(X):
            self._native = _native.fit_csr(*self._csr_parts(X), X.shape[1], labels, opts)
        else:
            self._native = _native.fit_dense(self._dense32(X), labels, opts)
        self._set_fitted_attributes()
        if self.verbose:
            import sys
            for (a, b, it, gap, stop) in self._native.pairs:
                pair = "" if len(self.classes_) == 2 else (
                    f"{self.classes_[int(a)]!r} vs {self.classes_[int(b)]!r}: ")
                print(f"fwsvm: {pair}iterations {it}, certified gap {gap:.3e}, {stop}",
                      file=sys.stderr)
        return self

    def _index_of(self, model_labels):
        """Class indices of labels as the native model holds them."""
        v = np.asarray(model_labels, dtype=np.float64)
        if self._numeric:
            return np.searchsorted(self.classes_.astype(np.float64), v)
        return v.astype(np.int64)

    def _set_fitted_attributes(self):
        m = self._native
        # Model order (first appearance) → class index.
        self._order = self._index_of(m.labels)
        nr_sv = np.asarray(m.nr_sv)
        self.n_support_ = np.zeros(len(self.classes_), dtype=np.int32)
        self.n_support_[self._order] = nr_sv
        self.support_vectors_ = np.asarray(
            m.support_vectors(self.n_features_in_), dtype=np.float64
        ).reshape(-1, self.n_features_in_)
        self.dual_coef_ = np.asarray(m.sv_coef, dtype=np.float64)
        self.intercept_ = -np.asarray(m.rho, dtype=np.float64)
        pairs = m.pairs
        self.n_iter_ = np.asarray([p[2] for p in pairs], dtype=np.int64)
        self.certified_gap_ = np.asarray(
            [np.nan if p[3] is None else p[3] for p in pairs], dtype=np.float64)
        self.stop_reason_ = [p[4] for p in pairs]

    # -- prediction ---------------------------------------------------------------------------
    def _decide(self, X):
        if _HAVE_SKLEARN:
            check_is_fitted(self, "_native")
        X, _ = self._validate(X, reset=False)
        if sp.issparse(X):
            labels, dec = self._native.decide_csr(*self._csr_parts(X), X.shape[1])
        else:
            labels, dec = self._native.decide_dense(self._dense32(X))
        k = len(self.classes_)
        dec = np.asarray(dec, dtype=np.float64).reshape(X.shape[0], k * (k - 1) // 2)
        return self._index_of(labels), dec

    def predict(self, X):
        """Predicted labels (one-versus-one vote, as LIBSVM)."""
        idx, _ = self._decide(X)
        return self.classes_[idx]

    def decision_function(self, X):
        """Decision values: for two classes, positive means ``classes_[1]`` (scikit-learn's
        convention); otherwise one column per class pair in LIBSVM's order."""
        _, dec = self._decide(X)
        if len(self.classes_) == 2:
            # LIBSVM's value is positive for the model's first class.
            sign = 1.0 if self._order[0] == 1 else -1.0
            return sign * dec[:, 0]
        return dec

    def predict_proba(self, X):
        """Class probabilities (columns in ``classes_`` order); needs ``probability=True``."""
        if not self.probability:
            raise AttributeError("predict_proba needs probability=True")
        _, dec = self._decide(X)
        p = np.asarray(self._native.probabilities(dec.ravel().tolist())).reshape(
            dec.shape[0], len(self.classes_))
        out = np.empty_like(p)
        out[:, self._order] = p
        return out

    def predict_log_proba(self, X):
        """Logarithms of :meth:`predict_proba`."""
        return np.log(self.predict_proba(X))

    # -- files and pickling ---------------------------------------------------------------------
    def save(self, path):
        """Writes the model as a LIBSVM model file (svm-predict, LIBSVM and `fwsvm predict`
        read it; non-numeric labels are written as class indices)."""
        if _HAVE_SKLEARN:
            check_is_fitted(self, "_native")
        with open(path, "w") as f:
            f.write(self._native.to_libsvm())

    @classmethod
    def load(cls, path):
        """An estimator from a LIBSVM model file (written by fwsvm, its CLI or LIBSVM)."""
        with open(path) as f:
            native = _native.NativeModel.from_libsvm(f.read(), str(path))
        est = cls(probability=native.has_probabilities)
        est._native = native
        est._numeric = True
        est.classes_ = np.sort(np.asarray(native.labels, dtype=np.float64))
        est.n_features_in_ = native.n_features
        est._set_fitted_attributes()
        return est

    def __getstate__(self):
        state = self.__dict__.copy()
        if "_native" in state:
            state["_native"] = state["_native"].to_libsvm()
            state["_pairs"] = self._native.pairs
        return state

    def __setstate__(self, state):
        text = state.pop("_native", None)
        state.pop("_pairs", None)
        self.__dict__.update(state)
        if text is not None:
            self._native = _native.NativeModel.from_libsvm(text)
        self.__dict__.setdefault("_numeric", False)
