"""`ga2 prove`: every unit's contracts (ga2_hdl/contracts) on one configuration, and the report.

:data:`PROPERTIES` lists the properties: the unit, the property's name, how to build
its spec for a configuration, the mode (``prove``: k-induction; ``bmc``: a bounded
check) and the depth in clock cycles (long enough for whole instructions of the
bounded sizes, and one more start).  Each spec also runs once in ``cover`` mode, so
that a proof whose assumptions exclude what it is about cannot pass unnoticed: a
Cover not reached is a failure of the property.  :data:`EQUIVALENCES` (unit ``forms``)
lists one more property per simulator form of the chip's Verilog (Icarus's, Icarus's
waveform build's, Verilator's), each proven equivalent to the export (gen/formal/equiv.py).

:func:`run` checks the chosen properties one at a time (the solver is CPU heavy) and
returns one record per property: unit, name, status (``proven``, ``bounded`` with its
depth, ``failed`` with the counterexample's VCD, ``skipped`` with the reason when the property
does not apply to the configuration), the covers' status, seconds.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ga2_hdl import isa
from ga2_hdl.config import Config
from ga2_hdl.support.reporter import Reporter, or_quiet

from . import sby

#: the sizes every bounded contract assumes (whole instructions fit in the depth)
BOUNDS = {"len": 3, "M": 2, "K": 2, "N": 2}


@dataclass(frozen=True)
class Property:
    unit: str
    name: str
    build: Callable[[Config], object]        #: config -> spec
    mode: str                                #: prove / bmc
    depth: Callable[[Config], int]           #: config -> clock cycles
    doc: str = ""
    #: config -> the covers' depth in clock cycles, when a proof by induction needs fewer cycles than
    #: one whole operation takes to reach its covers (default: ``depth``)
    cover_depth: Callable[[Config], int] | None = None

    @property
    def key(self) -> str:
        return f"{self.unit}.{self.name}"


def _worst(config: Config, mnemonic: str, bounds=BOUNDS) -> int:
    """The busy time of the op at the bounded sizes' largest (ISA's busy function)."""
    spec = isa.instruction_set(config).by_name[mnemonic]
    values = {o.name: min(bounds.get(o.name, 0), (1 << o.bits) - 1) for o in spec.operands}
    if mnemonic == "MM":
        values.update(lda=values["K"], ldb=values["N"], ldc=values["N"])
    iset = isa.instruction_set(config)
    ins = iset.make(mnemonic, **{k: v for k, v in values.items() if v or k in ("tb",)})
    return iset.busy(ins)


def _engine(mnemonic):
    def build(config):
        from ga2_hdl.contracts.unit import UnitContract
        from ga2_hdl.rtl.vector_unit import VectorUnit
        cls = VectorUnit.engines_of(config)[mnemonic]
        bounds = SM_BOUNDS if mnemonic == "SM" else BOUNDS
        return UnitContract(cls(config=config), config, [mnemonic], bounds=bounds, name="contract")
    return build


def _values(mnemonic):
    def build(config):
        from ga2_hdl.contracts.vector import VectorValues
        from ga2_hdl.rtl.vector_unit import VectorUnit
        cls = VectorUnit.engines_of(config)[mnemonic]
        return VectorValues(cls(config=config), config, mnemonic, bounds=BOUNDS)
    return build


def _dma(kind):
    def build(config):
        from ga2_hdl.contracts import dma
        from ga2_hdl.rtl.dma import DMA
        return getattr(dma, kind)(DMA(config=config), config, bounds=BOUNDS)
    return build


#: the matrix unit's bounded sizes (its busy time grows with M*K, K*N and M*N)
MM_BOUNDS = {"M": 1, "K": 2, "N": 1}
#: SM's (its busy time is 3*len + 47: the divider's 40 cycles)
SM_BOUNDS = {"len": 1}
#: SM's values (three scores: a maximum among several, their exponentials and sum)
SM_VALUE_BOUNDS = {"len": 3}


def _sm_values(config):
    from ga2_hdl.contracts.softmax import SoftmaxValues
    from ga2_hdl.rtl.vector_unit import VectorUnit
    return SoftmaxValues(VectorUnit.engines_of(config)["SM"](config=config), config, bounds=SM_VALUE_BOUNDS)


#: SM's division checked at 40 bits (two scores: S = 65535 + one more term)
SM_DIVISION_BOUNDS = {"len": 2}


def _sm_division(config):
    from ga2_hdl.contracts.softmax import SoftmaxValues
    from ga2_hdl.rtl.vector_unit import VectorUnit
    return SoftmaxValues(VectorUnit.engines_of(config)["SM"](config=config), config, bounds=SM_DIVISION_BOUNDS,
                         name="division", division=True)


def _matrix(config):
    from ga2_hdl.contracts.unit import UnitContract
    from ga2_hdl.rtl.matrix_unit import MatrixUnit
    return UnitContract(MatrixUnit(config=config), config, ["MM"], bounds=MM_BOUNDS, name="contract")


def _matrix_values(config):
    from ga2_hdl.contracts.matrix import MatrixValues
    from ga2_hdl.rtl.matrix_unit import MatrixUnit
    return MatrixValues(MatrixUnit(config=config), config, bounds=MM_BOUNDS)


#: the matrix unit's second bounded sizes: every processing element of a 2 x 2 corner, one MM
MM_CORNER_BOUNDS = {"M": 2, "K": 1, "N": 2}


def _matrix_corner(config):
    from ga2_hdl.contracts.matrix import MatrixValues
    from ga2_hdl.rtl.matrix_unit import MatrixUnit
    return MatrixValues(MatrixUnit(config=config), config, bounds=MM_CORNER_BOUNDS, name="values_2x2",
                        instructions=1)


def _whole(config, k):
    """The matrix unit's sizes on the whole array: M, N up to the array's size, K up to ``k``."""
    return {"M": config.array, "K": k, "N": config.array}


#: the whole array's split (docs/formal.md, "The whole array, tenth session"): staging at K = 1, the
#: stream at K <= 2, the write-back at K = 1, each one MM with M, N up to the array's size.  Measured on
#: the book's chip (load 2-5): staging 12 cycles 100.5 s, the stream 31 cycles 72.5 s (K = 1, 22
#: cycles: 19.7 s), the write-back 40 cycles 112.9 s (started in the first cycle; started freely: no
#: verdict in 900 s)
WHOLE_STAGING_K, WHOLE_STREAM_K, WHOLE_WRITE_BACK_K = 1, 2, 1
#: staging with ``Config.stream_while_staging``: K <= 2, so that a row of B lands while the stream runs
#: (at K = 1 the stream starts after the whole of B, as without it), on the array's 2 x 2 corner.
#: Measured on the book's array (twelfth session): M, N, K <= 2 bounded at 12 cycles in 37.7 s with its
#: covers; the whole 4 x 4 array at K <= 2 (20 cycles) gave no verdict in 15 minutes (load 2)
STREAMING_STAGING_BOUNDS = {"M": 2, "K": 2, "N": 2}


def _staging_bounds(config) -> dict:
    return STREAMING_STAGING_BOUNDS if config.stream_while_staging else _whole(config, WHOLE_STAGING_K)


def _stage_reads(config, bounds) -> int:
    """The most staging reads S of an MM of the bounded sizes: ``M*ceil(K/P) + max(N*ceil(K/P), K*ceil(N/P))``."""
    P = config.spad_ports
    M, K, N = (bounds[n] for n in ("M", "K", "N"))
    return M * -(-K // P) + max(N * -(-K // P), K * -(-N // P))


def _matrix_staging(config):
    from ga2_hdl.contracts.matrix import MatrixStaging
    from ga2_hdl.rtl.matrix_unit import MatrixUnit
    return MatrixStaging(MatrixUnit(config=config), config, bounds=_staging_bounds(config))


def _matrix_stream(config):
    from ga2_hdl.contracts.matrix import MatrixStream
    from ga2_hdl.rtl.matrix_unit import MatrixUnit
    return MatrixStream(MatrixUnit(config=config), config, bounds=_whole(config, WHOLE_STREAM_K))


def _matrix_write_back(config):
    from ga2_hdl.contracts.matrix import MatrixWriteBack
    from ga2_hdl.rtl.matrix_unit import MatrixUnit
    return MatrixWriteBack(MatrixUnit(config=config), config, bounds=_whole(config, WHOLE_WRITE_BACK_K))


def _pe_product(config):
    from ga2_hdl.contracts.systolic import PEProductSpec
    return PEProductSpec(config)


def _array_transport(config):
    from ga2_hdl.contracts.systolic import ArrayTransportSpec
    return ArrayTransportSpec(config)


#: the array's values: one MM's schedule on the whole array, K <= 4 (the transport's proof holds for
#: every K).  Measured on the book's 4 x 4 array: K <= 4, 16 cycles (R free), 81.4 s (load 2.6-3.9); with run
#: high to the end (R fixed), 14 cycles 14.6 s, and K <= 8, 18 cycles, no verdict in 600 s (load 2.6-3.0)
ARRAY_VALUES_K = 4


def _array_values(config):
    from ga2_hdl.contracts.systolic import ArrayValuesSpec
    return ArrayValuesSpec(config, ARRAY_VALUES_K)


def _requant(pipelined):
    def build(config):
        from ga2_hdl.contracts.requant import RequantizerSpec
        return RequantizerSpec(pipelined=pipelined)
    return build


def _divider(width, quotient_bits=None):
    def build(config):
        from ga2_hdl.contracts.divider import DividerSpec
        return DividerSpec(width, quotient_bits=quotient_bits)
    return build


#: the short division of the 8-bit generator: 5 quotient bits (3 skipped), numerator >> 5 < denominator assumed
SHORT_DIVIDER_8BIT_QUOTIENT = 5


def _divider_steps(config):
    """The chip's own divider: the whole division, or with ``config.short_division`` SM's short one."""
    from ga2_hdl.contracts.divider import DividerStepSpec
    return DividerStepSpec(isa.DIV_BITS, quotient_bits=isa.SM_QUOTIENT_BITS if config.short_division else None)


def _sequencer(config):
    from ga2_hdl.contracts.sequencer import SequencerContract
    return SequencerContract(config)


#: the sequencer's depth in cycles: the shortest run of two instructions of two units to its HALT
#: (words 0 and 1 loaded in cycles 0 and 1, started in 1; ST, busy 3, fetched in 2, issued in 3;
#: RQ, busy 3, in 7 and 8; the HALT in 12 and 13; halted seen in 14).  Measured on the book's chip
#: (load 2-3): 15 cycles 106 s, with its covers 200 s; an earlier form with free 128-bit words (no
#: bound on the program, fewer data paths cut) took 8 s for 6 cycles, 127 s for 12, 810 s for 16
SEQUENCER_DEPTH = 15

#: the same on a chip with overlap: the two instructions' regions share a partition (every field <= 7),
#: so the second waits for the first (ST fetched in 2, issued in 3, busy 3; RQ fetched in 4, issued in
#: 7; the HALT fetched in 8, halting in 11 when no unit is busy; halted seen in 12).  Measured on the
#: preset overlap (load 2-3, shared with another solver): 10 cycles 88 s, 12 cycles 269 s, 13 cycles
#: 309 s (its covers 8 s; at 12 the two-unit cover is not reached), 15 cycles no verdict in 600 s
OVERLAP_SEQUENCER_DEPTH = 13


def _two(mnemonic, extra=2):
    """Depth for two whole instructions back to back (start, W cycles, the next start)."""
    return lambda config: 2 * (_worst(config, mnemonic) + 1) + extra


PROPERTIES: tuple[Property, ...] = (
    Property("dma", "contract", _dma("DMAContract"), "bmc",
             lambda c: 2 * (max(_worst(c, "LD"), _worst(c, "ST")) + 1) + 2,
             "the unit contract for LD and ST, len <= 3"),
    Property("dma", "transfer", _dma("DMATransfer"), "bmc",
             lambda c: 2 * (max(_worst(c, "LD"), _worst(c, "ST")) + 1) + 2,
             "exactly len words moved, in order, inside both regions, len <= 3"),
    Property("requant", "formula", _requant(False), "prove", lambda c: 2,
             "q = isa.requantize(acc, m, s, relu) for every operand"),
    Property("requant", "formula_pipelined", _requant(True), "prove", lambda c: 4,
             "the same, for the book RQ engine's form (magnitude stage, multiply in two stages)"),
    Property("divider", "quotient_remainder", _divider_steps, "prove", lambda c: 2,
             "the softmax's divider at the ISA's 40 bits: after every step the remainder register R < D and "
             "R + (the quotient bits so far) * D = the numerator bits brought down (the product built by the "
             "spec by shift and add), so quotient and remainder = N div D, N mod D at done; k-induction",
             cover_depth=lambda c: isa.DIV_BITS + 2),
    Property("divider", "quotient_remainder_8bit", _divider(8), "prove", lambda c: 12,
             "the divider generator at 8 bits against the solver's own div and mod at every step and at "
             "done, for every input (k-induction)"),
    Property("divider", "quotient_remainder_8bit_short", _divider(8, SHORT_DIVIDER_8BIT_QUOTIENT), "prove",
             lambda c: 12,
             f"the generator's short division at 8 bits, {SHORT_DIVIDER_8BIT_QUOTIENT} quotient bits: the same "
             f"against div and mod, for every input whose quotient fits (numerator >> "
             f"{SHORT_DIVIDER_8BIT_QUOTIENT} < denominator, assumed at start; k-induction)"),
    Property("rq", "contract", _engine("RQ"), "bmc", _two("RQ"), "RQ's engine, len <= 3"),
    Property("vadd", "contract", _engine("VADD"), "bmc", _two("VADD"), "VADD's engine, len <= 3"),
    Property("amax", "contract", _engine("AMAX"), "bmc", _two("AMAX"), "AMAX's engine, len <= 3"),
    Property("vadd", "values", _values("VADD"), "bmc", _two("VADD"),
             "every word VADD writes = clamp(int8 + int8, -127, 127) of its two source words, len <= 3"),
    Property("amax", "values", _values("AMAX"), "bmc", _two("AMAX"),
             "AMAX writes the index of the first maximum of its len signed words, len <= 3"),
    Property("rq", "values", _values("RQ"), "bmc", _two("RQ"),
             "RQ's data path: each word written at dst + i is a requantizer's q of src[i] and the "
             "instruction's m, s, relu (the requantizer's arithmetic: requant.formula*), len <= 3"),
    Property("sm", "contract", _engine("SM"), "bmc", lambda c: _worst(c, "SM", SM_BOUNDS) + 3,
             "SM's engine, len = 1, one instruction"),
    Property("sm", "values", _sm_values, "bmc", lambda c: _worst(c, "SM", SM_VALUE_BOUNDS) + 3,
             "SM's data path on free scores: the divider started once on (2**38, S), S the sum of the "
             "ISA's exponentials; each word left at dst + i = (e_i * q + 2**21) >> 22, e_i the ISA's "
             "exponential, q the quotient as the divider returned it (its arithmetic: divider.*), "
             "len <= 3, one instruction started in the first cycle"),
    Property("sm", "division", _sm_division, "bmc", lambda c: _worst(c, "SM", SM_DIVISION_BOUNDS) + 3,
             "SM's 40-bit division on the operands SM gives it: the quotient the engine's divider returns "
             "= 2**38 // S, S the sum of the ISA's exponentials, len <= 2, one SM started in the first cycle"),
    Property("matrix", "contract", _matrix, "bmc", lambda c: _worst(c, "MM", MM_BOUNDS) + 3,
             "the matrix unit, M = N = 1, K <= 2, one instruction"),
    # the array's products at the corner cell after the longest skew: 2 * array + 1 cycles
    Property("systolic", "pe_product", _pe_product, "prove", lambda c: 2 * c.array + 1,
             "each processing element's product register = int8(a_in) * int8(b_in) of the cycle before "
             "(run, no clear), 0 after a clear, for any inputs (k-induction)"),
    Property("systolic", "transport", _array_transport, "prove", lambda c: 2,
             "the whole array, any input sequence: each PE(i, j)'s a_in and b_in = the values that entered "
             "lanes i of A and j of B i + j + 1 run cycles before (valid, else 0; 0 before the last clear), its "
             "accumulator = the wrapped sum of its product register over the run cycles since the last clear "
             "(k-induction; with systolic.pe_product: the sum of a*b of the steps presented, for every K)",
             cover_depth=lambda c: 2 * c.array + 4),
    Property("systolic", "values", _array_values, "bmc", lambda c: ARRAY_VALUES_K + 2 * c.array + 4,
             "the whole array driven as the matrix unit drives it (a clear; run for R cycles, then low; step k "
             "with valid in cycle 2 + k), K <= 4, A, B, R free: A[i][k] and B[k][j] at PE(i, j)'s inputs in "
             "cycle 3 + k + i + j, each accumulator the sum of its K products once its last step is in, held "
             "after (their arithmetic: systolic.pe_product)"),
    Property("matrix", "values", _matrix_values, "bmc", lambda c: 2 * (_worst(c, "MM", MM_BOUNDS) + 1) + 2,
             "MM's data path, two instructions back to back: A[m][k] and B[k][n] reach PE(m, n)'s inputs "
             "in the schedule's cycle, each C word = the sum of that PE's K products from zero (the "
             "products' arithmetic: systolic.pe_product), M = N = 1, K <= 2"),
    Property("matrix", "values_2x2", _matrix_corner, "bmc", lambda c: _worst(c, "MM", MM_CORNER_BOUNDS) + 3,
             "MM's data path on the array's 2 x 2 corner, one instruction: A[m][0] and B[0][n] reach PE(m, n)'s "
             "inputs in the schedule's cycle through the skew lanes 0 and 1 and the neighbour links, each C "
             "word that PE's product, M, N <= 2, K = 1"),
    # the whole array's MM in three pieces (with systolic.values/transport and pe_product: docs/formal.md)
    Property("matrix", "staging", _matrix_staging, "bmc",
             lambda c: _stage_reads(c, _staging_bounds(c)) + 4,
             "the operand memories' writes while staging, one MM, M, N up to the array's size, K = 1 (streaming "
             "while staging: M, N, K <= 2, each row written before the stream reads it), free "
             "scratchpad words: each value written to A's memory (lane i, step k; up to P values a cycle on "
             "a port of P words, the banked memories') carries A[i][k]'s low byte, B's B[k][n]'s (tb too), "
             "i < M, n < N, k < K, every such element written by DRAIN, none after or when idle (the array "
             "and the memories cut)"),
    Property("matrix", "stream", _matrix_stream, "bmc",
             lambda c: _stage_reads(c, _whole(c, WHOLE_STREAM_K)) + 5 + WHOLE_STREAM_K + 2 * c.array,
             "the operand memories' rows (free, constant) at the array's input ports in the schedule's cycles "
             "(step k in DRAIN + 2 + k), clear in DRAIN only, run for the K + M + N + 1 cycles after it, valid "
             "for K; the memories not written after DRAIN, read below K; one MM, M, N up to the array's size, "
             "K <= 2 (the array and the memories cut)"),
    Property("matrix", "write_back", _matrix_write_back, "bmc",
             lambda c: _worst(c, "MM", _whole(c, WHOLE_WRITE_BACK_K)) + 2,
             "one MM started in the first cycle, M, N up to the array's size, K = 1, the array and the memories "
             "cut (its accumulators assumed held after a cycle with neither run nor clear: systolic.transport): "
             "C[m][n] written in cycle X + 1 + m*ceil(N/P) + n div P (X the first cycle after the stream; P the "
             "port's words, 1 on the book's chip) on lane n mod P, at dst + m*ldc + n, with the cell's "
             "accumulator as the stream left it, no other write or lane"),
    Property("chip", "sequencer", _sequencer, "bmc",
             lambda c: OVERLAP_SEQUENCER_DEPTH if c.overlap else SEQUENCER_DEPTH,
             "the whole chip on a program the solver loads through its port (words 0-5, any op code, "
             "every other field <= 7; data paths cut): one unit started at a time, HALT and errors "
             "stop everything, the five counters, the program run in order"),
)



@dataclass(frozen=True)
class Equivalence:
    """A simulator's form of the whole chip's Verilog proven equivalent to the export
    (gen/formal/equiv.py): unit ``forms``, name ``<form>_equivalence``."""
    form: str
    doc: str
    unit: str = "forms"
    mode: str = "equivalence"

    @property
    def name(self) -> str:
        return f"{self.form}_equivalence"

    @property
    def key(self) -> str:
        return f"{self.unit}.{self.name}"


def _equivalences() -> tuple[Equivalence, ...]:
    from .equiv import FORMS
    return tuple(Equivalence(form, f"the chip's Verilog as {what} compiles it, equivalent to the export")
                 for form, (_, what) in FORMS.items())


EQUIVALENCES: tuple[Equivalence, ...] = _equivalences()

UNITS = tuple(dict.fromkeys([p.unit for p in PROPERTIES] + [e.unit for e in EQUIVALENCES]))


def chosen(unit: str | None) -> list[Property | Equivalence]:
    if unit in (None, "all"):
        return [*PROPERTIES, *EQUIVALENCES]
    if unit not in UNITS:
        raise ValueError(f"--unit {unit}: not a unit with contracts; units: {', '.join(UNITS)}, all")
    return [p for p in (*PROPERTIES, *EQUIVALENCES) if p.unit == unit]


def check_equivalence(eq: Equivalence, config: Config, *, timeout: float | None = None) -> dict:
    """One form of the chip proven equivalent to its export; the report's record."""
    from .equiv import prove_form
    verdict = prove_form(eq.form, config=config, timeout=timeout or 1800.0)
    return {"unit": eq.unit, "name": eq.name, "config": config.name, "mode": eq.mode, **verdict}


