"""The configuration of a GA2 chip: the one place a size or a timing parameter lives.

A :class:`Config` describes one chip the generator can build.  The instruction
set (:func:`ga2_hdl.isa.instruction_set`), the golden model, the decoder's
checks, every RTL unit, the compiler's tiling and buffer planning, the Verilog
export and its testbench, the generated ``docs/isa.md`` and the bundle format
all read their sizes and timings from it, and from nowhere else.

:meth:`Config.book` is the book's GA-2, the regression baseline: with it every
figure of the chapter stays what it is, bit for bit and cycle for cycle.  Every
parameter beyond the book (``spad_ports``, ``ext_port_words``, ``overlap``,
``extensions``) is off in it.

This module imports nothing of the project's: it sits below the ISA.  Whether a
configuration fits the 128-bit instruction word (an array size the M and N
fields can name, a scratchpad the address fields can reach) is the ISA's rule:
:func:`ga2_hdl.isa.instruction_set` refuses a configuration that does not.

A configuration can be named (:data:`PRESETS`) or read from a small TOML or JSON
file holding any of the fields, the others taking the book's values::

    name = "wide"
    spad_ports = 4
    ext_port_words = 4
"""
from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass, fields
from typing import Any, Mapping

__all__ = ["Config", "ConfigError", "PRESETS", "load"]


class ConfigError(ValueError):
    """A configuration that cannot describe a chip, or a configuration file that cannot be read."""


def _power_of_two(n: int) -> bool:
    return n >= 1 and n & (n - 1) == 0


