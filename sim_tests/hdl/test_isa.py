"""The ISA module against the brief's and the book's facts, restated here independently."""
import math
import random
from fractions import Fraction

import pytest

from ga2_hdl import golden, isa
from ga2_hdl.isa import ErrorCode, Instruction, IsaError, make
from ga2_hdl import isa
from ga2_hdl.config import PRESETS, Config

# The brief, section 2: field name -> (msb, lsb).  These tables are the BOOK's facts, restated to check
# the book chip against them; they are not lists to extend: new operations come from extensions
# (docs/extending.md), which these tests do not concern.
BRIEF_FIELDS = {"op": (127, 124), "a": (123, 108), "b": (107, 92), "c": (91, 76), "d": (75, 52), "e": (51, 46),
                "f": (45, 38), "g": (37, 30), "h": (29, 22), "fl": (21, 18), "x": (17, 0)}
# op code, mnemonic, operand -> (field, low bit inside the field, width)
BRIEF_OPS = {
    0: ("HALT", {}),
    1: ("LD", {"dst": ("a", 0, 16), "src": ("b", 0, 16), "len": ("c", 0, 16)}),
    2: ("ST", {"src": ("a", 0, 16), "dst": ("b", 0, 16), "len": ("c", 0, 16)}),
    3: ("MM", {"dst": ("a", 0, 16), "A": ("b", 0, 16), "B": ("c", 0, 16), "M": ("f", 0, 8), "K": ("g", 0, 8),
               "N": ("h", 0, 8), "tb": ("fl", 0, 1), "lda": ("d", 0, 12), "ldb": ("d", 12, 12),
               "ldc": ("x", 0, 12)}),
    4: ("RQ", {"dst": ("a", 0, 16), "src": ("b", 0, 16), "len": ("c", 0, 16), "m": ("d", 0, 24),
               "s": ("e", 0, 6), "relu": ("fl", 0, 1)}),
    5: ("SM", {"dst": ("a", 0, 16), "src": ("b", 0, 16), "len": ("c", 0, 16)}),
    6: ("VADD", {"dst": ("a", 0, 16), "src1": ("b", 0, 16), "src2": ("c", 0, 16), "len": ("d", 0, 16)}),
    7: ("AMAX", {"dst": ("a", 0, 16), "src": ("b", 0, 16), "len": ("c", 0, 16)}),
}


def test_fields_match_the_brief():
    assert {f.name: (f.msb, f.lsb) for f in isa.FIELDS} == BRIEF_FIELDS
    assert isa.INSTR_BITS == 128 and isa.SPAD_WORDS == 4096 and isa.LAT == 8
    assert isa.EXT_WORDS_DEFAULT == 8192


def test_operations_match_the_brief():
    # the book chip's operations are the brief's eight (isa.OPS is the book chip's set)
    assert {s.code: s.mnemonic for s in isa.OPS} == {k: v[0] for k, v in BRIEF_OPS.items()}
    for spec in isa.OPS:
        got = {o.name: (o.field, o.lsb, o.bits) for o in spec.operands}
        assert got == BRIEF_OPS[spec.code][1], spec.mnemonic
    assert not set(isa.RESERVED_OP_CODES) & set(BRIEF_OPS)


def test_encode_decode_round_trip_and_positions():
    ins = make("MM", dst=0x1234, A=0x5678, B=0x9ABC, M=4, K=64, N=3, tb=1, lda=0xABC, ldb=0xDEF, ldc=0x123)
    w = ins.encode()
    assert w >> 124 == 3
    assert (w >> 108) & 0xFFFF == 0x1234 and (w >> 92) & 0xFFFF == 0x5678 and (w >> 76) & 0xFFFF == 0x9ABC
    assert (w >> 52) & 0xFFFFFF == 0xDEFABC and (w >> 38) & 0xFF == 4 and (w >> 30) & 0xFF == 64
    assert (w >> 22) & 0xFF == 3 and (w >> 18) & 0xF == 1 and w & 0x3FFFF == 0x123
    assert Instruction.decode(w) == ins
    rng = random.Random(0)
    for _ in range(200):
        w = rng.getrandbits(128)
        assert Instruction.decode(w).encode() == w
    assert Instruction.decode(0) == isa.HALT
    with pytest.raises(IsaError):
        Instruction.decode(1 << 128)
    with pytest.raises(IsaError):
        Instruction(op=16)


