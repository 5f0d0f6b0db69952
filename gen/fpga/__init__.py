"""The FPGA flow: synthesis, place and route and timing on a Lattice ECP5, and the board."""
