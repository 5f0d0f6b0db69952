"""Plumbing for the flows: external tools and their cache, the local worker pool."""
