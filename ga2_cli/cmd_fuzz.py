"""Subcommands of `ga2` (not yet written)."""


def register(subparsers) -> None:
    pass
