"""``fwsvm.OneClassSVM``: novelty detection as the smallest ball around the data."""

import numpy as np
import scipy.sparse as sp

from . import _base
from ._base import FWSVM_PARAMS, BaseEstimator, ModelFiles, OutlierMixin, check_is_fitted


class OneClassSVM(ModelFiles, OutlierMixin, BaseEstimator):
    """Novelty detection: the minimum enclosing ball of the training data in the feature
    space of the RBF kernel plus δ/C (the L2-SVM with every label +1; the Core Vector
    Machine's view of Ñanculef, Frandi, Sartori, Allende, "A Novel Frank-Wolfe Algorithm.
    Analysis and Applications to Large-Scale SVM Training", 2014), trained by any Frank–Wolfe
    variant.

    A point is an inlier (+1) when it lies inside the ball, Σ αᵢ k(xᵢ, x) ≥ ρ; the model is
    LIBSVM's one-class layout, which LIBSVM and ``fwsvm predict`` apply with the same labels.

    ``C`` takes the place of scikit-learn's ``nu``: smaller C lets more training points lie
    outside (those are the support vectors). Only the 'rbf' kernel (the ball test needs
    k(x, x) constant). The other parameters are :class:`fwsvm.SVC`'s; ``gamma`` defaults to
    'scale' as scikit-learn's.

    Attributes
    ----------
    support_, support_vectors_, n_support_, dual_coef_, intercept_, offset_, n_features_in_ :
        as scikit-learn's ``OneClassSVM`` (``decision_function = score_samples − offset_``).
    n_iter_, certified_gap_, stop_reason_, device_ : as :class:`fwsvm.SVC`'s.
    """

    _PARAMS = ("C", "kernel", "gamma", "tol", "cache_size", "verbose", "max_iter",
               "random_state") + FWSVM_PARAMS

    def __init__(self, C=1.0, kernel="rbf", gamma="scale", tol=1e-4, cache_size=1024,
                 verbose=False, max_iter=-1, random_state=None, algorithm=None,
                 rel_tol=None, sample=0, time_limit=None, backend="auto", device=None,
                 precision=None, n_jobs=None):
        self.C = C
        self.kernel = kernel
        self.gamma = gamma
        self.tol = tol
        self.cache_size = cache_size
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

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    def fit(self, X, y=None, sample_weight=None):
        """Fits the ball around the rows of X (``y`` is ignored); ``sample_weight`` multiplies
        each row's C (rows of weight 0 are left out)."""
        X, _ = _base.validate(self, X, reset=True)
        X, _, w, rows = _base.weighted_rows(X, None, sample_weight)
        if X.shape[0] == 0:
            raise ValueError("no training rows")
        opts = _base.common_options(self, X)
        opts["one_class"] = True
        self._native = _base.fit_native(X, np.ones(X.shape[0]), opts, w)
        self._set_fitted_attributes(sp.issparse(X), rows)
        if self.verbose:
            _base.report(self, repr)
        return self

    def _set_fitted_attributes(self, sparse, rows=None):
        m = self._native
        self.support_vectors_ = _base.support_vectors(m, self.n_features_in_, sparse)
        self.support_ = _base.support_indices(m, rows)
        self.n_support_ = np.asarray([self.support_vectors_.shape[0]], dtype=np.int32)
        self.dual_coef_ = np.asarray(m.sv_coef, dtype=np.float64).reshape(1, -1)
        self.intercept_ = -np.asarray(m.rho, dtype=np.float64)
        self.offset_ = -self.intercept_[0]
        _base.set_solver_attributes(self)

    def _decide(self, X, labels_only=False):
        check_is_fitted(self, "_native")
        X, _ = _base.validate(self, X, reset=False)
        return _base.decide(self._native, X, labels_only)

    def decision_function(self, X):
        """Σ αᵢ k(xᵢ, x) − ρ: positive inside the ball (inliers)."""
        return self._decide(X)[1][:, 0]

    def score_samples(self, X):
        """Σ αᵢ k(xᵢ, x): larger is more typical of the training data."""
        return self.decision_function(X) + self.offset_

    def predict(self, X):
        """+1 for inliers (inside the ball), −1 for outliers."""
        labels, _ = self._decide(X, labels_only=True)
        return labels.astype(np.int64)

    @classmethod
    def load(cls, path):
        """An estimator from a one-class LIBSVM model file (fwsvm's or LIBSVM's ``-s 2``)."""
        native = cls._read_native(path)
        if not native.one_class:
            raise ValueError(f"{path}: not a one-class model; load it with fwsvm.SVC.load")
        est = cls()
        est._native = native
        est.n_features_in_ = native.n_features
        est._set_fitted_attributes(False)
        return est
