"""The commands, ``names``, ``check``, ``spec`` and ``diff``: the imperative shell.

Each loads the chart and the values, runs the plan (:mod:`jobhash.plan`) and writes its
answer; errors are raised as :class:`~jobhash.errors.JobhashError` and turned into a line and
an exit code by :func:`jobhash.cli.main`.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from typing import TextIO

from jobhash.cli_args import _sources
from jobhash.errors import RenderError, UsageError, ValuesError
from jobhash.names import name_problem, validate_release_name
from jobhash.plan import PlanItem, plan
from jobhash.values import Chart, LoadedValues, ValueSources, find_chart, key_path, load, load_chart

EXIT_OK = 0
EXIT_INVALID = 1
EXIT_USAGE = 2
EXIT_REFUSED = 3


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
