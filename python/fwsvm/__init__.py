"""fwsvm: kernel SVMs trained by Frank–Wolfe methods (Rust, CPU and wgpu GPU backends).

``fwsvm.SVC`` and ``fwsvm.OneClassSVM`` are scikit-learn estimators over the same library
the ``fwsvm`` command line uses; models are LIBSVM model files (``save``/``load``), so
LIBSVM, the CLI and this package read each other's models. ``fwsvm.load_svmlight`` reads
LIBSVM files (compressed ones too) with the library's reader.
"""

import os as _os
import tempfile as _tempfile


def _ensure_runtime_dir():
    """The Vulkan and EGL loaders print "XDG_RUNTIME_DIR is invalid or not set" on every
    adapter probe where the variable is missing (servers, containers, CI): point it at a
    private 0700 directory, as the ``fwsvm`` command does for itself."""
    cur = _os.environ.get("XDG_RUNTIME_DIR")
    if cur and _os.path.isdir(cur):
        return
    path = _os.path.join(_tempfile.gettempdir(), f"fwsvm-runtime-{_os.getuid()}")
    try:
        _os.makedirs(path, mode=0o700, exist_ok=True)
        st = _os.stat(path)
        if st.st_uid != _os.getuid():
            return
        if st.st_mode & 0o077:
            _os.chmod(path, 0o700)
    except OSError:
        return
    _os.environ["XDG_RUNTIME_DIR"] = path


if hasattr(_os, "getuid"):
    _ensure_runtime_dir()

from ._base import load_svmlight  # noqa: E402
from .one_class import OneClassSVM  # noqa: E402
from .svc import SVC  # noqa: E402

__all__ = ["SVC", "OneClassSVM", "load_svmlight", "__version__"]
__version__ = "0.1.0"
