"""The Amaranth RTL of GA-2: one execution unit a module, the scratchpad, the sequencer and the chip."""
