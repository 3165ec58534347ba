"""Compare two plans: which Jobs re-run, which are renamed, new or gone, and why.

Pure: takes two plans (lists of :class:`~jobhash.plan.PlanItem`), returns :class:`Change`
records whose reasons are value paths in the effective values of the entry
(``image.tag v1 → v2``), split into fields that are hashed and fields that are not.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from jobhash.gojson import GoValue, marshal
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

    RERUN = "re-runs"  # the spec hash changed: a new Job under a new name
    RENAMED = "renamed"  # same spec, different name (release, fullname, hashSuffix, kind)
    UNCHANGED = "unchanged"  # same name: a no-op sync (non-hashed fields may differ)
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
        if a is None:
            outcome = Outcome.ADDED
        elif b is None:
            outcome = Outcome.REMOVED
        elif a.hash != b.hash:
            outcome = Outcome.RERUN
        elif a.name != b.name or a.kind != b.kind:
            outcome = Outcome.RENAMED
        else:
            outcome = Outcome.UNCHANGED
        changes.append(Change(key[0], key[1], outcome, a, b, fields))
    return changes


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
