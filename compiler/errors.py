"""The one exception Capra raises for a graph it refuses.

Every refusal names the node (its id, operation and shape) and says why, so
that a user can find the line of graph-building code to change.
"""
from __future__ import annotations


class CompileError(Exception):
    """A graph that cannot be built, compiled or run as asked; the message names the node."""