def test_make_refusals_and_defaults():
    with pytest.raises(IsaError, match="unknown operation"):
        make("NOP")
    with pytest.raises(IsaError, match="has no operand"):
        make("LD", dst=1, src=1, len=1, M=1)
    with pytest.raises(IsaError, match="does not fit"):
        make("LD", dst=1 << 16, src=0, len=1)
    mm = make("MM", dst=0, A=0, B=0, M=2, K=9, N=3)
    assert (mm.lda, mm.ldb, mm.ldc, mm.tb) == (9, 3, 3, 0)


# ----------------------------------------------------------------------------- timing

def test_busy_formulas_match_the_brief():
    lat = 8
    rng = random.Random(1)
    for _ in range(200):
        n = rng.randint(1, 4096)
        M, K, N = rng.randint(1, 4), rng.randint(1, 64), rng.randint(1, 4)
        assert make("LD", dst=0, src=0, len=n).busy() == n + lat + 1
        assert make("ST", src=0, dst=0, len=n).busy() == n + 2
        assert make("MM", dst=0, A=0, B=0, M=M, K=K, N=N).busy() == M * K + K * N + (K + M + N - 2) + M * N + 7
        assert make("RQ", dst=0, src=0, len=n, m=1, s=0).busy() == n + 2
        assert make("SM", dst=0, src=0, len=n).busy() == 3 * n + 41 + 6
        assert make("VADD", dst=0, src1=0, src2=0, len=n).busy() == 2 * n + 2
        assert make("AMAX", dst=0, src=0, len=n).busy() == n + 3
    assert isa.HALT.busy() == 0 and isa.HALT.cycles() == 2


def _random_operands(spec, rng):
    return {o.name: rng.randint(*o.legal) if o.legal else rng.randrange(1 << o.bits) for o in spec.operands}


def test_each_busy_formula_text_is_its_busy_function():
    # the text (docs/isa.md, the docs) and the function (every simulator's timing) are one formula
    rng = random.Random(5)
    for spec in isa.OPS:
        for _ in range(300):
            ins = make(spec.mnemonic, **_random_operands(spec, rng))
            text_value = eval(spec.busy_formula, {"__builtins__": {}}, {"LAT": isa.LAT, **ins.operands()})
            assert text_value == ins.busy(), f"{spec.mnemonic}: `{spec.busy_formula}` != busy() for {ins}"


def test_operand_ranges_decide_bad_shape():
    rng = random.Random(6)
    ranged = [spec for spec in isa.OPS if spec.ranged]
    assert [o.name for o in isa.OP_BY_NAME["MM"].ranged] == ["M", "K", "N"]
    for spec in ranged:
        for o in spec.ranged:
            for value, inside in ((o.legal[0] - 1, False), (o.legal[0], True), (o.legal[1], True),
                                  (o.legal[1] + 1, False)):
                if not 0 <= value < 1 << o.bits:
                    continue
                operands = {**_random_operands(spec, rng), o.name: value}
                code, why = isa.check(make(spec.mnemonic, **operands))
                assert (code != ErrorCode.BAD_SHAPE) == inside, (spec.mnemonic, o.name, value, why)


# The book's early model (source id 70961514463) counts cycles this way: per instruction up to
# the first HALT, 2 (fetch, issue) + a wait time made of the operands and per-op constants
# K_LD=1, K_ST=2, K_MM=7, K_RQ=2, K_SM=6, K_VADD=2, K_AMAX=3 with LAT=8 (LD: len+LAT+K;
# ST, RQ: len+K; MM: M*K+K*N+(K+M+N-2)+M*N+K; SM: 3*len+41+K; VADD: 2*len+K; AMAX: len+K),
# the wait added to the unit's counter (mm; dma for LD/ST; vec for the rest); HALT adds 2.
# The book's facts about its seven operations, for programs of the book chip only.
BOOK_K = {"LD": 1, "ST": 2, "MM": 7, "RQ": 2, "SM": 6, "VADD": 2, "AMAX": 3}
BOOK_UNIT = {"LD": "dma", "ST": "dma", "MM": "mm", "RQ": "vec", "SM": "vec", "VADD": "vec", "AMAX": "vec"}


