"""Plain-Python plumbing every layer may use: atomic file writes and the one mutation engine."""
