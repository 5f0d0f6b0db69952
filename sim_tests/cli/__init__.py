"""Tests of the ga2 command: its errors, its files, its documentation."""
