"""Benchmarks that print figures: the chapter's whole job and the book's RTL as references."""
