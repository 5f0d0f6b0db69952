"""The packages' layers and the one rule between them: imports point down, never up.

The rule is read off the sources, not trusted: :func:`import_graph` parses every module of
``ga2_hdl``, ``compiler``, ``spec``, ``gen`` and ``ga2_cli`` (with :mod:`ast`, importing
nothing) and groups the imports by *room* (a package's subpackage, such as ``gen.sim``);
:func:`violations` lists every import that the table :data:`MAY_IMPORT` does not allow, with the
file and line; :func:`draw` draws the rooms and their imports as a PNG (docs/architecture.md).

The rooms, bottom to top (each may import the rooms listed for it in :data:`MAY_IMPORT`):

* ``ga2_hdl``: the configuration, the instruction set, the golden model, the file formats and
  the plumbing every layer may use (``ga2_hdl.config``, ``.isa``, ``.golden``, ``.formats``,
  ``.support``). Plain Python: no Amaranth.
* ``ga2_hdl.rtl``: the Amaranth units and the chip, on the ISA; ``ga2_hdl.contracts``: the
  units' formal contracts (Amaranth assertions around a unit).
* ``compiler``: Capra, on the ISA and the golden model; no Amaranth, no RTL.
* ``gen.support``, ``gen.verilog``, ``gen.sim``: the tools, the export, the simulators.
* ``gen.fuzz``, ``gen.mutation``, ``gen.fpga``, ``gen.bench``: flows built on the simulators;
  ``gen.formal`` (the proofs, whose planted mutants come from the mutation engine) above them.
* ``spec`` (with ``spec.beyond``, ``spec.studies``): the workload; it reaches the chip only
  through the simulator interface (``gen.sim``), never through the RTL.
* ``ga2_cli``: the command; nothing imports it.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

PACKAGES = ("ga2_hdl", "compiler", "spec", "gen", "ga2_cli")

_CORE = {"ga2_hdl"}
_TOOLS = _CORE | {"ga2_hdl.rtl", "gen.support", "gen.verilog", "gen.sim", "amaranth"}
#: room -> the rooms (and "amaranth") it may import; a room may always import itself
MAY_IMPORT: dict[str, set[str]] = {
    "ga2_hdl": set(),
    "ga2_hdl.rtl": _CORE | {"amaranth"},
    "ga2_hdl.contracts": _CORE | {"ga2_hdl.rtl", "amaranth"},
    "compiler": _CORE,
    "gen.support": _CORE,
    "gen.verilog": _CORE | {"ga2_hdl.rtl", "gen.support", "amaranth"},
    "gen.sim": _CORE | {"ga2_hdl.rtl", "gen.support", "gen.verilog", "amaranth"},
    "gen.fuzz": _TOOLS,
    "gen.mutation": _TOOLS | {"gen.fuzz"},
    "gen.fpga": _TOOLS,
    "gen.bench": _TOOLS,
    "gen.formal": _TOOLS | {"ga2_hdl.contracts", "gen.mutation"},
    "spec": _CORE | {"compiler", "gen.sim", "gen.support", "spec.beyond"},
    "spec.beyond": _CORE | {"compiler", "gen.sim", "gen.support", "spec"},
    "spec.studies": _CORE | {"compiler", "gen.sim", "gen.support", "spec", "spec.beyond"},
    "ga2_cli": {"ga2_hdl", "ga2_hdl.rtl", "ga2_hdl.contracts", "compiler", "spec", "spec.beyond", "spec.studies",
                "gen.support", "gen.verilog", "gen.sim", "gen.fuzz", "gen.mutation", "gen.fpga", "gen.bench",
                "gen.formal", "amaranth"},
}
#: rooms of ga2_hdl that are one layer with it (plain Python, no Amaranth)
_CORE_PARTS = ("ga2_hdl.config", "ga2_hdl.isa", "ga2_hdl.golden", "ga2_hdl.formats", "ga2_hdl.support")


@dataclass(frozen=True)
class Import:
    """One import of one module: where it is and which room it reaches."""
    file: str           #: relative to the repository
    line: int
    source: str         #: the importing room
    target: str         #: the imported room (or "amaranth")
    module: str         #: the imported module, dotted


def room_of(module: str) -> str | None:
    """The room a dotted module name belongs to (None: not ours and not Amaranth)."""
    parts = module.split(".")
    if parts[0] == "amaranth":
        return "amaranth"
    if parts[0] not in PACKAGES:
        return None
    if parts[0] == "ga2_hdl":
        return f"ga2_hdl.{parts[1]}" if parts[1:2] in (["rtl"], ["contracts"]) else "ga2_hdl"
    if parts[0] in ("gen", "spec") and len(parts) > 1:
        room = ".".join(parts[:2])
        if room in MAY_IMPORT:
            return room
    return parts[0]


def _module_name(path: Path, root: Path) -> tuple[str, bool]:
    parts = list(path.relative_to(root).with_suffix("").parts)
    is_package = parts[-1] == "__init__"
    if is_package:
        parts = parts[:-1]
    return ".".join(parts), is_package


def imports_of(path: Path, root: Path) -> list[Import]:
    """Every import of ours (or of Amaranth) in one module, resolved to absolute names."""
    name, is_package = _module_name(path, root)
    here = name.split(".") if is_package else name.split(".")[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[:len(here) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            targets = [target]
            if room_of(target) is not None:   # `from gen import sim`: the submodule's room counts
                targets = [f"{target}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        else:
            continue
        for module in targets:
            room = room_of(module)
            if room is not None:
                found.append(Import(path.relative_to(root).as_posix(), node.lineno, room_of(name), room, module))
    return found


def import_graph(root: Path | str) -> list[Import]:
    """Every import between rooms (a room's imports of itself left out), from the sources under ``root``."""
    root = Path(root)
    found = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            found += [i for i in imports_of(path, root) if i.target != i.source]
    return found


def violations(root: Path | str, graph: list[Import] | None = None) -> list[str]:
    """Every import that :data:`MAY_IMPORT` does not allow: ``file:line: room imports module``
    (``graph``: :func:`import_graph` of ``root`` when the caller has read it already)."""
    return [f"{i.file}:{i.line}: {i.source} imports {i.module} ({i.target} is not below {i.source})"
            for i in (import_graph(root) if graph is None else graph)
            if i.target not in MAY_IMPORT.get(i.source, set())]



#: the house's size limits (docs/architecture.md): lines of a module, lines of a function
#: (its docstring included) in the packages
MAX_MODULE_LINES = 700
MAX_FUNCTION_LINES = 120


def oversized(root: Path | str) -> list[str]:
    """Every module of the packages longer than :data:`MAX_MODULE_LINES` and every function or
    method longer than :data:`MAX_FUNCTION_LINES`: ``file: N lines`` or ``file:line: name N
    lines``, read with :mod:`ast` like the imports."""
    root = Path(root)
    found = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            text = path.read_text()
            name = path.relative_to(root).as_posix()
            lines = len(text.splitlines())
            if lines > MAX_MODULE_LINES:
                found.append(f"{name}: {lines} lines (at most {MAX_MODULE_LINES})")
            for node in ast.walk(ast.parse(text, filename=name)):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    length = node.end_lineno - node.lineno + 1
                    if length > MAX_FUNCTION_LINES:
                        found.append(f"{name}:{node.lineno}: {node.name} {length} lines "
                                     f"(at most {MAX_FUNCTION_LINES})")
    return found

#: where each room is drawn: (column, row); row 0 at the bottom
_PLACES = {
    "ga2_hdl": (3.0, 0.0), "amaranth": (-0.6, 0.4), "ga2_hdl.contracts": (-0.4, 1.9), "gen.formal": (0.6, 3.4),
    "ga2_hdl.rtl": (0.6, 1.1), "compiler": (5.6, 1.4), "gen.support": (3.0, 1.7),
    "gen.verilog": (0.6, 2.3), "gen.sim": (2.2, 3.0), "spec": (5.0, 3.0),
    "gen.fuzz": (0.0, 4.2), "gen.mutation": (1.3, 4.2), "gen.fpga": (2.6, 4.2), "gen.bench": (3.9, 4.2),
    "spec.beyond": (5.4, 4.2), "spec.studies": (6.6, 3.6),
}


def draw(root: Path | str, png: Path | str, graph: list[Import] | None = None) -> None:
    """The rooms and the imports between them as a PNG (written atomically): an arrow from a room
    to each room it imports, red where the import breaks the rule (``graph`` as for
    :func:`violations`)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ga2_hdl.support.safe_io import write_figure

    edges: dict[tuple[str, str], int] = {}
    for i in (import_graph(root) if graph is None else graph):
        if i.source != "ga2_cli":            # the command imports any room: not drawn, said in the title
            edges[(i.source, i.target)] = edges.get((i.source, i.target), 0) + 1
    fig, ax = plt.subplots(figsize=(11, 7.5))
    for (src, dst), count in sorted(edges.items()):
        (x0, y0), (x1, y1) = _PLACES[src], _PLACES[dst]
        bad = dst not in MAY_IMPORT.get(src, set())
        ax.annotate("", xy=(x1, y1 + 0.18), xytext=(x0, y0 - 0.18),
                    arrowprops=dict(arrowstyle="->", color="red" if bad else "0.55", lw=0.6 + 0.12 * min(count, 12),
                                    shrinkA=14, shrinkB=14, alpha=0.8))
    for room, (x, y) in _PLACES.items():
        ax.text(x, y, room, ha="center", va="center", fontsize=10, family="monospace",
                bbox=dict(boxstyle="round,pad=0.45", fc="#e8f0fb" if room != "amaranth" else "#f3f3f3", ec="0.3"))
    ax.set_xlim(-1.4, 7.4)
    ax.set_ylim(-0.5, 4.7)
    ax.axis("off")
    ax.set_title("GA2: what imports what (an arrow from a room to each room it imports; "
                 "grey: allowed, red: against the rule)\nga2_cli, above them all, may import any room (its arrows are "
                 "left out); read from the sources by gen/support/layers.py",
                 fontsize=10)
    write_figure(fig, png, format="png", dpi=110, bbox_inches="tight")
