"""Argument texts that several equivalence arguments share (gen/mutation/equivalents.py): one
reason, written once, for the mutants of one construct (a counter, a pipeline's valid bits, a
register's width) that it covers."""
from __future__ import annotations


#: a wide engine's read counter stepping in every cycle instead of in its reads only
WIDE_AHEAD = ("ahead (the chunk, or VADD's slot, read next after the start cycle's) is set to 1 by start; "
               "while busy the engine reads in every cycle until ahead passes the last chunk (last_chunk, or "
               "last_slot), so stepping it in every cycle changes nothing until then; after it, reading is "
               "already 0 and only grows further apart (ahead counts to S = spad_words at least, twice as far "
               "as a busy time of at most ceil(S / P) + 2 + log2(P) cycles (2 * ceil(S / P) + 2 for VADD) "
               "could take it, so it does not wrap back into range while busy), and idle nothing reads it "
               "(reading is start | busy & ...) and start sets it again: the reads, writes and busy time are "
               "the same")


SOFTMAX_LAST = ("the last-element flags of stages 2, 3 and 4 are read only under their valid bits (EXP's write "
                 "under v2, SCALE's under v4), which next_pass clears; a flag set to 1 at the end of a pass "
                 "is overwritten by the pipeline (last2 <= last1, last3 <= last2, last4 <= last3) within three "
                 "cycles, while the valid bits are still 0, and every pass, the next SM included, starts at least "
                 "three cycles later, so no write, no done and no state change differs")

MM_STREAM_READ = ("the operand memory's data enters the array only with array.valid, which is mem_valid: the "
                   "registered `reading`, so it is 0 in exactly the cycle after each read the change adds (steps "
                   "past K, only in STREAM), and the array then takes zeros whatever the memory returns (and "
                   "outside STREAM run is low, so it takes nothing); reading a memory has no other effect, so the products, the write-back and the busy time are the same")
VECTOR_IDLE_DATA = ("the value only reaches engines that are not selected by ins.op; such an engine is not "
                     "started (start is gated by the same selection) and ins is held from start to done, so it "
                     "stays idle for the whole instruction: its valid bits are 0 and every use of the read data "
                     "(the RQ write, the VADD operands, the AMAX compare, the softmax passes) is gated by them, "
                     "and the registers it loads unconditionally (AMAX's value2, the requantizer's pipeline "
                     "register) are overwritten by real data before their valid bit is next set")

SOFTMAX_INDEX_AT_START = ("rd_index and wr_index are 0 whenever an SM starts: they are 0 after reset and "
                           "next_pass sets both to 0 at the end of every pass, SCALE (the last) included; so "
                           "the clear at start writes the values they already hold")

MM_DIM = ("dim_bits = max(size, max_k).bit_length() = 7 for the ISA's array (MM_MAX_MN = 4, MM_MAX_K = 64), "
           "one more than needed: the fields of that shape hold M-1, K-1 and N-1 (last_m/k/n, and the walk's "
           "inner_last and outer_last, chosen among them), at most 63 because the issue check refuses K > 64 "
           "and M, N > 4 (BAD_SHAPE); the walk's inner and outer indices, stepped only while below their last "
           "value, so at most 63; and the write-back walker's n (at most N-1) and m (at most M = 4).  Every "
           "value is below 64, so 6 bits hold it: nothing wraps and every comparison gives the same answer")

MM_STREAM_COUNT = ("step counts from 0 (CLEAR) to stream_last = K+M+N-1 <= 64+4+4-1 = 71 (the issue check "
                    "refuses larger shapes) and, in the cycle STREAM ends, one past it (72); it changes only in "
                    "CLEAR and STREAM.  dim_bits = 7 (64.bit_length()), so dim_bits + 1 = 8 bits hold every "
                    "value of step and of stream_last: nothing wraps and the comparisons give the same answers")

SOFTMAX_STAGE3 = ("last3 is read only under v3 (EXP's `m.If(v3)` then `m.If(last3)`), and the pipeline "
                   "overwrites it every cycle (last3 <= last2).  Without next_pass's clear it takes at the end of "
                   "MAX and of EXP the copy of last2, which lives one cycle, the first of EXP or of DIV_START, in "
                   "which v3 is 0 (next_pass clears v3) or unused; after that it copies last2, which next_pass did "
                   "clear.  At the end of SCALE the copy lives in IDLE's first cycle, which reads neither, and the "
                   "next SM's EXP is far later.  No write, no done and no state change differs")

