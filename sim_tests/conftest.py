"""Fixtures every suite may use, and the configurations they share (``sim_tests/configs.py``)."""
import gc
import warnings

import pytest

from ga2_hdl.config import PRESETS, Config

from sim_tests.configs import SPAD_PORT_CONFIGS


@pytest.fixture
def book() -> Config:
    """The book's chip, the regression baseline."""
    return Config.book()


@pytest.fixture(params=SPAD_PORT_CONFIGS, ids=lambda c: c.name)
def spad_port_config(request) -> Config:
    """Each scratchpad port width the presets use (2, 4, 8 words a cycle)."""
    return request.param


@pytest.fixture(params=sorted(PRESETS), ids=str)
def preset(request) -> Config:
    """Every named configuration."""
    return PRESETS[request.param]


def _refused(build, exception: type[BaseException] = ValueError, match: str | None = None) -> str:
    """``build()`` raises ``exception`` (its message matching ``match``) and leaves no Amaranth
    elaboratable behind unused: no UnusedElaboratable warning once its garbage is collected.
    Returns the message."""
    from amaranth.hdl import Fragment, Module, UnusedElaboratable
    Fragment.get(Module(), None)      # Amaranth warns of unused elaboratables once anything was elaborated
    gc.collect()                      # garbage of earlier tests warns now, not below
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with pytest.raises(exception, match=match) as info:
            build()
        message = str(info.value)
        del info                      # its traceback holds the frames of the refusal
        gc.collect()
    unused = [str(w.message) for w in seen if issubclass(w.category, UnusedElaboratable)]
    assert unused == [], f"the refusal left elaboratables unused: {unused}"
    return message


@pytest.fixture
def refused():
    """``refused(build, exception=ValueError, match=None)``: ``build()`` is refused with ``exception``
    and leaves no elaboratable unused (Amaranth's UnusedElaboratable warning); the message."""
    return _refused
