"""The units' contracts as Amaranth Assert/Assume/Cover specs, one module per unit, for `ga2 prove`."""
