"""Sphinx configuration of GA2's documentation site (``make docs``: build/docs/index.html).

The pages are the Markdown files of docs/ (through MyST); the API reference (docs/api/) is
autodoc on the packages' numpydoc docstrings.  No extension fetches anything from the network.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))                 # the packages, installed or not

project = "GA2"
author = "GA2"
copyright = "GA2"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "api/_*"]

# MyST: anchors for the headings that pages link to (chip.md#unit-control-contract ...)
myst_heading_anchors = 4
myst_enable_extensions = ["colon_fence"]

# numpydoc docstrings, read by napoleon; the signatures' annotations stay in the signature
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_default_options = {"members": True, "show-inheritance": True}

html_theme = "alabaster"
html_title = "GA2"
html_static_path = []

# the RTL's docstrings list a component's ports (and a signature's members) in sections of their
# own, written like Parameters
napoleon_custom_sections = [("Ports", "params_style"), ("Members", "params_style")]


def _literal_shapes(app, what, name, obj, options, lines):
    """A port's type is an Amaranth expression (``In(ArrayLayout(signed(8), size))``): shown as
    code, not split into cross-references to whatever else is called ``size``."""
    for i, line in enumerate(lines):
        m = re.match(r"^(\s*:type [^:]+: )(.*\(.*)$", line)
        if m and "`" not in m.group(2):
            lines[i] = f"{m.group(1)}``{m.group(2)}``"


def setup(app):
    app.connect("autodoc-process-docstring", _literal_shapes, priority=600)   # after napoleon's
