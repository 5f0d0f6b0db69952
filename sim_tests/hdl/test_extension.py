"""The instruction set extended from outside the package: docs/extending.md's worked example
(examples/relu_ext.py) runs through the whole tool chain, and what goes wrong says so."""
import json
import pathlib
import random
import re
import subprocess
import sys
import textwrap

import pytest

from ga2_hdl.formats import asm
from ga2_hdl import golden, isa
from ga2_hdl.config import Config
from ga2_hdl.isa import ErrorCode, IsaError
from ga2_hdl.isa.doc import render_isa_markdown

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
EXAMPLE = EXAMPLES / "relu_ext.py"
if str(EXAMPLES) not in sys.path:          # the user's module lives outside the package
    sys.path.insert(0, str(EXAMPLES))

RELU = Config(name="relu", extensions=("relu_ext",))


def _uses(code, mnemonic, iset):
    return any(ins.op == iset.by_name[mnemonic].code for ins in code)


def test_the_package_does_not_name_the_example():
    # the example is added without editing any file of the package
    for path in [*ROOT.glob("ga2_hdl/**/*.py"), *ROOT.glob("gen/**/*.py"), *ROOT.glob("ga2_cli/**/*.py")]:
        text = path.read_text()
        assert "relu_ext" not in text and "RELU" not in text, path


def test_the_extension_is_in_every_tool():
    iset = isa.instruction_set(RELU)
    spec = iset.by_name["RELU"]
    assert iset.origin(spec.code) == "extension relu_ext"
    assert [s.mnemonic for s in iset.ops] == [s.mnemonic for s in isa.OPS] + ["RELU"]
    assert spec.code in iset.unit_ops(isa.Unit.VECTOR) and spec.code not in isa.OP_BY_CODE
    program = asm.assemble("LD dst=0 src=0 len=5\nRELU dst=8 src=0 len=5\nRELU dst=0 src=0 len=5\n"
                           "ST src=8 dst=100 len=5\nST src=0 dst=200 len=5\nHALT", config=RELU)
    assert asm.assemble(asm.disassemble(program, RELU), config=RELU) == program
    assert asm.disassemble(program, config=isa.BOOK).splitlines()[1].startswith(".word")      # the book chip has no RELU
    with pytest.raises(asm.AsmError, match="unknown operation 'RELU'"):
        asm.assemble("RELU dst=0 src=0 len=1", config=isa.BOOK)
    ext = [5, -3, 0, 1 << 31, (1 << 31) - 1]
    r = golden.run(program, ext, config=RELU)
    want = [5, 0, 0, 0, (1 << 31) - 1]
    assert r.error == ErrorCode.OK and r.ext[100:105] == want and r.ext[200:205] == want
    assert r.counters == iset.counters(program)
    assert r.counters.vector == 2 * (5 + 1)                 # the OpSpec's busy time, len + 1
    book = golden.run(program, ext, config=isa.BOOK)                           # the same words on the book's chip
    assert (book.error, book.error_pc) == (ErrorCode.BAD_OPCODE, 1)
    # its legality rules, in the hardware check's order
    assert iset.check(iset.make("RELU", dst=0, src=0, len=0))[0] == ErrorCode.ZERO_LENGTH
    assert iset.check(iset.make("RELU", dst=4090, src=0, len=7))[0] == ErrorCode.SPAD_RANGE
    assert iset.check(iset.make("RELU", dst=1, src=0, len=4))[0] == ErrorCode.OVERLAP


def test_the_engine_keeps_the_unit_contract_and_its_busy_time():
    """The engine alone on the scratchpad (sim_tests/spad_harness.py checks the contract every cycle:
    busy exactly t+1 .. t+W, done once at t+W, the port quiet when idle): W is the OpSpec's, and the
    scratchpad ends as the golden semantics leave it."""
    from relu_ext import EXTENSION, ReluEngine
    from sim_tests.spad_harness import run_program
    iset = isa.instruction_set(RELU)
    rng = random.Random(7)
    image = [rng.getrandbits(32) for _ in range(256)]
    program = [iset.make("RELU", dst=300, src=0, len=1), iset.make("RELU", dst=10, src=10, len=40),
               iset.make("RELU", dst=500, src=100, len=150), iset.make("RELU", dst=0, src=200, len=56)]
    final, busy = run_program(lambda: ReluEngine(config=RELU), image, program)
    assert busy == [iset.busy(ins) for ins in program] == [2, 41, 151, 57]
    machine = golden.Machine(config=RELU)
    machine.spad[:len(image)] = image
    for ins in program:
        EXTENSION.golden["RELU"](machine, ins)
    assert final == machine.spad.tolist()


