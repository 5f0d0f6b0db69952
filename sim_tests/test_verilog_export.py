"""Verilog export (gen/verilog.py, `ga2 verilog`): registry, determinism, lint."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ga2_cli.main import main
from gen import verilog
from gen.simulator import SimulatorError

REPO = Path(__file__).resolve().parent.parent

_EXPORT_SNIPPET = (
    "import sys; from gen import verilog; "
    "sys.stdout.write(verilog.export('chip', ext_words=8192, use_cache=False).text)"
)


@pytest.fixture(scope="module")
def chip():
    return verilog.export("chip", ext_words=8192)


def test_registry_finds_the_chip_and_the_units():
    found, broken = verilog.units()
    assert not broken, broken
    # the contract's units; others come and go with ga2_hdl (a unit needing arguments is left out)
    for name in ("ga2_chip", "dma", "matrix_unit", "vector_unit"):
        assert name in found, sorted(found)
    assert found["ga2_chip"].cls_name == "GA2Chip" and "ext_words" in found["ga2_chip"].params
    assert verilog.resolve("chip").name == "ga2_chip"
    assert [verilog.snake_case(n) for n in ("GA2Chip", "DMA", "SystolicArray", "IssueCheck")] == \
        ["ga2_chip", "dma", "systolic_array", "issue_check"]


def test_chip_module_and_ports_are_those_of_the_contract(chip):
    assert chip.unit == "ga2_chip"
    assert "\nmodule ga2_chip(" in chip.text
    header = chip.text[chip.text.index("\nmodule ga2_chip("):]
    header = header[:header.index(");")]
    ports = {p.strip() for p in header.split("(", 1)[1].split(",")}
    assert ports == {"clk", "rst", "start", "running", "halted", "status", "status_pc",
                     "cnt_total", "cnt_matrix", "cnt_dma", "cnt_vector", "cnt_instructions",
                     "imem_we", "imem_addr", "imem_wdata",
                     "ext_addr", "ext_re", "ext_we", "ext_wdata", "ext_rdata", "ext_rvalid"}


def test_export_is_byte_identical_across_processes(chip):
    # fresh interpreters with different hash seeds, no cache: any dependence on set or dict
    # order, time or object ids would show up as a difference
    outs = []
    for seed in ("1", "12345"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        p = subprocess.run([sys.executable, "-c", _EXPORT_SNIPPET], capture_output=True, text=True,
                           env=env, cwd=REPO, timeout=600)
        assert p.returncode == 0, p.stderr
        outs.append(p.stdout)
    assert outs[0] == outs[1]
    assert outs[0] == chip.text                 # and the cached copy is the same text
    assert str(REPO) not in outs[0]             # no absolute paths (emit_src is off)


def test_ext_words_is_a_parameter_of_the_export(chip):
    small = verilog.export("chip", ext_words=2048)
    assert small.text != chip.text
    assert "ext_words=2048" in small.text.splitlines()[0]
    with pytest.raises(verilog.ExportError, match="no ext_words parameter"):
        verilog.export("dma", ext_words=2048)


def test_unknown_unit_and_parameter_are_clear_errors():
    with pytest.raises(verilog.ExportError, match=r"no unit named 'nope'; units: .*dma"):
        verilog.export("nope")
    with pytest.raises(verilog.ExportError, match="has no parameter bogus"):
        verilog.export("divider", params={"bogus": 1})


def test_chip_passes_verilator_lint_with_the_documented_waivers(chip, tmp_path):
    path = chip.write(tmp_path)
    report = verilog.lint(path, "ga2_chip")
    assert "-Wall" in report.command and str(verilog.LINT_WAIVERS) in report.command


def test_lint_fails_on_what_is_not_waived(tmp_path):
    bad = tmp_path / "bad.v"
    bad.write_text("module bad(input a, output y, output z);\n  assign y = a;\nendmodule\n")  # z undriven
    with pytest.raises(SimulatorError, match="UNDRIVEN"):
        verilog.lint(bad, "bad")


def test_cli_writes_the_chip_and_a_unit(tmp_path, capsys):
    assert main(["verilog", "-o", str(tmp_path)]) == 0
    text = (tmp_path / "ga2_chip.v").read_text()
    assert "\nmodule ga2_chip(" in text
    assert main(["verilog", "-o", str(tmp_path), "--unit", "divider", "--param", "width=8"]) == 0
    assert "\nmodule divider(" in (tmp_path / "divider.v").read_text()
    assert "width=8" in (tmp_path / "divider.v").read_text().splitlines()[0]
    assert main(["verilog", "-o", str(tmp_path), "--unit", "nope"]) == 1
    assert "no unit named 'nope'" in capsys.readouterr().err
    assert main(["verilog", "--list"]) == 0
    assert "ga2_chip" in capsys.readouterr().out


@pytest.mark.slow
def test_every_unit_exports_and_lints(tmp_path):
    found, _ = verilog.units()
    for name in sorted(found):
        exported = verilog.export(name)
        verilog.lint(exported.write(tmp_path), exported.unit)


def test_icarus_form_gates_register_blocks_and_leaves_memory_ports():
    text = ("module m(clk, d, e);\n"
            "  always @(posedge clk) begin\n"
            "    q <= \\$1 ;\n"
            "    r <= \\$2 ;\n"
            "  end\n"
            "  always @(posedge clk) begin\n"
            "    if (we)\n"
            "      mem[a] <= d;\n"
            "  end\n"
            "endmodule\n")
    got = verilog.changed_gated(text)
    flag = verilog.CHANGED_FLAG.format(1)
    assert (f"  reg {flag}= 1'h1;\n"
            f"  always @(\\$1  or \\$2 ) {flag}<= 1'h1;\n"
            f"  always @(posedge clk) if ({flag}) begin\n"
            f"    {flag}<= 1'h0;\n"
            "    q <= \\$1 ;\n"
            "    r <= \\$2 ;\n"
            "  end\n") in got
    assert "    if (we)\n      mem[a] <= d;\n" in got and got.count("icarus$changed") == 4


def test_icarus_form_of_the_chip_keeps_every_register_assignment(chip):
    gated = verilog.changed_gated(chip.text)
    blocks = verilog._REGISTER_BLOCK.findall(chip.text)
    registers = [s for _, body in blocks for s in verilog._REGISTER_STATEMENT.findall(body)]
    assert len(registers) > 50
    for q, n in registers:                  # each register still assigned its next state
        assert gated.count(f"    {q} <= {n};\n") == chip.text.count(f"    {q} <= {n};\n") >= 1
    register_blocks = [body for _, body in blocks
                       if "".join(f"    {q} <= {n};\n" for q, n in verilog._REGISTER_STATEMENT.findall(body)) == body]
    assert gated.count("always @(posedge clk) if (\\icarus$changed") == len(register_blocks)
    assert "    _0_ <= rom[port__addr];\n" in gated     # a memory read port: never gated
