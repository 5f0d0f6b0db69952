"""Assembler, disassembler, program and memory files, and the `ga2 asm/disasm/golden` commands."""
import json
import random

import pytest

from ga2_cli.main import main as ga2
from ga2_hdl.formats import asm
from ga2_hdl import isa
from ga2_hdl.formats.asm import AsmError
from ga2_hdl.formats.files import FileFormatError, format_memory, format_program, parse_memory, parse_program
from ga2_hdl.isa import Instruction, make

H = isa.HALT


def random_operands(rng, spec):
    return {o.name: rng.getrandbits(o.bits) for o in spec.operands}


# ----------------------------------------------------------------------------- round trips

def test_every_op_every_operand_bit_round_trips():
    rng = random.Random(1)
    for spec in isa.OPS:
        for trial in range(50):
            ops = random_operands(rng, spec)
            if trial == 0:      # all operand bits set
                ops = {o.name: (1 << o.bits) - 1 for o in spec.operands}
            ins = make(spec.mnemonic, **ops)
            text = asm.disassemble_one(ins, config=isa.BOOK)
            assert not text.startswith(".word"), text
            assert asm.assemble(text, config=isa.BOOK) == [ins]
            assert asm.disassemble(asm.assemble(text, config=isa.BOOK), config=isa.BOOK) == text + "\n"


def test_every_operand_bit_reaches_its_field():
    # each single operand bit set alone lands on exactly the brief's field bit
    for spec in isa.OPS:
        for o in spec.operands:
            for bit in range(o.bits):
                ops = {p.name: 0 for p in spec.operands}
                ops[o.name] = 1 << bit
                word = asm.assemble(asm.disassemble_one(make(spec.mnemonic, **ops), config=isa.BOOK), config=isa.BOOK)[0].encode()
                f = isa.FIELD[o.field]
                assert word == (spec.code << 124) | (1 << (f.lsb + o.lsb + bit))


def test_any_128_bit_word_round_trips():
    rng = random.Random(2)
    samples = [0, (1 << 128) - 1, 1, 1 << 127, 8 << 124, (9 << 124) | 5]
    samples += [rng.getrandbits(128) for _ in range(300)]
    # words of defined ops with junk only in unused bits
    for spec in isa.OPS:
        base = make(spec.mnemonic, **random_operands(rng, spec)).encode()
        samples.append(base | 1 << 17)                 # x bit 17: used by no operation
    for w in samples:
        text = asm.disassemble_one(w, config=isa.BOOK)
        assert asm.assemble(text, config=isa.BOOK)[0].encode() == w, text


def test_words_with_unused_bits_become_raw():
    w = make("VADD", dst=1, src1=2, src2=3, len=4).encode() | (1 << (isa.FIELD["d"].lsb + 20))
    assert asm.disassemble_one(w, config=isa.BOOK) == f".word 0x{w:032x}"
    reserved = isa.RESERVED_OP_CODES[0]                       # an op code no configuration defines
    assert asm.disassemble_one(Instruction(op=reserved), config=isa.BOOK) == f".word 0x{reserved:x}" + "0" * 31
    assert asm.disassemble_one(H, config=isa.BOOK) == "HALT"
    assert asm.disassemble_one(Instruction(op=0, x=1), config=isa.BOOK).startswith(".word")


def test_canonical_text_and_defaults():
    prog = asm.assemble("""
        # comment line
        ld dst=0 src=0x100 len=64        # trailing comment
        MM dst=0 A=64 B=128 M=4 K=16 N=4 tb=1 ldb=16 ; semicolon comment
        RQ dst=1 src=2 len=3 m=0x800000 s=30
        HALT
    """, config=isa.BOOK)
    assert prog[1] == make("MM", dst=0, A=64, B=128, M=4, K=16, N=4, tb=1, lda=16, ldb=16, ldc=4)
    assert prog[2].relu == 0
    assert asm.disassemble(prog, config=isa.BOOK) == (
        "LD dst=0 src=256 len=64\n"
        "MM dst=0 A=64 B=128 M=4 K=16 N=4 tb=1 lda=16 ldb=16 ldc=4\n"
        "RQ dst=1 src=2 len=3 m=8388608 s=30 relu=0\n"
        "HALT\n")