def check_property(prop: Property, config: Config, *, depth: int | None = None, keep: str | None = None,
                   covers: bool = True, timeout: float | None = None) -> dict:
    """One property: its proof (or bounded check) and its covers; the report's record."""
    from ga2_hdl.contracts.base import NotApplicable
    cycles = depth if depth is not None else prop.depth(config)
    start = time.monotonic()
    record = {"unit": prop.unit, "name": prop.name, "config": config.name, "mode": prop.mode}
    try:
        verdict = sby.check(prop.build(config), mode=prop.mode, depth=cycles, keep=keep,
                            name=f"{prop.unit}.{prop.name}", timeout=timeout)
    except NotApplicable as e:          # the property says it does not apply to this configuration
        return {**record, "status": "skipped", "detail": str(e), "seconds": round(time.monotonic() - start, 2)}
    record.update(status=verdict.status, depth=cycles, seconds=round(verdict.seconds, 2))
    if verdict.status == "failed":
        record["vcd"] = verdict.vcd
    if verdict.detail:
        record["detail"] = verdict.detail
    if covers:
        reach = prop.cover_depth(config) if prop.cover_depth is not None and depth is None else cycles
        cover = sby.check(prop.build(config), mode="cover", depth=reach, keep=keep,
                          name=f"{prop.unit}.{prop.name}.cover", timeout=timeout)
        record["covers"] = cover.status
        if reach != cycles:
            record["cover_depth"] = reach
        if cover.status != "reached":
            record["cover_detail"] = cover.detail
            if cover.vcd:
                record["cover_vcd"] = cover.vcd
            if record["status"] != "failed":
                record["status"] = "failed"
                record.setdefault("detail", f"vacuous: a cover was not reached ({cover.detail})")
    record["seconds"] = round(time.monotonic() - start, 2)
    return record


