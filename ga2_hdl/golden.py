"""The golden model: GA-2 programs at instruction level, memory and cycles exact.

:func:`run` executes a program one instruction at a time, with the integer
arithmetic of :mod:`ga2_hdl.isa` (the same primitives the RTL units are tested
against), and predicts the five counters from the chip's timing rule
(:class:`ga2_hdl.isa.IssueTimer`).  On the book's chip every instruction costs
fetch + issue (2 cycles) plus its unit's busy time; HALT costs 2 and is not
counted; an illegal instruction (``isa.check``) costs 2, is not counted,
changes nothing, and halts the machine with its ``ErrorCode`` and address.
With ``config.overlap`` instructions issue while other units run, under the
hazard rule the timer states.

Every instruction reads all of its operands before it writes anything, so
identical source and destination regions (legal for RQ, SM and VADD, and for
MM and AMAX when a destination lies inside a source) behave as "compute from
the old values, then store".

Memories are numpy ``int64`` arrays holding unsigned 32-bit word values; all
arithmetic is exact (MM sums of at most 64 products of int8 fit easily, and
are wrapped to 32 bits; RQ, SM use Python integers through ``isa``).
"""
from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np

from . import isa
from .formats.memimage import MemoryImage
from .config import Config
from .isa import Counter, ErrorCode, Instruction, IsaError
from .formats.results import RunResult

_OP = {spec.mnemonic: spec.code for spec in isa.OPS}


def as_instructions(program: Iterable[Instruction | int]) -> list[Instruction]:
    """A program as a list of :class:`Instruction` (128-bit integer words are decoded)."""
    out = []
    for i, ins in enumerate(program):
        if isinstance(ins, Instruction):
            out.append(ins)
        elif isinstance(ins, int) and not isinstance(ins, bool):
            out.append(Instruction.decode(ins))
        else:
            raise IsaError(f"instruction {i}: expected an Instruction or a 128-bit int, got {type(ins).__name__}")
    return out


def check_program(program: Sequence[Instruction], config: Config) -> None:
    """What every loader refuses: an empty program, one too long for ``config``, or one not ending in HALT."""
    if len(program) == 0:
        raise IsaError("empty program: a program ends with HALT")
    if len(program) > config.imem_words:
        raise IsaError(f"program of {len(program)} instructions does not fit the instruction memory "
                       f"of {config.imem_words} words")
    if program[-1].op != isa.HALT.op:
        raise IsaError(f"program does not end with HALT (last instruction, at {len(program) - 1}: "
                       f"{program[-1]})")


def ext_image(ext: Sequence[int] | None, ext_words: int) -> np.ndarray:
    """The initial external memory: ``ext`` zero-padded to ``ext_words`` words.

    Words are unsigned 32-bit values; negative ints down to -2**31 are taken
    as two's complement.  A longer image, or a value that is not a 32-bit
    word, is an error.
    """
    isa.check_ext_words(ext_words)
    mem = np.zeros(ext_words, dtype=np.int64)
    if ext is None:
        return mem
    if isinstance(ext, MemoryImage):             # already 32-bit words: only the size to check
        if ext.size > ext_words:
            raise IsaError(f"external-memory image of {ext.size} words is longer than the memory "
                           f"({ext_words} words)")
        for start, run in ext.runs():
            mem[start:start + len(run)] = np.frombuffer(run, dtype=np.uint32)
        return mem
    values = np.asarray(list(ext) if not isinstance(ext, np.ndarray) else ext)
    if values.size > ext_words:
        raise IsaError(f"external-memory image of {values.size} words is longer than the memory "
                       f"({ext_words} words)")
    if values.size == 0:
        return mem
    if values.dtype.kind not in "iu":
        raise IsaError(f"external-memory image must hold integers, got {values.dtype}")
    if values.dtype == np.uint64:
        bad = np.flatnonzero(values > isa.WORD_MASK)
    else:
        values = values.astype(np.int64)
        bad = np.flatnonzero((values < -(1 << 31)) | (values > isa.WORD_MASK))
    if bad.size:
        a = int(bad[0])
        raise IsaError(f"external-memory word {a} = {int(values[a])} is not a 32-bit value")
    mem[:values.size] = values.astype(np.int64) & isa.WORD_MASK
    return mem


def _int8(words: np.ndarray) -> np.ndarray:
    """The signed low byte of each word (what int8 operands read)."""
    return ((words & 0xFF) ^ 0x80) - 0x80


