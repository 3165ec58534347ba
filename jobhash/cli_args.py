"""The command line's shape: ``jobhash``'s subcommands, their options and their help.

Every value flag ``helm template`` takes is an option here (:data:`VALUE_FLAGS`), and ``diff``
takes each of them once more per side; :func:`_sources` turns the parsed options back into
:class:`~jobhash.values.ValueSources`, in Helm's terms. The commands are in
:mod:`jobhash.cli_commands`.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from jobhash import __version__
from jobhash.values import ValueSources

DESCRIPTION = """\
Preview the Job and CronJob names the autoroll chart renders from jobGroups, byte-exact with
`helm template`: values are loaded, merged, typed and validated as Helm does, each job's spec is
assembled and serialised as _jobs.tpl does, and named after its sha256.
"""

DIFF_EPILOG = """\
Both sides start from the shared -f/--set* options; the --from-*/--to-* options are added on
top of them, for side A and side B. Helm's precedence applies per side: files, then every
--set-json, --set, --set-string, --set-file, --set-literal (in that order). Examples:

  jobhash diff --release demo -f values.yaml --from-values old.yaml --to-values new.yaml
  jobhash diff --release demo -f values.yaml --to-set jobGroups.db.image.tag=v2
  jobhash diff --strict --release demo -f values.yaml --to-values new.yaml   # in CI

Each line says what happens to one group/job: "re-runs" (its spec hash changed: a new Job
name, with the hashed fields that changed), "renamed" (same spec, new name), "unchanged",
"updated" (a CronJob keeps its name, its job template changes in place), "new", "no longer
rendered", or REFUSED: a Job keeps its name but its pod template changes (today only
podAnnotations under hashIncludePodAnnotations: false, or any change under hashSuffix: false),
which Kubernetes refuses, so helm upgrade and an Argo CD sync fail. The line says how to get
out of it. --strict makes a REFUSED entry exit 3.
"""

# Every value flag helm template takes, as (flag, ValueSources field, help); jobhash applies
# them in Helm's order (jobhash.valueflags.FLAGS), wherever they stand on the command line.
VALUE_FLAGS = (
    ("--set", "sets", "like helm --set: 3 is an integer, 1.5 a string, true/false/null typed"),
    (
        "--set-string",
        "set_strings",
        "like helm --set-string: always a string; applied after every --set",
    ),
    (
        "--set-json",
        "set_jsons",
        'like helm --set-json: key=<JSON> pairs (a=[1,2],b="s"), or one JSON object; '
        "applied before every --set",
    ),
    (
        "--set-file",
        "set_files",
        "like helm --set-file: key=path, the file's content as a string; after --set-string",
    ),
    (
        "--set-literal",
        "set_literals",
        "like helm --set-literal: key=value, the value verbatim (commas too); applied last",
    ),
)


def _add_value_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--release", required=True, help="release name, as given to helm install/template"
    )
    parser.add_argument(
        "--chart",
        type=Path,
        help="chart directory (default: the chart shipped with jobhash, or charts/autoroll "
        "of a source checkout)",
    )
    parser.add_argument(
        "-f",
        "--values",
        dest="files",
        action="append",
        type=Path,
        default=[],
        metavar="FILE",
        help="a values file, like helm -f (repeatable, later files win)",
    )
    for flag, dest, text in VALUE_FLAGS:
        parser.add_argument(flag, dest=dest, action="append", default=[], metavar="K=V", help=text)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="jobhash", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"jobhash {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    names = commands.add_parser(
        "names",
        help="print one row per rendered Job or CronJob",
        description="Print the name of every Job and CronJob the chart renders from jobGroups. "
        "-o json prints a list of {group, job, kind, name, hash, sha8} objects (a stable "
        "interface; hash is the full sha256 of the spec).",
    )
    _add_value_options(names)
    names.add_argument("-o", "--output", choices=("table", "json"), default="table")

    check = commands.add_parser(
        "check",
        help="exit 1 on a schema error, a guard violation or an invalid name (CI, pre-commit)",
        description="Load and validate the values, run the guard, and check every name is a "
        "DNS-1123 label within its limit (63 for a Job, 52 for a CronJob). Exit 0 when all is "
        "well, 1 with the reasons otherwise. Prints the chart's NOTES warnings (hook Jobs, TTL).",
    )
    _add_value_options(check)

    spec = commands.add_parser(
        "spec",
        help="print the canonical JSON (the hash input) of one job",
        description="Print the exact string that is hashed for one job: the Job .spec as "
        "Helm's mustToJson writes it.",
    )
    _add_value_options(spec)
    spec.add_argument("entry", metavar="GROUP/JOB", help="e.g. db/migrate")

    diff = commands.add_parser(
        "diff",
        help="compare two value sets: which Jobs re-run and why",
        description="Compare the jobGroups plan of two value sets (A: before, B: after).",
        epilog=DIFF_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_value_options(diff)
    _add_diff_options(diff)
    return parser


def _add_diff_options(diff: argparse.ArgumentParser) -> None:
    """``diff``'s own options: values, --set and --set-string for each side, and output."""
    for side, label in (("from", "A (before)"), ("to", "B (after)")):
        short = "-a" if side == "from" else "-b"
        diff.add_argument(
            f"--{side}-values",
            short,
            dest=f"{side}_files",
            action="append",
            type=Path,
            default=[],
            metavar="FILE",
            help=f"a values file for side {label} only",
        )
        for flag, dest, _ in VALUE_FLAGS:
            diff.add_argument(
                f"--{side}-{flag.removeprefix('--')}",
                dest=f"{side}_{dest}",
                action="append",
                default=[],
                metavar="K=V",
                help=f"{flag} for side {label} only",
            )
    diff.add_argument("-o", "--output", choices=("text", "json"), default="text")
    diff.add_argument(
        "--all", action="store_true", help="also list entries that do not change at all"
    )
    diff.add_argument(
        "--strict",
        action="store_true",
        help="exit 3 when a Job keeps its name but its pod template changes (Kubernetes "
        "would refuse the update); for CI",
    )


def _sources(args: argparse.Namespace, side: str = "") -> ValueSources:
    fields: dict[str, list[Any]] = {"files": list(args.files)}
    if side:
        fields["files"] += getattr(args, f"{side}_files")
    for _, dest, _ in VALUE_FLAGS:
        fields[dest] = list(getattr(args, dest))
        if side:
            fields[dest] += getattr(args, f"{side}_{dest}")
    return ValueSources(**fields)
