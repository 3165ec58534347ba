"""Compare two plans: which Jobs re-run, which are renamed, new or gone, and why.

Pure: takes two plans (lists of :class:`~jobhash.plan.PlanItem`), returns :class:`Change`
records whose reasons are value paths in the effective values of the entry
(``image.tag v1 → v2``), split into fields that are hashed and fields that are not.

The guard: a Job whose name stays while its rendered pod template changes cannot be updated —
Kubernetes refuses it ("spec.template: field is immutable"), so ``helm upgrade`` fails and an
Argo CD sync fails and stays OutOfSync. With a hashed name only opted-out pod annotations
(``hashIncludePodAnnotations: false``) can do that; with ``hashSuffix: false`` any spec change
does. Such an entry is :attr:`Outcome.REFUSED`, and ``jobhash diff --strict`` exits non-zero.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from jobhash.gojson import GoValue, marshal
from jobhash.gotemplate import go_default, go_get
from jobhash.guards import delete_policies
from jobhash.plan import PlanItem

# Effective-value keys that never reach the hash (docs/jobhash-algorithm.md, section 2).
NOT_HASHED = frozenset(
    {
        "enabled",
        "hashSuffix",
        "metadataAnnotations",
        "hooks",
        "schedule",
        "timeZone",
        "concurrencyPolicy",
        "startingDeadlineSeconds",
        "successfulJobsHistoryLimit",
        "failedJobsHistoryLimit",
        "suspend",
    }
)


class Outcome(enum.Enum):
    """What happens to one entry when the values change from A to B."""

    RERUN = "re-runs"  # a new Job under a new name, or a hook re-created under its name
    RENAMED = "renamed"  # same spec, different name (release, fullname, hashSuffix, kind)
    UNCHANGED = "unchanged"  # same name, same rendered spec: a no-op sync
    UPDATED = "updated"  # a CronJob keeps its name, its jobTemplate changes in place
    REFUSED = "refused"  # a Job keeps its name, its pod template changes: Kubernetes refuses
    ADDED = "new"
    REMOVED = "removed"


@dataclass(frozen=True)
class FieldChange:
    """One differing value path of the effective values."""

    path: str
    before: str
    after: str
    hashed: bool

    def render(self) -> str:
        return f"{self.path} {self.before} → {self.after}"


@dataclass(frozen=True)
class Change:
    """The outcome for one ``group/job`` with its reasons."""

    group: str
    job: str
    outcome: Outcome
    before: PlanItem | None
    after: PlanItem | None
    fields: tuple[FieldChange, ...] = field(default=())
    # Paths of the rendered Job spec that differ although the name stays (spec.template...).
    template: tuple[FieldChange, ...] = field(default=())

    @property
    def key(self) -> str:
        return f"{self.group}/{self.job}"


UNSET = "(unset)"


def show(value: GoValue) -> str:
    """A value as a reader expects it: bare text for plain strings, JSON otherwise."""
    if isinstance(value, str) and value and value.isprintable() and " " not in value:
        return value
    return marshal(value)


def _is_hashed(path: str, before: PlanItem | None, after: PlanItem | None) -> bool:
    top = path.split(".", 1)[0].split("[", 1)[0]
    if top in NOT_HASHED:
        return False
    if top == "podAnnotations":
        return any(
            item is not None and bool(item.values.get("hashIncludePodAnnotations"))
            for item in (before, after)
        )
    return True


def value_changes(before: GoValue, after: GoValue, path: str = "") -> list[tuple[str, str, str]]:
    """Every leaf path whose value differs, as (path, before, after) display strings."""
    if isinstance(before, dict) and isinstance(after, dict):
        out: list[tuple[str, str, str]] = []
        for key in sorted(set(before) | set(after), key=lambda k: k.encode()):
            child = f"{path}.{key}" if path else key
            if key not in before:
                out.append((child, UNSET, show(after[key])))
            elif key not in after:
                out.append((child, show(before[key]), UNSET))
            else:
                out.extend(value_changes(before[key], after[key], child))
        return out
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        out = []
        for index, (old, new) in enumerate(zip(before, after, strict=True)):
            out.extend(value_changes(old, new, f"{path}[{index}]"))
        return out
    if marshal(before) == marshal(after):
        return []
    return [(path, show(before), show(after))]


def recreated_as_hook(values: GoValue) -> bool:
    """Is the Job a hook that Argo CD or Helm deletes before creating it again?

    Such a Job is never updated in place, so a changed pod template under the same name is
    not refused. Both tools delete before creation when no delete policy is given.
    """
    hooks = go_default(go_get(values, "hooks"), {}) if isinstance(values, dict) else {}
    if not isinstance(hooks, dict):
        return False
    for system, before_creation in (
        ("argocd", "BeforeHookCreation"),
        ("helm", "before-hook-creation"),
    ):
        settings = go_default(go_get(hooks, system), {})
        if not isinstance(settings, dict) or not go_get(settings, "hook"):
            continue
        policies = delete_policies(go_get(settings, "deletePolicy"))
        if not policies or before_creation in policies:
            return True
    return False


def _same_name(a: PlanItem, b: PlanItem) -> tuple[Outcome, tuple[FieldChange, ...]]:
    """The outcome when an entry keeps its kind and name: does its rendered spec change?"""
    old, new = a.job_spec(), b.job_spec()
    if marshal(old) == marshal(new):
        return Outcome.UNCHANGED, ()
    template = tuple(
        FieldChange(path, was, now, hashed=a.hash != b.hash)
        for path, was, now in value_changes(old, new, "spec")
    )
    if b.kind == "CronJob":
        return Outcome.UPDATED, template  # a CronJob's spec is mutable
    if recreated_as_hook(b.values):
        return Outcome.RERUN, template
    return Outcome.REFUSED, template


def compare(before: list[PlanItem], after: list[PlanItem]) -> list[Change]:
    """The outcome for every entry rendered on either side, sorted by group then job."""
    old = {(item.group, item.job): item for item in before}
    new = {(item.group, item.job): item for item in after}
    changes: list[Change] = []
    for key in sorted(set(old) | set(new), key=lambda k: (k[0].encode(), k[1].encode())):
        a, b = old.get(key), new.get(key)
        fields = tuple(
            FieldChange(path, was, now, _is_hashed(path, a, b))
            for path, was, now in value_changes(a.values if a else {}, b.values if b else {})
        )
        template: tuple[FieldChange, ...] = ()
        if a is None:
            outcome = Outcome.ADDED
        elif b is None:
            outcome = Outcome.REMOVED
        elif a.name == b.name and a.kind == b.kind:
            outcome, template = _same_name(a, b)
        elif a.hash != b.hash:
            outcome = Outcome.RERUN
        else:
            outcome = Outcome.RENAMED
        changes.append(Change(key[0], key[1], outcome, a, b, fields, template))
    return changes


def refusal_fixes(item: PlanItem) -> list[str]:
    """The ways out of a refused update, for the message (delete first always works)."""
    fixes = [
        f"delete the old Job first (kubectl delete job {item.name} -n <namespace>); the next "
        "sync creates it again under the same name and it runs once more"
    ]
    opted_out = item.values.get("hashSuffix") and not item.values.get("hashIncludePodAnnotations")
    if opted_out and go_get(item.values, "podAnnotations"):
        fixes.append(
            "hash the pod annotations (hashIncludePodAnnotations: true); the Job then gets "
            "a new name, so Helm / Argo CD create it afresh and prune the old one, and it "
            "runs again"
        )
    if not item.values.get("hashSuffix"):
        fixes.append(
            "hash the spec (hashSuffix: true), so a changed spec gets a new name and the old "
            "Job is pruned"
        )
        fixes.append(
            "make it a hook that is deleted before it is created again (hooks.argocd.hook with "
            "deletePolicy BeforeHookCreation, or hooks.helm.hook with before-hook-creation); it "
            "then runs on every sync"
        )
    return fixes


def describe(change: Change) -> str:
    """One human line (plus indented detail) for ``jobhash diff``."""
    a, b = change.before, change.after
    hashed = [f.render() for f in change.fields if f.hashed]
    other = [f.render() for f in change.fields if not f.hashed]
    if change.outcome is Outcome.ADDED and b is not None:
        return f"{change.key}: new {b.kind}, runs as {b.name}"
    if change.outcome is Outcome.REMOVED and a is not None:
        return f"{change.key}: no longer rendered (was {a.kind} {a.name})"
    assert a is not None and b is not None
    template = ", ".join(f.render() for f in change.template)
    if change.outcome is Outcome.REFUSED:
        lines = [
            f"{change.key}: REFUSED — keeps the name {b.name} but its pod template changes: "
            f"{template}",
            "    Kubernetes will refuse this update: a Job's pod template is immutable "
            '("spec.template: field is immutable"), so helm upgrade fails, and an Argo CD sync '
            "fails and stays OutOfSync.",
            "    Choose one:",
        ]
        lines += [f"      - {fix}" for fix in refusal_fixes(b)]
        return "\n".join(lines)
    if change.outcome is Outcome.UPDATED:
        return (
            f"{change.key}: CronJob {b.name} keeps its name, its job template changes in place "
            f"({template}); the next scheduled run uses it"
        )
    if change.outcome is Outcome.RERUN and a.name == b.name:
        return (
            f"{change.key}: hook Job {b.name} keeps its name and changes ({template}); it is "
            "deleted and created again (BeforeHookCreation / before-hook-creation) — runs again"
        )
    if change.outcome is Outcome.RERUN:
        reasons = ", ".join(hashed) or "the hashed spec changed"
        text = f"{change.key}: {reasons}, new name {b.name} (was {a.name}) — runs again"
    elif change.outcome is Outcome.RENAMED:
        reasons = ", ".join(other) or "the release/fullname part changed"
        text = f"{change.key}: same spec, {reasons}, new name {b.name} (was {a.name}) — runs again"
    else:
        text = f"{change.key}: unchanged, {b.name} does not run again"
        if other:
            text += " (not hashed: " + ", ".join(other) + ")"
        return text
    if other:
        text += "\n    not hashed: " + ", ".join(other)
    if a.kind != b.kind:
        text += f"\n    kind: {a.kind} → {b.kind}"
    return text
