"""The directed suite: fixed corner-case programs for a chip (``ga2 fuzz --directed``, the chip's tests).

Each operation alone, length-one operands, the largest tiles, the longest vectors memory allows,
rounding ties, saturation, relu, softmax tails, bits outside the operands, an immediate HALT, a
full instruction memory, and one illegal program per error code the hardware can raise; an
extension's operations add programs of their own. The groups below draw their data from one
random sequence in a fixed order, so the suite is the same every time.
"""
from __future__ import annotations

import random
from typing import Sequence

from ga2_hdl import isa
from ga2_hdl.config import Config
from ga2_hdl.formats.bundle import Bundle
from ga2_hdl.isa import ErrorCode, Instruction, make

from .programs import _Builder, _word, default_max_cycles, random_word


def _image(ext_words: int, pieces: dict[int, Sequence[int]]) -> list[int]:
    ext = [0] * ext_words
    for at, words in pieces.items():
        if at + len(words) > ext_words:
            raise ValueError(f"directed data at {at}..{at + len(words) - 1} does not fit {ext_words} words")
        ext[at:at + len(words)] = [_word(w) for w in words]
    return ext


def _ld(dst: int, src: int, n: int) -> Instruction:
    return make("LD", dst=dst, src=src, len=n)


def _st(src: int, dst: int, n: int) -> Instruction:
    return make("ST", src=src, dst=dst, len=n)


class _Suite:
    """What the directed suite's groups share: the chip, the layout's sizes, one random sequence
    (fixed: the suite is the same every time) and the programs made so far."""

    def __init__(self, config: Config, ext_words: int, SPAD: int, ARRAY: int, MAX_K: int, TILE: int):
        self.config, self.ext_words = config, ext_words
        self.SPAD, self.ARRAY, self.MAX_K, self.TILE = SPAD, ARRAY, MAX_K, TILE
        self.rng = random.Random(20240611)
        self.out: list[tuple[str, list[Instruction], list[int]]] = []
        self.H = isa.HALT
        self.OUT = ext_words // 2       # results go to the upper half of external memory

    def add(self, name: str, code: list[Instruction], pieces: dict[int, Sequence[int]] | None = None) -> None:
        self.out.append((name, code + [self.H], _image(self.ext_words, pieces or {})))

    def int8s(self, n: int) -> list[int]:
        return [self.rng.randint(-128, 127) for _ in range(n)]


def directed_suite(ext_words: int | None = None, *,
                   config: Config) -> list[tuple[str, list[Instruction], list[int]]]:
    """Named corner-case programs ``(name, code, ext)`` for the chip ``config`` and an external memory
    of ``ext_words`` (by default the configuration's).

    Needs at least 512 words of external memory (and room for two of the largest tiles),
    an array of at least 4 x 4 and ``max_k`` of at least 9; the longest-vector
    programs use min(spad_words, ext_words // 2) words, the largest tiles are
    ``array`` x ``max_k`` by ``max_k`` x ``array``, the fullest program fills ``imem_words``.
    On a configuration with extensions, each extension operation adds programs of its own
    (:func:`_extension_cases`).
    """
    ext_words = config.ext_words if ext_words is None else ext_words
    SPAD, ARRAY, MAX_K = config.spad_words, config.array, config.max_k
    if ext_words < 512:
        raise ValueError(f"the directed suite needs at least 512 words of external memory, not {ext_words}")
    if ARRAY < 4 or MAX_K < 9:
        raise ValueError(f"configuration {config.name!r}: the directed suite needs array >= 4 and max_k >= 9, "
                         f"not array={ARRAY}, max_k={MAX_K}")
    TILE = ARRAY * MAX_K                # words of the largest A (or B) tile: 256 on the book chip
    if 2 * TILE > ext_words or 2 * TILE + 88 + ARRAY * ARRAY > SPAD:
        raise ValueError(f"configuration {config.name!r}: two {ARRAY} x {MAX_K} tiles do not fit the directed "
                         f"suite's layout ({ext_words} words of external memory, {SPAD} of scratchpad)")
    s = _Suite(config, ext_words, SPAD, ARRAY, MAX_K, TILE)
    for group in _GROUPS:              # in this order: they draw from one random sequence
        group(s)
    return s.out + _extension_cases(ext_words, config)


