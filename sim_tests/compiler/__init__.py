"""Tests of Capra."""
