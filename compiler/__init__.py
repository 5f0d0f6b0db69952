"""Capra: the graph compiler for GA-2.

    from compiler import Graph, CompileError, compile_graph, run, interpret, evaluate, ext_image

    g = Graph()
    x = g.input("x", (1, 16)); w = g.weight("W", array)
    g.output(g.argmax(g.matmul(x, w)), "tok")
    prog = compile_graph(g, calib=[{"x": ...}, ...])        # prog.code ends with HALT
    outs = run(prog, {"x": ...})                               # {name: (ints, floats)}

The pipeline: graph (:mod:`.graph`) -> float evaluation and calibration
(:mod:`.reference`, :mod:`.scales`) -> buffers, views and external layout
(:mod:`.planner`) -> instructions (:mod:`.lower`) -> :class:`Program`
(:mod:`.program`), run on the golden model; :mod:`.interpret` is the integer
meaning every compiled program must match.  See docs/capra.md.
"""
from .errors import CompileError
from .graph import Graph, Node
from .interpret import interpret
from .program import Program, compile_graph, execute, ext_image, read_outputs, read_tensor, run
from .reference import evaluate

__all__ = ["CompileError", "Graph", "Node", "Program", "compile_graph", "evaluate", "execute", "ext_image",
           "interpret", "read_outputs", "read_tensor", "run"]