def test_random_programs_and_coverage_derive_the_extension():
    from gen.fuzz.coverage import CoverageModel
    from gen.fuzz.programs import random_program
    iset = isa.instruction_set(RELU)
    rng = random.Random(3)
    programs = [random_program(rng, config=RELU)[0] for _ in range(40)]
    assert sum(_uses(code, "RELU", iset) for code in programs) >= 5
    model = CoverageModel(config=RELU)
    assert "pair RELU>AMAX" in model.bins and "operand RELU.len max" in model.bins
    counts = model.count(programs[0], ErrorCode.OK, len(programs[0]) - 1)
    assert set(counts) <= set(model.bins)


def test_docs_describe_the_configuration_and_its_extension():
    text = render_isa_markdown(RELU)
    assert "### 8 RELU" in text and "extension relu_ext" in text and "relu" in text.split("## Machine")[0]
    assert "RELU" not in render_isa_markdown(config=isa.BOOK)


def test_the_commands_take_the_extended_configuration(tmp_path, capsys):
    from ga2_cli.main import main
    config = str(EXAMPLES / "relu.toml")
    src = tmp_path / "relu.s"
    src.write_text("LD dst=0 src=0 len=2\nRELU dst=0 src=0 len=2\nST src=0 dst=8 len=2\nHALT\n")
    mem = tmp_path / "m.hex"
    mem.write_text("00000007\nfffffff9\n")
    assert main(["golden", str(src), "--ext", str(mem), "--config", config, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["ext"][8:10] == [7, 0]
    assert main(["asm", str(src), "--config", config, "-o", str(tmp_path / "p.hex")]) == 0
    assert main(["disasm", str(tmp_path / "p.hex"), "--config", config]) == 0
    assert "RELU dst=0 src=0 len=2" in capsys.readouterr().out
    assert main(["asm", str(src)]) == 1                               # the book chip has no RELU
    assert "unknown operation 'RELU'" in capsys.readouterr().err
    assert main(["isadoc", "--config", config, "-o", str(tmp_path / "isa.md")]) == 0
    assert (tmp_path / "isa.md").read_text() == render_isa_markdown(RELU)
    assert main(["isadoc", "-o", str(tmp_path / "book.md")]) == 0
    assert (tmp_path / "book.md").read_text() == (ROOT / "docs" / "isa.md").read_text()


def test_the_directed_suite_has_the_extension_programs():
    from gen.fuzz.directed import directed_suite
    names = [n for n, _, _ in directed_suite(8192, config=RELU)]
    assert names[-4:] == ["ext_relu_least", "ext_relu_0", "ext_relu_1", "ext_relu_2"]
    assert not any(n.startswith("ext_") for n, _, _ in directed_suite(8192, config=isa.BOOK))


def test_a_mismatching_program_using_the_extension_can_be_shrunk():
    """The campaign's shrinker makes its smaller variants under the chip's own instruction set: an
    extension's op has its lengths halved too, and every variant keeps each instruction's verdict."""
    from gen.fuzz import programs as fuzz, shrink
    iset = isa.instruction_set(RELU)
    rng = random.Random(3)
    code, ext = next((c, e) for c, e in (fuzz.random_program(rng, config=RELU, max_cycles=1500)
                                         for _ in range(100)) if _uses(c, "RELU", iset))
    variants = list(shrink._candidates(code, ext, RELU.ext_words, config=RELU))
    relu = iset.by_name["RELU"].code
    shrunk = [c for c, _ in variants if len(c) == len(code) and c != code
              and any(a.op == relu and a != b for a, b in zip(c, code))]
    assert shrunk                                           # a RELU instruction made smaller
    for c in shrunk:
        for a, b in zip(c, code):
            assert iset.check(a, RELU.ext_words)[0] == iset.check(b, RELU.ext_words)[0]


def test_golden_equals_amaranth_icarus_and_verilator_on_programs_using_the_extension():
    """The chip with RELU, built from the configuration: every simulator agrees with the golden
    model, memory and counters, on the extension's directed programs and random programs using it."""
    from gen.fuzz.programs import random_program
    from gen.fuzz.directed import _extension_cases
    from gen.sim.simulator import get_simulator
    from ga2_hdl.formats.bundle import Bundle
    iset = isa.instruction_set(RELU)
    items = _extension_cases(8192, RELU)            # the directed suite's programs for RELU
    rng = random.Random(12)
    while len(items) < 10:
        code, ext = random_program(rng, config=RELU, max_cycles=1500)
        if _uses(code, "RELU", iset):
            items.append((f"random #{len(items)}", code, ext))
    bundle = Bundle.from_programs(items, 8192, config=RELU)
    assert bundle.programs[0].expected.error == ErrorCode.OK
    for name in ("golden", "amaranth", "icarus", "verilator"):
        report = get_simulator(name, config=RELU).run_bundle(bundle)
        assert report.passed, f"{name}: {report.line()}"


def test_a_bundle_of_the_extended_chip_records_it(tmp_path):
    from gen.fuzz.directed import _extension_cases          # the directed suite's programs for RELU
    from ga2_hdl.formats.bundle import Bundle
    bundle = Bundle.from_programs(_extension_cases(8192, RELU), 8192, config=RELU)
    path = tmp_path / "relu.bundle"
    bundle.write(path)
    back = Bundle.read(path)
    assert back.config == RELU and back.config.extensions == ("relu_ext",)
    assert not back.verify()                       # the golden model of the extended chip agrees
    assert [p.name for p in back.programs] == ["ext_relu_least", "ext_relu_0", "ext_relu_1", "ext_relu_2"]


def test_the_book_chip_is_unchanged_by_an_extension_being_loaded():
    from gen.verilog.export import export
    isa.instruction_set(RELU)                     # loaded in this process
    book = export("chip", config=isa.BOOK)
    assert "RELU" not in book.text and "relu" not in book.text.split("\n", 2)[0]


# ----------------------------------------------------------------------------- errors

def _module(tmp_path, monkeypatch, name, body):
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(body))
    monkeypatch.syspath_prepend(str(tmp_path))
    return Config(name=name, extensions=(name,))


_SPEC = """
from ga2_hdl.isa import Extension, Operand, OpSpec, Region, Unit
def ops(config):
    return (OpSpec({code}, "{mnemonic}", Unit.{unit}, (Operand("dst", "a"), Operand("src", "b"), Operand("len", "c")),
                   "copy", "len + 1", lambda i: i.len + 1,
                   lambda i: (Region("spad", i.dst, i.len, "dst"), Region("spad", i.src, i.len, "src")),
                   lengths=("len",), disjoint_or_same=True),)
"""


def test_a_missing_engine_is_one_line_naming_the_op(tmp_path, monkeypatch, refused):
    from ga2_hdl.rtl.chip import GA2Chip
    config = _module(tmp_path, monkeypatch, "ext_no_engine", _SPEC.format(code=9, mnemonic="NOENG", unit="VECTOR")
                     + "EXTENSION = Extension(ops=ops, golden={'NOENG': lambda m, i: None})\n")
    message = refused(lambda: GA2Chip(config=config))        # refused before anything is built
    assert "\n" not in message
    assert re.search(r"NOENG \(op code 9, extension ext_no_engine\) has no RTL engine", message)


def test_missing_golden_semantics_name_the_op(tmp_path, monkeypatch):
    config = _module(tmp_path, monkeypatch, "ext_no_golden", _SPEC.format(code=10, mnemonic="NOGOLD", unit="VECTOR")
                     + "EXTENSION = Extension(ops=ops)\n")
    with pytest.raises(IsaError, match=r"NOGOLD \(op code 10, extension ext_no_golden\) has no golden semantics"):
        golden.run([isa.HALT], config=config)


def test_an_engine_off_the_unit_contract_is_named(tmp_path, monkeypatch, refused):
    from ga2_hdl.rtl.chip import GA2Chip
    from ga2_hdl.rtl.vector_unit import VectorUnit
    config = _module(tmp_path, monkeypatch, "ext_bad_engine", _SPEC.format(code=11, mnemonic="BADENG", unit="VECTOR")
                     + "from amaranth.lib import wiring\nfrom amaranth.lib.wiring import In\n"
                       "class E(wiring.Component):\n"
                       "    def __init__(self, *, config):\n        super().__init__({'start': In(1)})\n"
                       "EXTENSION = Extension(ops=ops, engines={'BADENG': E})\n")
    off = r"engine of BADENG \(E\) is not a wiring.Component on the unit contract"
    refused(lambda: VectorUnit(config=config), match=off)      # the engines built to see it are dropped
    refused(lambda: GA2Chip(config=config), match=off)


@pytest.mark.parametrize("code, unit, why", [
    (7, "VECTOR", r"clashes with the book's AMAX \(op code 7\)"),
    (15, "VECTOR", r"op code 15 is reserved"),
    (16, "VECTOR", r"op code 16 is not a 4-bit value"),
    (12, "DMA", r"runs on the dma unit; an extension's operations run on the vector unit"),
])
def test_op_code_clashes_and_reserved_codes_are_named(tmp_path, monkeypatch, code, unit, why):
    name = f"ext_bad_{code}_{unit.lower()}"
    config = _module(tmp_path, monkeypatch, name, _SPEC.format(code=code, mnemonic="BAD", unit=unit)
                     + "EXTENSION = Extension(ops=ops)\n")
    with pytest.raises(IsaError, match=f"extension {name}: .*{why}"):
        isa.instruction_set(config)


def test_unimportable_and_empty_modules_are_named(tmp_path, monkeypatch):
    with pytest.raises(IsaError, match="extension 'no_such_ext_module' cannot be imported"):
        isa.instruction_set(Config(extensions=("no_such_ext_module",)))
    config = _module(tmp_path, monkeypatch, "ext_empty", "X = 1\n")
    with pytest.raises(IsaError, match="ext_empty'?: the module defines no EXTENSION"):
        isa.instruction_set(config)


def test_two_extensions_on_one_op_code_are_named_in_a_fresh_process(tmp_path):
    # loaded extensions share the op-code space of one process: checked in a process of its own
    (tmp_path / "ext_twin.py").write_text(textwrap.dedent(_SPEC.format(code=8, mnemonic="TWIN", unit="VECTOR"))
                                          + "EXTENSION = Extension(ops=ops)\n")
    script = ("from ga2_hdl import isa\nfrom ga2_hdl.config import Config\n"
              "try:\n    isa.instruction_set(Config(extensions=('relu_ext', 'ext_twin')))\n"
              "except isa.IsaError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": f"{EXAMPLES}:{tmp_path}", "PATH": "/usr/bin:/bin"}).stdout
    assert "extension ext_twin: TWIN (op code 8) clashes with RELU (op code 8) of extension relu_ext" in out


