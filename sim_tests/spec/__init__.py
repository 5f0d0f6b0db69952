"""Tests of the tiny model and speculative decoding."""
