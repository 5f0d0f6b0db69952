"""Fixtures every suite may use, and the configurations they share (``sim_tests/configs.py``)."""
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