def run(config: Config, unit: str | None = None, *, depth: int | None = None, keep: str | None = None,
        covers: bool = True, timeout: float | None = None, reporter: Reporter | None = None) -> list[dict]:
    """Every property of ``unit`` (all units: None) checked on ``config``, the records in order;
    ``reporter`` gets ``step(properties done, properties, the record's line)`` (:func:`record_line`)."""
    reporter = or_quiet(reporter)
    records = []
    props = chosen(unit)
    for prop in props:
        if isinstance(prop, Equivalence):
            rec = check_equivalence(prop, config, timeout=timeout)
        else:
            rec = check_property(prop, config, depth=depth, keep=keep, covers=covers, timeout=timeout)
        records.append(rec)
        reporter.step(len(records), len(props), record_line(rec))
    return records


def record_line(r: dict) -> str:
    """One property's verdict in one line: unit, property, status, depth, covers, time, VCD, detail."""
    extra = f" depth {r['depth']} cycles" if r["status"] == "bounded" else ""
    if r.get("mode") == "equivalence" and "equiv_cells" in r:
        extra = f" ({r['equiv_cells']:,} matched signals)"
    cov = f", covers {r['covers']}" if "covers" in r else ""
    where = f"  VCD {r['vcd']}" if r.get("vcd") else ""
    detail = f"  ({r['detail']})" if r.get("detail") and r["status"] != "proven" else ""
    return f"{r['unit']:>8}.{r['name']:<20} {r['status']}{extra}{cov}  {r['seconds']:.1f} s{where}{detail}"


def report(records: list[dict], **extra) -> dict:
    counts = {}
    for r in records:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    return {"properties": records, "totals": counts, **extra}
