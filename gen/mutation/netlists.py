"""The designs whose netlists an equivalence argument may name (:data:`DESIGNS`), and their
fingerprint with a mutant applied (:func:`netlist_fingerprint`): the check behind an argument of
:mod:`gen.mutation.equivalents` that a change leaves the hardware itself unchanged.
"""
from __future__ import annotations

import hashlib
import sys


def _divider():
    from ga2_hdl.rtl.divider import Divider
    return [Divider()]


def _requantizer():
    from ga2_hdl.rtl.requant import Requantizer
    return [Requantizer()]


def _softmax():
    from ga2_hdl import isa
    from ga2_hdl.rtl.softmax import SoftmaxUnit
    return [SoftmaxUnit(config=isa.BOOK)]


def _matrix_unit():
    from ga2_hdl import isa
    from ga2_hdl.rtl.matrix_unit import MatrixUnit
    return [MatrixUnit(config=isa.BOOK)]


def _banked_operand_memories():
    from ga2_hdl.rtl.rowmem import BankedOperandRowMemory
    return [BankedOperandRowMemory(lanes, 64, banks) for lanes, banks in ((4, 2), (4, 4), (4, 8), (8, 8))]


def _banked_scratchpads():
    from ga2_hdl import isa
    from ga2_hdl.rtl.sram import Scratchpad
    return [Scratchpad(3, words=w, depth=256, config=isa.BOOK) for w in (2, 4, 8)]


def _partitioned_scratchpads():
    from ga2_hdl.config import PRESETS
    from ga2_hdl.rtl.sram import Scratchpad
    overlap = PRESETS["overlap"]                # 8 partitions of one 512-word memory
    two = overlap.replace(name="wide2_overlap", spad_ports=2, ext_port_words=2, spad_partitions=2)
    return [Scratchpad(3, config=overlap), Scratchpad(3, config=two, words=2)]


def _check_stages():
    """The first half of the issue check (:class:`~ga2_hdl.rtl.decoder.CheckStages`: every region's
    bounds, each product of a size and a stride registered) as the two sequencers register it, on
    the book's chip and on one of 8 x 8 arrays (a wider row count): the decoder's products."""
    from amaranth.hdl import Module, Signal
    from amaranth.lib import wiring
    from amaranth.lib.wiring import In, Out

    from ga2_hdl import isa
    from ga2_hdl.config import PRESETS
    from ga2_hdl.rtl.chip import _check_stage
    from ga2_hdl.rtl.decoder import CheckStages
    from ga2_hdl.rtl.layout import INSTRUCTION

    class Staged(wiring.Component):
        def __init__(self, config, factors):
            self.stages, self.factors = CheckStages(config.ext_words, config=config), factors
            super().__init__({"ins": In(INSTRUCTION), "terms": Out(self.stages.layout)})

        def elaborate(self, platform):
            m = Module()
            products = []
            terms = Signal(self.stages.layout)
            m.d.sync += self.stages.assign(terms, self.ins, _check_stage(products, factors=self.factors))
            m.d.sync += [r.eq(e) for r, e in products]
            m.d.comb += self.terms.eq(terms)
            return m

    return [Staged(config, factors) for config in (isa.BOOK, PRESETS["array8"]) for factors in (True, False)]


#: the designs a netlist claim may name: name -> a function building them (the book's units, the
#: banked scratchpad at every width the presets use, the partitioned scratchpad on one bank and on
#: two, the wide matrix unit's operand memories of the presets: 4 lanes in 2, 4 and 8 banks, 8 lanes
#: in 8, and the issue check's staged products)
DESIGNS = {"divider": _divider, "requantizer": _requantizer, "softmax": _softmax, "matrix unit": _matrix_unit,
           "banked scratchpads": _banked_scratchpads, "banked operand memories": _banked_operand_memories,
           "partitioned scratchpads": _partitioned_scratchpads, "check stages": _check_stages}


def netlist_fingerprint(design: str, file: str = "", line: int = 0, function: str = "") -> tuple[str, bool]:
    """The SHA-256 of ``design``'s RTLIL without source-location attributes, as the ``ga2_hdl`` imported
    now builds it; and whether building it ran line ``line`` of ``file`` (e.g. "ga2_hdl/rtl/sram.py") in
    ``function`` (Class.method[.nested], as the keys name it; traced only while that method runs)."""
    import importlib

    from amaranth.back import rtlil
    reached = False
    restore = None
    if file and line and function:
        module = importlib.import_module(file.removesuffix(".py").replace("/", "."))
        parts = function.split(".")
        owner, name = (getattr(module, parts[0]), parts[1]) if isinstance(getattr(module, parts[0]), type) \
            else (module, parts[0])
        method = getattr(owner, name)

        def local(frame, event, arg):
            nonlocal reached
            if event == "line" and frame.f_lineno == line:
                reached = True
            return local

        def tracer(frame, event, arg):
            return local if frame.f_code.co_filename.endswith(file) else None

        def traced(*args, **kwargs):
            before = sys.gettrace()
            sys.settrace(tracer)
            try:
                return method(*args, **kwargs)
            finally:
                sys.settrace(before)
        setattr(owner, name, traced)
        restore = (owner, name, method)
    try:
        built = [rtlil.convert(d) for d in DESIGNS[design]()]
    finally:
        if restore:
            setattr(*restore)
    text = "\n".join(l for p in built for l in p.splitlines() if "attribute \\src" not in l)
    return hashlib.sha256(text.encode()).hexdigest(), reached
