"""A configuration file names an extension module by its path, relative to the file: no PYTHONPATH."""
import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from ga2_hdl import isa
from ga2_hdl.config import ConfigError, import_extension_file, load

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "relu_ext.py"


def _env():
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}     # the module is not importable by name


def test_a_config_file_names_the_extension_by_a_path_relative_to_itself(tmp_path):
    # the configuration in one folder, the module in another, the command run from a third, no PYTHONPATH
    (tmp_path / "ext").mkdir()
    (tmp_path / "conf").mkdir()
    (tmp_path / "elsewhere").mkdir()
    shutil.copy(EXAMPLE, tmp_path / "ext" / "my_relu.py")
    (tmp_path / "conf" / "chip.toml").write_text('name = "mine"\nextensions = ["../ext/my_relu.py"]\n')
    (tmp_path / "elsewhere" / "p.s").write_text("LD dst=0 src=0 len=2\nRELU dst=0 src=0 len=2\n"
                                                "ST src=0 dst=8 len=2\nHALT\n")
    (tmp_path / "elsewhere" / "m.hex").write_text("00000007\nfffffff9\n")
    run = subprocess.run([sys.executable, "-m", "ga2_cli", "golden", "p.s", "--ext", "m.hex",
                          "--config", "../conf/chip.toml", "--json"],
                         cwd=tmp_path / "elsewhere", env=_env(), capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["ext"][8:10] == [7, 0]
    # the module is named by its file's name, as if imported from PYTHONPATH: bundles record that name
    script = ("from ga2_hdl.config import load; from ga2_hdl import isa\n"
              "c = load('conf/chip.toml'); print(c.extensions, isa.instruction_set(c).origin(8))")
    out = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=_env(), capture_output=True,
                         text=True, timeout=60, check=True).stdout
    assert out.split() == ["('my_relu',)", "extension", "my_relu"]


def test_the_example_configuration_needs_no_pythonpath():
    config = load(ROOT / "examples" / "relu.toml")
    assert config.extensions == ("relu_ext",)
    assert "RELU" in isa.instruction_set(config).by_name
    assert pathlib.Path(sys.modules["relu_ext"].__file__).resolve() == EXAMPLE


def test_a_bad_extension_path_is_one_line_naming_the_file(tmp_path, capsys):
    from ga2_cli.main import main
    config = tmp_path / "c.toml"
    config.write_text('extensions = ["nowhere/ext.py"]\n')
    src = tmp_path / "p.s"
    src.write_text("HALT\n")
    assert main(["asm", str(src), "--config", str(config)]) in (1, 2)
    err = capsys.readouterr().err
    assert str(config) in err and str(tmp_path / "nowhere" / "ext.py") in err and "no such file" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_an_extension_file_that_fails_to_import_or_clashes_is_refused(tmp_path):
    (tmp_path / "ext_raises.py").write_text("raise RuntimeError('broken on purpose')\n")
    with pytest.raises(ConfigError, match="ext_raises.py: cannot be imported .RuntimeError: broken on purpose"):
        import_extension_file(tmp_path / "ext_raises.py", source="c.toml")
    assert "ext_raises" not in sys.modules                   # nothing half-imported is left behind
    (tmp_path / "json.py").write_text("X = 1\n")             # the name of a module already imported
    with pytest.raises(ConfigError, match="a module named json is already imported from"):
        import_extension_file(tmp_path / "json.py")
    (tmp_path / "my-ext.py").write_text("X = 1\n")
    with pytest.raises(ConfigError, match="not a module name"):
        import_extension_file(tmp_path / "my-ext.py")
