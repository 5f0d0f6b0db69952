"""Reading what Yosys and nextpnr-ecp5 wrote: Yosys's cell counts and memory mapping, nextpnr's
achieved clock and critical path in the design's own signal names (``gen/fpga/synth.py`` runs the
tools and reads their results through here).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["PathEnd", "NetlistNames", "read_cells", "read_memories", "read_during_write", "design_base",
           "critical_path", "fmax_of", "MEMORY_CELLS", "FLIP_FLOPS", "CLOCK_NET", "READ_DURING_WRITE"]

#: the clock nextpnr's timing analysis should name: Amaranth's ``sync`` domain is ``clk``
CLOCK_NET = "clk"


@dataclass
class PathEnd:
    """One end of a timing path: the cell and the signal of the design it belongs to."""
    cell: str
    port: str
    signal: str | None         # the design's signal name (a register's output, a memory's data)

    def __str__(self) -> str:
        return f"{self.signal or self.cell} ({self.port})"



def read_cells(stat_json: Path, top: str) -> dict[str, int]:
    """Cell counts of ``top`` from Yosys's ``stat -json``."""
    stat = json.loads(stat_json.read_text())
    modules = stat.get("modules", {})
    mod = modules.get(f"\\{top}") or modules.get(top)
    if mod is None:
        if len(modules) != 1:
            raise SynthError(f"{stat_json}: no module {top} in Yosys's statistics")
        mod = next(iter(modules.values()))
    cells = mod.get("num_cells_by_type") or {}
    return {k.lstrip("\\"): int(v) for k, v in sorted(cells.items()) if not k.startswith("$")}


#: Yosys's ``memory_libmap`` pass: a memory mapped to a RAM cell, or left to flip-flops and logic
_MEMORY_MAPPED = re.compile(r"^mapping memory (\S+) via \$__(\w+?)_*$", re.M)
_MEMORY_FFS = re.compile(r"^using FF mapping for memory (\S+)$", re.M)
#: what each RAM cell of the ECP5 library is
MEMORY_CELLS = {"DP16KD": "block RAM", "PDPW16KD": "block RAM", "TRELLIS_DPR16X4": "distributed RAM"}
FLIP_FLOPS = "flip-flops"


def read_memories(yosys_log: str, top: str) -> dict[str, str]:
    """Every memory Yosys collected in ``top`` and what it became, from ``memory_libmap``'s lines:
    ``"block RAM (DP16KD)"``, ``"distributed RAM (TRELLIS_DPR16X4)"`` or ``"flip-flops"`` (a
    memory of no RAM shape the part has: registers and multiplexers).  Names without the top's
    prefix, in the log's order."""
    found: dict[tuple[int, str], str] = {}
    for mo in _MEMORY_MAPPED.finditer(yosys_log):
        cell = mo.group(2)
        found[mo.start(), mo.group(1)] = f"{MEMORY_CELLS.get(cell, 'RAM cell')} ({cell})"
    for mo in _MEMORY_FFS.finditer(yosys_log):
        found[mo.start(), mo.group(1)] = FLIP_FLOPS
    prefix = f"{top}."
    return {(n[len(prefix):] if n.startswith(prefix) else n): kind for (_, n), kind in sorted(found.items())}


#: Yosys's ``memory_dff`` pass: a read port checked (``address``: its address register merged, the
#: form of a transparent port), then one line per write port it may collide with
_READ_PORT = re.compile(r"^Checking read port (address )?`\\?(\S+?)'\[(\d+)\] in module", re.M)
_WRITE_PORT = re.compile(r"^\s+Write port (\d+): (transparent|non-transparent|don't care on collision)\.$")
#: what a read returns when it meets a write of its word in the same cycle, by Yosys's verdict
READ_DURING_WRITE = {
    "transparent": "transparent (the word written)",
    "non-transparent": "non-transparent (the old word)",
    "don't care on collision": "don't care",
    "address": "transparent (the word written; its address registered)",
}


def read_during_write(yosys_log: str) -> dict[str, str]:
    """What each memory's reads return when they meet a write of the same word in the same cycle,
    as Yosys's ``memory_dff`` pass decided it from the RTL (one of :data:`READ_DURING_WRITE`'s
    values, several joined by ``"; "`` when the memory's read and write ports differ).

    On an ECP5 block RAM whose read and write use the DP16KD's two ports, only "don't care" needs
    no logic: for the other two Yosys's ``memory_libmap`` adds a compare of the addresses and a
    multiplexer after the block RAM's data (docs/fpga.md, eighteenth session).  A memory whose read
    ports meet no write port (a ROM) is left out."""
    found: dict[str, list[str]] = {}
    verdicts = None               # the list of the read port whose block the log is in, if any
    address_port = False          # that block is a read port's address register
    for line in yosys_log.splitlines():
        mo = _READ_PORT.match(line)
        if mo:
            verdicts = found.setdefault(mo.group(2), [])
            address_port = bool(mo.group(1))
            continue
        if verdicts is None:
            continue
        wp = _WRITE_PORT.match(line)
        if wp and not address_port:
            verdicts.append(READ_DURING_WRITE[wp.group(2)])
        elif address_port and "merged address FF" in line:      # a transparent read
            verdicts.append(READ_DURING_WRITE["address"])
        elif not line.startswith(" "):
            verdicts = None
    return {name: "; ".join(dict.fromkeys(v)) for name, v in found.items() if v}


def _clean(name: str) -> str:
    return name.lstrip("\\")