DMA_WDATA = ("ext_wdata only matters with ext_we: every external memory (the protocol of docs/chip.md, "
              "gen/sim/extmem.py, the Verilog testbench gen/sim/tb/ga2_tb.v, the board's block RAM, whose mux gives "
              "the port to the chip only while it runs) writes ext_wdata at an edge where ext_we is high and "
              "ignores it otherwise, and no other part of the chip reads it.  The DMA drives ext_we only in its "
              "ST branch (is_load = 0), so whenever the Mux gives the constant (is_load = 1: during an LD, and "
              "while idle after one) ext_we is 0: no memory word, counter or cycle differs, only the value of "
              "a port no one samples then")

MM_WIDE_FIELDS = ("on a one-word port (P = 1) the change only lays out the wide port's extra register fields "
                "(dims.last_n_chunk, walk.inner_end, land.along_k and land.mask, out.mask) after the book's, "
                "and makes out.data a one-element array of the same 32 bits at the same place; nothing reads "
                "or writes the extra fields (_load, _stage, _land_staged_words, _write_back and "
                "_drive_write_port decide by self.ports themselves, and the fields reset to 0 and stay 0), "
                "so every register the unit uses, and every port, has the same value in every cycle; with "
                "P > 1 both conditions are true")

MM_STREAM_VALID = ("r.stream.mem_valid is written only in STREAM (_stream: mem_valid <= reading) besides this "
                    "default (CLEAR writes only the step field); STREAM's "
                    "last cycle has step = K+M+N-1 > K-1, so reading = 0 and mem_valid is 0 when STREAM ends and "
                    "holds 0 without the default: the array sees the same valid every cycle")

SPAD_ROTATE_LOW_BITS = (
    "to_banks runs at elaboration and is called with lane_bits = 1 (the read and write masks) and "
    "lane_bits = isa.WORD_BITS = 32 (the write data), nothing else.  The condition only chooses how to "
    "write the rotation's zero low offset bits (a lane index times a power-of-two lane width): "
    "C(0, (lane_bits - 1).bit_length()) or C(0, 0).  For 32 the original and every changed condition "
    "(> 0, >= 1, > 2) choose the first; for 1, a changed condition may choose the first, which is then "
    "C(0, (0).bit_length()) = C(0, 0), the second.  So each call builds the same expression and the "
    "banked scratchpad is the same netlist (checked: its RTLIL without source-location attributes is "
    "byte-identical for 2, 4 and 8 banks)")

SPAD_LAST_BANK = ("the change only gives the last bank (b = B - 1) the comparisons b < r_off and b < w_off "
                   "instead of the constants 0; r_off and w_off are an address's low log2(B) bits, at most "
                   "B - 1, so B - 1 < r_off and B - 1 < w_off are 0 for every address: the last bank's read "
                   "and write rows are the same in every cycle")
DIV_PARTIAL = ("the partial remainder after i steps is below 2**i: it is formed from the i numerator bits "
                "brought down so far (each step doubles it, adds one bit and subtracts the divisor only when "
                "that leaves it non-negative; a zero divisor subtracts nothing, and a start restarts from 0), "
                "and the divider does w = 40 steps (steps_left), the first on the inputs in the start cycle "
                "(from a remainder of 0: the first step apart, on the numerator's top bit).  ")

#: a wide RQ lane's m, s and relu registers loaded in more or fewer of the busy cycles
RQ_LANE_LOAD = ("a lane's m, s and relu registers (built only without overlap) load the instruction's operands "
                 "in every idle cycle, so in the start cycle too, where ins is already the RQ; from then until "
                 "done (its last busy cycle) the instruction is held, so every load while busy loads the very "
                 "values the register holds.  The enable decides only which busy cycles reload (the design: "
                 "those whose chunk reads lane j, mask1; the change: every one, or those of mask0 or mask2), "
                 "and a reload of the held value changes nothing: the registers hold the same values in every "
                 "cycle, in the design and in the change (the enable is there only so that no two lanes' "
                 "registers are alike for Yosys, docs/fpga.md), so the products, writes and busy time are the "
                 "same")


