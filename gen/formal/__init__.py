"""Formal checks of the RTL: the contracts of ga2_hdl/contracts run through SymbiYosys (`ga2 prove`)."""
