"""Arguments that an RTL mutant is equivalent: the change cannot alter what the chip does.

`ga2 mutate rtl` reports a mutant ``equivalent`` only when every check passes
*and* an argument for it is written here; it never assumes one.  Each entry
is keyed by content, not by a line number, so it survives edits around it:
the file, the enclosing function, the (stripped) source line the change is
on, and the change itself (``old -> new``, as the report prints it).  An entry
that no longer matches any mutant is reported by the tests (the argument went
stale and must be rewritten for the new code).

An argument that the change leaves the hardware itself unchanged (a width that
gives the same shape, a condition that builds the same expression) names the
design that shows it (``netlist``, a key of :data:`DESIGNS`); the tests then
build that design from a copy with the mutant applied and check that its netlist
(RTLIL without source locations) is the unbroken one's, byte for byte, and that
building it runs the mutated line (:func:`netlist_fingerprint`).
"""
from __future__ import annotations

from dataclasses import dataclass

from .netlists import DESIGNS, netlist_fingerprint  # noqa: F401 (the arguments' designs)
from .shared_arguments import (  # noqa: F401 (the shared reasons of the entries below)
    DIV_PARTIAL,
    DMA_WDATA,
    MM_DIM,
    MM_STREAM_COUNT,
    MM_STREAM_READ,
    MM_STREAM_VALID,
    MM_WIDE_FIELDS,
    PART_LOCAL_BITS,
    RQ_LANE_LOAD,
    RQ_ONES_WIDER,
    SOFTMAX_INDEX_AT_START,
    SOFTMAX_LAST,
    SOFTMAX_STAGE3,
    SOFTMAX_STAGE4,
    SPAD_LAST_BANK,
    SPAD_ROTATE_LOW_BITS,
    SPAN_WIDER,
    VECTOR_IDLE_DATA,
    WIDE_AHEAD,
)


@dataclass(frozen=True)
class Equivalence:
    file: str          #: "ga2_hdl/rtl/<unit>.py"
    function: str      #: the enclosing function, Class.method
    line: str          #: the stripped source line the change starts on
    change: str        #: "old -> new", exactly as the report prints it
    argument: str      #: why no program can tell the difference
    netlist: str = ""  #: a design (key of DESIGNS) whose netlist the change leaves identical, checked by the tests


