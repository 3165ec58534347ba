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
from typing import Final, TextIO

from jobhash.cli_args import build_parser
from jobhash.cli_commands import COMMANDS, EXIT_INVALID, EXIT_USAGE
from jobhash.errors import JobhashError, RenderError, UnmirrorableError, UsageError
from jobhash.goyaml_compose import MAX_VALUE_DEPTH

#: What each error of a command is called on stderr, and its exit code; ``JobhashError``
#: last, as the rest are its subclasses.
_FAILURES: Final[tuple[tuple[type[JobhashError], str, int], ...]] = (
    (UsageError, "usage error", EXIT_USAGE),
    (RenderError, "invalid values, helm template would fail", EXIT_INVALID),
    (UnmirrorableError, "cannot mirror Helm exactly for these values", EXIT_INVALID),
    (JobhashError, "invalid values", EXIT_INVALID),
)


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
    except JobhashError as err:
        # The first kind the error is decides its words and exit code (subclasses first).
        what, code = next((w, c) for kind, w, c in _FAILURES if isinstance(err, kind))
        sys.stderr.write(f"jobhash: {what}: {err}\n")
        return code
    except RecursionError:
        # The depth caps (goyaml_compose.MAX_VALUE_DEPTH) refuse deep values where they enter;
        # this is the last line, so a value no cap foresaw is still one line, never a traceback.
        sys.stderr.write(
            "jobhash: cannot mirror Helm exactly for these values: maps and lists nested too"
            f" deep to follow; jobhash follows at most {MAX_VALUE_DEPTH} levels\n"
        )
        return EXIT_INVALID
