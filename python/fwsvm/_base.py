"""What the two estimators share: scikit-learn compatibility shims, input validation, the
options the native trainer reads, and the trained model's files and pickling."""

import numbers
import sys

import numpy as np
import scipy.sparse as sp

from . import _native

try:  # scikit-learn is optional: the estimators work without it
    from sklearn.base import BaseEstimator, ClassifierMixin, OutlierMixin
    from sklearn.exceptions import NotFittedError
    from sklearn.utils.metaestimators import available_if
    from sklearn.utils.multiclass import check_classification_targets
    from sklearn.utils.validation import check_is_fitted

    try:
        from sklearn.utils.validation import validate_data as _sk_validate_data
    except ImportError:  # scikit-learn < 1.6
        def _sk_validate_data(est, *args, **kw):
            return est._validate_data(*args, **kw)

    HAVE_SKLEARN = True
except ImportError:  # pragma: no cover - exercised without scikit-learn
    HAVE_SKLEARN = False

    class NotFittedError(ValueError, AttributeError):
        pass

    class BaseEstimator:  # the two methods GridSearchCV-like code relies on
        def get_params(self, deep=True):
            return {k: getattr(self, k) for k in self._PARAMS}

        def set_params(self, **params):
            for k, v in params.items():
                setattr(self, k, v)
            return self

    class ClassifierMixin:
        def score(self, X, y, sample_weight=None):
            hit = (self.predict(X) == np.asarray(y)).astype(np.float64)
            return float(np.average(hit, weights=sample_weight))

    class OutlierMixin:
        def fit_predict(self, X, y=None):
            return self.fit(X).predict(X)

    def available_if(check):
        def wrap(fn):
            return fn
        return wrap

    def check_classification_targets(y):
        if np.asarray(y).dtype.kind == "f" and not np.all(np.mod(y, 1) == 0):
            raise ValueError("Unknown label type: continuous")

    def check_is_fitted(est, attributes=None):
        if not hasattr(est, "_native"):
            raise NotFittedError(f"this {type(est).__name__} is not fitted yet; call fit first")


# Parameters both estimators take, in the order of their signatures' fwsvm-only part.
FWSVM_PARAMS = ("algorithm", "rel_tol", "sample", "time_limit", "backend", "device",
                "precision", "n_jobs")


def validate(est, X, y=None, reset=True):
    """X (and y) as the native trainer takes them: float32/float64 dense or CSR, every value
    within float32's range (the native code holds the features in float32)."""
    X, y = _validated(est, X, y, reset)
    within_float32(X)
    return X, y


# The largest float32: the features' values are rounded to float32 for training and prediction.
F32_MAX = float(np.finfo(np.float32).max)


def within_float32(X):
    """Raises ValueError where a value of X lies beyond float32's range."""
    data = X.data if sp.issparse(X) else X
    if data.dtype == np.float64 and data.size and (data.max() > F32_MAX or data.min() < -F32_MAX):
        raise ValueError(f"X holds a value beyond float32's range (±{F32_MAX:.1e}), in which "
                         "fwsvm holds the features; scale them first")


def _validated(est, X, y, reset):
    if HAVE_SKLEARN:
        kw = dict(accept_sparse="csr", dtype=[np.float32, np.float64], reset=reset)
        if y is None:
            return _sk_validate_data(est, X, **kw), None
        return _sk_validate_data(est, X, y, **kw)
    X = X if sp.issparse(X) else np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"expected a 2-D array, got {X.ndim} dimensions")
    if not sp.issparse(X) and not np.all(np.isfinite(X)):
        raise ValueError("Input X contains NaN or infinity")
    if reset:
        est.n_features_in_ = X.shape[1]
    elif X.shape[1] != est.n_features_in_:
        raise ValueError(f"X has {X.shape[1]} features, but {type(est).__name__} is expecting "
                         f"{est.n_features_in_} features as input")
    return X, (None if y is None else np.asarray(y))


def sample_weights(sample_weight, n):
    """Validated sample weights (float64, n of them, finite, ≥ 0), or None for all ones."""
    if sample_weight is None:
        return None
    w = np.asarray(sample_weight, dtype=np.float64)
    if w.ndim == 0:
        w = np.full(n, float(w))
    if w.shape != (n,):
        raise ValueError(f"sample_weight.shape == {w.shape}, expected {(n,)}")
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError("sample_weight must hold finite numbers ≥ 0")
    if not np.any(w > 0):
        raise ValueError("sample_weight is zero for every row: nothing to train on")
    return w


