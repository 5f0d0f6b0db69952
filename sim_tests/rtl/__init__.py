"""Tests of the RTL units and the chip, in Amaranth's simulator against the ISA and the golden model."""
