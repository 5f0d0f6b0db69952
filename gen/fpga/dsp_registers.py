"""The ECP5 multiplier's own output register, given the flip-flops that follow it.

Yosys 0.70's ``synth_ecp5`` maps every multiply to a MULT18X18D with all of its registers unused
(``share/lattice/dsp_map_18x18.v``; register packing exists for Nexus only).  A product registered
in the fabric then pays the multiplier's delay *and* the route out of the DSP block into a slice
flip-flop in one cycle: on the book's chip the systolic array's ``cells -> MULT18X18D ->
products`` was the critical path of most placements (docs/fpga.md, eighteenth session).

:func:`pack_output_registers` moves those flip-flops into the block's output register, in Yosys's
JSON netlist, before nextpnr reads it.  It changes no cycle: the register is the same register,
with the same clock, clock enable and synchronous reset, only inside the DSP block.  A multiplier
qualifies only if

- none of its registers is used yet (every ``REG_*_CLK`` absent or ``NONE``);
- every product bit that anything reads is read by exactly one flip-flop, at its data input, and
  by nothing else (no other cell, no port of the design);
- those flip-flops are all alike: one clock (not inverted), one clock enable (or none), one
  reset net (or none), a synchronous reset that wins over the clock enable and clears
  (``SRMODE=LSR_OVER_CE``, ``REGSET=RESET``: Lattice's model of the DSP's registers, with
  ``RESETMODE=SYNC``, clears on reset whatever the clock enable), and one ``GSR`` setting.

Every other multiplier is left as it was, with the reason recorded (:class:`Packing`).
"""
from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Packing", "packing_line", "pack_output_registers", "pack_netlist_file", "DSP", "FF"]

#: the ECP5 multiplier and the slice flip-flop, as Yosys's ECP5 library names them
DSP, FF = "MULT18X18D", "TRELLIS_FF"
#: the product's bits on the multiplier
PRODUCT_BITS = 36
#: the flip-flop settings the output register can take over (``CEMUX`` may also be ``"1"``: none)
_FF_FIXED = {"CLKMUX": "CLK", "LSRMUX": "LSR", "REGSET": "RESET", "SRMODE": "LSR_OVER_CE"}


@dataclass
class Packing:
    """What :func:`pack_output_registers` did: the multipliers whose output register now holds
    their product (``packed``, in the netlist's order), the flip-flops that left the fabric
    (``flip_flops``), and every other multiplier with the reason it was left alone (``refused``)."""
    packed: list[str] = field(default_factory=list)
    flip_flops: int = 0
    refused: dict[str, str] = field(default_factory=dict)

    def line(self) -> str:
        """:func:`packing_line` of this packing."""
        return packing_line(**self.to_json())

    def to_json(self) -> dict:
        return {"packed": len(self.packed), "flip_flops": self.flip_flops,
                "refused": dict(self.refused)}


def packing_line(packed: int, flip_flops: int, refused: dict[str, str]) -> str:
    """One line for people from a packing's record (:meth:`Packing.to_json`): how many multipliers
    took their product's register, and why the others did not (counted by reason)."""
    total = packed + len(refused)
    if not total:
        return "DSP output registers: no MULT18X18D"
    text = (f"DSP output registers: {packed} of {total} MULT18X18D hold their product "
            f"({flip_flops} flip-flops moved in)")
    reasons = defaultdict(int)
    for why in refused.values():
        reasons[why] += 1
    if reasons:
        text += "; not: " + ", ".join(f"{n} {why}" for why, n in sorted(reasons.items()))
    return text


def _param(cell: dict, name: str) -> str:
    """A string parameter as Yosys's JSON writes it (a string that looks like bits gets a trailing
    blank to say it is a string)."""
    return str(cell.get("parameters", {}).get(name, "")).rstrip()


def _net(cell: dict, port: str):
    """The one bit on ``port`` of ``cell`` (None when not connected)."""
    bits = cell.get("connections", {}).get(port)
    return bits[0] if bits else None


def _controls(ff: dict) -> tuple:
    """A flip-flop's clock, clock enable, reset and GSR setting, as the multiplier's output register
    takes them (``"1"``: no clock enable, ``"0"``: no reset)."""
    ce = _net(ff, "CE") if _param(ff, "CEMUX") == "CE" else "1"
    return _net(ff, "CLK"), ce, _net(ff, "LSR") or "0", _param(ff, "GSR")


