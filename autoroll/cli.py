"""Command-line entry point for the controller (``autoroll``)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from autoroll import __version__


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="autoroll",
        description="Roll enrolled Deployments when a mutable image tag moves.",
    )
    parser.add_argument("--version", action="version", version=f"autoroll {__version__}")
    parser.add_subparsers(dest="command", metavar="COMMAND")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    return 0
