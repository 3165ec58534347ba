"""The guardrails' cluster-wide budget: deletions per period and workloads mid-roll (pure).

``autoroll.core.guardrails.plan_rolls`` asks the budget last, in priority order: at most
``deletions_per_period`` deletions in any period, and at most ``in_flight`` workloads
mid-roll, of which a workload already mid-roll needs no new slot; and, per namespace, at
most its share of each (``namespace_deletions``, ``namespace_in_flight``). A namespace counts
against the cluster-wide limits only up to its share, so one tenant's many workloads can never
take what the others need (``BudgetShares``).

What has been deleted in the last period is the shell's memory (``Deletion``s): its own
deletions and, as a term begins, the creation times of the enrolled pods created in the
period before (``pods_started``), which stand for a previous leader's deletions. Mid-roll is
read from the pods alone (``is_mid_roll``), so it survives restarts. See
docs/adr/016-guardrails.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final

from autoroll.core.compare import CREATION_TIMESTAMP_RESOLUTION
from autoroll.core.decision import RUNS_TARGET, Decision, DeletePod, PodState
from autoroll.core.holds import Hold, HoldReason
from autoroll.core.model import Digest, Enrolled, PodView
from autoroll.core.policy import Guardrails, format_duration

#: Mid-roll workloads named in a budget hold's detail, at most.
_NAMED: Final = 3


@dataclass(frozen=True, slots=True, order=True)
class Deletion:
    """A deletion the budget counts: when, and in which namespace ("" when not known: it
    counts cluster-wide only)."""

    at: datetime
    namespace: str = ""


@dataclass(frozen=True, slots=True)
class BudgetState:
    """The cluster-wide budget as this plan found and spent it (limits: 0 = unlimited)."""

    limit: int
    period: timedelta
    used: int  # deletions counted in the period before this pass
    granted: int  # deletions this plan lets go
    in_flight_limit: int
    mid_roll: tuple[str, ...]  # workloads mid-roll before this pass, by key
    frees_at: datetime | None = None  # when the next deletion is allowed, if the rate is spent

    @property
    def remaining(self) -> int | None:
        """Deletions still allowed in this period after the plan; None when unlimited."""
        return None if not self.limit else max(0, self.limit - self.used - self.granted)


def _namespace_of(key: str) -> str:
    """The namespace of a workload key (``namespace/kind/name``)."""
    return key.split("/", 1)[0]


class BudgetShares:
    """The budget as one plan spends it: cluster-wide counts, and per namespace (when
    shares are on) what each has used, which of its workloads hold slots, and how much of
    either counts against the cluster-wide limits (up to its share)."""

    def __init__(
        self, guardrails: Guardrails, recent: Sequence[Deletion], mid_roll: AbstractSet[str]
    ) -> None:
        self.guardrails = guardrails
        self.times: dict[str, list[datetime]] = {}
        for deletion in recent:
            self.times.setdefault(deletion.namespace, []).append(deletion.at)
        self.slots: dict[str, set[str]] = {}
        for key in mid_roll:
            self.slots.setdefault(_namespace_of(key), set()).add(key)

    def _counted(self, per_namespace: Mapping[str, int], share: int) -> int:
        """The cluster-wide count: each namespace up to its share (unknown ones in full)."""
        if not share:
            return sum(per_namespace.values())
        return sum(n if ns == "" else min(n, share) for ns, n in per_namespace.items())

    def hold(
        self,
        key: str,
        action: DeletePod,
        *,
        own: Sequence[datetime],
        go: Sequence[DeletePod],
        now: datetime,
    ) -> Hold | None:
        """The budget hold for this deletion, or None when it may go."""
        guardrails, namespace = self.guardrails, _namespace_of(key)
        here = self.times.get(namespace, [])
        if guardrails.deletions_per_period:
            counts = {ns: len(times) for ns, times in self.times.items()}
            used = self._counted(counts, guardrails.namespace_deletions)
            if used >= guardrails.deletions_per_period:
                frees = frees_at([*own, *([now] * len(go))], guardrails)
                return Hold(
                    key,
                    action,
                    HoldReason.BUDGET,
                    f"{used} of {guardrails.deletions_per_period} deletions in the"
                    f" last {format_duration(guardrails.period)} (ROLL_BUDGET_DELETIONS)",
                    frees,
                )
            share = guardrails.namespace_deletions
            if share and len(here) >= share:
                return Hold(
                    key,
                    action,
                    HoldReason.BUDGET,
                    f"namespace {namespace} has had {len(here)} of its share of {share}"
                    f" deletions in the last {format_duration(guardrails.period)}"
                    " (ROLL_BUDGET_DELETIONS_PER_NAMESPACE)",
                    frees_at(here, guardrails, limit=share),
                )
        mine = self.slots.get(namespace, set())
        if key in mine or not guardrails.in_flight:
            return None
        sizes = {ns: len(keys) for ns, keys in self.slots.items()}
        taken = self._counted(sizes, guardrails.namespace_in_flight)
        if taken >= guardrails.in_flight:
            every = sorted(k for keys in self.slots.values() for k in keys)
            named = ", ".join(every[:_NAMED])
            more = f" and {len(every) - _NAMED} more" if len(every) > _NAMED else ""
            return Hold(
                key,
                action,
                HoldReason.BUDGET,
                f"{taken} of {guardrails.in_flight} workloads mid-roll"
                f" ({named}{more}; ROLL_BUDGET_IN_FLIGHT)",
            )
        share = guardrails.namespace_in_flight
        if share and len(mine) >= share:
            named = ", ".join(sorted(mine)[:_NAMED])
            return Hold(
                key,
                action,
                HoldReason.BUDGET,
                f"namespace {namespace} has {len(mine)} of its share of {share} workloads"
                f" mid-roll ({named}; ROLL_BUDGET_IN_FLIGHT_PER_NAMESPACE)",
            )
        return None

    def granted(self, key: str, now: datetime) -> None:
        namespace = _namespace_of(key)
        self.times.setdefault(namespace, []).append(now)
        self.slots.setdefault(namespace, set()).add(key)


def is_mid_roll(decision: Decision, pods: Sequence[PodView]) -> bool:
    """Has this workload's roll begun and not finished, as its pods show it?

    For some container with a known target: a stale pod is left while another pod already
    runs the target or the workload is not settled (a replacement is on its way), or a pod
    running the target is not Ready (the last replacement is starting, or the new image does
    not start: the halt keeps its slot). Read from the pods alone, so a restart cannot lose
    it; a one-replica workload counts only once its replacement reports what it runs.
    """
    ready = {p.name for p in pods if p.ready and not p.deleting and not p.is_terminal}
    for verdict in decision.containers:
        if not isinstance(verdict.registry_digest, Digest):
            continue
        stale = any(f.state is PodState.STALE for f in verdict.pods)
        on_target = [f.pod for f in verdict.pods if f.state in RUNS_TARGET]
        if stale and (on_target or not decision.settledness.is_settled):
            return True
        if any(pod not in ready for pod in on_target):
            return True
    return False


def pods_started(items: Sequence[Enrolled], *, now: datetime, period: timedelta) -> list[Deletion]:
    """When the enrolled workloads' pods created in the last ``period`` were created: the
    evidence of deletions this process cannot remember (a deleted pod's replacement is one
    of them; so is anything else that started a pod). Each pod once; whole-second
    timestamps rounded up, since a pod stamped in the period's first second may have been
    created after the period began; a stamp beyond a period ahead is unreadable, not recent.
    """
    start = now - period
    created: dict[str, Deletion] = {}
    for enrolled in items:
        for pod in enrolled.pods:
            stamp = pod.created_at + CREATION_TIMESTAMP_RESOLUTION
            if start < stamp <= now + period:
                created[pod.uid or f"{pod.namespace}/{pod.name}"] = Deletion(stamp, pod.namespace)
    return sorted(created.values())


def frees_at(
    known: Sequence[datetime], guardrails: Guardrails, *, limit: int | None = None
) -> datetime | None:
    """When the period's count drops below the limit (the cluster-wide one unless given)
    again, if it is at the limit now."""
    limit = guardrails.deletions_per_period if limit is None else limit
    times = sorted(known)
    if not limit or len(times) < limit:
        return None
    return times[len(times) - limit] + guardrails.period


__all__ = [
    "BudgetShares",
    "BudgetState",
    "Deletion",
    "frees_at",
    "is_mid_roll",
    "pods_started",
]
