"""The one simulator interface and its implementations (golden, Amaranth, Icarus, Verilator, CXXRTL), replay and diff."""
