"""Command-line entry point for the Job-name previewer (``jobhash``)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from jobhash import __version__


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="jobhash",
        description="Preview the Job names the autoroll chart renders.",
    )
    parser.add_argument("--version", action="version", version=f"jobhash {__version__}")
    parser.add_subparsers(dest="command", metavar="COMMAND")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    return 0