def weighted_rows(X, y, sample_weight):
    """The rows to train on: those of positive weight (as LIBSVM, weight 0 leaves a row
    out). Returns (X, y, weights or None when all are one, their indices in the input)."""
    w = sample_weights(sample_weight, X.shape[0])
    rows = np.arange(X.shape[0])
    if w is not None and np.any(w == 0):
        rows = np.flatnonzero(w > 0)
        X, w = X[rows], w[rows]
        y = None if y is None else y[rows]
    if w is not None and np.all(w == 1):
        w = None
    return X, y, w, rows


def support_indices(native, rows):
    """``support_``: the SVs' rows in the input the estimator was fitted on."""
    sv_rows = np.asarray(native.sv_rows, dtype=np.int64)
    if rows is not None and sv_rows.size:
        sv_rows = np.asarray(rows)[sv_rows]
    return sv_rows.astype(np.int32)


def dense32(X):
    return np.ascontiguousarray(X, dtype=np.float32)


def csr_parts(X):
    X = sp.csr_matrix(X)
    if not X.has_sorted_indices:
        X = X.sorted_indices()
    return (np.ascontiguousarray(X.indptr, dtype=np.int64),
            np.ascontiguousarray(X.indices, dtype=np.int32),
            np.ascontiguousarray(X.data, dtype=np.float32))


def gamma_value(est, X):
    """γ from the estimator's ``gamma``: None for 'fwsvm' (the library's heuristic)."""
    g = est.gamma
    if isinstance(g, str):
        if g == "scale":
            if sp.issparse(X):
                var = X.multiply(X).mean() - X.mean() ** 2
            else:
                var = X.var()
            return 1.0 / (X.shape[1] * var) if var > 0 else 1.0
        if g == "auto":
            return 1.0 / X.shape[1]
        if g == "fwsvm":
            return None
        raise ValueError(f"gamma must be 'scale', 'auto', 'fwsvm' or a positive number, got {g!r}")
    g = float(g)
    if not g > 0:
        raise ValueError(f"gamma must be 'scale', 'auto', 'fwsvm' or a positive number, got {g!r}")
    return g