#: synth_ecp5's automatic names: the design signal, then the cell type and port it came through
#: (``cnt_dma_TRELLIS_FF_Q_11_DI``, ``imem.0.1_DOB12_LUT4_C_Z``); ``$...`` names are Yosys's own
_AUTO = re.compile(r"_(TRELLIS_FF|TRELLIS_COMB|LUT4|CCU2C|PFUMX|L6MUX21|DP16KD|MULT18X18D|ALU54B|"
                   r"TRELLIS_DPR16X4|TRELLIS_RAMW)_|_(DI|DO|AD|CE|OCE|WE|CS)[AB]?\d+|\$")
#: block RAM cells are named after their memory and their place in its tiling: ``imem.0.1``
_RAM_TILE = re.compile(r"^(.*?)(\.\d+)+$")


def _is_public(name: str) -> bool:
    """A name of the design (a signal of our RTL), not one the tools generated."""
    return not _AUTO.search(name)


def design_base(name: str) -> str | None:
    """The design signal an automatic name starts from (``matrix.dims[15]_TRELLIS_FF_Q_DI`` ->
    ``matrix.dims[15]``), or None when it starts from nothing of ours."""
    cut = _AUTO.search(name)
    base = (name[:cut.start()] if cut else name).rstrip(".")
    return base or None


class NetlistNames:
    """Design signal names for the cells of the synthesised netlist (Yosys JSON)."""

    #: output ports that carry a cell's state, by cell type
    OUTPUTS = {"TRELLIS_FF": ("Q",), "DP16KD": tuple(f"DOA{i}" for i in range(18)) + tuple(f"DOB{i}" for i in range(18)),
               "MULT18X18D": tuple(f"P{i}" for i in range(36)), "TRELLIS_DPR16X4": ("DO0", "DO1", "DO2", "DO3")}

    def __init__(self, netlist: Path, top: str):
        design = json.loads(netlist.read_text())
        mod = design["modules"].get(top) or next(iter(design["modules"].values()))
        self.bit_names: dict[int, str] = {}
        for name, net in mod.get("netnames", {}).items():
            name = _clean(name)
            for i, bit in enumerate(net["bits"]):
                if not isinstance(bit, int):
                    continue
                label = name if len(net["bits"]) == 1 else f"{name}[{i}]"
                old = self.bit_names.get(bit)
                if old is None or (_is_public(label) and not _is_public(old)) or (
                        _is_public(label) == _is_public(old) and len(label) < len(old)):
                    self.bit_names[bit] = label
        self.cells = {_clean(n): c for n, c in mod.get("cells", {}).items()}

    def net_of(self, cell: str, port: str) -> str | None:
        c = self.cells.get(cell)
        if c is None:
            return None
        bits = c.get("connections", {}).get(port, [])
        names = [self.bit_names.get(b) for b in bits if isinstance(b, int)]
        return names[0] if names and names[0] else None

    def signal_of(self, cell: str) -> str | None:
        """The signal a cell drives (a register's Q, a block RAM's memory), if it has a name."""
        c = self.cells.get(cell)
        if c is None:
            return None
        if c.get("type") in ("DP16KD", "PDPW16KD"):
            tile = _RAM_TILE.match(cell)
            return f"{tile.group(1) if tile else cell} (block RAM {cell})"
        for port in self.OUTPUTS.get(c.get("type", ""), ()):
            name = self.net_of(cell, port)
            if name:
                return name
        return None


def _cell_name(pnr_cell: str, names: NetlistNames) -> str:
    """nextpnr may rename packed cells (suffixes such as ``$ff``); map back to a netlist cell."""
    pnr_cell = _clean(pnr_cell)
    if pnr_cell in names.cells:
        return pnr_cell
    for suffix in ("$ff", "$lut", "$ccu2_comb", "$comb"):
        if pnr_cell.endswith(suffix) and pnr_cell[:-len(suffix)] in names.cells:
            return pnr_cell[:-len(suffix)]
    return pnr_cell


def critical_path(report: dict, names: NetlistNames | None) -> dict | None:
    """The worst ``clk -> clk`` path of nextpnr's report, its ends named by design signals."""
    clock = (CLOCK_NET, f"posedge {CLOCK_NET}")
    paths = [p for p in report.get("critical_paths", [])
             if p.get("from") in clock and p.get("to") in clock and p.get("path")]
    if not paths:
        return None
    segments = paths[0]["path"]
    delay = sum(float(s.get("delay", 0.0)) for s in segments)
    routing = sum(float(s.get("delay", 0.0)) for s in segments if s.get("type") == "routing")

    def end(seg_end: dict, net: str | None) -> PathEnd:
        cell = _cell_name(seg_end.get("cell", "?"), names) if names else seg_end.get("cell", "?")
        signal = names.signal_of(cell) if names else None
        if signal is None and net and _is_public(net):
            signal = net
        return PathEnd(cell, seg_end.get("port", "?"), signal)

    first, last = segments[0], segments[-1]
    start = end(first["from"], first.get("net") or (segments[1].get("net") if len(segments) > 1 else None))
    stop = end(last["to"], None)
    through: list[str] = []             # the design signals the path passes, in order
    for s in segments:
        for name in (s.get("from", {}).get("cell"), s.get("net")):
            base = design_base(name or "")
            if base and base not in through:
                through.append(base)
    return {"from": str(start), "to": str(stop), "from_cell": start.cell, "to_cell": stop.cell,
            "delay_ns": round(delay, 3), "routing_ns": round(routing, 3),
            "logic_ns": round(delay - routing, 3), "through": through}


def fmax_of(report: dict) -> float | None:
    fmax = report.get("fmax", {})
    entry = fmax.get(CLOCK_NET)
    if entry is None:           # nextpnr names the clock after its net; one clock: take it
        clocks = [v for k, v in fmax.items() if not k.startswith("$")]
        entry = clocks[0] if len(clocks) == 1 else None
    return round(float(entry["achieved"]), 2) if entry else None