def book_counters(program):
    units = {"mm": 0, "dma": 0, "vec": 0}
    total = n = 0
    for ins in program:
        name = isa.OP_BY_CODE[ins.op].mnemonic
        if name == "HALT":
            break
        assert name in BOOK_K, f"{name} is not one of the book's operations: this model is the book chip's"
        f = ins.fields
        if name == "LD":
            wait = f["c"] + 8 + BOOK_K[name]
        elif name in ("ST", "RQ", "AMAX"):
            wait = f["c"] + BOOK_K[name]
        elif name == "MM":
            M, K, N = f["f"], f["g"], f["h"]
            wait = M * K + K * N + (K + M + N - 2) + M * N + BOOK_K[name]
        elif name == "SM":
            wait = 3 * f["c"] + 41 + BOOK_K[name]
        else:   # VADD: length in d[15:0]
            wait = 2 * (f["d"] & 0xFFFF) + BOOK_K[name]
        units[BOOK_UNIT[name]] += wait
        total += 2 + wait
        n += 1
    return (total + 2, units["mm"], units["dma"], units["vec"], n)


def test_cycle_counts_equal_the_books_model():
    from gen.fuzz.programs import random_program
    from gen.fuzz.directed import directed_suite
    rng = random.Random(70961514463)
    programs = [random_program(rng, 2048, config=isa.BOOK) for _ in range(150)]          # the book's early 2048 words
    programs += [(code, ext) for name, code, ext in directed_suite(2048, config=isa.BOOK) if not name.startswith("illegal")]
    for code, ext in programs:
        r = golden.run(code, ext, ext_words=2048, config=isa.BOOK)
        assert r.error == ErrorCode.OK
        assert r.counters == book_counters(code) == isa.program_counters(code)


# ----------------------------------------------------------------------------- legality

def test_check_order_and_codes():
    c = lambda ins, ew=8192: isa.check(ins, ew)[0]
    assert c(Instruction(op=isa.RESERVED_OP_CODES[0])) == ErrorCode.BAD_OPCODE      # no chip defines it
    assert c(make("MM", dst=0, A=0, B=0, M=0, K=1, N=1)) == ErrorCode.BAD_SHAPE
    assert c(make("MM", dst=0, A=0, B=0, M=1, K=64, N=4)) == ErrorCode.OK
    assert c(make("LD", dst=0, src=0, len=0)) == ErrorCode.ZERO_LENGTH
    assert c(make("LD", dst=4096, src=0, len=1)) == ErrorCode.SPAD_RANGE
    assert c(make("LD", dst=0, src=2047, len=2), 2048) == ErrorCode.EXT_RANGE
    assert c(make("LD", dst=0, src=2047, len=1), 2048) == ErrorCode.OK
    assert c(make("LD", dst=4096, src=9000, len=1)) == ErrorCode.SPAD_RANGE    # regions in order
    assert c(make("ST", src=4096, dst=9000, len=1)) == ErrorCode.SPAD_RANGE
    assert c(make("SM", dst=4, src=0, len=4)) == ErrorCode.OK                 # adjacent is disjoint
    assert c(make("SM", dst=3, src=0, len=4)) == ErrorCode.OVERLAP
    assert c(make("AMAX", dst=2, src=0, len=4)) == ErrorCode.OK               # AMAX has no overlap rule
    # MM B region uses the transposed span
    assert c(make("MM", dst=0, A=0, B=4096 - 64, M=1, K=64, N=1, tb=1, ldb=64)) == ErrorCode.OK
    assert c(make("MM", dst=0, A=0, B=4096 - 64, M=1, K=64, N=2, tb=1, ldb=64)) == ErrorCode.SPAD_RANGE


# ----------------------------------------------------------------------------- arithmetic primitives

def test_requantize_against_fractions():
    rng = random.Random(2)
    for _ in range(3000):
        acc = rng.choice([rng.randint(-(1 << 31), (1 << 31) - 1), rng.randint(-300, 300)])
        m, s, relu = rng.randrange(1 << 24), rng.randint(0, 63), rng.random() < 0.5
        x = Fraction(acc * m, 1 << s)
        r = math.floor(abs(x) + Fraction(1, 2)) * (1 if x >= 0 else -1)
        assert isa.requantize(acc, m, s, relu) == max(0 if relu else -127, min(127, r))


