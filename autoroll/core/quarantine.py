"""The quarantine: a digest that halted a roll is not rolled onto anywhere else. Pure.

A halt (``autoroll.core.halt``) stops one workload. Without more, every other enrolled
workload on the same ``repository:tag`` still rolls onto the bad digest, one broken pod
each. So the digest a halted pod runs (or, for a pod that could not pull, the digest its
tag named when it was made) is *quarantined* for that ``repository:tag``: the guardrails
hold every deletion that would pull it (``autoroll.core.guardrails``, ``quarantined``),
until the tag moves to another digest or a person clears it::

    halt ─► condemned() ─► record() ─► the book (kept in the cluster: docs/adr/026)
                                         │
    a deletion onto (tag, digest) ◄──────┘ blocking() says which entry holds it
    the tag resolves to another digest ─► prune()
    a person clears it ─► clear(): kept, marked cleared, so the same halt never
                          quarantines that digest again (until the tag moves)

What quarantines, by the halt and what the halted pod runs for the container:

- ``failed-health-window``: a replacement on the target restarted or went unready inside
  its health window (a crash after Ready);
- ``crash-loop``: a pod on the target not Ready past ``ROLLOUT_HALTED_AFTER_SECONDS`` after
  restarting; ``not-ready`` the same without a restart (a readiness probe that never passes);
- ``failed-to-pull``: a pod with no image reported yet, made after the target was first
  seen (it pulled the tag while it named the target), not Ready past the bound.

A pod still on other content is never evidence against the target. The key is
``(host, repository, tag)`` (``QuarantineKey``): the same path on two registries is two
images.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum
from typing import Final

from autoroll.core.decision import RUNS_TARGET, Decision, PodState, Sighting
from autoroll.core.halt import HaltReason, RolloutHalt
from autoroll.core.images import CanonicalTag, TagRef
from autoroll.core.model import Digest, Enrolled, PodView

#: Entries kept at most: one per enrolled tag in practice; a bound keeps the object small
#: (a ConfigMap holds 1 MiB) whatever happens. The oldest go first.
MAX_ENTRIES: Final = 500
#: The command that clears one, as ``autoroll plan`` and the Events show it.
CLEAR_COMMAND: Final = "autoroll quarantine clear"


class QuarantineReason(StrEnum):
    """Why a digest was quarantined. Stable strings: Events, logs and ``autoroll plan``."""

    FAILED_HEALTH_WINDOW = "failed-health-window"
    CRASH_LOOP = "crash-loop"
    NOT_READY = "not-ready"
    FAILED_TO_PULL = "failed-to-pull"


@dataclass(frozen=True, slots=True, order=True)
class QuarantineKey(CanonicalTag):
    """A tag of a repository on one registry: what a quarantine is for. Build it with
    ``named`` (or ``of``), which normalises the host and repository as images are."""

    @classmethod
    def parse(cls, text: str) -> QuarantineKey:
        """``registry.example.org/team/app:latest`` → the key; ValueError naming the
        expected form. The host is required: the same path on two registries is two images."""
        host, slash, rest = text.strip().partition("/")
        repository, colon, tag = rest.rpartition(":")
        looks_like_host = "." in host or ":" in host or host == "localhost"
        if (
            not slash
            or not looks_like_host
            or not colon
            or not repository
            or not tag
            or "/" in tag
            or "@" in text
        ):
            raise ValueError(
                f"{text!r} is not <host>/<repository>:<tag> (for example"
                " registry.example.org/team/app:latest, as the pod's image names it, without a"
                " digest; autoroll plan prints each quarantined one in this form)"
            )
        return cls.named(host, repository, tag)


@dataclass(frozen=True, slots=True)
class QuarantineEntry:
    """One quarantined digest: which, for which tag, why, where it was seen failing, and,
    once a person cleared it, when (a cleared entry blocks nothing)."""

    key: QuarantineKey
    digest: Digest
    reason: QuarantineReason
    workload: str  # the halted workload's key
    pod: str
    detail: str
    at: datetime
    cleared_at: datetime | None = None

    @property
    def is_active(self) -> bool:
        return self.cleared_at is None

    def message(self) -> str:
        """What people read: the digest, the tag, why, and how to clear it."""
        return (
            f"{self.digest.short} is quarantined for {self.key}: {self.reason.value} on"
            f" {self.workload} (pod {self.pod}): {self.detail}; no other workload rolls onto"
            f" it until the tag moves or a person clears it ({CLEAR_COMMAND} {self.key})"
        )


@dataclass(frozen=True, slots=True)
class QuarantineBook:
    """Every entry by key, and the version of the object it was read from ("" when it was
    never stored): a write must name it (compare and swap)."""

    entries: Mapping[QuarantineKey, QuarantineEntry] = field(default_factory=dict)
    version: str = ""

    @property
    def active(self) -> tuple[QuarantineEntry, ...]:
        return tuple(e for _, e in sorted(self.entries.items()) if e.is_active)


EMPTY: Final = QuarantineBook()


def blocking(book: QuarantineBook, ref: TagRef, digest: Digest) -> QuarantineEntry | None:
    """The active entry that forbids rolling ``ref`` onto ``digest``, if any."""
    entry = book.entries.get(QuarantineKey.of(ref))
    if entry is None or not entry.is_active or entry.digest != digest:
        return None
    return entry


def condemned(
    halts: Iterable[tuple[Enrolled, Decision, RolloutHalt]],
    *,
    sightings: Mapping[TagRef, Sighting],
    now: datetime,
) -> list[QuarantineEntry]:
    """The (tag, digest) pairs these halts are evidence against (module docstring)."""
    found: dict[QuarantineKey, QuarantineEntry] = {}
    for item, decision, halt in halts:
        pod = next((p for p in item.pods if p.name == halt.pod), None)
        if pod is None:
            continue
        culprits = _culprit_containers(pod)
        for verdict in decision.containers:
            target = verdict.registry_digest
            if verdict.ref is None or not isinstance(target, Digest):
                continue
            if culprits and verdict.container not in culprits:
                continue  # another container of the pod is the one failing
            finding = next((f for f in verdict.pods if f.pod == pod.name), None)
            if finding is None:
                continue
            reason = _reason(halt, finding.state, pod, sightings.get(verdict.ref), target)
            if reason is None:
                continue
            key = QuarantineKey.of(verdict.ref)
            detail = halt.detail or f"{halt.restarts} restart(s), not Ready"
            found.setdefault(
                key, QuarantineEntry(key, target, reason, decision.key, pod.name, detail, now)
            )
    return [found[k] for k in sorted(found)]


def _culprit_containers(pod: PodView) -> frozenset[str]:
    """The containers of ``pod`` that restarted or are not ready (empty: cannot tell)."""
    return frozenset(s.name for s in pod.statuses if s.restart_count or not s.ready)


def _reason(
    halt: RolloutHalt,
    state: PodState,
    pod: PodView,
    sighting: Sighting | None,
    target: Digest,
) -> QuarantineReason | None:
    if state in RUNS_TARGET:
        if halt.reason is HaltReason.FAILED_HEALTH_WINDOW:
            return QuarantineReason.FAILED_HEALTH_WINDOW
        return QuarantineReason.CRASH_LOOP if halt.restarts else QuarantineReason.NOT_READY
    if state is not PodState.NO_DIGEST or halt.reason is not HaltReason.NOT_READY:
        return None
    # Nothing reported yet: a pull failure of the target only if the pod was made after the
    # target was first seen (it pulled the tag while it named the target); one older may
    # have pulled the old content, and then it says nothing of the target.
    pulled_target = (
        sighting is not None
        and sighting.digest == target
        and pod.uid not in sighting.older_uids
        and pod.created_at >= sighting.first_seen_at
    )
    return QuarantineReason.FAILED_TO_PULL if pulled_target else None


def record(
    book: QuarantineBook, found: Sequence[QuarantineEntry]
) -> tuple[QuarantineBook, tuple[QuarantineEntry, ...]]:
    """``book`` with the entries ``found`` added, and which of them are new. An entry for
    the same tag and digest is kept as it is (its first evidence, or a person's clearing);
    one for another digest of the tag is replaced."""
    entries = dict(book.entries)
    added: list[QuarantineEntry] = []
    for entry in found:
        before = entries.get(entry.key)
        if before is not None and before.digest == entry.digest:
            continue
        entries[entry.key] = entry
        added.append(entry)
    if len(entries) > MAX_ENTRIES:
        keep = sorted(entries.values(), key=lambda e: e.at, reverse=True)[:MAX_ENTRIES]
        entries = {e.key: e for e in keep}
    return replace(book, entries=entries), tuple(added)


def prune(book: QuarantineBook, resolved: Mapping[TagRef, Digest | object]) -> QuarantineBook:
    """Drop the entries whose tag the registry now resolves to another digest: a new push
    ends the quarantine (an unknown answer keeps it)."""
    moved = {
        QuarantineKey.of(ref)
        for ref, digest in resolved.items()
        if isinstance(digest, Digest)
        and (e := book.entries.get(QuarantineKey.of(ref))) is not None
        and e.digest != digest
    }
    if not moved:
        return book
    return replace(book, entries={k: e for k, e in book.entries.items() if k not in moved})


def clear(book: QuarantineBook, key: QuarantineKey, *, now: datetime) -> QuarantineBook:
    """``book`` with ``key``'s entry cleared by a person; KeyError when there is none."""
    entry = book.entries[key]
    if not entry.is_active:
        return book
    return replace(book, entries={**book.entries, key: replace(entry, cleared_at=now)})


__all__ = [
    "CLEAR_COMMAND",
    "EMPTY",
    "MAX_ENTRIES",
    "QuarantineBook",
    "QuarantineEntry",
    "QuarantineKey",
    "QuarantineReason",
    "blocking",
    "clear",
    "condemned",
    "prune",
    "record",
]
