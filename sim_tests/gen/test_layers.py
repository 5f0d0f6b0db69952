"""The layering rule of docs/architecture.md, checked on the sources (gen/support/layers.py)."""
from pathlib import Path

from gen.support import layers

REPO = Path(__file__).resolve().parents[2]


def test_every_import_of_the_repository_points_down():
    assert layers.violations(REPO) == []
    rooms = {i.source for i in layers.import_graph(REPO)}
    assert {"ga2_hdl.rtl", "compiler", "gen.sim", "spec", "ga2_cli"} <= rooms   # the reading found them


def _tree(tmp_path, files):
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def test_an_upward_import_is_named_with_its_file_and_line(tmp_path):
    root = _tree(tmp_path, {
        "ga2_hdl/__init__.py": "",
        "ga2_hdl/isa/__init__.py": "import math\nfrom gen.sim import simulator\n",
        "ga2_hdl/rtl/__init__.py": "",
        "ga2_hdl/rtl/unit.py": "from amaranth import Module\nfrom .. import isa\n",
        "compiler/__init__.py": "from amaranth.lib import wiring\n",
        "gen/__init__.py": "", "gen/sim/__init__.py": "",
        "gen/sim/runner.py": "from ...ga2_hdl.rtl import unit\nfrom ..fuzz import programs\n",
        "spec/__init__.py": "", "spec/host.py": "from ga2_hdl.rtl.unit import Unit\n",
    })
    found = layers.violations(root)
    assert any(v.startswith("ga2_hdl/isa/__init__.py:2: ga2_hdl imports gen.sim.simulator") for v in found)
    assert any(v.startswith("compiler/__init__.py:1: compiler imports amaranth") for v in found)
    assert any(v.startswith("gen/sim/runner.py:2: gen.sim imports gen.fuzz.programs") for v in found)
    assert any(v.startswith("spec/host.py:1: spec imports ga2_hdl.rtl.unit") for v in found)
    assert len(found) == 4        # the RTL's imports of Amaranth and of the ISA are allowed


def test_the_picture_is_drawn(tmp_path):
    png = tmp_path / "layers.png"
    layers.draw(REPO, png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_no_module_or_function_of_the_packages_is_oversized():
    assert layers.oversized(REPO) == []


def test_an_oversized_module_and_function_are_named(tmp_path):
    body = "".join(f"    x{i} = {i}\n" for i in range(layers.MAX_FUNCTION_LINES))   # def line + this: one too many
    root = _tree(tmp_path, {
        "gen/__init__.py": "",
        "gen/fit.py": "def f():\n" + "".join(f"    x{i} = {i}\n" for i in range(layers.MAX_FUNCTION_LINES - 1)),
        "gen/long.py": "def g():\n" + body,
        "spec/big.py": "x = 1\n" * (layers.MAX_MODULE_LINES + 1),
        "spec/ok.py": "x = 1\n" * layers.MAX_MODULE_LINES,
    })
    found = sorted(layers.oversized(root))
    assert len(found) == 2
    assert found[0].startswith("gen/long.py:1: g ")
    assert found[1].startswith("spec/big.py: ")
