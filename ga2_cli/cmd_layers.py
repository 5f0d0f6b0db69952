"""`ga2 layers`: the packages' import rule checked on the sources, and its picture."""
from __future__ import annotations

from pathlib import Path


def register(sub) -> None:
    p = sub.add_parser("layers", help="check that every import points down and no module or function is oversized "
                            "(gen/support/layers.py), and draw the rooms",
                       description="Read every module's imports (without importing them), print the imports "
                                   "that break the layering rule and the modules and functions over the house's size "
                                   "limits (exit 1 if any), and draw the picture of docs/architecture.md with "
                                   "--png.")
    p.add_argument("--png", metavar="FILE", help="draw the rooms and their imports into FILE")
    p.set_defaults(func=cmd_layers)


def cmd_layers(args) -> int:
    from gen.support import layers
    root = Path(layers.__file__).resolve().parents[2]
    graph = layers.import_graph(root)
    bad = layers.violations(root, graph)
    for line in bad:
        print(line)
    rooms = sorted({i.source for i in graph} | {i.target for i in graph})
    print(f"{len(graph)} imports between {len(rooms)} rooms: "
          + ("every one points down" if not bad else f"{len(bad)} against the rule"))
    big = layers.oversized(root)
    for line in big:
        print(line)
    print(f"sizes: {len(big)} over the limits" if big else
          f"sizes: every module at most {layers.MAX_MODULE_LINES} lines, every function at most "
          f"{layers.MAX_FUNCTION_LINES}")
    if args.png:
        layers.draw(root, args.png, graph)
        print(f"wrote {args.png}")
    return 1 if bad or big else 0