def whole(name, value, least=0):
    """``value`` as an int ≥ ``least``; a ValueError for anything else (a float such as 2.5,
    a bool, a smaller number), as scikit-learn's parameter checks."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be a whole number ≥ {least}, got {value!r}")
    if value < least:
        raise ValueError(f"{name} must be a whole number ≥ {least}, got {value}")
    return int(value)


def seed_of(random_state):
    """The native seed from ``random_state``: None (the library's fixed default), an int in
    [0, 2⁶⁴), or a NumPy ``RandomState``/``Generator``, from which one seed is drawn (as
    scikit-learn's ``check_random_state`` takes them)."""
    rs = random_state
    if rs is None:
        return None
    if isinstance(rs, np.random.RandomState):
        return int(rs.randint(np.iinfo(np.int32).max))
    if isinstance(rs, np.random.Generator):
        return int(rs.integers(2**63))
    if isinstance(rs, numbers.Integral) and not isinstance(rs, (bool, np.bool_)) \
            and 0 <= rs < 2**64:
        return int(rs)
    raise ValueError("random_state must be None, an int in [0, 2**64) or a numpy RandomState "
                     f"or Generator, got {rs!r}")


def common_options(est, X):
    """The options both estimators pass to the native trainer."""
    return {
        "C": float(est.C), "kernel": est.kernel, "gamma": gamma_value(est, X),
        "tol": float(est.tol), "max_iter": whole("max_iter", est.max_iter, -1),
        "rel_tol": None if est.rel_tol is None else float(est.rel_tol),
        "random_state": seed_of(est.random_state),
        "time_limit": None if est.time_limit is None else float(est.time_limit),
        "algorithm": est.algorithm, "sample": whole("sample", est.sample),
        "cache_size": float(est.cache_size), "verbose": bool(est.verbose),
        "backend": est.backend, "device": est.device, "precision": est.precision,
        "n_jobs": None if est.n_jobs is None else int(est.n_jobs),
    }


def fit_native(X, labels, opts, weights=None):
    """Trains the native model on X (dense or CSR) with f64 labels."""
    if weights is not None:
        opts = dict(opts, sample_weight=np.ascontiguousarray(weights, dtype=np.float64))
    labels = np.ascontiguousarray(labels, dtype=np.float64)
    if sp.issparse(X):
        return _native.fit_csr(*csr_parts(X), X.shape[1], labels, opts)
    return _native.fit_dense(dense32(X), labels, opts)


def decide(native, X, labels_only=False):
    """Model labels and decision values (rows × pairs) of validated X; with labels_only the
    labels alone (two-class RBF models screen them in f32: the same labels, sooner) and
    no decision values."""
    if sp.issparse(X):
        labels, dec = native.decide_csr(*csr_parts(X), X.shape[1], labels_only)
    else:
        labels, dec = native.decide_dense(dense32(X), labels_only)
    labels = np.frombuffer(labels, dtype=np.float64)
    dec = np.frombuffer(dec, dtype=np.float64).reshape(X.shape[0], -1)
    return labels, dec


def report(est, names):
    """Prints each solved problem's summary to stderr (``verbose``)."""
    for (a, b, it, gap, stop) in est._native.pairs:
        pair = f"{names(a)} vs {names(b)}: " if len(est._native.pairs) > 1 else ""
        gap = "none" if gap is None else f"{gap:.3e}"
        print(f"fwsvm: {pair}iterations {it}, certified gap {gap}, {stop}", file=sys.stderr)


def set_solver_attributes(est):
    pairs = est._native.pairs
    est.n_iter_ = np.asarray([p[2] for p in pairs], dtype=np.int64)
    est.certified_gap_ = np.asarray([np.nan if p[3] is None else p[3] for p in pairs],
                                    dtype=np.float64)
    est.stop_reason_ = [p[4] for p in pairs]
    est.device_ = est._native.device


def support_vectors(native, width, sparse):
    dense = np.frombuffer(native.support_vectors(width), dtype=np.float64).reshape(-1, width)
    return sp.csr_matrix(dense) if sparse else dense


class ModelFiles:
    """Saving, loading and pickling through LIBSVM's model text."""

    def save(self, path):
        """Writes the model as a LIBSVM model file (svm-predict, LIBSVM and ``fwsvm predict``
        read it; non-numeric labels are written as class indices)."""
        check_is_fitted(self, "_native")
        with open(path, "w") as f:
            f.write(self._native.to_libsvm())

    @staticmethod
    def _read_native(path):
        with open(path, "rb") as f:
            raw = f.read()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ValueError(f"{path}: not a valid model file: not text (byte {e.start + 1} is "
                             "not UTF-8)") from None
        return _native.NativeModel.from_libsvm(text, str(path))

    def __getstate__(self):
        state = self.__dict__.copy()
        if "_native" in state:
            state["_native"] = state["_native"].to_libsvm()
        return state

    def __setstate__(self, state):
        text = state.pop("_native", None)
        self.__dict__.update(state)
        if text is not None:
            self._native = _native.NativeModel.from_libsvm(text)


def load_svmlight(path, format="libsvm", label_col=0, n_features=None):
    """Reads a LIBSVM/svmlight file (plain, gzip, bzip2 or xz: detected from the content)
    with fwsvm's own reader: ``(X, y)``, X a ``scipy.sparse.csr_matrix`` of float32 with as
    many columns as the largest feature index (indices in the file are 1-based, as LIBSVM's),
    y a float64 array. ``format='csv'`` reads dense comma-separated values with the label in
    column ``label_col`` (negative counts from the end). ``n_features`` widens X to that many
    columns (a test file that never uses the last features); a file with more is an error.
    Errors name the file and line."""
    indptr, indices, data, width, labels = _native.read_file(str(path), format,
                                                            int(label_col))
    indptr = np.frombuffer(indptr, dtype=np.int64)
    # 32-bit offsets where they fit, as scipy and scikit-learn's estimators expect.
    if indptr[-1] < 2**31:
        indptr = indptr.astype(np.int32)
    if n_features is not None:
        if int(n_features) < width:
            raise ValueError(f"{path}: features go up to {width}, more than "
                             f"n_features={n_features}")
        width = int(n_features)
    X = sp.csr_matrix((np.frombuffer(data, dtype=np.float32).copy(),
                       np.frombuffer(indices, dtype=np.int32).copy(), indptr.copy()),
                      shape=(len(indptr) - 1, width))
    return X, np.frombuffer(labels, dtype=np.float64).copy()