def _why_not_alike(ffs: list[dict]) -> str | None:
    """None when the flip-flops ``ffs`` can become one output register; else why not."""
    for ff in ffs:
        for name, want in _FF_FIXED.items():
            if _param(ff, name) != want:
                return f"a flip-flop with {name}={_param(ff, name) or '?'}"
        if _param(ff, "CEMUX") not in ("CE", "1"):
            return f"a flip-flop with CEMUX={_param(ff, 'CEMUX') or '?'}"
        if _param(ff, "LSRMODE") not in ("", "LSR"):
            return f"a flip-flop with LSRMODE={_param(ff, 'LSRMODE')}"
    if len({str(_controls(ff)) for ff in ffs}) != 1:
        return "flip-flops with different clocks, enables, resets or GSR"
    return None


def pack_output_registers(netlist: dict, top: str) -> Packing:
    """Move into each qualifying MULT18X18D of ``top`` (Yosys's JSON netlist, flattened, as
    ``synth_ecp5 -json`` writes it; changed in place) the flip-flops that register its product:
    the block's ``P`` bits drive the flip-flops' nets, the flip-flops are removed, and the block's
    output register takes their clock, enable and reset (``CLK0``, ``CE0``, ``RST0``).  Returns
    what was done (:class:`Packing`)."""
    try:
        module = netlist["modules"][top]
    except KeyError:
        raise ValueError(f"the netlist has no module {top!r}") from None
    cells = module["cells"]
    readers = defaultdict(list)               # net bit -> [(cell, port)] reading it
    for name, cell in cells.items():
        for port, bits in cell.get("connections", {}).items():
            if cell.get("port_directions", {}).get(port) != "output":
                for bit in bits:
                    readers[bit].append((name, port))
    outside = {bit for port in module.get("ports", {}).values() if port.get("direction") != "input"
               for bit in port["bits"]}
    done = Packing()
    dead = set()                              # the nets between a multiplier and its flip-flops
    for name in [n for n, c in cells.items() if c.get("type") == DSP]:
        dsp = cells[name]
        used = [(i, _net(dsp, f"P{i}")) for i in range(PRODUCT_BITS)]
        used = [(i, bit) for i, bit in used if bit is not None and (readers.get(bit) or bit in outside)]
        why = None
        if any(_param(dsp, p) not in ("", "NONE") for p in dsp.get("parameters", {}) if p.startswith("REG_")
               and p.endswith("_CLK")):
            why = "a register of its own already in use"
        elif not used:
            why = "no product bit read"
        elif any(bit in outside for _, bit in used):
            why = "a product bit leaving the design"
        elif any(len(readers[bit]) != 1 or cells[readers[bit][0][0]].get("type") != FF
                 or readers[bit][0][1] != "DI" for _, bit in used):
            why = "a product bit read by logic"
        else:
            why = _why_not_alike([cells[readers[bit][0][0]] for _, bit in used])
        if why is not None:
            done.refused[name] = why
            continue
        ffs = [readers[bit][0][0] for _, bit in used]
        clk, ce, rst, gsr = _controls(cells[ffs[0]])
        connections, directions = dsp.setdefault("connections", {}), dsp.setdefault("port_directions", {})
        for (i, bit), ff in zip(used, ffs):
            connections[f"P{i}"] = [_net(cells[ff], "Q")]
            dead.add(bit)
            del cells[ff]
        connections["CLK0"], connections["CE0"], connections["RST0"] = [clk], [ce], [rst]
        for port in ("CLK0", "CE0", "RST0"):
            directions[port] = "input"
        dsp.setdefault("parameters", {}).update({
            "REG_OUTPUT_CLK": "CLK0", "REG_OUTPUT_CE": "CE0", "REG_OUTPUT_RST": "RST0",
            "RESETMODE": "SYNC", "GSR": gsr or "DISABLED"})
        done.packed.append(name)
        done.flip_flops += len(ffs)
    # the names Yosys gave the nets between a multiplier and its flip-flops: those nets are gone
    for net_name in list(module.get("netnames", {})):
        bits = module["netnames"][net_name]["bits"]
        if any(b in dead for b in bits):
            if all(b in dead for b in bits):
                del module["netnames"][net_name]
            else:
                module["netnames"][net_name]["bits"] = ["x" if b in dead else b for b in bits]
    return done


def pack_netlist_file(netlist: Path, top: str) -> Packing:
    """:func:`pack_output_registers` on Yosys's JSON netlist file ``netlist``, rewritten through a
    temporary file beside it (a stopped run never leaves half a netlist)."""
    data = json.loads(netlist.read_text())
    packing = pack_output_registers(data, top)
    tmp = netlist.with_suffix(".packing.json")
    tmp.write_text(json.dumps(data))
    tmp.replace(netlist)
    return packing
