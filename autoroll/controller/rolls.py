"""Which pods existed before autoroll's first deletion in each workload's current roll.

The loop guard (``autoroll.core.compare.guard``) spares a stale pod that may be the replacement
of a pod autoroll deleted, and only such a pod: one created after the target was first seen
*and* missing from the read autoroll made right before its first deletion in that
workload's roll. This is that memory, by workload key: the UIDs of that read, kept from the
first deletion until a pass finds the roll over (every judged container current), so a
later roll starts from nothing. It is memory that gates deletions, so it belongs to one
leadership term (``clear`` when a term ends: a new term starts from the cluster alone).

Beside it, for the health window (``autoroll.core.health``), the pods each pass of a roll saw
Ready, by UID, with the time they had become Ready: a replacement seen available that is
unready now failed inside its window. Kept only for the pods still listed, forgotten with
the roll and the term (a new term tells a slow start from a failure by restarts alone).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime

from autoroll.core.decide import Decision, Reason, Verdict
from autoroll.core.model import Enrolled

#: Verdicts that mean a roll is still under way (or cannot be told to be over).
_UNFINISHED = frozenset(
    {
        Verdict.STALE,
        Verdict.WAITING,
        Verdict.LOOP_GUARD,
        Verdict.NEEDS_CHILDREN,
        Verdict.NEEDS_CONTENT,
        Verdict.NEEDS_NODES,
    }
)
#: Skips that say nothing about whether the roll is over: the registry or a pod's content
#: could not be asked, or the pass looked at other tags.
_UNSURE = frozenset(
    {
        Reason.REGISTRY_UNKNOWN,
        Reason.NOT_IN_SCOPE,
        Reason.CHILDREN_UNKNOWN,
        Reason.TARGET_CONTENT_UNKNOWN,
        Reason.CONTENT_UNKNOWN,
        Reason.PLATFORM_UNKNOWN,
        Reason.SIGHTING_MISSING,
        Reason.NO_COMPARABLE_POD,
    }
)


def roll_is_over(decision: Decision) -> bool:
    """Does ``decision`` show its workload's roll finished: some container judged current
    and none stale, waiting, guarded, still asking or unsure?"""
    verdicts = decision.containers
    if any(v.verdict in _UNFINISHED or v.reason in _UNSURE for v in verdicts):
        return False
    return any(v.verdict is Verdict.CURRENT for v in verdicts)


class RollMemory:
    """The pods read before each workload's first deletion in its current roll."""

    def __init__(self) -> None:
        self._before: dict[str, frozenset[str]] = {}
        self._ready: dict[str, dict[str, datetime]] = {}

    def ready_seen(self, key: str) -> Mapping[str, datetime]:
        """The pods of ``key``'s current roll an earlier read saw Ready: UID -> Ready since."""
        return dict(self._ready.get(key, {}))

    def saw(self, item: Enrolled) -> None:
        """Remember which of a rolling workload's pods ``item`` shows Ready, and since when;
        forget those no longer listed. Nothing for a workload autoroll is not rolling."""
        key = item.workload.key
        if key not in self._before:
            return
        listed = {p.uid for p in item.pods if p.uid}
        seen = {uid: at for uid, at in self._ready.get(key, {}).items() if uid in listed}
        for pod in item.pods:
            if pod.uid and pod.ready and pod.ready_changed_at is not None:
                seen[pod.uid] = pod.ready_changed_at
        self._ready[key] = seen

    def rolled_from(self, key: str) -> frozenset[str] | None:
        """The UIDs read right before autoroll's first deletion in ``key``'s current roll,
        or None when it has deleted none."""
        return self._before.get(key)

    def deleting(self, fresh: Enrolled) -> None:
        """A deletion is about to be sent on the fresh read ``fresh``: the first of a roll
        remembers which pods that read listed; later ones keep the first's."""
        key = fresh.workload.key
        if key not in self._before:
            self._before[key] = frozenset(p.uid for p in fresh.pods if p.uid)

    def settle(self, decisions: Iterable[tuple[str, Decision]]) -> None:
        """Forget the rolls these decisions show over."""
        for key, decision in decisions:
            if key in self._before and roll_is_over(decision):
                del self._before[key]
                self._ready.pop(key, None)

    def clear(self) -> None:
        self._before.clear()
        self._ready.clear()

    def __len__(self) -> int:
        return len(self._before)


__all__ = ["RollMemory", "roll_is_over"]
