"""The simulators' forms of the Verilog (Icarus's, Icarus's waveform build's, Verilator's) proven
equivalent to the export (gen/formal/equiv.py), and every kind of planted difference failing.

The default suite proves the forms of units that together hold every construct the proof reads
(registers waiting for their next state, fused next-state processes, a read-only memory's port,
memory ports asleep until enabled, listed sensitivities, the zero-initialised memories); the
whole chip of the book and of wide2 is proven in the slow suite and by ``ga2 prove --unit forms``.

Needs the optional extra ``formal`` (``pip install -e '.[formal]'``; ``make test`` installs it).
"""
import re

import pytest

from ga2_hdl import isa
from ga2_hdl.config import load as load_config
from gen.formal import equiv, sby

needs_tools = pytest.mark.skipif(sby.tools_problem() is not None, reason=str(sby.tools_problem()))

#: (unit, form) proven in the default suite
CASES = [("divider", "icarus"), ("divider", "icarus_waveform"), ("dma", "icarus"), ("softmax_unit", "icarus"),
         ("banked_operand_row_memory", "icarus"),
         ("operand_row_memory", "verilator")]


def _form(unit: str, form: str) -> tuple[str, str, str]:
    return equiv.form_of(form, unit, config=isa.BOOK)


@needs_tools
@pytest.mark.parametrize("unit,form", CASES)
def test_a_units_form_is_proven_equivalent_to_its_export(unit, form):
    gold, gate, top = _form(unit, form)
    assert gate != gold, f"the {form} form changes nothing in {unit}: the test proves nothing"
    rec = equiv.check_form(gold, gate, top=top)
    assert rec["status"] == "proven", rec
    assert rec["equiv_cells"] > 0


def test_the_default_cases_hold_every_construct_the_reading_erases():
    seen = {"gated": 0, "fused": 0, "waiting": 0}
    for unit, form in CASES:
        _, gate, _ = _form(unit, form)
        for kind, n in equiv.synthesis_reading(gate)[1].items():
            seen[kind] += n
    assert all(seen.values()), seen


def test_every_event_control_of_the_chips_icarus_form_is_read():
    """Nothing of the whole chip's form is left that the reading does not know, and no wait
    misses a signal (the slow suite proves the chip; this is the part that is only text)."""
    gold, gate, _ = _form("chip", "icarus")
    reading, counts = equiv.synthesis_reading(gate)
    assert counts["fused"] > 100 and counts["waiting"] > 0, counts
    assert "always begin" not in reading
    assert equiv.wait_problems(gate) == []


def test_the_output_ports_are_found():
    gold, _, top = _form("divider", "icarus")
    assert equiv.output_ports(gold, top) == ["busy", "done", "quotient", "remainder"]


# ------------------------------------------------------------------ planted differences, each kind failing

def _plant(text: str, pattern: str, replacement: str, count: int = 1) -> str:
    planted, n = re.subn(pattern, replacement, text, count=count, flags=re.M)
    assert n >= 1, f"the planted difference {pattern!r} found no place in the form (the form changed)"
    return planted


#: each kind of difference planted in a form: (unit, form, pattern, replacement, count (0: every
#: place), what the failure's detail says); the ones the proof itself rejects need the tools, the
#: others fail on the text before Yosys runs
PLANTED = {
    # the step counter's decrement, inside the register's fused process: count down by 0
    "fused process": ("divider", "icarus", r"(steps_left - (?:\(\*[^*]*\*\) )?)1'h1", r"\g<1>1'h0", 0, "Unproven"),
    # the exp table's gated read port reads the next word: the gate's table is not merged into the gold one
    "read-only memory's port": ("softmax_unit", "icarus", r"^(  always begin @\(posedge clk\); \S+ <= \S+ ?\[)(\S+ ?)\];",
                                r"\g<1>\g<2> + 1'h1];", 1, "memory exp_table.rom differs"),
    # one lane of an operand memory's write takes the next lane's enable
    "memory write": ("operand_row_memory", "icarus", r"^(      if \(\S+ ?)\[0\]\)$", r"\g<1>[1])", 1, "memory"),
    "memory initialiser": ("operand_row_memory", "verilator", r"^(    \S+ ?\[\\verilator\$zero\d+ \] = )0;$",
                           r"\g<1>1;", 1, "memory"),
    # a fused register that no longer wakes up for the first signal its statements read
    "wait missing a signal": ("divider", "icarus", r"^(    @\()([^\n]*?) or ([^\n]*\);)$", r"\g<1>\g<3>", 1,
                              "incomplete"),
    "sensitivity list missing a signal": ("softmax_unit", "icarus",
                                          r"^(  always @\((?:(?!posedge)[^\n])*?) or [^\n]*?(\) begin)$",
                                          r"\g<1>\g<2>", 1, "does not list"),
    "sleeping port on another enable": ("operand_row_memory", "icarus",
                                        r"^(  always begin wait \()([^\n]*)(\); @\(posedge)", r"\g<1>1'h1\g<3>", 1,
                                        "is not one"),
    "unknown event control": ("divider", "icarus", r"^  always begin @\(posedge clk\);$",
                              "  always begin #1; @(posedge clk);", 1, "does not know"),
}
#: the kinds the proof itself rejects (Yosys runs)
PROVEN_AWAY = ("fused process", "read-only memory's port", "memory write", "memory initialiser")


@pytest.mark.parametrize("kind", [pytest.param(k, marks=needs_tools) if k in PROVEN_AWAY else k for k in PLANTED])
def test_a_planted_difference_fails(kind):
    unit, form, pattern, replacement, count, says = PLANTED[kind]
    gold, gate, top = _form(unit, form)
    rec = equiv.check_form(gold, _plant(gate, pattern, replacement, count), top=top)
    assert rec["status"] == "failed" and says in rec["detail"], rec


# ------------------------------------------------------------------ the whole chip (slow)

@pytest.mark.slow
@needs_tools
@pytest.mark.parametrize("config", ["book", "wide2"])
@pytest.mark.parametrize("form", ["icarus", "verilator"])
def test_the_chips_form_is_proven_equivalent(config, form):
    rec = equiv.prove_form(form, config=load_config(config))
    assert rec["status"] == "proven", rec


@pytest.mark.slow
@needs_tools
def test_a_planted_difference_in_the_chips_form_fails_the_proof():
    _, _, pattern, replacement, count, _ = PLANTED["fused process"]
    gold, gate, top = _form("chip", "icarus")
    rec = equiv.check_form(gold, _plant(gate, pattern, replacement, count), top=top)
    # on the chip the changed divider reaches the instruction memory's read address (through SM's
    # done and the sequencer), so the two instruction memories are not merged, and that is the failure
    assert rec["status"] == "failed" and "memory imem differs" in rec["detail"], rec
