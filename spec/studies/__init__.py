"""Studies run with ``python -m``: what a port width, overlap or adaptive k buys, measured."""
