"""ONNX models through Capra: an importer, and running a model's input rows on the chip.

    from compiler.onnx import load_model, import_model, OnnxError
    imp = import_model(load_model("digits.onnx"), config=Config.book())   # refusals before any work
    graph = imp.build(batch=16)                                            # a Capra Graph of 16 rows

The optional extra ``pip install -e '.[onnx]'`` brings ``onnx`` and ``onnxruntime``
(the float reference); without it :func:`require` says in one line what to install.
See docs/onnx.md.
"""
from .errors import INSTALL_HINT, OnnxError, OnnxMissing, require
from .importer import Imported, import_model, load_model
from .values import NodeReport

__all__ = ["INSTALL_HINT", "Imported", "NodeReport", "OnnxError", "OnnxMissing", "import_model", "load_model",
           "require"]
