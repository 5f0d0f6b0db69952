"""The ONNX front end's errors, and the one line that says what to install."""
from __future__ import annotations

import importlib

from ..errors import CompileError

#: what to run when the optional packages are missing
INSTALL_HINT = "pip install -e '.[onnx]' in the GA2 checkout (that is: pip install onnx onnxruntime)"


class OnnxError(CompileError):
    """A model, a file or an input that the front end refuses: one line, naming the node or the file."""


class OnnxMissing(OnnxError):
    """The optional ``onnx`` / ``onnxruntime`` packages are not installed."""


def require(*modules: str):
    """Import ``modules`` (default ``onnx``); :class:`OnnxMissing` naming what to install when one is absent."""
    loaded = []
    for name in modules or ("onnx",):
        try:
            loaded.append(importlib.import_module(name))
        except ImportError:
            raise OnnxMissing(f"the Python package {name!r} is not installed: run {INSTALL_HINT}") from None
    return loaded[0] if len(loaded) == 1 else loaded