@dataclass(frozen=True)
class Config:
    """One GA2 chip.

    Parameters
    ----------
    name : str
        What the configuration is called in reports, bundles and tables.
    array : int
        The systolic array is ``array`` x ``array``: MM's largest M and N.
    max_k : int
        Depth of the matrix unit's operand memories: MM's largest K.
    spad_words : int
        Scratchpad size in 32-bit words.
    ext_words : int
        External memory size in 32-bit words (the EXT_RANGE bound); a run may
        still choose another size within what the address fields reach.
    imem_words : int
        Instruction memory size in 128-bit words: the longest program.
    lat : int
        External-memory read latency in cycles, paid once per load.
    spad_ports : int
        Scratchpad words the matrix and vector units read per cycle (a power of two).
    ext_port_words : int
        External-memory words the DMA moves per cycle after the latency (a power of two).
    overlap : bool
        The sequencer may issue an instruction while other units are busy, when
        its own unit is free and its scratchpad regions conflict with no
        instruction in flight.
    extensions : tuple of str
        Importable modules whose instructions this chip has, beyond the book's eight.
    """
    name: str = "book"
    array: int = 4
    max_k: int = 64
    spad_words: int = 4096
    ext_words: int = 8192
    imem_words: int = 1024
    lat: int = 8
    spad_ports: int = 1
    ext_port_words: int = 1
    overlap: bool = False
    extensions: tuple[str, ...] = ()

    def __post_init__(self):
        problems = self.problems()
        if problems:
            raise ConfigError(f"configuration {self.name!r}: " + "; ".join(problems))

    def problems(self) -> list[str]:
        """What makes this configuration impossible on its own terms (the ISA adds the word's limits)."""
        out = []
        if not isinstance(self.name, str) or not self.name:
            out.append("name must be a non-empty string")
        for f in fields(self):
            if f.type == "int":
                v = getattr(self, f.name)
                if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                    out.append(f"{f.name}={v!r} must be a positive integer")
        if not isinstance(self.overlap, bool):
            out.append(f"overlap={self.overlap!r} must be true or false")
        if not (isinstance(self.extensions, tuple) and all(isinstance(e, str) and e for e in self.extensions)):
            out.append(f"extensions={self.extensions!r} must be a list of module names")
        for name in ("spad_ports", "ext_port_words"):
            v = getattr(self, name)
            if isinstance(v, int) and v >= 1 and not _power_of_two(v):
                out.append(f"{name}={v} must be a power of two")
        return out

    # -- construction
    @classmethod
    def book(cls) -> "Config":
        """The book's GA-2: the chapter's machine, exactly."""
        return cls()

    def replace(self, **changes) -> "Config":
        """This configuration with some fields changed (checked like a new one)."""
        return dataclasses.replace(self, **changes)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = "<configuration>") -> "Config":
        """A configuration from a mapping of field names (missing fields take the book's values)."""
        if not isinstance(data, Mapping):
            raise ConfigError(f"{source}: a configuration is a table of fields, not {type(data).__name__}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"{source}: unknown field{'s' if len(unknown) > 1 else ''} "
                              f"{', '.join(unknown)} (fields: {', '.join(f.name for f in fields(cls))})")
        values = dict(data)
        if "extensions" in values and isinstance(values["extensions"], list):
            values["extensions"] = tuple(values["extensions"])
        try:
            return cls(**values)
        except ConfigError as e:
            raise ConfigError(f"{source}: {e}") from None

    def to_dict(self) -> dict[str, Any]:
        """Every field, JSON-ready (what bundles and reports record)."""
        d = dataclasses.asdict(self)
        d["extensions"] = list(self.extensions)
        return d

    @property
    def parameters(self) -> dict[str, Any]:
        """Every field but the name: two configurations with the same parameters build the same chip."""
        d = self.to_dict()
        del d["name"]
        return d

    def same_chip(self, other: "Config") -> bool:
        """Whether ``other`` builds the same chip (names aside)."""
        return self.parameters == other.parameters

    def differences(self, other: "Config") -> list[str]:
        """The parameters in which ``other`` differs, as ``field=ours (theirs: value)``."""
        ours, theirs = self.parameters, other.parameters
        return [f"{k}={ours[k]!r} (theirs: {theirs[k]!r})" for k in ours if ours[k] != theirs[k]]

    # -- derived sizes: computed here, once, and read by the RTL, the runners and the testbenches
    @property
    def spad_banks(self) -> int:
        """Scratchpad banks: one per word that the widest master moves in a cycle,
        ``max(spad_ports, ext_port_words)`` (1 on the book chip: one memory)."""
        return max(self.spad_ports, self.ext_port_words)

    @property
    def spad_bank_words(self) -> int:
        """Words in each scratchpad bank: ``spad_words / spad_banks``, rounded up."""
        return -(-self.spad_words // self.spad_banks)

    @property
    def imem_addr_bits(self) -> int:
        """Bits of an instruction-memory address (at least 1): 10 on the book chip."""
        return max(1, (self.imem_words - 1).bit_length())

    @property
    def pc_bits(self) -> int:
        """Bits of the program counter, which also holds ``imem_words`` (a program that ran off the end)."""
        return self.imem_words.bit_length()

    def describe(self) -> str:
        """One line: the name, then every parameter that differs from the book's."""
        book = Config.book().parameters
        changed = [f"{k}={v}" for k, v in self.parameters.items() if book[k] != v]
        return f"{self.name} ({', '.join(changed) if changed else 'the book chip'})"


#: Named configurations: ``--config NAME``.
PRESETS: dict[str, Config] = {
    "book": Config.book(),
    "array8": Config(name="array8", array=8),            # an 8 x 8 systolic array
    "array16": Config(name="array16", array=16),         # a 16 x 16 systolic array
    "spad8k_lat4": Config(name="spad8k_lat4", spad_words=8192, ext_words=16384, imem_words=512, lat=4),  # 2x memories, faster ext, small imem
    "overlap": Config(name="overlap", overlap=True),     # units run at once, under the hazard rule
    "wide2": Config(name="wide2", spad_ports=2, ext_port_words=2),
    "wide4": Config(name="wide4", spad_ports=4, ext_port_words=4),
    "wide8": Config(name="wide8", spad_ports=8, ext_port_words=8),   # plain decoding <= 2,800 cycles/token
    "fast": Config(name="fast", array=8, spad_ports=8, ext_port_words=8),   # the fastest without overlap
    "wide8_overlap": Config(name="wide8_overlap", spad_ports=8, ext_port_words=8, overlap=True),  # wide8, units at once
    "fast_overlap": Config(name="fast_overlap", array=8, spad_ports=8, ext_port_words=8, overlap=True),
}


def load(spec: "str | os.PathLike | Config") -> Config:
    """A configuration from a preset name, a ``.toml`` or ``.json`` file, or a :class:`Config`.

    Raises :class:`ConfigError` naming the file or the name and what is wrong.
    """
    if isinstance(spec, Config):
        return spec
    text = os.fspath(spec)
    if text in PRESETS:
        return PRESETS[text]
    suffix = os.path.splitext(text)[1].lower()
    if suffix not in (".toml", ".json"):
        raise ConfigError(f"{text}: not a configuration name ({', '.join(PRESETS)}) "
                          f"nor a .toml or .json file")
    try:
        with open(text, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise ConfigError(f"{text}: cannot read: {e.strerror or e}") from None
    try:
        if suffix == ".json":
            data = json.loads(raw.decode("utf-8"))
        else:
            import tomllib                     # Python 3.11+
            data = tomllib.loads(raw.decode("utf-8"))
    except ImportError:
        raise ConfigError(f"{text}: reading TOML needs Python 3.11 or later; write the file as JSON") from None
    except (ValueError, UnicodeDecodeError) as e:     # json.JSONDecodeError and tomllib.TOMLDecodeError
        raise ConfigError(f"{text}: not valid {suffix[1:].upper()}: {e}") from None
    if isinstance(data, Mapping) and "name" not in data:
        data = {**data, "name": os.path.splitext(os.path.basename(text))[0]}
    return Config.from_dict(data, source=text)