def test_divider_and_softmax_primitives():
    assert isa.divide_u40(1 << 38, 1) == (1 << 38, 0)
    assert isa.divide_u40(0, 5) == (0, 0)
    assert isa.divide_u40(123, 0) == ((1 << 40) - 1, 123)
    assert isa.divide_u40((1 << 40) - 1, (1 << 40) - 1) == (1, 0)
    with pytest.raises(ValueError):
        isa.divide_u40(1 << 40, 1)
    assert isa.EXP_TABLE[0] == 65535 and isa.EXP_TABLE[255] == 0 and len(isa.EXP_TABLE) == 256
    assert isa.softmax_q16([3]) == [65536]
    p = isa.softmax_q16([10, 10])
    assert p == [32768, 32768]


def test_mantissa_shift():
    for ratio in (1.0, 0.5, 0.001234, 3.75, 1e-6):
        m, s = isa.mantissa_shift(ratio)
        assert (1 << 23) <= m < (1 << 24)
        assert abs(m / 2 ** s - ratio) <= ratio * 2 ** -23
    with pytest.raises(ValueError):
        isa.mantissa_shift(0)


# ==================================================================== wide ports
# Busy-time formulas per port width (``Config.spad_ports`` = P, ``Config.ext_port_words`` = W).
# The formula text of every operation (docs/isa.md, docs/chip.md) is a Python
# expression of the operands, ``LAT`` and ``ceil``; evaluated, it is the busy
# function, on every configuration.  With P = W = 1 every text and value is the
# book's; wider ports never make an instruction slower.

CONFIGS = [Config.book(), PRESETS["wide2"], PRESETS["wide4"], Config(name="p2w8", spad_ports=2, ext_port_words=8),
           Config(name="p16w1", spad_ports=16), Config(name="lat3w4", lat=3, ext_port_words=4),
           Config(name="sws", stream_while_staging=True), Config(name="mmdw", mm_done_with_write=True),
           Config(name="sdiv", short_division=True), PRESETS["fast"]]     # fast streams while staging (and more)


def _random_operands_wide(spec, rng):
    return {o.name: rng.randint(*o.legal) if o.legal else rng.randrange(1 << o.bits) for o in spec.operands}


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.name)
def test_formula_text_is_the_busy_function(config):
    iset = isa.instruction_set(config)
    rng = random.Random(config.spad_ports * 17 + config.ext_port_words)
    env = {"__builtins__": {}, "ceil": math.ceil, "LAT": config.lat}
    for spec in iset.ops:
        for _ in range(300):
            ins = isa.make(spec.mnemonic, **_random_operands_wide(spec, rng))
            assert eval(spec.busy_formula, env, ins.operands()) == spec.busy(ins), \
                f"{config.name} {spec.mnemonic}: `{spec.busy_formula}` != busy() for {ins}"


def test_one_word_ports_are_the_books_texts_and_values():
    book = isa.instruction_set(isa.BOOK)
    for config in (Config(name="same"), Config(name="lat", lat=8)):
        iset = isa.instruction_set(config)
        assert [o.busy_formula for o in iset.ops] == [o.busy_formula for o in book.ops]
    texts = {o.mnemonic: o.busy_formula for o in book.ops}
    assert texts["LD"] == "len + LAT + 1" and texts["ST"] == "len + 2"
    assert texts["MM"] == "M*K + K*N + (K+M+N-2) + M*N + 7"
    assert texts["RQ"] == "len + 2" and texts["VADD"] == "2*len + 2" and texts["AMAX"] == "len + 3"


def test_streaming_while_staging_hides_k_minus_1_cycles_of_a_plain_b_and_none_of_a_transposed_one():
    """``Config.stream_while_staging``: MM's stream term is ``M+N-1`` for B not transposed (its K steps
    under B's staging), ``K+M+N-2`` transposed; every other operation as without it."""
    rng = random.Random(29)
    for base in (Config(name="one"), PRESETS["fast"].replace(stream_while_staging=False)):
        plain, early = isa.instruction_set(base), isa.instruction_set(base.replace(stream_while_staging=True))
        assert "(K+M+N-2 if tb else M+N-1)" in early.by_name["MM"].busy_formula
        for a, b in zip(plain.ops, early.ops):
            assert (a.busy_formula == b.busy_formula) == (a.mnemonic != "MM")
        spec = plain.by_name["MM"]
        for _ in range(300):
            ins = isa.make("MM", **_random_operands_wide(spec, rng))
            assert early.busy(ins) == plain.busy(ins) - (0 if ins.tb else ins.K - 1)