def _shortest(s: _Suite) -> None:
    """The shortest programs."""
    add, H, out, ext_words = s.add, s.H, s.out, s.ext_words
    # --- the shortest programs
    out.append(("halt_immediately", [H], [0] * ext_words))
    add("halt_after_ld", [_ld(0, 0, 12)], {0: list(range(1, 13))})


def _each_alone(s: _Suite) -> None:
    """Each operation alone (with the loads and stores needed to see it)."""
    rng, add, int8s, OUT = s.rng, s.add, s.int8s, s.OUT
    # --- each operation alone (with the loads and stores needed to see it)
    add("ld_st_12", [_ld(0, 0, 12), _st(0, OUT, 12)], {0: [rng.getrandbits(32) for _ in range(12)]})
    a, bm = int8s(3 * 5), int8s(5 * 2)
    add("mm_3x5x2", [_ld(0, 0, 15), _ld(100, 20, 10), make("MM", dst=200, A=0, B=100, M=3, K=5, N=2),
                     _st(200, OUT, 6)], {0: a, 20: bm})
    add("mm_3x5x2_tb", [_ld(0, 0, 15), _ld(100, 20, 10),
                        make("MM", dst=200, A=0, B=100, M=3, K=5, N=2, tb=1, ldb=5), _st(200, OUT, 6)],
        {0: a, 20: bm})
    accs = [rng.randint(-(1 << 20), 1 << 20) for _ in range(20)]
    add("rq_20", [_ld(0, 0, 20), make("RQ", dst=50, src=0, len=20, m=(1 << 23) + 12345, s=30),
                  _st(50, OUT, 20)], {0: accs})
    add("sm_16", [_ld(0, 0, 16), make("SM", dst=50, src=0, len=16), _st(50, OUT, 16)], {0: int8s(16)})
    add("vadd_20", [_ld(0, 0, 40), make("VADD", dst=100, src1=0, src2=20, len=20), _st(100, OUT, 20)],
        {0: int8s(40)})
    add("amax_20", [_ld(0, 0, 20), make("AMAX", dst=100, src=0, len=20), _st(100, OUT, 1)],
        {0: [rng.randint(-(1 << 31), (1 << 31) - 1) for _ in range(20)]})


def _length_one(s: _Suite) -> None:
    """Length-one operands."""
    add, OUT = s.add, s.OUT
    # --- length-one operands
    add("len1_all", [_ld(0, 0, 1), _ld(1, 1, 1), make("MM", dst=2, A=0, B=1, M=1, K=1, N=1),
                     make("RQ", dst=3, src=2, len=1, m=1 << 23, s=23),
                     make("SM", dst=4, src=0, len=1), make("VADD", dst=5, src1=0, src2=1, len=1),
                     make("AMAX", dst=6, src=0, len=1), _st(2, OUT, 1), _st(3, OUT + 1, 1), _st(4, OUT + 2, 1),
                     _st(5, OUT + 3, 1), _st(6, OUT + 4, 1)], {0: [-7, 100]})


def _largest_tiles(s: _Suite) -> None:
    """The largest tiles: 4x64 by 64x4 on the book chip (array x max_k by max_k x array)."""
    rng, add, int8s, OUT, ARRAY, MAX_K, TILE = s.rng, s.add, s.int8s, s.OUT, s.ARRAY, s.MAX_K, s.TILE
    # --- the largest tiles: 4x64 by 64x4 on the book chip (array x max_k by max_k x array),
    # B plain and transposed, extreme values
    big_a = [rng.choice([-128, 127, -127]) if rng.random() < 0.5 else rng.randint(-128, 127) for _ in range(TILE)]
    big_b = [rng.choice([-128, 127, -127]) if rng.random() < 0.5 else rng.randint(-128, 127) for _ in range(TILE)]
    C = 2 * TILE + 88                   # 600 on the book chip
    shape = f"{ARRAY}x{MAX_K}x{ARRAY}"
    for tb in (0, 1):
        add(f"mm_{shape}{'_tb' if tb else ''}",
            [_ld(0, 0, TILE), _ld(TILE, TILE, TILE),
             make("MM", dst=C, A=0, B=TILE, M=ARRAY, K=MAX_K, N=ARRAY, tb=tb, ldb=MAX_K if tb else ARRAY),
             _st(C, OUT, ARRAY * ARRAY)],
            {0: big_a, TILE: big_b})
    add(f"mm_{shape}_min_products",
        [_ld(0, 0, TILE), make("MM", dst=C, A=0, B=0, M=ARRAY, K=MAX_K, N=ARRAY, tb=1, ldb=MAX_K),
         _st(C, OUT, ARRAY * ARRAY)], {0: [-128] * TILE})
    # strides: padded rows, overlapping rows (lda < K), a repeated row (lda = 0), padded C
    add("mm_strides", [_ld(0, 0, 300),
                       make("MM", dst=1000, A=0, B=100, M=4, K=7, N=3, lda=29, ldb=11, ldc=9),
                       make("MM", dst=1100, A=5, B=130, M=3, K=9, N=4, tb=1, lda=2, ldb=13, ldc=4),
                       make("MM", dst=1200, A=17, B=200, M=4, K=6, N=2, lda=0, ldb=2, ldc=2),
                       _st(1000, OUT, 40), _st(1100, OUT + 40, 12), _st(1200, OUT + 60, 8)],
        {0: [rng.getrandbits(32) for _ in range(300)]})
    # unused stride of a one-row A, one-column transposed B, one-row C
    add("mm_unused_strides", [_ld(0, 0, 64), make("MM", dst=100, A=0, B=10, M=1, K=8, N=1, tb=1,
                                                  lda=4095, ldb=4095, ldc=4095), _st(100, OUT, 1)],
        {0: int8s(64)})


