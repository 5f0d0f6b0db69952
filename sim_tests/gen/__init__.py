"""Tests of the export, the simulators, fuzzing, mutation, synthesis and the board."""
