"""Command-line entry point: preview, compare and check the chart's spec-hashed Job names.

Exit codes: 0 ok, 1 invalid values (Helm would refuse them, the chart would fail, or jobhash
cannot mirror them exactly), 2 usage (bad arguments, unreadable files), 3 ``diff --strict``
found a Job that keeps its name while its pod template changes (Kubernetes would refuse the
update). Errors go to stderr, name the file, the key path and the fix, and never show a
traceback.

The arguments are parsed as :mod:`jobhash.cli_args` describes them, and each command is a
function of :mod:`jobhash.cli_commands`; this module runs one and maps its errors to the exit
codes.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TextIO

from jobhash.cli_args import build_parser
from jobhash.cli_commands import COMMANDS, EXIT_INVALID, EXIT_USAGE
from jobhash.errors import JobhashError, RenderError, UnmirrorableError, UsageError
from jobhash.goyaml_compose import MAX_VALUE_DEPTH


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    stdout = out if out is not None else sys.stdout
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:
        return int(exit_.code or 0)
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    try:
        return COMMANDS[args.command](args, stdout)
    except UsageError as err:
        sys.stderr.write(f"jobhash: usage error: {err}\n")
        return EXIT_USAGE
    except RenderError as err:
        sys.stderr.write(f"jobhash: invalid values, helm template would fail: {err}\n")
        return EXIT_INVALID
    except UnmirrorableError as err:
        sys.stderr.write(f"jobhash: cannot mirror Helm exactly for these values: {err}\n")
        return EXIT_INVALID
    except JobhashError as err:
        sys.stderr.write(f"jobhash: invalid values: {err}\n")
        return EXIT_INVALID
    except RecursionError:
        # The depth caps (goyaml_compose.MAX_VALUE_DEPTH) refuse deep values where they enter;
        # this is the last line, so a value no cap foresaw is still one line, never a traceback.
        sys.stderr.write(
            "jobhash: cannot mirror Helm exactly for these values: maps and lists nested too"
            f" deep to follow; jobhash follows at most {MAX_VALUE_DEPTH} levels\n"
        )
        return EXIT_INVALID