def _longest_vectors(s: _Suite) -> None:
    """The longest vectors memory allows (length fields up to bit 12)."""
    rng, add, OUT, ext_words, SPAD = s.rng, s.add, s.OUT, s.ext_words, s.SPAD
    # --- the longest vectors memory allows (length fields up to bit 12)
    long_n = min(SPAD, ext_words // 2)
    long_data = [random_word(rng) for _ in range(long_n)]
    add("long_ld_st", [_ld(0, 0, long_n), _st(0, OUT, long_n)], {0: long_data})
    add("long_rq_inplace", [_ld(0, 0, long_n), make("RQ", dst=0, src=0, len=long_n, m=(1 << 24) - 1, s=40),
                            _st(0, OUT, long_n)], {0: long_data})
    add("long_sm_inplace", [_ld(0, 0, long_n), make("SM", dst=0, src=0, len=long_n), _st(0, OUT, long_n)],
        {0: long_data})
    add("long_vadd_all_same", [_ld(0, 0, long_n), make("VADD", dst=0, src1=0, src2=0, len=long_n),
                               _st(0, OUT, long_n)], {0: long_data})
    add("long_amax", [_ld(0, 0, long_n), make("AMAX", dst=0, src=0, len=long_n), _st(0, OUT, 1)],
        {0: long_data})
    half = long_n // 2
    add("long_vadd_disjoint", [_ld(0, 0, long_n), make("VADD", dst=0, src1=0, src2=half, len=half),
                               _st(0, OUT, half)], {0: long_data})


def _requantizer(s: _Suite) -> None:
    """Requantizer: exact ties of both signs, saturation, relu, extreme m and s."""
    add, OUT = s.add, s.OUT
    # --- requantizer: exact ties of both signs, saturation, relu, extreme m and s
    tie_accs = [1, -1, 3, -3, 5, -5, 253, -253, 255, -255, 0, 2, -2]
    add("rq_ties", [_ld(0, 0, len(tie_accs)),
                    make("RQ", dst=100, src=0, len=len(tie_accs), m=1 << 23, s=24),        # acc / 2
                    make("RQ", dst=200, src=0, len=len(tie_accs), m=3 << 22, s=25),        # acc * 3 / 8
                    _st(100, OUT, len(tie_accs)), _st(200, OUT + 100, len(tie_accs))], {0: tie_accs})
    sat = [0x7FFFFFFF, -0x80000000, 1 << 20, -(1 << 20), 254, -254, 255, -255, 256, -256, 127, -127, -128, 128]
    add("rq_saturate_relu", [_ld(0, 0, len(sat)),
                             make("RQ", dst=100, src=0, len=len(sat), m=1 << 23, s=23),
                             make("RQ", dst=200, src=0, len=len(sat), m=1 << 23, s=23, relu=1),
                             make("RQ", dst=300, src=0, len=len(sat), m=(1 << 24) - 1, s=63),
                             make("RQ", dst=400, src=0, len=len(sat), m=(1 << 24) - 1, s=0, relu=1),
                             make("RQ", dst=500, src=0, len=len(sat), m=(1 << 24) - 1, s=0),
                             _st(100, OUT, len(sat)), _st(200, OUT + 20, len(sat)), _st(300, OUT + 40, len(sat)),
                             _st(400, OUT + 60, len(sat)), _st(500, OUT + 80, len(sat))], {0: sat})


def _softmax(s: _Suite) -> None:
    """Softmax: equal scores, one winner, a range wider than the table's tail, junk high bits."""
    rng, add, int8s, OUT = s.rng, s.add, s.int8s, s.OUT
    # --- softmax: equal scores, one winner, a range wider than the table's tail, junk high bits
    add("sm_equal", [_ld(0, 0, 8), make("SM", dst=0, src=0, len=8), _ld(10, 0, 5),
                     make("SM", dst=20, src=10, len=5), _st(0, OUT, 8), _st(20, OUT + 8, 5)], {0: [37] * 8})
    wide = [127, -128, 0, -127, 126, 111, -1, 112]
    add("sm_wide_range", [_ld(0, 0, len(wide)), make("SM", dst=50, src=0, len=len(wide)),
                          _st(50, OUT, len(wide))], {0: wide})
    junk = [(rng.getrandbits(24) << 8) | (x & 0xFF) for x in int8s(24)]
    add("sm_low_byte_only", [_ld(0, 0, 24), make("SM", dst=50, src=0, len=24), _st(50, OUT, 24)], {0: junk})


def _vadd_amax(s: _Suite) -> None:
    """VADD saturation and AMAX ties."""
    add, OUT = s.add, s.OUT
    # --- VADD saturation and AMAX ties
    add("vadd_saturate", [_ld(0, 0, 12), make("VADD", dst=20, src1=0, src2=6, len=6), _st(20, OUT, 6)],
        {0: [127, -128, 100, -100, 0x1FF, 0xFFFFFF80, 127, -128, 100, -100, 0x101, 0x80]})
    add("amax_ties", [_ld(0, 0, 9), make("AMAX", dst=20, src=0, len=9), make("AMAX", dst=21, src=5, len=4),
                      _st(20, OUT, 2)], {0: [-5, 7, 7, -0x80000000, 7, -1, -1, -0x80000000, -1]})


def _ignored_bits(s: _Suite) -> None:
    """Bits outside the operation's operands are ignored."""
    add, int8s, OUT = s.add, s.int8s, s.OUT
    # --- bits outside the operation's operands are ignored
    ignored = Instruction.decode(make("VADD", dst=20, src1=0, src2=6, len=6).encode()
                                 | (0xAB << isa.FIELD["d"].lsb + 16) | (0x3F << isa.FIELD["e"].lsb)
                                 | (0xE << isa.FIELD["fl"].lsb))
    add("ignored_field_bits", [_ld(0, 0, 12), ignored, _st(20, OUT, 6)], {0: int8s(12)})


def _halt_with_bits(s: _Suite) -> None:
    """A HALT word with junk in its unused fields is still HALT."""
    OUT, out, ext_words = s.OUT, s.out, s.ext_words
    # --- a HALT word with junk in its unused fields is still HALT
    out.append(("halt_with_unused_bits", [_ld(0, 0, 3), _st(0, OUT, 3), Instruction(op=0, a=0xFFFF, d=5, x=0x3FFFF)],
                _image(ext_words, {0: [4, 5, 6]})))


def _imem_full(s: _Suite) -> None:
    """A program filling the whole instruction memory (its HALT at the last address)."""
    add, int8s, OUT, config = s.add, s.int8s, s.OUT, s.config
    # --- a program filling the whole instruction memory (its HALT at the last address)
    fill = [_ld(0, 0, 16)]
    while len(fill) < config.imem_words - 1:
        k = len(fill)
        fill.append(_st(k % 16, OUT + k % 256, 1) if k % 3 else make("VADD", dst=k % 16, src1=k % 16,
                                                                      src2=(k + 5) % 16, len=1))
    add("imem_full", fill, {0: int8s(16)})


def _illegal(s: _Suite) -> None:
    """Illegal instructions: one program per error code the hardware can raise.  Each does."""
    rng, add, OUT, ext_words, SPAD, ARRAY, MAX_K = s.rng, s.add, s.OUT, s.ext_words, s.SPAD, s.ARRAY, s.MAX_K
    # --- illegal instructions: one program per error code the hardware can raise.  Each does
    # some work first (so memory and counters are not trivial) and has work after the fault
    # that must not happen.
    pre = [_ld(0, 0, 12), _st(0, OUT, 12)]
    post = [_st(0, OUT + 100, 12)]
    data = {0: [rng.getrandbits(32) for _ in range(12)]}
    illegal = {
        # op codes no configuration defines, so the case stays illegal whatever an extension adds
        ErrorCode.BAD_OPCODE: [Instruction(op=isa.RESERVED_OP_CODES[0], a=1, b=2, c=3),
                               Instruction(op=isa.RESERVED_OP_CODES[-1])],
        ErrorCode.SPAD_RANGE: [make("LD", dst=SPAD - 11, src=0, len=12),
                               make("MM", dst=SPAD - 3, A=0, B=0, M=2, K=4, N=2),
                               make("VADD", dst=0, src1=0, src2=0, len=0x8000) if SPAD < 0x8000
                               else make("VADD", dst=SPAD - 1, src1=SPAD - 1, src2=SPAD - 1, len=2)],
        ErrorCode.EXT_RANGE: [make("ST", src=0, dst=ext_words - 11, len=12),
                              make("LD", dst=0, src=ext_words - 1, len=2)],
        ErrorCode.BAD_SHAPE: [make("MM", dst=100, A=0, B=0, M=ARRAY + 1, K=4, N=2),
                              make("MM", dst=100, A=0, B=0, M=1, K=MAX_K + 1, N=1),
                              make("MM", dst=100, A=0, B=0, M=0, K=0, N=0, lda=4095)],
        ErrorCode.ZERO_LENGTH: [make("RQ", dst=SPAD - 1, src=60000, len=0, m=1 << 23, s=0),
                                make("SM", dst=0, src=0, len=0)],
        ErrorCode.OVERLAP: [make("VADD", dst=1, src1=0, src2=0, len=4),
                            make("SM", dst=10, src=5, len=6),
                            make("RQ", dst=0, src=11, len=12, m=1 << 23, s=0)],
    }
    for code, cases in illegal.items():
        for k, bad in enumerate(cases):
            add(f"illegal_{code.name.lower()}_{k}", pre + [bad] + post, data)


_GROUPS = (_shortest, _each_alone, _length_one, _largest_tiles, _longest_vectors, _requantizer, _softmax, _vadd_amax, _ignored_bits, _halt_with_bits, _imem_full, _illegal)


def _extension_cases(ext_words: int, config: Config) -> list[tuple[str, list[Instruction], list[int]]]:
    """Programs for each extension operation of ``config``: the operation at its least legal
    operands, and a few programs of loads, several instances of it from the generic generator
    (:meth:`_Builder.generic`) and the stores of their results."""
    iset = isa.instruction_set(config)
    out = []
    from .coverage import legal_base
    for code in sorted(iset.extension_of):
        spec = iset.by_code[code]
        rng = random.Random(f"{spec.mnemonic} {code}")       # fixed: the suite is the same every time
        least = iset.make(spec.mnemonic, **legal_base(spec, ext_words, config=config))
        out.append((f"ext_{spec.mnemonic.lower()}_least", [least, isa.HALT], [0] * ext_words))
        for k in range(3):
            b = _Builder(rng, ext_words, default_max_cycles(config=config), config=config)
            ext = [0] * ext_words
            for i in range(320):
                ext[i] = random_word(rng)
            for at in (0, 320, 640):
                b.emit(make("LD", dst=at, src=0, len=320))
                b.filled.append((at, 320))
            made = sum(b.generic(spec) for _ in range(12))
            if not made:
                raise ValueError(f"the generator made no {spec.mnemonic} instruction for the directed suite")
            for start, n in b.results:
                b.emit(make("ST", src=start, dst=ext_words // 2 + rng.randrange(ext_words // 2 - n + 1), len=n))
            out.append((f"ext_{spec.mnemonic.lower()}_{k}", b.code + [isa.HALT], ext))
    return out


def directed_bundle(ext_words: int | None = None, *, config: Config) -> Bundle:
    ext_words = config.ext_words if ext_words is None else ext_words
    return Bundle.from_programs(directed_suite(ext_words, config=config), ext_words, config=config)