@pytest.mark.parametrize("field, mnemonic, saved", [("mm_done_with_write", "MM", 1), ("short_division", "SM", 16)])
def test_a_timing_field_shortens_its_one_operation_by_its_cycles(field, mnemonic, saved):
    """``Config.mm_done_with_write``: every MM one cycle shorter (done with the last write);
    ``Config.short_division``: every SM 16 (the divider's 23 quotient bits in 24 cycles, not 40); every
    other operation and formula text as without the field."""
    rng = random.Random(31)
    for base in (Config(name="one"), PRESETS["fast"].replace(**{field: False})):
        plain, short = isa.instruction_set(base), isa.instruction_set(base.replace(**{field: True}))
        for a, b in zip(plain.ops, short.ops):
            assert (a.busy_formula == b.busy_formula) == (a.mnemonic != mnemonic)
        spec = plain.by_name[mnemonic]
        for _ in range(300):
            ins = isa.make(mnemonic, **_random_operands_wide(spec, rng))
            assert short.busy(ins) == plain.busy(ins) - saved
    assert isa.sm_division_cycles(Config(name="s", short_division=True)) == 1 + isa.SM_QUOTIENT_BITS + 1 == 25
    assert isa.sm_division_cycles(isa.BOOK) == 1 + isa.DIV_BITS == 41


def test_wide_formulas_in_numbers():
    iset = isa.instruction_set(PRESETS["wide4"])
    assert iset.busy(isa.make("LD", dst=0, src=0, len=9)) == 3 + 8 + 1
    assert iset.busy(isa.make("ST", src=0, dst=0, len=8)) == 2 + 2
    # M*ceil(K/4) + K*ceil(N/4) + (K+M+N-2) + M*ceil(N/4) + 7
    assert iset.busy(isa.make("MM", dst=0, A=0, B=0, M=4, K=64, N=4)) == 64 + 64 + 70 + 4 + 7
    # B transposed: N*ceil(K/4) for B
    assert iset.busy(isa.make("MM", dst=0, A=0, B=0, M=4, K=64, N=4, tb=1)) == 64 + 64 + 70 + 4 + 7
    assert iset.busy(isa.make("MM", dst=0, A=0, B=0, M=1, K=5, N=3, tb=1)) == 2 + 6 + 7 + 1 + 7
    assert iset.busy(isa.make("RQ", dst=0, src=0, len=5, m=1, s=0)) == 2 + 2
    assert iset.busy(isa.make("VADD", dst=0, src1=0, src2=0, len=5)) == 2 * 2 + 2
    assert iset.busy(isa.make("AMAX", dst=0, src=0, len=4)) == 1 + 2 + 2     # log2(4) levels of its lane tree
    assert iset.busy(isa.make("SM", dst=0, src=0, len=4)) == 3 * 4 + 47       # SM keeps one word per cycle
    assert PRESETS["wide4"].spad_ports == PRESETS["wide4"].ext_port_words == 4


@pytest.mark.parametrize("config", CONFIGS[1:], ids=lambda c: c.name)
def test_wider_is_never_slower(config):
    """Never slower than the book's chip, but for AMAX on a vector shorter than log2(P) words: its
    lane tree's log2(P) levels cost log2(P) - len cycles more there (len + 3 against 3 + log2(P))."""
    iset, book = isa.instruction_set(config), isa.instruction_set(Config(name="b", lat=config.lat))
    levels = config.spad_ports.bit_length() - 1
    rng = random.Random(3)
    for spec in iset.ops:
        ops = [_random_operands_wide(spec, rng) for _ in range(100)]
        if "len" in ops[0]:                           # and every short vector
            ops += [{**ops[0], "len": n} for n in range(1, 2 * config.spad_ports + 2)]
        for ins in (isa.make(spec.mnemonic, **o) for o in ops):
            extra = max(0, levels - ins.len) if spec.mnemonic == "AMAX" else 0
            assert iset.busy(ins) <= book.busy(ins) + extra, str(ins)


def test_widths_must_be_powers_of_two():
    from ga2_hdl.config import ConfigError
    for field in ("spad_ports", "ext_port_words"):
        with pytest.raises(ConfigError, match=f"{field}=3 must be a power of two"):
            Config(**{field: 3})