EQUIVALENT: tuple[Equivalence, ...] = (
    Equivalence("ga2_hdl/rtl/chip.py", "GA2Chip._overlapped_stop", "with m.Elif(verdict.halt):",
                "verdict.halt -> 0",
                "this branch is reached only when past_end is 0 and halt or an error is set; with the change a "
                "HALT takes the Else branch, halting with verdict.error, and verdict.error is the issue check's code for "
                "the HALT word, which is OK (HALT is legal with any operand bits: isa.check returns OK for op 0 "
                "before any operand rule); halt(OK) is what the Elif does, in the same cycle, so status, "
                "status_pc, halted and every counter are the same"),
    Equivalence("ga2_hdl/rtl/chip.py", "GA2Chip._overlapped", "verdict = self._verdict(past_end=1)", "1 -> 2",
                "verdict.past_end is set only from the one-bit comparison pc >= imem_words (in FETCH) and read "
                "only as a condition (ISSUE's halt test and its NO_HALT branch): a two-bit field holds 0 or 1 "
                "the same way and is true exactly when the one-bit field is, so no halt, status or counter "
                "differs (the verdict register's other fields keep their values; only their bit positions "
                "move)"),
    Equivalence("ga2_hdl/rtl/dma.py", "DMA.elaborate", "last_chunk = Signal(len(length))",
                "len(length) -> len(length) - 1",
                "last_chunk exists only on a wide port (ext_port_words = w >= 2) and holds (len - 1) >> log2(w), "
                "where len is the 16-bit len field: at most (2**16 - 1) >> 1 < 2**15, so a 15-bit register holds "
                "every value it is given, and the comparisons with it (requested != last_chunk + 1, "
                "completed == last_chunk) see the same number"),
    Equivalence("ga2_hdl/rtl/dma.py", "DMA.elaborate.mask", "remaining = Signal(len(length) + 1)",
                "len(length) + 1 -> (len(length) + 1) - 1",
                "a wide port's lane mask reaches a port only through Mux(more_to_request, request_mask, 0) or "
                "Mux(word_done, completed_mask, 0), i.e. for a chunk index below R = ceil(len / w), whose first "
                "word chunk * w is below len: then remaining = len - chunk * w is 1 .. len <= 2**16 - 1 and a "
                "16-bit register holds it, so every comparison remaining > i gives the same lane bit (the "
                "17th bit only matters for the negative differences of chunks past the end, masked to 0)"),
    Equivalence("ga2_hdl/rtl/softmax.py", "SoftmaxUnit.elaborate.next_pass",
                "m.d.sync += [rd_index.eq(0), wr_index.eq(0), v2.eq(0), v3.eq(0), last2.eq(0), last3.eq(0)]",
                "last2.eq(0), -> ",
                "last2 is read only under v2 (MAX's `v2 & last2`) and copied into last3 (read under v3 in EXP) "
                "and last4 (under v4 in SCALE).  The pipeline assigns last2 <= last1 every cycle, and at the end "
                "of each pass last1 is already 0 (the pass's last element left stage 1 the cycle before), so "
                "without the clear last2 takes the same 0 the clear writes; no write, no done and no state "
                "change differs"),
    Equivalence("ga2_hdl/rtl/divider.py", "Divider.elaborate", "next_num_quot = Cat(fits, num_quot[:w - 1])",
                "w - 1 -> w - 0",
                "next_num_quot is only ever assigned to num_quot, a w-bit register; Cat(fits, "
                "num_quot[:w]) is one bit wider than Cat(fits, num_quot[:w - 1]) and the two agree "
                "on their low w bits, so the assignment truncates the extra top bit away and the register "
                "takes the same value every cycle", netlist="divider"),
    Equivalence("ga2_hdl/rtl/divider.py", "Divider.elaborate",
                "first_num_quot = Cat(first_fits, self.numerator[:w - 1])", "w - 1 -> w - 0",
                "first_num_quot is only ever assigned to num_quot, a w-bit register; with numerator[:w] it is "
                "one bit wider and agrees on its low w bits, so the assignment truncates the extra top bit "
                "away and the register takes the same value in the start cycle", netlist="divider"),
    Equivalence("ga2_hdl/rtl/divider.py", "Divider.elaborate", "brought_down = Signal(w + 1)",
                "w + 1 -> (w + 1) - 1",
                DIV_PARTIAL + "Step i brings a bit down into the remainder of steps 1 .. i - 1, which is below "
                "2**(i - 1): brought_down = 2 * rem + bit < 2**i <= 2**w, so w bits hold it in every step "
                "whose result is stored (after done it is computed from the final remainder, but rem and "
                "num_quot do not load then).  The comparison with the divisor, the difference and the "
                "quotient bit are the same, so are the quotient and remainder for every 40-bit input"),
    Equivalence("ga2_hdl/rtl/matrix_unit.py", "MatrixUnit._land_staged_words", "mem.wr_data.eq(spad_read_word(self.spad)[:8]),",
                ":8 -> :9",
                "the operand memory's wr_data port is signed(8): assigning the low 9 bits of the word keeps "
                "only its low 8, the same int8 as before", netlist="matrix unit"),
    Equivalence("ga2_hdl/rtl/matrix_unit.py", "MatrixUnit._land_staged_words",
                "w.d.sync += [staged.data[j].eq(self.spad.rd_data[j][:8]) for j in range(self.ports)]", ":8 -> :9",
                "the staging register's lanes (staged.data, a wide port's) are unsigned(8): assigning the low "
                "9 bits of lane j's word keeps only its low 8, the same byte as before, which the banked "
                "operand memory takes as its int8"),
    Equivalence("ga2_hdl/rtl/softmax.py", "SoftmaxUnit.elaborate", "product = Signal(PRODUCT_BITS)",
                "PRODUCT_BITS -> PRODUCT_BITS - 1",
                "product = e * r with r = floor(2**38 / S) and e one of the terms of the sum S, so e <= S and "
                "e * r <= e * 2**38 / S <= 2**38, with equality only if e = S divides 2**38, which no sum of "
                "table entries does (S = 65535 for a single term): the product is below 2**38 and fits in 38 "
                "bits, one fewer than PRODUCT_BITS = 39"),
    Equivalence("ga2_hdl/rtl/softmax.py", "SoftmaxUnit.elaborate", "rd_index.eq(0), wr_index.eq(0)]",
                "rd_index.eq(0), -> ", SOFTMAX_INDEX_AT_START),
    Equivalence("ga2_hdl/rtl/softmax.py", "SoftmaxUnit.elaborate", "rd_index.eq(0), wr_index.eq(0)]",
                ", wr_index.eq(0) -> ", SOFTMAX_INDEX_AT_START),
    Equivalence("ga2_hdl/rtl/matrix_unit.py", "MatrixUnit._load", "r.wb.m.eq(0), r.wb.n.eq(0),",
                "r.wb.n.eq(0), -> ",
                "wb.n is 0 whenever an MM starts: it is 0 after reset and WRITE (_write_back) sets it to 0 "
                "with the last element of every row (wb.n == last_n), the last row included, which ends every "
                "MM; so LOAD's clear writes the value it already holds (wb.m, which ends at M, does need its "
                "clear)"),
    Equivalence("ga2_hdl/rtl/matrix_unit.py", "MatrixUnit.elaborate",
                "m.d.sync += [r.land.valid.eq(0), r.stream.mem_valid.eq(0), r.out.valid.eq(0)]",
                "r.stream.mem_valid.eq(0), -> ", MM_STREAM_VALID),
    Equivalence("ga2_hdl/rtl/matrix_unit.py", "MatrixUnit._load", "r.walk.inner.eq(0), r.walk.outer.eq(0),",
                "r.walk.inner.eq(0), -> ",
                "walk.inner is 0 whenever an MM starts: it is 0 after reset and STAGE (_stage) sets it to 0 in "
                "the cycle its last word is read (inner == inner_last), which ends every MM's staging; so "
                "LOAD's clear writes the value it already holds"),
    Equivalence("ga2_hdl/rtl/matrix_unit.py", "MatrixUnit._stream",
                "self.a_mem.rd_en.eq(reading), self.a_mem.rd_addr.eq(step),", "reading -> 1", MM_STREAM_READ),
    Equivalence("ga2_hdl/rtl/matrix_unit.py", "MatrixUnit._stream",
                "self.b_mem.rd_en.eq(reading), self.b_mem.rd_addr.eq(step),", "reading -> 1", MM_STREAM_READ),
    Equivalence("ga2_hdl/rtl/vector_unit.py", "VectorUnit.elaborate",
                "read_gate.d.comb += engine.spad.rd_data.eq(Mux(selected, read_data, 0))",
                "Mux(selected, read_data, 0) -> Mux(selected, read_data, -1)", VECTOR_IDLE_DATA),
    Equivalence("ga2_hdl/rtl/vector_unit.py", "VectorUnit.elaborate",
                "read_gate.d.comb += engine.spad.rd_data.eq(Mux(selected, read_data, 0))",
                "Mux(selected, read_data, 0) -> Mux(selected, read_data, 1)", VECTOR_IDLE_DATA),
    Equivalence("ga2_hdl/rtl/divider.py", "Divider.elaborate", "steps_left = Signal(range(w))", "w -> w - 1",
                "steps_left counts down from w - 1 = 39 (the divider's width is isa.DIV_BITS = 40): range(40) "
                "and range(39) are both the shape unsigned(6), so the register, and the hardware, are bit for "
                "bit the same", netlist="divider"),
    Equivalence("ga2_hdl/rtl/softmax.py", "SoftmaxUnit.elaborate.next_pass",
                "m.d.sync += [rd_index.eq(0), wr_index.eq(0), v2.eq(0), v3.eq(0), last2.eq(0), last3.eq(0)]",
                "last2.eq(0) -> last2.eq(1)", SOFTMAX_LAST),
    Equivalence("ga2_hdl/rtl/softmax.py", "SoftmaxUnit.elaborate.next_pass",
                "m.d.sync += [rd_index.eq(0), wr_index.eq(0), v2.eq(0), v3.eq(0), last2.eq(0), last3.eq(0)]",
                "last3.eq(0) -> last3.eq(1)", SOFTMAX_LAST),
    Equivalence("ga2_hdl/rtl/softmax.py", "SoftmaxUnit.elaborate", "rd_index.eq(0), wr_index.eq(0)]",
                "wr_index.eq(0) -> wr_index.eq(1)",
                "wr_index is used only by the writes of EXP and SCALE; MAX, the first pass, writes nothing and "
                "ends with next_pass, which sets wr_index to 0 before EXP's first write, so the value given to "
                "it at start is never used"),
    Equivalence("ga2_hdl/rtl/vector_unit.py", "_clamp",
                "return Mux(total > isa.INT8_MAX, isa.INT8_MAX, Mux(total < isa.INT8_MIN, isa.INT8_MIN, total))",
                "total > isa.INT8_MAX -> total >= isa.INT8_MAX",
                "the only input the change treats differently is total = INT8_MAX (one lane's sum, on a "
                "one-word or a wide port), which the clamp then replaces by INT8_MAX: the same value"),
    Equivalence("ga2_hdl/rtl/vector_unit.py", "_clamp",
                "return Mux(total > isa.INT8_MAX, isa.INT8_MAX, Mux(total < isa.INT8_MIN, isa.INT8_MIN, total))",
                "total < isa.INT8_MIN -> total <= isa.INT8_MIN",
                "the only input the change treats differently is total = INT8_MIN (one lane's sum, on a "
                "one-word or a wide port), which the clamp then replaces by INT8_MIN: the same value"),
    Equivalence("ga2_hdl/rtl/decoder.py", "CheckStages._op_error", "for qs, qe in spad[i + 1:]:",
                "i + 1 -> i + 0",
                "spad[i:] also pairs each scratchpad region with itself; the OVERLAP rule added for such a pair "
                "is (ps != ps) & ..., whose first factor is 0 for every instruction, so it never fires; the rules "
                "of the pairs of distinct regions are the same, in the same order, so the priority chain gives "
                "the same error code for every instruction"),
    # one line for the book's one-word port and the wide one (ext_port_words > 1): the W-word ext_wdata
    # is driven the same way, under the same ext_we
    Equivalence("ga2_hdl/rtl/dma.py", "DMA.elaborate",
                "st_data.d.comb += self.ext_wdata.eq(Mux(is_load, 0, Value.cast(spad_read_word(self.spad))))",
                "Mux(is_load, 0, Value.cast(spad_read_word(self.spad))) -> Mux(is_load, 1, Value.cast(spad_read_word(self.spad)))",
                DMA_WDATA),
    Equivalence("ga2_hdl/rtl/dma.py", "DMA.elaborate",
                "st_data.d.comb += self.ext_wdata.eq(Mux(is_load, 0, Value.cast(spad_read_word(self.spad))))",
                "Mux(is_load, 0, Value.cast(spad_read_word(self.spad))) -> Mux(is_load, -1, Value.cast(spad_read_word(self.spad)))",
                DMA_WDATA),
    Equivalence("ga2_hdl/rtl/matrix_unit.py", "MatrixUnit._registers", "P, wide = self.ports, self.ports > 1",
                "self.ports > 1 -> self.ports > 0", MM_WIDE_FIELDS),
    Equivalence("ga2_hdl/rtl/matrix_unit.py", "MatrixUnit._registers", "P, wide = self.ports, self.ports > 1",
                "self.ports > 1 -> self.ports >= 1", MM_WIDE_FIELDS),
    Equivalence("ga2_hdl/rtl/matrix_unit.py", "MatrixUnit._registers",
                "addr, dim = unsigned(spad_addr_bits(self.config)), unsigned(dim_bits)", "dim_bits -> dim_bits - 1",
                MM_DIM),
    Equivalence("ga2_hdl/rtl/matrix_unit.py", "MatrixUnit._registers", '"stream_last": unsigned(dim_bits + 2),',
                "dim_bits + 2 -> (dim_bits + 2) - 1", MM_STREAM_COUNT),
    Equivalence("ga2_hdl/rtl/matrix_unit.py", "MatrixUnit._registers", '"step": unsigned(dim_bits + 2),',
                "dim_bits + 2 -> (dim_bits + 2) - 1", MM_STREAM_COUNT),
    Equivalence("ga2_hdl/rtl/matrix_unit.py", "MatrixUnit._registers",
                '"valid": 1, "b": 1, "lane": range(self.size), "k": range(self.max_k),',
                "self.size -> self.size - 1",
                "with the ISA's array size 4 (isa.MM_MAX_MN), range(4) and range(3) are both the shape "
                "unsigned(2): the struct field, and so the hardware, is bit for bit the same (it would not "
                "be for a size that is one more than a power of two)", netlist="matrix unit"),
    Equivalence("ga2_hdl/rtl/matrix_unit.py", "MatrixUnit._registers",
                '"valid": 1, "b": 1, "lane": range(self.size), "k": range(self.max_k),',
                "self.max_k -> self.max_k - 1",
                "with the ISA's largest K, 64 (isa.MM_MAX_K), range(64) and range(63) are both the shape "
                "unsigned(6): the struct field, and so the hardware, is bit for bit the same", netlist="matrix unit"),
    Equivalence("ga2_hdl/rtl/softmax.py", "SoftmaxUnit.elaborate.next_pass",
                "m.d.sync += [rd_index.eq(0), wr_index.eq(0), v2.eq(0), v3.eq(0), last2.eq(0), last3.eq(0)]",
                ", last3.eq(0) -> ", SOFTMAX_STAGE3),
    Equivalence("ga2_hdl/rtl/softmax.py", "SoftmaxUnit.elaborate",
                "m.d.comb += exp_table.addr.eq((running_max - score_r)[:8])", ":8 -> :9",
                "the table's address port is In(8) (exp_table.ADDR_BITS): assigning the low 9 bits of the "
                "difference keeps only its low 8, the same address as before", netlist="softmax"),
    Equivalence("ga2_hdl/rtl/softmax.py", "SoftmaxUnit.elaborate", "with m.If(v2 & (score_r > running_max)):",
                "score_r > running_max -> score_r >= running_max",
                "the unit keeps only the maximum's value, not where it is (no index; EXP reads every score "
                "again): the change also takes a score equal to running_max, which writes the value the "
                "register already holds (the first score -128 against the start value -128 included), so "
                "running_max is the same in every cycle"),
    Equivalence("ga2_hdl/rtl/softmax.py", "SoftmaxUnit._scale", "with m.If(v2):", "v2 -> 1",
                "SCALE's product register (stage 2) is read only under v3, by the rounding stage (prob), and v3 "
                "is v2 one cycle later: in every cycle that reads it, the cycle before had v2 = 1 and loaded "
                "it with e_read * r, the same value in the design and in the change (neither e_read nor r "
                "depends on it).  The change only loads it also in SCALE's cycles with v2 = 0, whose value "
                "nothing reads (v3 is 0 the cycle after) and which the next v2 cycle overwrites; outside "
                "SCALE the register is not written either way.  So prob, the writes, done and the busy time "
                "are the same (e_read, the stage before, is loaded in every SCALE cycle for the same reason)"),
    Equivalence("ga2_hdl/rtl/systolic.py", "ProcessingElement.__init__",
                "m.d.sync += [state.eq(0), acc.eq(0), product.eq(0)]",
                "state.eq(0) -> state.eq(1)",
                "the clear then leaves every cell's operand register at a = 1, b = 0 (the struct's low byte is "
                "a) instead of 0, 0; the accumulators are still cleared.  Only run cycles move anything, and "
                "counting them from the clear: cell (i, j) receives the stale a = 1 only from its left "
                "neighbour, in run cycles t <= j (the 1s shift right one column per cycle; column 0 takes the "
                "A skew's output), while its b input is the B skew's output delayed by i cycles, and the skew "
                "registers are cleared too (lane j leaves after 1 + j stages), so b_in is 0 in every run "
                "cycle t <= i + j + 1.  So each stale 1 is multiplied by 0: no product register (cleared too) "
                "and no accumulator differs, and after j run cycles no a register holds it.  Nothing else reads a cell's operand register "
                "(a_out and b_out go only to the neighbours; the last column's a_out to nothing), so the "
                "results the write-back reads are the same"),
    Equivalence("ga2_hdl/rtl/requant.py", "_constants",
                "clip_positive, clip_negative = at_least[PRODUCT_BITS - 7], at_least[PRODUCT_BITS - 6]",
                "PRODUCT_BITS - 6 -> PRODUCT_BITS - 5",
                "the negative acc's saturation limit is then clipped to 2**56 from s = 51 on instead of 50, so "
                "only s = 50 changes: its limit becomes 127 * 2**50 cut to bits 50 .. 55, 2**56 - 2**50, instead "
                "of 2**56.  Both are above every biased product: |acc| <= 2**31 and m < 2**24 make |acc| * m "
                "< 2**55, and a negative acc's bias is negative, so the compare biased >= limit is false for "
                "either limit and q is the same for every operand (requant.formula proves the design's "
                "form; nothing else reads the limit)"),
    Equivalence("ga2_hdl/rtl/requant.py", "_constants",
                "minus_half = Signal(signed(BIASED_BITS), name=\"minus_half\")",
                "BIASED_BITS -> BIASED_BITS - 1",
                "minus_half holds -2**(s-1) (s >= 1) or -1 (s = 0), so a value in -2**55 .. -1: its 58 assigned "
                "bits (bit 56 and 57 both 1) cut to 57 are the same value as a signed 57-bit number, and every "
                "reader sign-extends it (the offset's signed add), so the offset and everything after it are "
                "the same"),
    Equivalence("ga2_hdl/rtl/requant.py", "_constants",
                "clip_positive, clip_negative = at_least[PRODUCT_BITS - 7], at_least[PRODUCT_BITS - 6]",
                "PRODUCT_BITS - 6 -> PRODUCT_BITS - 7",
                "the negative acc's saturation limit is then clipped to 2**56 from s = 49 on instead of 50, so "
                "only s = 49 changes: 2**56 instead of 127 * 2**49.  Both are above every biased product of a "
                "negative acc (|acc| * m < 2**55, less the bias), so biased >= limit is false for either and q "
                "is the same for every operand"),
    Equivalence("ga2_hdl/rtl/requant.py", "_constants",
                "half.eq(Cat(*(between(i + 1, i + 1) for i in range(PRODUCT_BITS)))),",
                "PRODUCT_BITS -> PRODUCT_BITS - 1",
                "half then lacks its bit 55, set only for s = 56 (every shift of 56 or more, clipped): the "
                "positive bias 2**55 becomes 0 there.  With |acc| * m < 2**55 the biased product stays below "
                "2**56 either way, so the window (biased >> 56) is 0 and the compare with the limit 2**56 false "
                "in both: q is 0 (the rounded value of anything below 2**55 / 2**56) for every operand"),
    Equivalence("ga2_hdl/rtl/requant.py", "_constants",
                "limit_positive.eq(Cat(*(between(i - 7, i - 7) if i >= 7 else 0 for i in range(PRODUCT_BITS)),",
                "i >= 7 -> i >= 6",
                "bit 6 of the positive limit becomes between(-1, -1) = ge(-1) & ~at_least[0]; ge(k) is 1 for k "
                "<= 0 and at_least[0] is the constant 1 (s >= 0), so the bit is the constant 0 it was: the "
                "same netlist"),
    Equivalence("ga2_hdl/rtl/requant.py", "_constants",
                "limit_negative.eq(Cat(*(between(max(i - 6, 0), i) & ~clip_negative for i in range(PRODUCT_BITS)),",
                "max(i - 6, 0) -> max(i - 6, -1)",
                "the lower bound changes only for i < 6, from ge(0) to ge(-1), and ge(k) is the constant 1 for "
                "every k <= 0 (s >= 0 always): the same bits, the same netlist"),
    Equivalence("ga2_hdl/rtl/rowmem.py", "BankedOperandRowMemory.elaborate",
                "m.d.comb += [across_data.eq((values << (self.wr_lane * 8))[:8 * lanes]),",
                "8 * lanes -> 9 * lanes",
                "across_data is a Signal(8 * lanes): assigning the low 9 * lanes bits of the shifted values "
                "keeps only its low 8 * lanes, the same bits as before, so the same hardware",
                netlist="banked operand memories"),
    Equivalence("ga2_hdl/rtl/sram.py", "_to_banks",
                "return twice.bit_select(Cat(C(0, (lane_bits - 1).bit_length()) if lane_bits > 1 else C(0, 0),",
                "lane_bits - 1 -> 1 - lane_bits",
                "the changed expression is evaluated only when lane_bits > 1, i.e. for lane_bits = 32 (the write "
                "data; the masks take the other branch), and int.bit_length() of a negative number is that of "
                "its absolute value: (1 - 32).bit_length() = 31.bit_length() = 5, the same zero offset part "
                "and the same rotation (the netlist is checked byte-identical)", netlist="banked scratchpads"),
    Equivalence("ga2_hdl/rtl/sram.py", "_from_banks",
                "return both.bit_select(Cat(C(0, (word_bits - 1).bit_length()), offset), len(bank_data) * word_bits)",
                "word_bits - 1 -> word_bits - 2",
                "_from_banks is called only with word_bits = isa.WORD_BITS = 32 (the read data): "
                "(32 - 2).bit_length() = 30.bit_length() = 5 = 31.bit_length(), so the same constant and the "
                "same rotation (the netlist is checked byte-identical)", netlist="banked scratchpads"),
    Equivalence("ga2_hdl/rtl/vector_unit.py", "AddEngine._words", "with m.If(v1 & second1):", "v1 & second1 -> 1",
                "second_operand is read only through total, and total only by the load of result under v2, and "
                "v2 is v1 & second1 one cycle later: in every cycle that loads result, the cycle before had "
                "v1 & second1 = 1 and loaded second_operand with the same src2[i] in the design and in the "
                "change.  The change only loads it also in other cycles, whose value nothing reads before the "
                "next v1 & second1 cycle overwrites it: result, the writes, done and the busy time are the same"),
    Equivalence("ga2_hdl/rtl/sram.py", "_from_banks",
                "return both.bit_select(Cat(C(0, (word_bits - 1).bit_length()), offset), len(bank_data) * word_bits)",
                "word_bits - 1 -> 1 - word_bits",
                "Python's int.bit_length() of a negative number is that of its absolute value: "
                "(1 - 32).bit_length() = 31.bit_length() = 5 = (32 - 1).bit_length(), so the constant, and the "
                "hardware, are the same"),
    Equivalence("ga2_hdl/rtl/softmax.py", "SoftmaxUnit.elaborate", "wr_index = Signal(range(spad_words + 1))",
                "spad_words + 1 -> (spad_words + 1) - 1",
                "wr_index (the next element an SM pass writes) is never compared: it is used only as the "
                "offset of the write address, (dst + wr_index)[:addr_bits], and to increment itself.  It is 0 "
                "when each pass starts (start and next_pass clear it), grows by one with each write, and the "
                "write of a pass's last element, whose increment would make it len, ends the pass with "
                "next_pass, whose clear is a later statement and wins; so it holds at most len - 1 <= "
                "spad_words - 1 (the issue check refuses len = 0 and an SM region past the scratchpad's "
                "end).  range(spad_words) holds 0 .. spad_words - 1: the narrower register takes the same "
                "value in every cycle, so the same addresses, writes and busy time.  (rd_index, which is "
                "compared with len and reaches len, does need range(spad_words + 1).)"),
    Equivalence("ga2_hdl/rtl/sram.py", "_to_banks",
                "return twice.bit_select(Cat(C(0, (lane_bits - 1).bit_length()) if lane_bits > 1 else C(0, 0),",
                "lane_bits > 1 -> lane_bits > 0", SPAD_ROTATE_LOW_BITS,
                netlist="banked scratchpads"),
    Equivalence("ga2_hdl/rtl/sram.py", "_to_banks",
                "return twice.bit_select(Cat(C(0, (lane_bits - 1).bit_length()) if lane_bits > 1 else C(0, 0),",
                "lane_bits - 1 -> lane_bits - 2",
                "the changed expression is evaluated only when lane_bits > 1, i.e. for lane_bits = 32 (the write "
                "data; the masks take the other branch): (32 - 2).bit_length() = 30.bit_length() = 5 = "
                "31.bit_length(), so the same 5-bit zero offset part and the same rotation (the netlist is "
                "checked byte-identical)", netlist="banked scratchpads"),
    Equivalence("ga2_hdl/rtl/vector_unit.py", "AddEngine._chunks",
                "ahead = Signal(range(2 * self.config.spad_words + 1))",
                "2 * self.config.spad_words + 1 -> (2 * self.config.spad_words + 1) - 1",
                "ahead (the read slot after the start cycle's) is set to 1 by start and grows by one per read "
                "after it; reads stop once ahead passes last_slot = 2 * ((len - 1) >> log2 P) + 1, so while busy "
                "it never exceeds last_slot + 1 = 2 * ceil(len / P) <= 2 * ceil(S / P) <= S for the engine's "
                "P >= 2 (the issue check refuses a region past the scratchpad's end, so len <= S = spad_words; "
                "the engine exists only on wide ports).  range(2 * S) holds 0 .. 2S - 1 >= S, so the narrower "
                "register takes the same value in every busy cycle and every comparison (ahead <= last_slot, "
                "ahead == last_slot) and address is the same; idle, nothing reads it (reading is start | "
                "busy & ...), and start sets it again"),
    Equivalence("ga2_hdl/rtl/vector_unit.py", "AddEngine._chunks",
                "last_slot = Signal(range(2 * self.config.spad_words + 1), name=\"last_slot\")",
                "2 * self.config.spad_words + 1 -> (2 * self.config.spad_words + 1) - 1",
                "last_slot is loaded once, at start, with 2 * ((len - 1) >> log2 P) + 1 <= 2 * ceil(S / P) - 1 "
                "< S for the engine's P >= 2 (len <= S = spad_words: the issue check), and range(2 * S) holds "
                "0 .. 2S - 1: the narrower register holds the same value, so every comparison is the same"),
    Equivalence("ga2_hdl/rtl/vector_unit.py", "AddEngine._chunks", "with m.Elif(reading):", "reading -> 1",
                WIDE_AHEAD),
    Equivalence("ga2_hdl/rtl/vector_unit.py", "_Engine._read_chunks", "with m.Elif(reading):", "reading -> 1",
                WIDE_AHEAD),
    Equivalence("ga2_hdl/rtl/vector_unit.py", "AddEngine._chunks",
                "self.spad.rd_addr.eq(self._addr(Mux(slot[0], src2, src1), chunk << self.shift)),",
                "src2, src1 -> src1, src2",
                "reading src2's chunk before src1's instead of after: each is registered as it arrives and the "
                "lanes' sums and clamps are symmetric in the two operands, the reads (and their masks) and the "
                "busy time are the same, and the write of chunk c (in slot 2c + 4) meets the read of chunk c + 2 "
                "of one of the operands, never its own addresses, since src1, src2 and dst are each identical or "
                "disjoint (the issue check); so memory and cycle counts are the same (the book VADD's argument, "
                "lane by lane)"),
    Equivalence("ga2_hdl/rtl/vector_unit.py", "AddEngine._chunks", "with m.If(v2):", "v2 -> 1",
                "result (the clamped sums) is read only by the masked write of dst, under v3, and v3 is v2 one "
                "cycle later: in every cycle that writes, the cycle before had v2 = 1 and loaded result with the "
                "same sums in the design and in the change.  The change only loads it also in cycles with "
                "v2 = 0, whose value nothing reads (v3 is 0 the cycle after) and which the next v2 cycle "
                "overwrites: the writes, done and the busy time are the same"),
    Equivalence("ga2_hdl/rtl/sram.py", "_to_banks",
                "return twice.bit_select(Cat(C(0, (lane_bits - 1).bit_length()) if lane_bits > 1 else C(0, 0),",
                "lane_bits > 1 -> lane_bits >= 1", SPAD_ROTATE_LOW_BITS,
                netlist="banked scratchpads"),
    Equivalence("ga2_hdl/rtl/sram.py", "_to_banks",
                "return twice.bit_select(Cat(C(0, (lane_bits - 1).bit_length()) if lane_bits > 1 else C(0, 0),",
                "lane_bits > 1 -> lane_bits > 2", SPAD_ROTATE_LOW_BITS,
                netlist="banked scratchpads"),
    Equivalence("ga2_hdl/rtl/sram.py", "_to_banks",
                "return twice.bit_select(Cat(C(0, (lane_bits - 1).bit_length()) if lane_bits > 1 else C(0, 0),",
                "C(0, 0) -> C(1, 0)",
                "C(1, 0) is a zero-width constant, and a constant's value is truncated to its width: it is "
                "(const 0'd0), the very expression C(0, 0) builds, so the rotation's offset and the banked "
                "scratchpad are the same netlist", netlist="banked scratchpads"),
    Equivalence("ga2_hdl/rtl/sram.py", "Scratchpad._elaborate_banked",
                "wr_en.eq(any_of([en for en, *_ in writes])), w_addr.eq(wr_addr), w_mask.eq(wr_mask),",
                "any_of([en for en, *_ in writes]) -> 1",
                "wr_en (the enable of the write that reaches the banks this cycle) is read only by the banks' "
                "write enables, wr_en & w_bank_mask[b] (_bank_requests), and w_bank_mask is the rotation of "
                "w_mask, the OR of every write's mask gated by that write's own enable (Mux(en, mask, 0)): in "
                "a cycle without an enabled write it is 0, so a wr_en of 1 enables no bank, and in a cycle "
                "with one wr_en is 1 already.  The debug output write_en is its own expression of the "
                "masters' enables.  The same bank writes in every cycle, so the same reads"),
    Equivalence("ga2_hdl/rtl/sram.py", "Scratchpad._bank_requests",
                "r_next, w_next = ((b < r_off), (b < w_off)) if b < B - 1 else (0, 0)", "B - 1 -> B - 0",
                SPAD_LAST_BANK),
    Equivalence("ga2_hdl/rtl/sram.py", "Scratchpad._bank_requests",
                "r_next, w_next = ((b < r_off), (b < w_off)) if b < B - 1 else (0, 0)", "b < B - 1 -> b <= B - 1",
                SPAD_LAST_BANK),
    Equivalence("ga2_hdl/rtl/sram.py", "Scratchpad._bank_requests",
                "w_bank_data[b * W:(b + 1) * W]))", "b + 1 -> b + 2",
                "the slice from b * W is W bits longer (or, for the last bank, reaches the end of the word), "
                "but it is the bank's write data, assigned to a W-bit write port (through the partitions' "
                "AND-OR multiplexer, whose OR of masked values keeps the low W bits too), which keeps its low "
                "W bits: the same word; the netlist is the same", netlist="banked scratchpads"),
    Equivalence("ga2_hdl/rtl/vector_unit.py", "AddEngine._chunks", "with m.If(v1 & second1):",
                "v1 & second1 -> 1",
                "second (src2's chunk, an int8 per lane) is read only through the lanes' sums, and the sums only "
                "by the load of result under v2, and v2 is v1 & second1 one cycle later: in every cycle that "
                "loads result, the cycle before had v1 & second1 = 1 and loaded second with the same chunk in "
                "the design and in the change.  The change only loads it also in other cycles, whose value "
                "nothing reads before the next v1 & second1 cycle overwrites it: result, the masked writes, done "
                "and the busy time are the same (the book VADD's argument, lane by lane)"),
    Equivalence("ga2_hdl/rtl/vector_unit.py", "_Engine._mask", "remaining = Signal(len(length) + 1)",
                "len(length) + 1 -> (len(length) + 1) - 1",
                "a wide engine's chunk mask (remaining = len - chunk * P, lane j kept when remaining > j) "
                "matters only in the cycles the engine reads: the port's rd_mask is Mux(reading, mask, 0), "
                "and the registered copies are used only under the valid bits that follow reading through the "
                "pipeline (VADD: under v2 = v1 & second1, the copy of a reading cycle too).  While reading, the "
                "chunk read is 0 in the start cycle and at most (len - 1) // P after it (RQ and AMAX: rd_chunk "
                "<= last_chunk; VADD: ahead // 2 <= last_slot // 2), so remaining = len - chunk * P lies in "
                "1 .. len <= 2**16 - 1 (the len field is len(length) = 16 bits wide): it fits the narrower "
                "register, whose value, and every comparison, is then the same"),
    Equivalence("ga2_hdl/rtl/vector_unit.py", "RequantizeEngine._chunks", "with m.If(~self.busy | masks[1][j]):",
                "~self.busy | masks[1][j] -> 1", RQ_LANE_LOAD),
    Equivalence("ga2_hdl/rtl/vector_unit.py", "RequantizeEngine._chunks", "with m.If(~self.busy | masks[1][j]):",
                "1 -> 0", RQ_LANE_LOAD),
    Equivalence("ga2_hdl/rtl/vector_unit.py", "RequantizeEngine._chunks", "with m.If(~self.busy | masks[1][j]):",
                "1 -> 2", RQ_LANE_LOAD),
    Equivalence("ga2_hdl/rtl/vector_unit.py", "AddEngine._words", "with m.If(v2):", "v2 -> 1",
                "result (the clamped sum) is read only by the write of dst[i], under v3, and v3 is v2 one cycle "
                "later: in every cycle that writes, the cycle before had v2 = 1 and loaded result with the same "
                "sum in the design and in the change.  The change only loads it also in cycles with v2 = 0, "
                "whose value nothing reads (v3 is 0 the cycle after; the engine drives wr_data only inside the "
                "write's If) and which the next v2 cycle overwrites: the writes, done and the busy time are the "
                "same (the wide engine's argument, one lane)"),
    Equivalence("ga2_hdl/rtl/sram.py", "Scratchpad._elaborate_partitioned",
                "local_bits = (self.banks[0].depth - 1).bit_length()",
                "self.banks[0].depth - 1 -> self.banks[0].depth - 2", PART_LOCAL_BITS,
                netlist="partitioned scratchpads"),
    Equivalence("ga2_hdl/rtl/sram.py", "Scratchpad._elaborate_partitioned",
                "local_bits = (self.banks[0].depth - 1).bit_length()",
                "self.banks[0].depth - 1 -> 1 - self.banks[0].depth", PART_LOCAL_BITS,
                netlist="partitioned scratchpads"),
    Equivalence("ga2_hdl/rtl/sram.py", "Scratchpad._elaborate_partitioned",
                "local_bits = (self.banks[0].depth - 1).bit_length()", "0 -> -1", PART_LOCAL_BITS,
                netlist="partitioned scratchpads"),
    Equivalence("ga2_hdl/rtl/sram.py", "Scratchpad._elaborate_partitioned",
                "local_bits = (self.banks[0].depth - 1).bit_length()", "0 -> 1", PART_LOCAL_BITS,
                netlist="partitioned scratchpads"),
    Equivalence("ga2_hdl/rtl/sram.py", "Scratchpad._elaborate_partitioned",
                "m.d.comb += p.rd_data.eq(lanes[0])", "0 -> -1",
                "the line is the branch for one bank (B = 1), where lanes holds one element (one per bank), "
                "so lanes[-1] is lanes[0]: the same read data, the same hardware (the netlist is checked "
                "byte-identical)", netlist="partitioned scratchpads"),
    Equivalence("ga2_hdl/rtl/chip.py", "GA2Chip._region_registers",
                "part_bits = max(1, self.config.spad_partitions.bit_length() - 1)",
                "max(1, self.config.spad_partitions.bit_length() - 1) -> max(0, self.config.spad_partitions.bit_length() - 1)",
                "with two or more partitions (every overlap preset: 8, 4, 4) log2(spad_partitions) >= 1, so "
                "the max gives the same width and the same hardware.  With one partition (an overlapped "
                "chip with spad_partitions = 1, as the tests' overlap1) the span fields become 0 bits instead "
                "of 1; they hold only the constant 0 there (isa.partition_span returns (0, 0)), and "
                "spans_meet of zeros is 1 at any width, 0 <= 0 (every two regions share the one partition), "
                "as it is for 1-bit zeros: every hazard and every issue cycle are the same"),
    Equivalence("ga2_hdl/rtl/chip.py", "GA2Chip._region_registers",
                "part_bits = max(1, self.config.spad_partitions.bit_length() - 1)",
                "max(1, self.config.spad_partitions.bit_length() - 1) -> max(2, self.config.spad_partitions.bit_length() - 1)",
                SPAN_WIDER + " (the change widens them only with one or two partitions)"),
    Equivalence("ga2_hdl/rtl/chip.py", "GA2Chip._region_registers",
                "part_bits = max(1, self.config.spad_partitions.bit_length() - 1)",
                "self.config.spad_partitions.bit_length() - 1 -> self.config.spad_partitions.bit_length() - 0",
                SPAN_WIDER),
    Equivalence("ga2_hdl/rtl/chip.py", "_check_stage.stage", 'if kind == "operand" and not factors:',
                "kind == \"operand\" -> kind != 'operand'",
                "with factors (the book's sequencer) the condition is false either way, so nothing changes.  "
                "Without (the overlapped sequencer) the change registers each product's non-constant factors "
                "instead of the product: the register moves from after the multiplier (shift-add) to before "
                "it, and the product becomes combinational from the registered factors.  The path from the "
                "read-ahead word nxt to terms_next keeps exactly one register before the terms' own "
                "(products of products, none in the ISA's rules, would too: a product's factor is then "
                "registered where the product was), and the registered factors have the shapes of the "
                "expressions they copy, so terms_next takes the same value in the same cycle: nxt holds "
                "still for the two cycles before its FETCH, as the sequencer's docstring shows.  Every "
                "error code, span, issue cycle and counter is the same"),
    Equivalence("ga2_hdl/rtl/decoder.py", "_shift_add", "if len(a) > len(b):",
                "len(a) > len(b) -> len(a) >= len(b)",
                "the change differs only when both factors have the same width, then making the other one "
                "the shifted-and-added factor; a product is exact either way (multiplication commutes, and "
                "the shift-add is exact for a narrow factor of either signedness: test_decoder's "
                "test_shift_add_products_are_exact).  The chip's only products, (rows - 1) * stride of the "
                "issue check, have a narrow factor of 4 to 8 bits (M - 1, K - 1 ...) and a 12-bit stride on "
                "every preset, never equal widths, so the hardware is the same (the netlist is checked "
                "byte-identical)", netlist="check stages"),
    Equivalence("ga2_hdl/rtl/decoder.py", "_shift_add", "total = Const(0, 1)", "Const(0, 1) -> Const(0, 0)",
                "the sum's starting zero, 0 or 1 bits wide: the first term Mux(a[0], b, 0) is as wide as the "
                "12-bit unsigned stride b, and Amaranth sizes 0 + x by the wider operand plus one bit, so "
                "the sum has the same shape and value either way; the netlist is checked byte-identical",
                netlist="check stages"),
    Equivalence("ga2_hdl/rtl/decoder.py", "_shift_add", "total = Const(0, 1)", "Const(0, 1) -> Const(0, 2)",
                "the sum's starting zero, 1 or 2 bits wide: the first term Mux(a[0], b, 0) is as wide as the "
                "12-bit unsigned stride b (every product of the chip's issue check), and Amaranth sizes 0 + x "
                "by the wider operand plus one bit, so the sum has the same shape and value either way; the "
                "netlist is checked byte-identical", netlist="check stages"),
    Equivalence("ga2_hdl/rtl/dma.py", "DMA.elaborate", "with m.If(~self.busy):", "~self.busy -> 1",
                "the wide DMA's scratchpad pointers (rd_ptr, wr_ptr) are then also reloaded with the base "
                "while busy, in every cycle without a request (rd_ptr) or without a written chunk (wr_ptr); "
                "the later increments still win in theirs.  The base is the instruction's, held while busy "
                "(the unit contract: the sequencer holds ins), so the reload is a change only after the "
                "pointer has stepped.  ST's reads are requested in the R consecutive cycles after the start "
                "(more_to_request until requested = count), so rd_ptr is reloaded only after its last read; "
                "an LD's requests are consecutive likewise and the external port answers each exactly LAT "
                "cycles later, in order (ExtPort's protocol), so its writes come in R consecutive cycles too: "
                "wr_ptr is reloaded only before its first write (with the base it holds) and after its "
                "last.  A pointer reaches the scratchpad only with its read or write enable, so every access, "
                "the data and the busy time are the same; idle, the base is loaded as before"),
    # ---- requant.py and softmax.py survivors of the whole run at ea61f4b (the widths with a bound,
    # the bits nobody reads, the registers loaded in extra cycles nobody reads)
    Equivalence("ga2_hdl/rtl/requant.py", "Requantizer.elaborate",
                "m.d.comb += ones.eq(self.acc[:ACC_BITS - 1] ^ negative.replicate(ACC_BITS - 1)) [1]",
                "ACC_BITS - 1 -> ACC_BITS - 0", RQ_ONES_WIDER),
    Equivalence("ga2_hdl/rtl/requant.py", "Requantizer.elaborate",
                "m.d.comb += ones.eq(self.acc[:ACC_BITS - 1] ^ negative.replicate(ACC_BITS - 1)) [2]",
                "ACC_BITS - 1 -> ACC_BITS - 0", RQ_ONES_WIDER),
    Equivalence("ga2_hdl/rtl/requant.py", "Requantizer.elaborate",
                's_eff = Signal(range(PRODUCT_BITS + 1), name="s_eff")',
                "PRODUCT_BITS + 1 -> (PRODUCT_BITS + 1) - 1",
                "s_eff holds 0 .. PRODUCT_BITS = 56; range(57) and range(56) are both the shape unsigned(6) "
                "(6 bits hold 0 .. 63), so the signal, the magnitude stage's register of it, and the hardware "
                "are bit for bit the same", netlist="requantizer"),
    Equivalence("ga2_hdl/rtl/requant.py", "Requantizer.elaborate",
                "m.d.comb += [s_eff.eq(Mux(shift > PRODUCT_BITS, PRODUCT_BITS, shift)),",
                "shift > PRODUCT_BITS -> shift >= PRODUCT_BITS",
                "the only shift the change treats differently is s = PRODUCT_BITS = 56, for which the Mux then "
                "gives the constant PRODUCT_BITS = 56 instead of shift = 56: the same s_eff for every s, so "
                "the same thermometer code, constants and window (requant.formula proves q for every operand)"),
    Equivalence("ga2_hdl/rtl/requant.py", "Requantizer.elaborate",
                "at_least.eq(Cat(1, *(s_eff >= k for k in range(1, PRODUCT_BITS + 2))))]",
                "Cat(1, *(s_eff >= k for k in range(1, PRODUCT_BITS + 2))) -> "
                "Cat(0, *(s_eff >= k for k in range(1, PRODUCT_BITS + 2)))",
                "the change only makes bit 0 of the thermometer code 0 instead of 1, and no reader takes bit 0: "
                "_constants reads at_least[k] through ge(k) for k >= 1 only (ge(0) is the constant 1) and "
                "through between(lo, hi) as at_least[hi + 1] with hi >= 0, and its other indices are i + 2, "
                "PRODUCT_BITS - 7 and PRODUCT_BITS - 6, all >= 1; the magnitude stage's register copies the "
                "bit but only _constants reads the copy, at the same indices.  So every constant, and q, is "
                "the same for every operand"),
    Equivalence("ga2_hdl/rtl/requant.py", "Requantizer.elaborate",
                'offset = Signal(signed(BIASED_BITS), name="offset")', "BIASED_BITS -> BIASED_BITS - 1",
                "offset = sign * m + bias: for a non-negative acc it is half, 0 or 2**(s-1) with s <= 56, so "
                "0 .. 2**55; for a negative acc m + minus_half with 0 <= m < 2**24 and -2**55 <= minus_half "
                "<= -1, so -2**55 .. 2**24 - 2.  Every value is within -2**55 .. 2**55, which a signed 57-bit "
                "signal holds (-2**56 .. 2**56 - 1), so it takes the same value, and its readers (the signed "
                "add into the biased product, and split_multiply's register of its shape) sign-extend it to "
                "the same number: q is the same for every operand"),
    Equivalence("ga2_hdl/rtl/requant.py", "Requantizer.elaborate", "biased = Signal(signed(BIASED_BITS))",
                "BIASED_BITS -> BIASED_BITS - 1",
                "biased = ones * m + offset with ones <= 2**31 - 1 and m <= 2**24 - 1, so ones * m < 2**55 (the "
                "split form's partial products add up to the same product); with -2**55 <= offset <= 2**55 "
                "(the offset's bound) biased lies in -2**55 .. 2**56 - 1, which a signed 57-bit register holds "
                "(-2**56 .. 2**56 - 1): the register takes the same value, so the arithmetic shift (the window "
                "t, floor(biased / 2**s) cut to 8 bits) and the compare with the limit (a value compare, "
                "both sides extended) give the same results, and q is the same for every operand"),
    Equivalence("ga2_hdl/rtl/requant.py", "Requantizer.elaborate",
                "m.d.comb += t.eq((biased >> shift_r)[:8])", ":8 -> :9",
                "t is a Signal(8): assigning the low 9 bits of the shifted product keeps only its low 8, the "
                "same window as before", netlist="requantizer"),
    Equivalence("ga2_hdl/rtl/softmax.py", "SoftmaxUnit.elaborate", "rd_now = Signal(range(spad_words + 1))",
                "spad_words + 1 -> (spad_words + 1) - 1",
                "rd_now is rd_index (0 .. len <= spad_words), or 0 in MAX's last cycle.  range(S) and "
                "range(S + 1) have the same shape unless S = spad_words is a power of two, and then range(S) "
                "is addr_bits = log2(S) bits and only rd_index = S (= len, the whole scratchpad) is cut, to "
                "0.  That value is never taken while reading is 1 (each pass reads while rd_index < len; "
                "IDLE's and DIV_WAIT's reads have rd_index = 0), so read_is_last (seen only as reading & "
                "read_is_last) and the increment rd_index <= rd_now + 1 (under reading) are the same; the "
                "read address (src + rd_now)[:addr_bits] is taken modulo 2**addr_bits = S, where S and 0 "
                "are the same address.  So the reads, writes and busy time are the same (rd_index itself "
                "needs range(S + 1): it reaches len = S and is compared with it, test_softmax's "
                "whole-scratchpad read schedule)"),
    Equivalence("ga2_hdl/rtl/softmax.py", "SoftmaxUnit.elaborate.next_pass",
                "m.d.sync += [rd_index.eq(0), wr_index.eq(0), v2.eq(0), v3.eq(0), last2.eq(0), last3.eq(0)]",
                "v2.eq(0), -> ",
                "without the clear v2 takes v1 in next_pass's cycle, and v1 is 0 then: v1 is the registered "
                "reading, and next_pass runs when the pass's last element leaves its pipeline (v2 & last2 in "
                "MAX, v3 & last3 in EXP, v4 & last4 in SCALE), two or more cycles after the pass's last read; "
                "in the cycle after that read rd_index is len and the pass reads no more (reading = rd_index "
                "< len; MAX's extra read for EXP is in next_pass's own cycle, so it reaches v1, not v2).  So "
                "v2 becomes the 0 the clear writes: the same in every cycle"),
    Equivalence("ga2_hdl/rtl/softmax.py", "SoftmaxUnit.elaborate.next_pass",
                "m.d.sync += [v4.eq(0), last4.eq(0)]", "v4.eq(0) -> v4.eq(1)", SOFTMAX_STAGE4),
    Equivalence("ga2_hdl/rtl/softmax.py", "SoftmaxUnit.elaborate.next_pass",
                "m.d.sync += [v4.eq(0), last4.eq(0)]", "v4.eq(0), -> ", SOFTMAX_STAGE4),
    Equivalence("ga2_hdl/rtl/softmax.py", "SoftmaxUnit.elaborate.next_pass",
                "m.d.sync += [v4.eq(0), last4.eq(0)]", ", last4.eq(0) -> ", SOFTMAX_STAGE4),
    Equivalence("ga2_hdl/rtl/softmax.py", "SoftmaxUnit.elaborate.next_pass",
                "m.d.sync += [v4.eq(0), last4.eq(0)]", "last4.eq(0) -> last4.eq(1)", SOFTMAX_STAGE4),
    Equivalence("ga2_hdl/rtl/softmax.py", "SoftmaxUnit.elaborate", "score = self.spad.rd_data[:8].as_signed()",
                ":8 -> :9",
                "score's only reader is score_r, a Signal(signed(8)): assigning the 9-bit signed slice keeps "
                "its low 8 bits, the same byte as before", netlist="softmax"),
    Equivalence("ga2_hdl/rtl/softmax.py", "SoftmaxUnit.elaborate", "rd_index.eq(0), wr_index.eq(0)]",
                "rd_index.eq(0) -> rd_index.eq(1)",
                "the statement that follows it in the same start branch, m.d.sync += rd_index.eq(1) (the "
                "read of element 0 in the start cycle), assigns rd_index again, and in Amaranth the later "
                "assignment to a signal in one domain wins; so rd_index becomes 1 at start whatever this "
                "statement writes, 0 or 1"),
    Equivalence("ga2_hdl/rtl/softmax.py", "SoftmaxUnit.elaborate", "with m.If(v3):", "v3 -> 1",
                "EXP then loads e_reg from the ROM in every EXP cycle, and tests last3 without v3.  last3 "
                "implies v3 in every cycle (last1 = reading & read_is_last and v1 = reading; the pipeline "
                "copies both, and next_pass clears v2, v3, v4 and last2, last3, last4 together), so "
                "next_pass and the move to DIV_START happen in the same cycles.  e_reg is read only by EXP's "
                "write and add under e_pending and by DIV_START; e_pending is 0 in EXP's first cycle (start "
                "clears it, only EXP sets it) and is v3 of the cycle before, and DIV_START follows the EXP "
                "cycle with v3 & last3: so every cycle that reads e_reg follows an EXP cycle with v3 = 1, "
                "which loaded it with the same ROM word in the design and in the change (the address depends "
                "on running_max and score_r only).  The extra loads are overwritten before any read: the "
                "writes, S, done and busy time are the same"),
    Equivalence("ga2_hdl/rtl/softmax.py", "SoftmaxUnit._scale", "with m.If(v3):", "v3 -> 1",
                "SCALE's prob register (stage 3) is read only by the write of p under v4, and v4 is v3 one "
                "cycle later (or 0 after next_pass): SCALE's first cycles have v4 = 0 (DIV_WAIT reads nothing "
                "until its last cycle), so every cycle that writes follows a SCALE cycle with v3 = 1, which "
                "loaded prob with the same rounded product in the design and in the change (product is "
                "loaded under v2, unchanged).  The change only loads it also in SCALE's cycles with v3 = 0, "
                "whose value the next v3 cycle overwrites before a write: the writes, done and busy time are "
                "the same"),
)


def key_of(mutant) -> tuple[str, str, str, str]:
    function, _, line = mutant.context.partition(": ")
    return (mutant.file, function, line, mutant.change)


_BY_KEY = {(e.file, e.function, e.line, e.change): e for e in EQUIVALENT}


def argument_for(mutant) -> str:
    """The written argument for ``mutant`` ("" when there is none)."""
    entry = _BY_KEY.get(key_of(mutant))
    return entry.argument if entry else ""
