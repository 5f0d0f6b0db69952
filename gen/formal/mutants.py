"""Every proof shown able to fail: a property checked on a copy of the design with one mutant
from the mutation engine (gen/mutation/rtl.py generates it, ga2_hdl/support/mutation.py applies it
to a copy of the sources: never a hand-edited copy).

:func:`find` picks a generated mutant by file, line text and change; :func:`check_mutant` builds
the copy (``gen.mutation.rtl.make_copy``) and checks the property there in a child Python whose
imports come from the copy, returning the property's record (``failed`` is the expected verdict).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from ga2_hdl.support.mutation import Mutant

_CHILD = """
import json, sys
from ga2_hdl.config import load
from gen.formal import prove
prop = next(p for p in prove.PROPERTIES if p.key == sys.argv[1])
depth = int(sys.argv[3]) if sys.argv[3] != "-" else None
rec = prove.check_property(prop, load(sys.argv[2]), depth=depth, keep=sys.argv[4], covers=False)
print("RESULT " + json.dumps(rec))
"""


def find(file: str, change: str, context: str = "") -> Mutant:
    """The one generated mutant of ``file`` (``ga2_hdl/rtl/NAME.py``) whose change is ``change``
    (``"old -> new"``) and whose context (enclosing function and source line) contains ``context``."""
    from gen.mutation.rtl import generate
    unit = Path(file).stem
    found = [m for m in generate([unit]) if m.file == file and m.change == change and context in m.context]
    if len(found) != 1:
        raise LookupError(f"{file}: {len(found)} generated mutants {change!r} in {context!r} (want exactly one)")
    return found[0]


def check_mutant(mutant: Mutant, key: str, config: str, *, depth: int | None = None,
                 timeout: float = 600.0) -> dict:
    """Property ``key`` (``unit.name``) checked on a copy of the design with ``mutant`` applied, on the
    chip ``config`` (a preset's name or a configuration file: the child process reads it)."""
    from gen.mutation.rtl import make_copy
    from gen.support.toolchain import child
    with tempfile.TemporaryDirectory(prefix="ga2-formal-mutant-") as tmp:
        root = make_copy(mutant, Path(tmp) / "copy")
        env = {**os.environ, "PYTHONPATH": str(root), "PYTHONDONTWRITEBYTECODE": "1"}
        with child([sys.executable, "-c", _CHILD, key, config, "-" if depth is None else str(depth),
                    str(Path(tmp) / "cex")], cwd=root, env=env, stdout=subprocess.PIPE,
                   stderr=subprocess.PIPE, text=True) as proc:
            out, err = proc.communicate(timeout=timeout)
        line = next((ln for ln in out.splitlines() if ln.startswith("RESULT ")), None)
        if line is None:
            return {"status": "error", "detail": (err.strip().splitlines() or ["no result"])[-1]}
        return json.loads(line[len("RESULT "):])


_SIM_CHILD = """
import sys
from ga2_hdl.config import load
from gen.formal.simcheck import simulate_contract
try:
    simulate_contract(sys.argv[1], load(sys.argv[2]), instructions=int(sys.argv[3]))
except AssertionError as e:
    print("RESULT failed " + str(e).splitlines()[0] if str(e) else "RESULT failed")
else:
    print("RESULT passed")
"""


def simulate_mutant(mutant: Mutant, unit: str, config: str = "book", *, instructions: int = 12,
                    timeout: float = 300.0) -> str:
    """The unit's contract in Amaranth's simulator on a copy with ``mutant``: ``failed ...`` or ``passed``."""
    from gen.mutation.rtl import make_copy
    from gen.support.toolchain import child
    with tempfile.TemporaryDirectory(prefix="ga2-formal-mutant-") as tmp:
        root = make_copy(mutant, Path(tmp) / "copy")
        env = {**os.environ, "PYTHONPATH": str(root), "PYTHONDONTWRITEBYTECODE": "1"}
        with child([sys.executable, "-c", _SIM_CHILD, unit, config, str(instructions)], cwd=root, env=env,
                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
            out, err = proc.communicate(timeout=timeout)
        line = next((ln for ln in out.splitlines() if ln.startswith("RESULT ")), None)
        return line[len("RESULT "):] if line else "error " + ((err.strip().splitlines() or ["no result"])[-1])
