"""Where a program's cycles go: per layer (ONNX node) and per unit, the array's utilisation, a roofline.

Every instruction is charged to the Capra step that emitted it (:meth:`Program.node_at`; a
leaf's ``LD`` belongs to the first step that reads it) and through it to the ONNX node that made
that Capra node.  Cycles are the ISA's: each instruction's fetch and issue plus its unit's busy
time (``instruction_set(config).busy``); on a chip without overlap they add up to the program's
total, on one with overlap they are busy cycles, more than the time the program takes.

The array's utilisation is the multiply-accumulates done over those the array could do in the
cycles counted: ``MACs / (cycles * array**2)``, during the matrix unit's busy time and over the
whole program.  The roofline's axes are operations (2 per MAC) per cycle against operations per
word loaded from external memory; its roofs are the array's ``2 * array**2`` operations per cycle
and the external port's ``ext_port_words`` words per cycle times the intensity.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ga2_hdl import isa

#: the counters' units, by the ISA's unit of each operation
UNITS = {isa.Unit.MATRIX: "matrix", isa.Unit.DMA: "dma", isa.Unit.VECTOR: "vector"}


@dataclass
class Layer:
    name: str
    cycles: int = 0                                  #: fetch/issue plus busy, of its instructions
    units: dict[str, int] = field(default_factory=lambda: {"matrix": 0, "dma": 0, "vector": 0})
    instructions: dict[str, int] = field(default_factory=dict)
    macs: int = 0
    words_loaded: int = 0

    def as_json(self) -> dict:
        return {"name": self.name, "cycles": self.cycles, "units": self.units, "instructions": self.instructions,
                "macs": self.macs, "words_loaded": self.words_loaded}


@dataclass
class Profile:
    config_name: str
    array: int
    ext_port_words: int
    batch: int
    total_cycles: int
    layers: list[Layer]

    @property
    def macs(self) -> int:
        return sum(l.macs for l in self.layers)

    @property
    def matrix_cycles(self) -> int:
        return sum(l.units["matrix"] for l in self.layers)

    @property
    def words_loaded(self) -> int:
        return sum(l.words_loaded for l in self.layers)

    def utilisation(self) -> dict[str, float]:
        peak = self.array ** 2
        return {"during_mm": self.macs / (self.matrix_cycles * peak) if self.matrix_cycles else 0.0,
                "whole_program": self.macs / (self.total_cycles * peak) if self.total_cycles else 0.0}

    def as_json(self) -> dict:
        return {"config": self.config_name, "array": self.array, "batch": self.batch,
                "total_cycles": self.total_cycles, "macs": self.macs, "words_loaded": self.words_loaded,
                "utilisation": self.utilisation(),
                "roofs": {"ops_per_cycle": 2 * self.array ** 2, "words_per_cycle": self.ext_port_words},
                "layers": [l.as_json() for l in self.layers]}

    def lines(self) -> list[str]:
        u = self.utilisation()
        out = [f"profile ({self.config_name}, {self.batch} rows per program, {self.total_cycles:,} cycles): "
               f"array utilisation {100 * u['during_mm']:.1f}% while the matrix unit is busy, "
               f"{100 * u['whole_program']:.1f}% over the program; {self.macs:,} MACs, "
               f"{self.words_loaded:,} words loaded"]
        for l in self.layers:
            share = 100 * l.cycles / self.total_cycles if self.total_cycles else 0.0
            out.append(f"  {l.name:42s} {l.cycles:>9,} cycles {share:5.1f}%  matrix {l.units['matrix']:>8,}  "
                       f"DMA {l.units['dma']:>7,}  vector {l.units['vector']:>7,}  "
                       + " ".join(f"{k} {v}" for k, v in sorted(l.instructions.items())))
        return out


def profile_program(prog, owner: dict[int, str] | None = None, batch: int = 1) -> Profile:
    """The profile of ``prog``; ``owner`` names the layer of each Capra node (default: its label)."""
    iset = isa.instruction_set(prog.config)
    layers: dict[str, Layer] = {}
    users = prog.graph.consumers()
    for pc, ins in enumerate(prog.code):
        nid = prog.node_at(pc)
        if nid in prog.plan.add_relu and ins.mnemonic == "RQ" and ins.relu and ins.dst == ins.src:
            nid = next(u for u in users[nid] if prog.graph.nodes[u].op == "relu")    # the RQ that clamps a sum
        name = (owner or {}).get(nid) or prog.graph.nodes[nid].label()
        if ins.mnemonic == "HALT":
            name = "HALT"
        layer = layers.setdefault(name, Layer(name))
        busy = iset.busy(ins) if ins.mnemonic != "HALT" else 0
        layer.cycles += iset.cycles(ins) if ins.mnemonic != "HALT" else isa.FETCH_ISSUE_CYCLES
        unit = UNITS.get(iset.by_name[ins.mnemonic].unit) if ins.mnemonic in iset.by_name else None
        if unit:
            layer.units[unit] += busy
        layer.instructions[ins.mnemonic] = layer.instructions.get(ins.mnemonic, 0) + 1
        if ins.mnemonic == "MM":
            layer.macs += ins.M * ins.K * ins.N
        elif ins.mnemonic == "LD":
            layer.words_loaded += ins.len
    return Profile(prog.config.name, prog.config.array, prog.config.ext_port_words, batch,
                   prog.counters().total, list(layers.values()))