class Machine:
    """The architectural state: scratchpad, external memory, counters."""

    def __init__(self, ext: Sequence[int] | None = None, ext_words: int | None = None,
                 *, config: Config):
        self.config = config
        self.iset = isa.instruction_set(config)
        self._execute = dict(self._EXECUTE)
        for code, extension in self.iset.extension_of.items():      # an extension's operations
            spec = self.iset.by_code[code]
            if spec.mnemonic not in extension.golden:
                raise IsaError(f"{spec.mnemonic} (op code {code}, extension {extension.module}) has no golden "
                               f"semantics: add it to the golden mapping of {extension.module}'s EXTENSION")
            self._execute[code] = extension.golden[spec.mnemonic]
        self.ext_words = config.ext_words if ext_words is None else ext_words
        self.ext = ext_image(ext, self.ext_words)
        self.spad = np.zeros(config.spad_words, dtype=np.int64)
        self.counters = [0] * len(Counter)

    # -- one instruction each; all operands are read before anything is written
    def _ld(self, i: Instruction) -> None:
        self.spad[i.dst:i.dst + i.len] = self.ext[i.src:i.src + i.len]

    def _st(self, i: Instruction) -> None:
        self.ext[i.dst:i.dst + i.len] = self.spad[i.src:i.src + i.len]

    def _mm(self, i: Instruction) -> None:
        M, K, N, ldc, dst = i.M, i.K, i.N, i.ldc, i.dst
        m = np.arange(M)[:, None]
        k = np.arange(K)
        a = _int8(self.spad[i.A + m * i.lda + k[None, :]])                       # M x K
        n = np.arange(N)
        if i.tb:
            b = _int8(self.spad[i.B + n[None, :] * i.ldb + k[:, None]])          # K x N
        else:
            b = _int8(self.spad[i.B + k[:, None] * i.ldb + n[None, :]])
        c = (a @ b) & isa.WORD_MASK                                              # wrap to 32 bits
        # Row-major write order: if a small ldc makes rows share words, the last row wins
        # (a row's own N words are distinct, so each row is one slice written after the one before).
        for mm in range(M):
            self.spad[dst + mm * ldc:dst + mm * ldc + N] = c[mm]

    def _rq(self, i: Instruction) -> None:
        relu, m, s = bool(i.relu), i.m, i.s
        src = self.spad[i.src:i.src + i.len].tolist()
        out = [isa.word_of(isa.requantize(isa.int32_of(w), m, s, relu)) for w in src]
        self.spad[i.dst:i.dst + i.len] = out

    def _sm(self, i: Instruction) -> None:
        scores = [isa.int8_of(w) for w in self.spad[i.src:i.src + i.len].tolist()]
        self.spad[i.dst:i.dst + i.len] = isa.softmax_q16(scores)

    def _vadd(self, i: Instruction) -> None:
        x = _int8(self.spad[i.src1:i.src1 + i.len])
        y = _int8(self.spad[i.src2:i.src2 + i.len])
        self.spad[i.dst:i.dst + i.len] = np.clip(x + y, isa.INT8_MIN, isa.INT8_MAX) & isa.WORD_MASK

    def _amax(self, i: Instruction) -> None:
        v = self.spad[i.src:i.src + i.len]
        signed = np.where(v >= 1 << 31, v - (1 << 32), v)
        self.spad[i.dst] = int(np.argmax(signed))          # argmax returns the first maximum

    _EXECUTE = {
        _OP["LD"]: _ld, _OP["ST"]: _st, _OP["MM"]: _mm, _OP["RQ"]: _rq,
        _OP["SM"]: _sm, _OP["VADD"]: _vadd, _OP["AMAX"]: _amax,
    }

    def run(self, program: Sequence[Instruction]) -> tuple[ErrorCode, int, str]:
        """Run from address 0 until HALT or a fault; return (status, status_pc, message).

        Instructions execute one after another in program order; the counters come from the
        chip's timing rule (:class:`ga2_hdl.isa.IssueTimer`).  With overlap, instructions in
        flight together touch no common scratchpad partition, so none of them reads or writes a word
        another one writes (the rule's hazard check), and everything issued completes before the halt, so executing them in
        order gives the chip's final memory.
        """
        timer = self.iset.timer()

        def halt(code, pc, message=""):
            self.counters[:] = timer.halt()
            return code, pc, message

        for pc, ins in enumerate(program):
            if ins.op == isa.HALT.op:
                return halt(ErrorCode.OK, pc)
            code, why = self.iset.check(ins, self.ext_words)
            if code != ErrorCode.OK:
                return halt(code, pc, why)    # the address is the result's error_pc; the message says why
            execute = self._execute.get(ins.op)
            if execute is None:   # an OpSpec without semantics here: a gap in the model, not the program
                raise NotImplementedError(f"golden model has no semantics for {ins.mnemonic}")
            execute(self, ins)
            timer.issue(ins)
        # Unreachable for a checked program (it ends with HALT); the hardware would run into
        # whatever the instruction memory holds next.
        raise IsaError("program ran past its last instruction without HALT")


def run(program: Iterable[Instruction | int], ext: Sequence[int] | None = None, *,
        ext_words: int | None = None, keep_spad: bool = False, sparse: bool = False,
        config: Config) -> RunResult:
    """Run ``program`` on the chip ``config``, on the external-memory
    image ``ext`` zero-padded to ``ext_words`` (the configuration's size by default).

    Returns the final state: the five counters, the whole external memory, the
    halt status and its address (and the scratchpad if ``keep_spad``).  Raises
    :class:`IsaError` for what a loader refuses (no final HALT, too long, an
    image longer than the memory); an illegal instruction is not an exception
    but a result, as on the chip.  ``sparse``: the final memory as a
    :class:`~ga2_hdl.formats.memimage.MemoryImage` (what a bundle keeps) instead of a list.
    """
    code = as_instructions(program)
    check_program(code, config)
    machine = Machine(ext, ext_words, config=config)
    status, pc, message = machine.run(code)
    return RunResult(
        counters=isa.Counters(*(c & isa.WORD_MASK for c in machine.counters)),
        ext=MemoryImage.from_words(machine.ext) if sparse else machine.ext.tolist(),
        error=status,
        error_pc=pc,
        message=message,
        spad=machine.spad.tolist() if keep_spad else None,
    )
