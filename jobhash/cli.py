"""Command-line entry point: preview, compare and check the chart's spec-hashed Job names.

Exit codes: 0 ok, 1 invalid values (Helm would refuse them, the chart would fail, or jobhash
cannot mirror them exactly), 2 usage (bad arguments, unreadable files), 3 ``diff --strict``
found a Job that keeps its name while its pod template changes (Kubernetes would refuse the
update). Errors go to stderr, name the file, the key path and the fix, and never show a
traceback.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from jobhash import __version__
from jobhash.errors import JobhashError, RenderError, UnmirrorableError, UsageError, ValuesError
from jobhash.goyaml_compose import MAX_VALUE_DEPTH
from jobhash.names import name_problem, validate_release_name
from jobhash.plan import PlanItem, plan
from jobhash.values import (
    Chart,
    LoadedValues,
    ValueSources,
    find_chart,
    key_path,
    load,
    load_chart,
)

EXIT_OK = 0
EXIT_INVALID = 1
EXIT_USAGE = 2
EXIT_REFUSED = 3

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
# them in Helm's order (jobhash.values.FLAGS), wherever they stand on the command line.
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


# ---------------------------------------------------------------------------------------------
# The imperative shell


def _chart(args: argparse.Namespace) -> Chart:
    return load_chart(find_chart(args.chart))


def _release(args: argparse.Namespace) -> str:
    release: str = args.release
    problem = validate_release_name(release)
    if problem:
        raise UsageError(f"--release {release!r}: {problem}")
    return release


def _plan(chart: Chart, release: str, sources: ValueSources) -> list[PlanItem]:
    loaded = load(chart, sources)
    return _plan_loaded(chart, release, loaded)


_MESSAGE_PATH = re.compile(r"^((?:jobDefaults|jobGroups)[^:\s]*):")


def _plan_loaded(chart: Chart, release: str, loaded: LoadedValues) -> list[PlanItem]:
    """Run the plan; a chart ``fail`` gets the source (file or --set) that set its key path."""
    try:
        return plan(loaded.values, release=release, chart_name=chart.name)
    except RenderError as err:
        match = _MESSAGE_PATH.match(err.message)
        if err.source or match is None:
            raise
        source = loaded.origin.source_of(key_path(match.group(1)))
        raise RenderError(err.message, source=source, fix=err.fix) from err


def _sources(args: argparse.Namespace, side: str = "") -> ValueSources:
    fields: dict[str, list[Any]] = {"files": list(args.files)}
    if side:
        fields["files"] += getattr(args, f"{side}_files")
    for _, dest, _ in VALUE_FLAGS:
        fields[dest] = list(getattr(args, dest))
        if side:
            fields[dest] += getattr(args, f"{side}_{dest}")
    return ValueSources(**fields)


def _item_json(item: PlanItem) -> dict[str, str]:
    return {
        "group": item.group,
        "job": item.job,
        "kind": item.kind,
        "name": item.name,
        "hash": item.hash,
        "sha8": item.sha8,
    }


def _table(rows: list[list[str]], out: TextIO) -> None:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=True)]
        out.write("  ".join(cells).rstrip() + "\n")


def cmd_names(args: argparse.Namespace, out: TextIO) -> int:
    items = _plan(_chart(args), _release(args), _sources(args))
    if args.output == "json":
        out.write(json.dumps([_item_json(item) for item in items], indent=2) + "\n")
        return EXIT_OK
    if not items:
        out.write("no Jobs or CronJobs rendered (jobGroups is empty or every entry disabled)\n")
        return EXIT_OK
    rows = [["GROUP/JOB", "KIND", "NAME", "HASH"]]
    rows += [[f"{i.group}/{i.job}", i.kind, i.name, i.sha8] for i in items]
    _table(rows, out)
    return EXIT_OK


def _warnings(item: PlanItem) -> list[str]:
    """The NOTES.txt warnings of ``autoroll.jobGroupsNotes`` for one entry."""
    if item.kind != "Job" or not item.values.get("hashSuffix"):
        return []
    out = []
    hooks = item.values.get("hooks") or {}
    systems = [
        label
        for key, label in (("argocd", "an Argo CD"), ("helm", "a Helm"))
        if isinstance(hooks, dict) and isinstance(hooks.get(key), dict) and hooks[key].get("hook")  # type: ignore[union-attr]
    ]
    entry = f"jobGroups.{item.group}.jobs.{item.job}"
    if systems:
        out.append(
            f"{entry} is a hash-named Job and also {' and '.join(systems)} hook: it runs on "
            "every sync even when its spec is unchanged"
        )
    if "ttlSecondsAfterFinished" in item.values:
        out.append(
            f"{entry} sets ttlSecondsAfterFinished on a hash-named Job: once the TTL deletes "
            "it, the next sync re-creates it and it runs again (docs/adr/012)"
        )
    return out


def cmd_check(args: argparse.Namespace, out: TextIO) -> int:
    chart = _chart(args)
    release = _release(args)
    loaded = load(chart, _sources(args))
    items = _plan_loaded(chart, release, loaded)
    controller = loaded.values.get("controller")
    if not (isinstance(controller, dict) and controller.get("enabled") is False):
        out.write(
            "note: controller.enabled is true; helm also checks the controller's own settings "
            "(secret, ingress, httpRoute, labelSelector/selfRoll), which jobhash does not; "
            "run helm lint or helm template for those\n"
        )
    problems = []
    for item in items:  # duplicate names already failed in the plan, as in the chart
        entry = f"jobGroups.{item.group}.jobs.{item.job}"
        problem = name_problem(item.name, item.kind)
        if problem:
            problems.append(f"{entry}: {item.kind} name {item.name!r} {problem}")
    for item in items:
        for warning in _warnings(item):
            out.write(f"warning: {warning}\n")
    if problems:
        raise ValuesError(
            "\n".join(problems),
            fix="names must be unique DNS-1123 labels (lowercase letters, digits, '-'): use "
            "such a release name / fullnameOverride, and group keys that differ in their first "
            "8 characters",
        )
    jobs = sum(1 for item in items if item.kind == "Job")
    out.write(f"ok: {jobs} Job(s), {len(items) - jobs} CronJob(s), every name valid\n")
    return EXIT_OK


def cmd_spec(args: argparse.Namespace, out: TextIO) -> int:
    group, sep, job = str(args.entry).partition("/")
    if not sep or not group or not job:
        raise UsageError(f"{args.entry!r}: give the entry as GROUP/JOB, e.g. db/migrate")
    items = _plan(_chart(args), _release(args), _sources(args))
    for item in items:
        if (item.group, item.job) == (group, job):
            out.write(item.spec + "\n")
            return EXIT_OK
    known = ", ".join(f"{i.group}/{i.job}" for i in items) or "none"
    raise UsageError(
        f"{args.entry}: no such rendered entry (disabled or not in jobGroups); rendered: {known}"
    )


def cmd_diff(args: argparse.Namespace, out: TextIO) -> int:
    from jobhash.diff import Outcome, compare, describe  # noqa: PLC0415 - only diff needs it

    chart = _chart(args)
    release = _release(args)
    before = _plan(chart, release, _sources(args, "from"))
    after = _plan(chart, release, _sources(args, "to"))
    changes = compare(before, after)
    refused = [c for c in changes if c.outcome is Outcome.REFUSED]
    if args.output == "json":
        rows = [
            {
                "group": c.group,
                "job": c.job,
                "outcome": c.outcome.value,
                "before": _item_json(c.before) if c.before else None,
                "after": _item_json(c.after) if c.after else None,
                "fields": [
                    {"path": f.path, "before": f.before, "after": f.after, "hashed": f.hashed}
                    for f in c.fields
                ],
                "template": [
                    {"path": f.path, "before": f.before, "after": f.after} for f in c.template
                ],
            }
            for c in changes
        ]
        out.write(json.dumps(rows, indent=2, ensure_ascii=False) + "\n")
    else:
        shown = [c for c in changes if args.all or c.outcome is not Outcome.UNCHANGED or c.fields]
        if not shown:
            out.write("no differences: every Job keeps its name and none runs again\n")
        for change in shown:
            out.write(describe(change) + "\n")
    if refused and args.strict:
        entries = ", ".join(c.key for c in refused)
        sys.stderr.write(
            f"jobhash: --strict: {len(refused)} Job(s) keep their name but change their pod "
            f"template ({entries}); Kubernetes would refuse the update (see the REFUSED lines)\n"
        )
        return EXIT_REFUSED
    return EXIT_OK


COMMANDS = {"names": cmd_names, "check": cmd_check, "spec": cmd_spec, "diff": cmd_diff}


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
        # The depth caps (goyaml_compose.MAX_VALUE_DEPTH) refuse deep values where they enter; this
        # is the last line, so a value no cap foresaw is still one line, never a traceback.
        sys.stderr.write(
            "jobhash: cannot mirror Helm exactly for these values: maps and lists nested too"
            f" deep to follow; jobhash follows at most {MAX_VALUE_DEPTH} levels\n"
        )
        return EXIT_INVALID