def test_scratchpad_partitions_are_checked():
    """``spad_partitions``: a power of two, only with overlap, each partition a power-of-two number of
    words that the banks divide; the derived sizes follow."""
    from ga2_hdl.config import ConfigError
    with pytest.raises(ConfigError, match="spad_partitions=3 must be a power of two"):
        Config(overlap=True, spad_partitions=3)
    with pytest.raises(ConfigError, match="spad_partitions=2 needs overlap=true"):
        Config(spad_partitions=2)
    with pytest.raises(ConfigError, match="spad_partitions=4: each partition"):
        Config(overlap=True, spad_partitions=4, spad_words=3072)       # 768-word partitions
    with pytest.raises(ConfigError, match="multiple of the 8 bank"):
        Config(overlap=True, spad_partitions=1024, spad_ports=8)       # 4-word partitions, 8 banks
    with pytest.raises(ConfigError, match="spad_partitions=0 must be a positive integer"):
        Config(overlap=True, spad_partitions=0)
    c = Config(overlap=True, spad_partitions=4, spad_ports=8, ext_port_words=8)
    assert (c.spad_partition_words, c.spad_memories, c.spad_memory_words) == (1024, 32, 128)
    book = Config.book()
    assert (book.spad_partitions, book.spad_memories, book.spad_memory_words) == (1, 1, 4096)
    for name, preset in PRESETS.items():                 # every overlapped preset is partitioned
        assert (preset.spad_partitions > 1) == preset.overlap, name


# ==================================================================== fetch on done
def _fod_program(iset):
    return [iset.make("LD", dst=0, src=0, len=20), iset.make("MM", dst=100, A=0, B=8, M=1, K=8, N=4),
            iset.make("RQ", dst=200, src=100, len=4, m=1 << 23, s=23), iset.make("VADD", dst=300, src1=200, src2=200, len=8),
            iset.make("ST", src=300, dst=40, len=8), isa.HALT]


def test_fetch_on_done_saves_a_cycle_after_the_dma_and_the_matrix_unit_only():
    """``Config.fetch_on_done``: the next instruction issues in t+W+1 after LD, ST and MM (their done
    cycle is its FETCH), in t+W+2 after the vector unit's (RQ's trailing write keeps the FETCH's cycle),
    HALT included; busy counters and instructions as without the field.  The golden model's counters
    are the timer's."""
    from ga2_hdl import golden
    for base in (Config(name="one"), PRESETS["fast"].replace(fetch_on_done=False)):
        on = base.replace(fetch_on_done=True)
        plain, fod = isa.instruction_set(base), isa.instruction_set(on)
        assert [o.busy_formula for o in plain.ops] == [o.busy_formula for o in fod.ops]
        program = _fod_program(fod)
        a, b = plain.counters(program), fod.counters(program)
        saved = sum(1 for ins in program[:-1] if fod.spec(ins.op).unit != isa.Unit.VECTOR)
        assert saved == 3 and b.total == a.total - saved
        assert (b.matrix, b.dma, b.vector, b.instructions) == (a.matrix, a.dma, a.vector, a.instructions)
        # issue cycles one by one: after LD, MM, ST the next is one cycle sooner
        timer, gaps = fod.timer(), []
        issues = [timer.issue(ins) for ins in program[:-1]]
        gaps = [t1 - t0 - fod.busy(i) for t0, t1, i in zip(issues, issues[1:], program)]
        assert issues[0] == 1 and gaps == [1, 1, 2, 2]
        assert timer.halt().total == issues[-1] + fod.busy(program[-2]) + 1 + 1
        assert golden.run(program, config=on).counters == b
        assert fod.fetch_issue(program) == b.total - b.matrix - b.dma - b.vector
        assert [fod.cycles(i) for i in program[:-1]] == [fod.busy(i) + g for i, g in zip(program, gaps + [1])]


def test_fetch_on_done_is_refused_with_overlap():
    from ga2_hdl.config import ConfigError
    with pytest.raises(ConfigError, match="fetch_on_done=true needs overlap=false"):
        Config(name="x", overlap=True, fetch_on_done=True)
    assert isa.trailing_write_cycles(Config(name="f", fetch_on_done=True), isa.Unit.MATRIX) == 0
    assert isa.trailing_write_cycles(Config(name="f", fetch_on_done=True), isa.Unit.VECTOR) == 1
    assert isa.trailing_write_cycles(isa.BOOK, isa.Unit.DMA) == 1
