"""The committed docs agree with the code they describe."""
import pathlib
import re

import pytest

from ga2_hdl import isa
from ga2_hdl.config_doc import field_limits, render_config_markdown
from ga2_hdl.isa.doc import ERROR_BEHAVIOUR, render_isa_markdown

DOCS = pathlib.Path(__file__).resolve().parents[2] / "docs"


def test_isa_md_is_generated_from_isa_py():
    committed = (DOCS / "isa.md").read_text()
    assert committed == render_isa_markdown(config=isa.BOOK), \
        "docs/isa.md is stale: regenerate it with `ga2 isadoc -o docs/isa.md`"


def test_isa_md_covers_every_op_field_and_error():
    text = render_isa_markdown(config=isa.BOOK)
    for spec in isa.OPS:
        assert f"### {spec.code} {spec.mnemonic}" in text
        assert spec.busy_formula in text
        for o in spec.operands:
            assert f"| `{o.name}` |" in text
    for f in isa.FIELDS:
        assert f"| `{f.name}` | [{f.msb}:{f.lsb}] | {f.width} |" in text
    for e in isa.ErrorCode:
        assert f"| {int(e)} | {e.name} |" in text
    assert set(ERROR_BEHAVIOUR) == set(isa.ErrorCode)


def test_config_md_is_generated_from_config_py():
    committed = (DOCS / "config.md").read_text()
    assert committed == render_config_markdown(), \
        "docs/config.md is stale: regenerate it with `ga2 configdoc -o docs/config.md`"


def test_config_md_states_every_field_with_the_validations_limits():
    import dataclasses
    from ga2_hdl.config import Config, ConfigError
    from ga2_hdl.config_doc import PROBE_WITH
    text = render_config_markdown()
    for f in dataclasses.fields(Config):
        assert f"## `{f.name}`" in text and f"| `{f.name}` | `{f.type}` |" in text
        if f.type != "int":
            continue
        book = Config.book().replace(**PROBE_WITH.get(f.name, {}))    # (a field probed with another set)
        lim = field_limits(f.name)
        assert lim.least >= 1 and f"| {lim.text()} |" in text
        with pytest.raises(ConfigError):
            book.replace(**{f.name: lim.least - 1})
        if lim.most is not None:          # the largest value builds an instruction set, the next one does not
            isa.instruction_set(book.replace(**{f.name: lim.most}))
            with pytest.raises((ConfigError, isa.IsaError)):
                isa.instruction_set(book.replace(**{f.name: lim.most * 2 if lim.power_of_two else lim.most + 1}))
    assert field_limits("array").most == isa.FIELD["f"].mask          # M and N's field
    assert field_limits("spad_ports").power_of_two and not field_limits("lat").power_of_two


def test_config_md_follows_a_changed_validation(monkeypatch):
    # the page asks the validation: a new rule in Config.problems shows up without touching the generator
    from ga2_hdl.config import Config
    before = render_config_markdown()
    problems = Config.problems
    monkeypatch.setattr(Config, "problems", lambda self: problems(self) + (
        [f"lat={self.lat} must be at least 2"] if isinstance(self.lat, int) and self.lat < 2 else []))
    lim = field_limits("lat")
    assert (lim.least, lim.below) == (2, "must be at least 2")
    after = render_config_markdown()
    assert after != before and "| `lat` | `int` | `8` | 2 or more |" in after
    monkeypatch.setattr(Config, "__doc__", Config.__doc__.replace("    lat : int\n", "    latency : int\n"))
    with pytest.raises(RuntimeError, match="missing: lat; no such field: latency"):
        render_config_markdown()


def test_configdoc_command_writes_the_page(tmp_path, capsys):
    from ga2_cli.main import main
    assert main(["configdoc", "-o", str(tmp_path / "config.md")]) == 0
    assert (tmp_path / "config.md").read_text() == (DOCS / "config.md").read_text()


def test_bundle_md_states_the_format_constants():
    text = (DOCS / "bundle.md").read_text()
    from ga2_hdl.formats.bundle import END_MARKER, MAGIC, VERSION
    assert f"`{MAGIC:08x}`" in text and f"`{END_MARKER:08x}`" in text and f"version {VERSION}" in text


def test_files_md_examples_assemble():
    from ga2_hdl.formats import asm
    from ga2_hdl.formats.files import parse_program
    text = (DOCS / "files.md").read_text()
    blocks = re.findall(r"```\n(.*?)```", text, re.S)
    asm_block = next(b for b in blocks if b.startswith("LD "))
    prog = asm.assemble(asm_block, config=isa.BOOK)
    assert prog[-1] == isa.HALT and len(prog) == 5
    hex_block = next(b for b in blocks if b.startswith("// GA2 program file"))     # its header is checked
    assert parse_program(hex_block) == [isa.make("LD", dst=0, src=0, len=12), isa.HALT]


def test_extending_md_names_files_that_exist():
    text = (DOCS / "extending.md").read_text()
    root = DOCS.parent
    for path in set(re.findall(r"`((?:ga2_hdl|gen|sim_tests)/[\w/]+\.py)`", text)):
        assert (root / path).exists(), path


