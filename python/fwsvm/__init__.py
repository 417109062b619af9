"""fwsvm: kernel SVMs trained by Frank–Wolfe methods (Rust, CPU and wgpu GPU backends).

``fwsvm.SVC`` and ``fwsvm.OneClassSVM`` are scikit-learn estimators over the same library
the ``fwsvm`` command line uses; models are LIBSVM model files (``save``/``load``), so
LIBSVM, the CLI and this package read each other's models. ``fwsvm.load_svmlight`` reads
LIBSVM files (compressed ones too) with the library's reader.
"""

from ._base import load_svmlight
from .one_class import OneClassSVM
from .svc import SVC

__all__ = ["SVC", "OneClassSVM", "load_svmlight", "__version__"]
__version__ = "0.1.0"