def test_mm_default_strides_are_dense():
    ins = asm.assemble("MM dst=0 A=0 B=0 M=2 K=7 N=3", config=isa.BOOK)[0]
    assert (ins.lda, ins.ldb, ins.ldc, ins.tb) == (7, 3, 3, 0)


# ----------------------------------------------------------------------------- assembly errors

@pytest.mark.parametrize("line, fragment", [
    ("FOO dst=1", "unknown operation 'FOO'"),
    ("LD dst=1 src=2", "LD needs operand len"),
    ("LD dst=1", "needs operands src, len"),
    ("LD dst=1 src=2 len=65536", "len=65536 does not fit in the operand's 16 bits"),
    ("MM dst=0 A=0 B=0 M=1 K=1 N=1 lda=4096", "lda=4096 does not fit in the operand's 12 bits"),
    ("RQ dst=0 src=0 len=1 m=0x1000000 s=0", "m=0x1000000 does not fit"),
    ("RQ dst=0 src=0 len=1 m=1 s=64", "s=64 does not fit in the operand's 6 bits"),
    ("RQ dst=0 src=0 len=1 m=1 s=1 relu=2", "relu=2 does not fit in the operand's 1 bits"),
    ("LD dst=1 src=2 len=3 junk", "expected NAME=VALUE, got 'junk'"),
    ("LD dst=1 src=2 len=3 foo=1", "LD has no operand 'foo'"),
    ("LD dst=1 src=2 len=3 DST=1", "LD has no operand 'DST'"),
    ("LD dst=1 dst=2 src=2 len=3", "operand dst given twice"),
    ("LD dst=-1 src=2 len=3", "not a decimal or 0x number"),
    ("LD dst=0x src=2 len=3", "not a decimal or 0x number"),
    ("LD dst=1.5 src=2 len=3", "not a decimal or 0x number"),
    ("LD dst= src=2 len=3", "expected NAME=VALUE"),
    ("HALT now=1", "HALT has no operand 'now'"),
    (".word", ".word takes one value"),
    (".word 0x" + "1" * 33, "does not fit in 128 bits"),
    (".word zz", "not a decimal or 0x number"),
])
def test_assembly_errors_name_the_line(line, fragment):
    with pytest.raises(AsmError) as e:
        asm.assemble("HALT\n\n" + line + "\n", "prog.s", config=isa.BOOK)
    assert str(e.value).startswith("prog.s:3: "), str(e.value)
    assert fragment in str(e.value)


# ----------------------------------------------------------------------------- files

def test_program_file_format():
    prog = [make("LD", dst=1, src=2, len=3), H]
    text = format_program(prog)
    assert text.splitlines() == [f"{prog[0].encode():032x}", "0" * 32]
    assert text.splitlines()[0] == "1" + "0001" + "0002" + "0003" + "0" * 19
    assert parse_program("# a comment\n\n" + text.replace("\n", "  # c\n", 1)) == prog
    assert parse_program(text.upper()) == prog


def test_program_file_errors():
    with pytest.raises(FileFormatError, match=r"^p.hex:2: expected an instruction as exactly 32 hex digits"):
        parse_program("0" * 32 + "\n" + "0" * 31 + "\n", "p.hex")
    with pytest.raises(FileFormatError, match=r"^p.hex:1: "):
        parse_program("g" + "0" * 31, "p.hex")
    with pytest.raises(FileFormatError, match=r"^p.hex:3: "):
        parse_program("\n# x\n0x" + "0" * 30, "p.hex")