def _busy_claims(text: str):
    """(op, formula) for every busy time the prose states: "OP `formula`", "OP, W = formula",
    and table rows "| OP | ... | formula |" whose last cell is a formula."""
    ops = "|".join(spec.mnemonic for spec in isa.OPS)
    for m in re.finditer(rf"\b({ops}) `([^`]+)`", text):
        yield m.group(1), m.group(2)
    for m in re.finditer(rf"\b({ops}), W = ([^\n]+)", text):
        yield m.group(1), m.group(2).strip()
    for m in re.finditer(rf"^\| ({ops}) \|.*\| ([^|]*len[^|]*) \|$", text, re.M):
        yield m.group(1), m.group(2).strip()


def test_busy_times_stated_in_prose_are_the_isa_formulas():
    # the docs explain where each busy time comes from; what they state must be the ISA's function
    import random
    rng = random.Random(8)
    root = DOCS.parent
    sources = [DOCS / "chip.md", DOCS / "vector.md", root / "ga2_hdl" / "rtl" / "dma.py"]
    claims = [(path.name, op, formula) for path in sources for op, formula in _busy_claims(path.read_text())]
    assert {op for _, op, _ in claims} >= {s.mnemonic for s in isa.OPS if s.unit is not isa.Unit.NONE}
    for where, op, formula in claims:
        spec = isa.OP_BY_NAME[op]
        for _ in range(50):
            ins = isa.make(op, **{o.name: rng.randint(*o.legal) if o.legal else rng.randrange(1, 1 << min(o.bits, 12))
                                  for o in spec.operands})
            stated = eval(formula.replace("\\*", "*"), {"__builtins__": {}}, {"LAT": isa.LAT, **ins.operands()})
            assert stated == ins.busy(), f"{where}: {op} `{formula}` is not isa's `{spec.busy_formula}`"


def test_the_wide_busy_table_in_chip_md_is_the_isa_formulas():
    """docs/chip.md's table of busy times for both port widths: the book's column is the book chip's
    busy function, the wide one (P and W put in) the wide presets' own."""
    import math
    import random
    from ga2_hdl.config import PRESETS
    rows = re.findall(r"^\| `([A-Z]+)` \| `([^`]+)` \| `([^`]+)` \|$", (DOCS / "chip.md").read_text(), re.M)
    assert {op for op, _, _ in rows} >= {"LD", "ST", "MM", "RQ", "VADD", "AMAX"}
    rng = random.Random(9)
    for name in ("book", "wide2", "wide4", "wide8"):
        config = isa.BOOK if name == "book" else PRESETS[name]
        iset = isa.instruction_set(config)
        for op, book, wide in rows:
            formula = book if name == "book" else wide
            spec = iset.by_name[op]
            for _ in range(30):
                ins = iset.make(op, **{o.name: rng.randint(*o.legal) if o.legal else rng.randrange(1, 1 << min(o.bits, 12))
                                       for o in spec.operands})
                values = {"LAT": config.lat, "P": config.spad_ports, "W": config.ext_port_words,
                          "ceil": lambda x: math.ceil(x), "log2": lambda x: x.bit_length() - 1,   # P: a power of two
                          **ins.operands()}
                stated = eval(formula, {"__builtins__": {}}, values)
                assert stated == iset.busy(ins), f"chip.md: {op} `{formula}` on {name} is not `{spec.busy_formula}`"


@pytest.mark.slow              # CI builds the site itself (.ci/run: make docs), warnings as errors
def test_the_site_builds_without_warnings(tmp_path):
    """`make docs`: every page of docs/ and the API reference, warnings as errors (a broken link,
    a heading out of order, a docstring docutils cannot read: each fails the build)."""
    import subprocess
    import sys
    for module in ("sphinx", "myst_parser"):
        pytest.importorskip(module, reason=f"{module} is not installed: pip install -e '.[docs]' (make test does)")
    out = tmp_path / "site"
    run = subprocess.run([sys.executable, "-m", "sphinx", "-b", "html", "-W", "--keep-going", "-q",
                          "-d", str(tmp_path / "doctrees"), str(DOCS), str(out)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, "make docs fails:\n" + run.stderr[-4000:]
    assert (out / "index.html").exists() and (out / "api" / "extension.html").exists()


@pytest.mark.parametrize("block", ["the unit bench", "wide ports"])
def test_extending_md_examples_run(block, capsys, monkeypatch):
    """docs/extending.md's blocks on testing an engine alone and on wide ports run as they are."""
    import sys
    monkeypatch.setattr(sys, "path", [str(DOCS.parent / "examples"), *sys.path])   # the user's module
    text = (DOCS / "extending.md").read_text()
    code = re.search(rf"```python\n# docs/extending\.md: {block}\n(.*?)```", text, re.S)
    assert code, f"docs/extending.md has no block '# docs/extending.md: {block}'"
    exec(compile(code.group(1), f"docs/extending.md ({block})", "exec"), {"__name__": "docs_example"})
    if block == "the unit bench":        # the broken engine was caught, at the cycle the page says
        assert "scratchpad write in cycle t+0, outside the busy cycles" in capsys.readouterr().out
