"""Tests of the instruction set, the configuration, the golden model and the file formats."""
