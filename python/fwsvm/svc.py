"""``fwsvm.SVC``: the kernel SVM classifier as a scikit-learn estimator."""

import numpy as np
import scipy.sparse as sp

from . import _base
from ._base import (FWSVM_PARAMS, BaseEstimator, ClassifierMixin, ModelFiles, available_if,
                    check_classification_targets, check_is_fitted)


class SVC(ModelFiles, ClassifierMixin, BaseEstimator):
    """Kernel SVM classifier trained by Frank–Wolfe methods (one-versus-one for more than two
    classes), on the CPU or any GPU.

    The problem is the L2-SVM (squared hinge loss, C·Σξ²/2) in its Core-Vector-Machine form;
    ``algorithm='simplesvm'`` solves LIBSVM's C-SVC (hinge loss) exactly instead. Parameters
    keep scikit-learn's ``SVC`` names where the meaning is the same.

    Parameters
    ----------
    C : float, default=1.0
        Cost of a margin violation; per class times ``class_weight``, per row times
        ``sample_weight``.
    kernel : {'rbf', 'linear', 'poly', 'sigmoid'}, default='rbf'
    degree : int, default=3
        Degree of the 'poly' kernel.
    gamma : 'scale', 'auto', 'fwsvm' or float, default='scale'
        'scale' = 1 / (n_features · X.var()) and 'auto' = 1 / n_features, as scikit-learn's;
        'fwsvm' = the papers' heuristic the command line's ``-g auto`` uses (1 / mean squared
        distance over 10,000 seeded pairs of rows).
    coef0 : float, default=0.0
        Constant of the 'poly' and 'sigmoid' kernels.
    tol : float, default=1e-4
        Stop when the certified duality gap is at most ``tol`` (the command line's ``-e``).
    probability : bool, default=False
        Fit Platt's sigmoids by 5-fold cross-validation, as LIBSVM's ``-b 1``, for
        ``predict_proba``.
    cache_size : float, default=1024
        Kernel-column cache in MiB.
    decision_function_shape : {'ovr', 'ovo'}, default='ovr'
        For more than two classes: 'ovo' gives one column per class pair (0, 1), (0, 2), …,
        (1, 2), … in ``classes_`` order, positive for the first class of the pair; 'ovr' one
        column per class, votes plus a confidence in (−1/3, 1/3), as scikit-learn's.
    class_weight : dict, 'balanced' or None
        Class ``c`` gets the cost C·class_weight[c]; 'balanced' = n_samples / (n_classes ·
        count of c). A class the training labels lack is a ValueError, as scikit-learn's.
    verbose : bool, default=False
        Progress every half second while training and a summary per class pair, on
        ``sys.stderr``.
    max_iter : int, default=-1
        Iteration limit per class pair (−1: none).
    random_state : int, numpy RandomState or Generator, or None
        Seed of the randomized choices (sampled iterations, probability folds, γ 'fwsvm');
        None uses the library's fixed default seed, so fits repeat exactly; a RandomState or
        Generator gives one seed drawn from it at each fit.
    algorithm : str or None, default=None
        'ws' (working-set Frank–Wolfe), 'fw', 'mfw', 'swap', 'swap2', 'partan', 'cvm',
        'sparse-fw' or 'simplesvm'; None: 'ws', or 'partan' when ``sample`` > 0.
    rel_tol : float or None, default=None
        Also stop when the gap is at most ``rel_tol`` · |2f| (the command line's --rel-eps;
        None: 0.1 for 'ws', 1 for the others).
    sample : int, default=0
        Randomized iterations over ``sample`` random points per step (0: off).
    time_limit : float or None
        Seconds (a positive number; None: no limit) for the whole fit (every class pair:
        each must be done when its share of the time, growing with its points, has passed).
        The best model so far is kept; it is certified where an exact pass fits in a short
        grace (4 % of the limit, at most 3 s), else ``certified_gap_`` is nan for that pair
        and ``stop_reason_`` says why. Under a
        limit, 'ws' on 20,000 rows or more warm-starts from a ladder of nested subsamples, each
        twice the one below, and a fit stopped by the limit keeps the largest one it reached.
    backend : {'auto', 'cpu', 'gpu'}, default='auto'
        'auto' takes a hardware GPU for data large enough to pay, else the CPU; 'gpu' any
        adapter (software ones included) or an error.
    device : int, str or None
        The adapter's index or part of its name (``fwsvm info`` lists them).
    precision : {'f32', 'f64'} or None
        Precision of the kernel columns (default f32; f64 for 'simplesvm').
    n_jobs : int or None
        CPU threads: None or −1 all cores, k > 0 k threads, −2 all but one.
    duplicates : {'merge', 'keep'} or None
        Rows with equal features and label: 'merge' trains each group as one point whose C is
        the sum of theirs (the same decision function, one support vector per group), 'keep'
        trains every row; None merges for 'ws' and keeps for the other algorithms.

    Attributes
    ----------
    classes_, n_features_in_, support_, support_vectors_, n_support_, dual_coef_,
    intercept_, class_weight_, probA_, probB_ : as scikit-learn's ``SVC`` (the support
        vectors are grouped by class in LIBSVM's model order, which ``support_`` gives).
    n_iter_ : ndarray of int, one per class pair.
    certified_gap_ : ndarray of float, one per class pair: the duality gap computed exactly
        after training (an upper bound on the distance to the optimum's objective).
    stop_reason_ : list of str, one per class pair.
    device_ : str, where it was trained.
    """

    _PARAMS = ("C", "kernel", "degree", "gamma", "coef0", "tol", "probability", "cache_size",
               "class_weight", "verbose", "max_iter", "decision_function_shape",
               "random_state") + FWSVM_PARAMS + ("duplicates",)

    def __init__(self, C=1.0, kernel="rbf", degree=3, gamma="scale", coef0=0.0, tol=1e-4,
                 probability=False, cache_size=1024, class_weight=None, verbose=False,
                 max_iter=-1, decision_function_shape="ovr", random_state=None,
                 algorithm=None, rel_tol=None, sample=0,
                 time_limit=None, backend="auto", device=None, precision=None, n_jobs=None,
                 duplicates=None):
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
        self.decision_function_shape = decision_function_shape
        self.random_state = random_state
        self.algorithm = algorithm
        self.rel_tol = rel_tol
        self.sample = sample
        self.time_limit = time_limit
        self.backend = backend
        self.device = device
        self.precision = precision
        self.n_jobs = n_jobs
        self.duplicates = duplicates

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    def _class_weights(self, y_idx):
        """Per class index, its weight (scikit-learn's ``class_weight_``)."""
        k = len(self.classes_)
        cw = self.class_weight
        out = np.ones(k)
        if cw is None:
            return out
        if isinstance(cw, str):
            if cw != "balanced":
                raise ValueError(f"class_weight must be a dict, 'balanced' or None, got {cw!r}")
            counts = np.bincount(y_idx, minlength=k)
            return len(y_idx) / (k * counts.astype(np.float64))
        for label, w in dict(cw).items():
            hit = np.flatnonzero(self.classes_ == label)
            if not hit.size:
                raise ValueError(f"class_weight names the class {label!r}, which is not among "
                                 f"the training labels {self.classes_.tolist()}")
            out[hit[0]] = float(w)
        return out

    def fit(self, X, y, sample_weight=None):
        """Trains on X (dense or sparse, n_samples × n_features) and labels y; ``sample_weight``
        multiplies each row's C (a weight of 2 counts as the row given twice; rows of weight
        0 are left out)."""
        X, y = _base.validate(self, X, y, reset=True)
        check_classification_targets(y)
        X, y, w, rows = _base.weighted_rows(X, y, sample_weight)
        self.classes_, y_idx = np.unique(y, return_inverse=True)
        if len(self.classes_) < 2:
            raise ValueError(f"the training data have one class ({self.classes_[0]}); at "
                             "least two are needed")
        self.class_weight_ = self._class_weights(y_idx)
        opts = dict(_base.common_options(self, X), duplicates=self.duplicates)
        opts.update(degree=_base.whole("degree", self.degree, 1), coef0=float(self.coef0),
                    probability=bool(self.probability),
                    class_weight=[(float(c), float(wc)) for c, wc in
                                  enumerate(self.class_weight_) if wc != 1.0])
        # Numeric labels travel as themselves (the model file is the CLI's and LIBSVM's);
        # others as class indices.
        self._numeric = np.issubdtype(self.classes_.dtype, np.number)
        if self._numeric:
            opts["class_weight"] = [(float(self.classes_[int(c)]), wc)
                                    for c, wc in opts["class_weight"]]
        labels = self.classes_[y_idx] if self._numeric else y_idx
        self._native = _base.fit_native(X, labels, opts, w)
        self._set_fitted_attributes(sp.issparse(X), rows)
        if self.verbose:
            _base.report(self, lambda c: repr(self.classes_[self._index_of([c])[0]]))
        return self

    def _index_of(self, model_labels):
        """Class indices of labels as the native model holds them."""
        v = np.asarray(model_labels, dtype=np.float64)
        if self._numeric:
            return np.searchsorted(self.classes_.astype(np.float64), v)
        return v.astype(np.int64)

    def _sign(self):
        """+1 when LIBSVM's positive side of the (binary) decision is ``classes_[1]``."""
        return 1.0 if self._order[0] == 1 else -1.0

    def _set_fitted_attributes(self, sparse, rows=None):
        m = self._native
        # Model order (first appearance) → class index.
        self._order = self._index_of(m.labels)
        self.n_support_ = np.zeros(len(self.classes_), dtype=np.int32)
        self.n_support_[self._order] = np.asarray(m.nr_sv)
        self.support_vectors_ = _base.support_vectors(m, self.n_features_in_, sparse)
        self.support_ = _base.support_indices(m, rows)
        coef = np.asarray(m.sv_coef, dtype=np.float64).reshape(len(m.sv_coef), -1)
        rho = np.asarray(m.rho, dtype=np.float64)
        if len(self.classes_) == 2:
            # decision_function = dual_coef_ · K(support_vectors_, x) + intercept_, positive
            # for classes_[1], as scikit-learn's.
            coef, rho = self._sign() * coef, self._sign() * rho
        self.dual_coef_ = coef
        self._pairs_sorted()
        # Binary: already signed for classes_[1]; otherwise per pair in classes_ order.
        self.intercept_ = -rho if len(self.classes_) == 2 else (
            -rho[self._pair_cols] * self._pair_signs)
        self.probA_ = np.asarray(m.prob_a, dtype=np.float64)
        self.probB_ = np.asarray(m.prob_b, dtype=np.float64)
        _base.set_solver_attributes(self)

    def _pairs_sorted(self):
        """Columns and signs that turn the model's class pairs (LIBSVM's order: model label
        order) into scikit-learn's: pairs (i, j), i < j, of class indices."""
        k = len(self.classes_)
        pos = np.empty(k, dtype=np.int64)
        pos[self._order] = np.arange(k)
        pair = {}
        for a in range(k):
            for b in range(a + 1, k):
                pair[(a, b)] = len(pair)
        cols, signs = [], []
        for i in range(k):
            for j in range(i + 1, k):
                a, b = pos[i], pos[j]
                cols.append(pair[(min(a, b), max(a, b))])
                signs.append(1.0 if a < b else -1.0)
        self._pair_cols = np.asarray(cols, dtype=np.int64)
        self._pair_signs = np.asarray(signs)

    def _decide(self, X, labels_only=False):
        check_is_fitted(self, "_native")
        X, _ = _base.validate(self, X, reset=False)
        labels, dec = _base.decide(self._native, X, labels_only)
        return self._index_of(labels), dec

    def predict(self, X):
        """Predicted labels (one-versus-one vote, as LIBSVM's)."""
        idx, _ = self._decide(X, labels_only=True)
        return self.classes_[idx]

    def decision_function(self, X):
        """Decision values: for two classes one per row, positive for ``classes_[1]``
        (scikit-learn's convention); otherwise one column per class pair in LIBSVM's order
        ('ovo')."""
        _, dec = self._decide(X)
        k = len(self.classes_)
        if k == 2:
            return self._sign() * dec[:, 0]
        ovo = dec[:, self._pair_cols] * self._pair_signs
        if self.decision_function_shape == "ovo":
            return ovo
        if self.decision_function_shape != "ovr":
            raise ValueError("decision_function_shape must be 'ovr' or 'ovo', got "
                             f"{self.decision_function_shape!r}")
        # scikit-learn's transformation: a vote per pair won, plus the summed confidences
        # squashed into (−1/3, 1/3) so that they only break ties.
        votes = np.zeros((ovo.shape[0], k))
        conf = np.zeros((ovo.shape[0], k))
        p = 0
        for i in range(k):
            for j in range(i + 1, k):
                votes[:, i] += ovo[:, p] >= 0
                votes[:, j] += ovo[:, p] < 0
                conf[:, i] += ovo[:, p]
                conf[:, j] -= ovo[:, p]
                p += 1
        return votes + conf / (3 * (np.abs(conf) + 1))

    def _has_proba(self):
        if not self.probability:
            raise AttributeError("predict_proba is available when probability=True")
        return True

    @available_if(_has_proba)
    def predict_proba(self, X):
        """Class probabilities (columns in ``classes_`` order): Platt's sigmoids and, for more
        than two classes, Wu–Lin–Weng pairwise coupling, as LIBSVM's ``-b 1``."""
        self._has_proba()
        _, dec = self._decide(X)
        p = np.frombuffer(self._native.probabilities(np.ascontiguousarray(dec.ravel())),
                          dtype=np.float64).reshape(
            dec.shape[0], len(self.classes_))
        out = np.empty_like(p)
        out[:, self._order] = p
        return out

    @available_if(_has_proba)
    def predict_log_proba(self, X):
        """Logarithms of :meth:`predict_proba`."""
        return np.log(self.predict_proba(X))

    @classmethod
    def load(cls, path):
        """An estimator from a LIBSVM model file (written by fwsvm, its CLI or LIBSVM)."""
        native = cls._read_native(path)
        if native.one_class:
            raise ValueError(f"{path}: a one-class model; load it with fwsvm.OneClassSVM.load")
        est = cls(probability=native.has_probabilities)
        est._native = native
        est._numeric = True
        est.classes_ = np.sort(np.asarray(native.labels, dtype=np.float64))
        est.n_features_in_ = native.n_features
        est.class_weight_ = np.ones(len(est.classes_))
        est._set_fitted_attributes(False)
        return est
