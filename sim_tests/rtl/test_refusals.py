"""A unit's constructor refuses a bad argument before it exists: the exception names the argument,
and nothing is left behind for Amaranth to warn about (the ``refused`` fixture of conftest.py)."""
import pytest

from ga2_hdl import isa
from ga2_hdl.rtl.chip import GA2Chip
from ga2_hdl.rtl.decoder import IssueCheck
from ga2_hdl.rtl.divider import Divider
from ga2_hdl.rtl.layout import ExtPort, SpadPort
from ga2_hdl.rtl.rowmem import BankedOperandRowMemory, OperandRowMemory
from ga2_hdl.rtl.systolic import SystolicArray

BOOK = isa.BOOK

#: (what, build, exception, the argument the message must name)
REFUSALS = [
    ("divider width", lambda: Divider(1), ValueError, "width"),
    ("array size", lambda: SystolicArray(0, config=BOOK), ValueError, "size"),
    ("array accumulator", lambda: SystolicArray(2, 0, config=BOOK), ValueError, "acc_bits"),
    ("row memory lanes", lambda: OperandRowMemory(0, 4, config=BOOK), ValueError, "lanes"),
    ("row memory depth", lambda: OperandRowMemory(4, 0, config=BOOK), ValueError, "depth"),
    ("banked lanes", lambda: BankedOperandRowMemory(0, 64, 2), ValueError, "lanes"),
    ("banked depth", lambda: BankedOperandRowMemory(4, 0, 2), ValueError, "depth"),
    ("banked banks odd", lambda: BankedOperandRowMemory(4, 64, 3), ValueError, "banks"),
    ("banked banks one", lambda: BankedOperandRowMemory(4, 64, 1), ValueError, "banks"),
    ("issue check ext_words", lambda: IssueCheck(0, config=BOOK), isa.IsaError, "ext_words"),
    ("chip ext_words", lambda: GA2Chip(config=BOOK, ext_words=0), isa.IsaError, "ext_words"),
    ("scratchpad port words", lambda: SpadPort(words=3, config=BOOK), ValueError, "words"),
    ("external port words", lambda: ExtPort(words=0), ValueError, "words"),
]


@pytest.mark.parametrize("build, exception, argument", [r[1:] for r in REFUSALS], ids=[r[0] for r in REFUSALS])
def test_a_bad_argument_is_refused_by_name_before_the_unit_exists(refused, build, exception, argument):
    refused(build, exception, match=rf"\b{argument}\b")