# ----------------------------------------------------------------------------- the page

def test_extending_md_quotes_the_example_file_verbatim():
    """Every code block of docs/extending.md tagged as the example's is a verbatim piece of it,
    and together they are the whole file (so the page cannot drift from the tested code)."""
    page = (ROOT / "docs" / "extending.md").read_text()
    blocks = re.findall(r"```python\n# examples/relu_ext\.py\n(.*?)```", page, re.S)
    source = EXAMPLE.read_text()
    assert blocks, "docs/extending.md quotes no piece of examples/relu_ext.py"
    assert "".join(blocks) == source


def test_a_busy_time_the_read_ahead_cannot_hide_is_refused(tmp_path, monkeypatch):
    """The book sequencer checks the next word during the WAIT of the one before: an operation busy
    1 cycle leaves it no time (refused, naming it); RELU's len + 1 (2 at the least) gets the
    two-cycle check instead of the book's three (every preset's busy times are 3 at the least)."""
    from ga2_hdl.rtl.chip import DEEP_CHECK_BUSY, GA2Chip, short_busy_times
    assert short_busy_times(RELU, DEEP_CHECK_BUSY) == [("RELU", 2)]
    assert short_busy_times(RELU) == []
    config = _module(tmp_path, monkeypatch, "ext_short", _SPEC.replace("len + 1", "len").replace("i.len + 1", "i.len")
                     .format(code=14, mnemonic="SHORT", unit="VECTOR") + "EXTENSION = Extension(ops=ops)\n")
    with pytest.raises(ValueError, match=r"SHORT can be busy 1") as e:
        GA2Chip(config=config)
    assert "\n" not in str(e.value)
    # with fetch_on_done the last WAIT cycle is the next FETCH: RELU's busy time of 2 is refused too
    with pytest.raises(ValueError, match=r"FETCH of fetch_on_done, but RELU can be busy 2"):
        GA2Chip(config=RELU.replace(fetch_on_done=True))
