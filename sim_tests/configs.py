"""The configurations the suites share: one declaration each, read by every test that needs it.

The presets themselves are ``ga2_hdl.config.PRESETS``; these are the extra chips the unit tests
build to reach every port width the presets use (2, 4 and 8 scratchpad words a cycle), each in
the default suite at least in its cheapest test.
"""
from ga2_hdl.config import PRESETS, Config

P2 = Config(name="p2", spad_ports=2)                       #: two-word scratchpad ports, one-word DMA
WIDE4 = PRESETS["wide4"]                                   #: four-word scratchpad and external ports
P8 = Config(name="p8", spad_ports=8)                       #: eight-word scratchpad ports (wide8, fast)
#: every scratchpad port width of the presets, for the matrix and vector units
SPAD_PORT_CONFIGS = (P2, WIDE4, P8)
FAST = PRESETS["fast"]                                     #: eight-word ports on the 8 x 8 array (fast presets)
#: the matrix unit's: every port width, and the widest on the largest array a wide preset has
MATRIX_CONFIGS = (*SPAD_PORT_CONFIGS, FAST)