#: the partitioned scratchpad's row width, from a memory's depth
PART_LOCAL_BITS = ("local_bits is the width of a memory's row address: every memory of a partitioned scratchpad "
                    "has the same depth, spad_words / (spad_partitions * banks), a power of two of at least 4 "
                    "rows (128 on wide8_overlap, 512 on overlap), and there are at least two memories (at least "
                    "two partitions).  So banks[-1] and banks[1] have banks[0]'s depth D = 2**k; (D - 2) has "
                    "bit_length k for k >= 2 as D - 1 does, and Python's bit_length of the negative 1 - D is that "
                    "of D - 1: the same k, the same slices, the same hardware (the netlist is checked "
                    "byte-identical)")

#: the overlapped sequencer's partition span fields, wider
SPAN_WIDER = ("the change widens the first/last fields of the region registers (incoming, held) by one bit.  "
               "They hold isa.partition_span of a region's bounds: with one partition the constants 0 (every "
               "two spans meet, at any width); else start >> s and (end - 1) >> s, s = log2 of a partition's "
               "words.  ISSUE uses them (_blocked) only for an instruction that passed the check, whose "
               "regions are non-empty (zero lengths fail) and lie inside the scratchpad, so both values are below spad_partitions and fit the "
               "narrower field: the wider one holds the same number with a 0 on top (an instruction that "
               "fails the check, HALT or a fetch past the end goes the other way, waiting for the units and "
               "halting without reading blocked, and held is loaded only when an instruction issues).  "
               "spans_meet compares the numbers, so every hazard, every issue cycle and every counter is "
               "the same")
#: the requantizer's ones' complement one bit wider (either operand of its XOR), cut back to 31 bits
RQ_ONES_WIDER = ("ones is a Signal(ACC_BITS - 1), 31 bits; the change makes one operand of the XOR 32 bits "
                  "wide (all of acc, or 32 copies of the sign), so the XOR gains a bit 31 (acc[31] ^ 0, or "
                  "0 ^ negative) while its bits 0 .. 30 are the same two bits XORed as before.  The "
                  "assignment to ones keeps bits 0 .. 30 only, so ones, and everything after it, is the same "
                  "for every acc, in every form (the magnitude stage registers ones at its own 31-bit shape); "
                  "requant.formula and requant.formula_pipelined prove q for every operand")

#: SM's last-stage flags set or kept for one cycle after a pass ends
SOFTMAX_STAGE4 = ("v4 and last4 are read only in SCALE (the write of p under v4, done and the end of the "
                   "instruction under v4 & last4), and the pipeline overwrites both in every cycle (v4 <= v3, "
                   "last4 <= last3, unconditionally), so the value next_pass gives them (0, or 1, or the "
                   "pipeline's own when the clear is dropped) lives one cycle only: the first cycle of EXP "
                   "(after MAX), of DIV_START (after EXP) or of IDLE (after SCALE), none of which reads them.  "
                   "The next SCALE cycle is at least DIV_PHASE_CYCLES = 41 cycles after EXP's next_pass, and "
                   "from the cycle after each next_pass on the registers are the design's again, so every "
                   "SCALE cycle sees the same v4 and last4: the same writes, done and busy time")

# Not equivalent, whatever was argued here before (the whole run at ea61f4b caught them):
# * requant.py ``negative = self.acc < 0`` -> ``<= 0`` / ``< 1``: the magnitude is ones + negative with
#   ones = acc ^ sign, so acc = 0 called negative has ones = 2**31 - 1 and a magnitude of 2**31, not 0
#   (test_requant.py::test_boundary_cross_product: requant(0, m=1, s=0) = -127).
# * matrix_unit.py ``r.land.valid.eq(0)`` -> 1 or dropped, and B's ``wr_en`` -> 1: the landing keeps
#   writing the read data after STAGE, and the book chip's owned scratchpad reads the owner's address in
#   every cycle (sram.py: its read enable tied high) while the matrix unit drives rd_addr only in STAGE
#   (0 otherwise): the read data becomes word 0, not the last staged word, and lands on B's last
#   position before STREAM reads it (the directed suite's mm_3x5x2 first differs at C[0][1], column 1).