def test_memory_file_format_and_errors():
    assert parse_memory("00000001\n# gap\n\nFFFFFFFF # minus one\n") == [1, 0xFFFFFFFF]
    assert format_memory([1, 0xFFFFFFFF, 0, 0]) == "00000001\nffffffff\n"
    assert format_memory([-2]) == "fffffffe\n"
    with pytest.raises(FileFormatError, match=r"^m.hex:2: expected a 32-bit word as exactly 8 hex digits"):
        parse_memory("00000001\n1\n", "m.hex")
    with pytest.raises(FileFormatError, match=r"^m.hex:3: word 2 is beyond the external memory of 2 words"):
        parse_memory("00000001\n00000002\n00000003\n", "m.hex", ext_words=2)


# ----------------------------------------------------------------------------- commands

def test_cli_asm_disasm_golden(tmp_path, capsys):
    src = tmp_path / "p.s"
    src.write_text("LD dst=0 src=0 len=12\nMM dst=100 A=0 B=4 M=1 K=4 N=2\nST src=100 dst=50 len=2\nHALT\n")
    mem = tmp_path / "m.hex"
    mem.write_text("00000001\n00000002\n00000003\n00000004\n00000001\n00000000\n00000000\n00000001\n"
                   "00000002\n00000003\nffffffff\n00000005\n")
    hexf = tmp_path / "p.hex"
    assert ga2(["asm", str(src), "-o", str(hexf)]) == 0
    lines = hexf.read_text().splitlines()
    assert len(lines) == 5 and lines[0].startswith("// GA2 program file: 4 instructions, crc32 ")
    capsys.readouterr()
    assert ga2(["disasm", str(hexf)]) == 0
    assert capsys.readouterr().out.splitlines()[1] == "MM dst=100 A=0 B=4 M=1 K=4 N=2 tb=0 lda=4 ldb=2 ldc=2"
    assert ga2(["golden", str(hexf), "--ext", str(mem)]) == 0
    # LD 12: 2+21; MM 1x4x2: 2+(4+8+5+2+7); ST 2: 2+4; HALT 2
    assert capsys.readouterr().out.strip() == "total=59  matrix=26  dma=25  vector=0  instructions=3"
    assert ga2(["golden", str(hexf), "--ext", str(mem), "--json", "--ext-words", "64"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["counters"] == [59, 26, 25, 0, 3] and len(out["ext"]) == 64
    assert out["ext"][50:52] == [1 * 1 + 2 * 0 + 3 * 2 + 4 * -1 + 0, 0 + 2 + 3 * 3 + 4 * 5]


def test_cli_golden_errors(tmp_path, capsys):
    bad = tmp_path / "bad.s"
    bad.write_text("LD dst=4095 src=0 len=2\nHALT\n")
    assert ga2(["golden", str(bad)]) == 1
    err = capsys.readouterr()
    assert "total=2  matrix=0" in err.out and "SPAD_RANGE" in err.err and "pc 0" in err.err
    nohalt = tmp_path / "nohalt.s"
    nohalt.write_text("LD dst=0 src=0 len=2\n")
    assert ga2(["golden", str(nohalt)]) == 1
    assert "does not end with HALT" in capsys.readouterr().err
    junk = tmp_path / "junk.s"
    junk.write_text("HALT\nLD dst=0 src=0\n")
    assert ga2(["asm", str(junk)]) == 1
    assert f"{junk}:2: LD needs operand len" in capsys.readouterr().err


def test_cli_golden_and_disasm_on_bundle(tmp_path, capsys):
    from ga2_hdl.formats.bundle import Bundle
    b = Bundle.from_programs([("one", [make("LD", dst=0, src=0, len=3), H], [1]), ("two", [H], None)], 64, config=isa.BOOK)
    path = tmp_path / "b.hex"
    b.write(path)
    assert ga2(["golden", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "one" in out[0] and "total=16" in out[0] and "two" in out[1] and "total=2" in out[1]
    assert out[-1].startswith("total cycles 18 over 2 programs")
    assert ga2(["disasm", str(path)]) == 0
    assert capsys.readouterr().out.splitlines() == ["# program 0: one", "LD dst=0 src=0 len=3", "HALT",
                                                    "# program 1: two", "HALT"]
