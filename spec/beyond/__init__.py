"""Speculative decoding beyond the chapter: sampling, trees of guesses, drafts without weights, adaptive k."""
