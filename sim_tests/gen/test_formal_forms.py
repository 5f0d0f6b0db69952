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
from gen.verilog.export import export

needs_tools = pytest.mark.skipif(sby.tools_problem() is not None, reason=str(sby.tools_problem()))

#: (unit, form) proven in the default suite
CASES = [("divider", "icarus"), ("divider", "icarus_waveform"), ("dma", "icarus"), ("softmax_unit", "icarus"),
         ("banked_operand_row_memory", "icarus"),
         ("operand_row_memory", "verilator")]


def _form(unit: str, form: str, config=isa.BOOK) -> tuple[str, str, str]:
    exp = export(unit, config=config)
    return exp.text, equiv.FORMS[form][0](exp.text), exp.unit


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


@needs_tools
def test_a_planted_difference_in_a_fused_process_fails_the_proof():
    gold, gate, top = _form("divider", "icarus")
    # the step counter's decrement, inside the register's fused process: count down by 0
    planted = _plant(gate, r"(steps_left - (?:\(\*[^*]*\*\) )?)1'h1", r"\g<1>1'h0", count=0)
    rec = equiv.check_form(gold, planted, top=top)
    assert rec["status"] == "failed" and "Unproven" in rec["detail"], rec


@needs_tools
def test_a_planted_difference_in_a_read_only_memorys_port_fails_the_proof():
    gold, gate, top = _form("softmax_unit", "icarus")
    # the exp table's gated read port reads the next word
    planted = _plant(gate, r"^(  always begin @\(posedge clk\); \S+ <= \S+ ?\[)(\S+ ?)\];", r"\g<1>\g<2> + 1'h1];")
    rec = equiv.check_form(gold, planted, top=top)
    # the gate's table is not merged into the gold one: its port reads another address
    assert rec["status"] == "failed" and "memory exp_table.rom differs" in rec["detail"], rec


@needs_tools
def test_a_planted_difference_in_a_memory_write_fails_the_proof():
    gold, gate, top = _form("operand_row_memory", "icarus")
    # one lane of an operand memory's write takes the next lane's enable
    planted = _plant(gate, r"^(      if \(\S+ ?)\[0\]\)$", r"\g<1>[1])")
    rec = equiv.check_form(gold, planted, top=top)
    assert rec["status"] == "failed", rec


@needs_tools
def test_a_planted_difference_in_a_memory_initialiser_fails_the_proof():
    gold, gate, top = _form("operand_row_memory", "verilator")
    planted = _plant(gate, r"^(    \S+ ?\[\\verilator\$zero\d+ \] = )0;$", r"\g<1>1;")
    rec = equiv.check_form(gold, planted, top=top)
    assert rec["status"] == "failed" and "memory" in rec["detail"], rec


def test_a_wait_that_misses_a_read_signal_fails():
    gold, gate, top = _form("divider", "icarus")
    # a fused register that no longer wakes up for the first signal its statements read
    planted = _plant(gate, r"^(    @\()([^\n]*?) or ([^\n]*\);)$", r"\g<1>\g<3>")
    rec = equiv.check_form(gold, planted, top=top)
    assert rec["status"] == "failed" and "incomplete" in rec["detail"], rec


def test_a_sensitivity_list_that_misses_a_read_signal_fails():
    gold, gate, top = _form("softmax_unit", "icarus")
    planted = _plant(gate, r"^(  always @\((?:(?!posedge)[^\n])*?) or [^\n]*?(\) begin)$", r"\g<1>\g<2>")
    rec = equiv.check_form(gold, planted, top=top)
    assert rec["status"] == "failed" and "does not list" in rec["detail"], rec


def test_a_sleeping_port_whose_body_tests_another_enable_fails():
    gold, gate, top = _form("operand_row_memory", "icarus")
    planted = _plant(gate, r"^(  always begin wait \()([^\n]*)(\); @\(posedge)", r"\g<1>1'h1\g<3>")
    rec = equiv.check_form(gold, planted, top=top)
    assert rec["status"] == "failed" and "is not one" in rec["detail"], rec


def test_an_event_control_the_reading_does_not_know_fails():
    gold, gate, top = _form("divider", "icarus")
    planted = gate.replace("  always begin @(posedge clk);\n", "  always begin #1; @(posedge clk);\n", 1)
    assert planted != gate
    rec = equiv.check_form(gold, planted, top=top)
    assert rec["status"] == "failed" and "does not know" in rec["detail"], rec


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
    gold, gate, top = _form("chip", "icarus")
    planted = _plant(gate, r"(steps_left - (?:\(\*[^*]*\*\) )?)1'h1", r"\g<1>1'h0", count=0)
    rec = equiv.check_form(gold, planted, top=top)
    assert rec["status"] == "failed" and "Unproven" in rec["detail"], rec
