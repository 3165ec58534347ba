"""``autoroll plan``: one reconcile pass in dry-run, shown as a table a person can act on.

It is the same pass the server runs (``Reconciler`` with ``dry_run=True``), so what the
table says is what the controller would do right now — not a separate re-implementation
that could drift from it. Rendering is pure: ``render(report)`` turns a ``TickReport`` into
text.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from datetime import UTC, datetime

from prometheus_client import CollectorRegistry

from autoroll.controller.approvals import ApprovalBook, Approver
from autoroll.controller.credentials import PullCredentials
from autoroll.controller.reconciler import Reconciler, TickReport
from autoroll.core.approval import Approval
from autoroll.core.decide import ContainerVerdict, Decision, Reason, Settledness, Verdict
from autoroll.core.guardrails import RollPlan
from autoroll.core.holds import Hold
from autoroll.core.images import TagRef
from autoroll.core.model import ContainerRole, Digest, Enrolled, Unknown, WorkloadKind
from autoroll.core.policy import Guardrails, format_duration
from autoroll.core.ports import ClusterPort, NodePort, PresencePort, QuarantinePort, RegistryPort
from autoroll.edge.quarantine_view import quarantine_lines
from autoroll.edge.services import QuarantineHolds
from autoroll.instruments.metrics import Metrics

#: WORKLOAD is ``namespace/kind/name`` (``shop/statefulset/db``).
HEADERS = ("WORKLOAD", "CONTAINER", "IMAGE", "RUNNING", "REGISTRY", "VERDICT")
#: The column added when the registries said who answered: ``<registry> · <credential
#: source>`` (``imagePullSecret shop/regcred``, ``FORGEJO_TOKEN``, ``anonymous``), never a
#: secret; ``-`` when no credential got an answer.
ANSWERED_BY = "ANSWERED BY"


def run_plan(
    *,
    cluster: ClusterPort,
    registry: RegistryPort,
    registries: Collection[str],
    now: datetime | None = None,
    guardrails: Guardrails | None = None,
    nodes: NodePort | None = None,
    lookups_per_namespace: int = 0,
    credentials: PullCredentials | None = None,
    quarantine: QuarantinePort | None = None,
    approvals: ApprovalBook | None = None,
) -> TickReport:
    """One dry pass: decide everything, plan it with the guardrails, delete nothing (Nodes
    are read as a pass would). With ``approvals`` (pinning on: docs/adr/028) the pass also
    fills it with each workload's approved digests, as the controller's view would be.

    It is the view of a controller starting now: its min-age clock starts at this pass's
    sighting (a running controller's may be older), and its budget counts the pods the
    cluster shows created in the last period (the running one also knows its own deletions).
    The quarantine is read from its record (``quarantine``), never written.
    """
    approver = (
        Approver(
            book=approvals,
            guardrails=guardrails or Guardrails(),
            registries=registries,
            presence=registry if isinstance(registry, PresencePort) else None,
            # As the controller's view: a quarantined digest is never pinned to.
            holds=QuarantineHolds(lambda: reconciler.quarantine_book),
        )
        if approvals is not None
        else None
    )
    reconciler = Reconciler(
        cluster=cluster,
        nodes=nodes,
        registry=registry,
        metrics=Metrics(CollectorRegistry()),
        registries=registries,
        dry_run=True,
        clock=(lambda: now) if now is not None else (lambda: datetime.now(UTC)),
        guardrails=guardrails,
        lookups_per_namespace=lookups_per_namespace,
        credentials=credentials,
        quarantine=quarantine,  # dry-run: read, never written
        pinning=approvals is not None,
        approvals=approver,
    )
    return reconciler.tick()


def verdict_text(
    verdict: ContainerVerdict,
    settledness: Settledness | None = None,
    hold: Hold | None = None,
) -> str:
    """The VERDICT column: what would happen, and why, in a few words. A workload that is
    not settled names the clause that failed (``not-settled: rollout-in-progress``); a
    deletion the guardrails hold says which and why."""
    detail = f" ({verdict.detail})" if verdict.detail else ""
    match verdict.verdict:
        case Verdict.CURRENT:
            # The detail names pods running the target's content under another name.
            return f"current{detail}"
        case Verdict.STALE if hold is not None and hold.action.name == verdict.pod:
            return f"stale → pod {verdict.pod} held ({hold.reason.value}): {hold.detail}"
        case Verdict.STALE:
            return f"stale → would delete pod {verdict.pod}"
        case Verdict.WAITING:
            next_pod = f"{verdict.pod} is stale; " if verdict.pod else ""
            reason = verdict.reason.value
            if verdict.reason is Reason.NOT_SETTLED and settledness is not None:
                reason = f"{reason}: {settledness.reason.value}"
            return f"waiting: {next_pod}{reason}{detail}"
        case Verdict.LOOP_GUARD:
            return f"loop guard: {verdict.reason.value}{detail}"
        case _:
            return f"skipped: {verdict.reason.value}{detail}"


def _short(value: Digest | Unknown | None) -> str:
    if value is None:
        return "-"
    if isinstance(value, Digest):
        return value.short
    return f"unknown ({value.reason})"


def rows(
    decisions: Sequence[Decision],
    plan: RollPlan | None = None,
    sources: Mapping[str, Mapping[TagRef, str]] | None = None,
) -> list[tuple[str, ...]]:
    """One row per enrolled workload and container, in the report's order; with ``sources``
    (``TickReport.sources``) a last cell says which registry and credential answered."""
    table: list[tuple[str, ...]] = []
    for decision in decisions:
        hold = plan.hold_for(decision.key) if plan is not None else None
        for verdict in decision.containers:
            answered: tuple[str, ...] = ()
            if sources is not None:
                mine = sources.get(decision.key, {})
                answered = (mine.get(verdict.ref, "-") if verdict.ref is not None else "-",)
            running = ",".join(d.short for d in verdict.running_digests) or "-"
            container = verdict.container
            if verdict.role is not ContainerRole.CONTAINER:
                container = f"{container} ({verdict.role.value})"  # a sidecar, an init container
            table.append(
                (
                    decision.key,
                    container,
                    verdict.image,
                    running,
                    _short(verdict.registry_digest),
                    verdict_text(verdict, decision.settledness, hold),
                    *answered,
                )
            )
    return table


def render(
    report: TickReport,
    *,
    label_selector: str = "",
    kinds: Iterable[WorkloadKind] = tuple(WorkloadKind),
    approvals: ApprovalBook | None = None,
) -> str:
    """The plan as an aligned text table (or a one-line note when nothing is enrolled);
    ``kinds`` are the kinds watched (WORKLOAD_KINDS), named in that note; with
    ``approvals`` (pinning on), what new pods are pinned to, per workload and tag."""
    if not report.decisions:
        where = f" LABEL_SELECTOR={label_selector}" if label_selector else " the label selector"
        watched = _kind_list(kinds)
        return f"No {watched} matches{where}; nothing to roll.\n"
    sources = report.sources or None
    headers = (*HEADERS, ANSWERED_BY) if sources else HEADERS
    body = rows(report.decisions, report.plan, sources)
    widths = [max(len(row[i]) for row in [headers, *body]) for i in range(len(headers))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in [headers, *body]
    ]
    plan = report.plan
    deletions = len(plan.go) if plan is not None else sum(len(d.actions) for d in report.decisions)
    held = f"; {len(plan.holds)} held by the guardrails" if plan is not None and plan.holds else ""
    lines.append("")
    lines.append(
        f"{len(report.decisions)} workload(s); {deletions} pod(s) would be deleted now{held}."
    )
    if plan is not None:
        lines.extend(guardrail_lines(plan))
    lines.extend(quarantine_lines(report.quarantine))
    lines.extend(foreign_lines(report.enrolled))
    if approvals is not None:
        lines.extend(approval_lines([d.key for d in report.decisions], approvals))
    return "\n".join(lines) + "\n"


def approval_lines(keys: Sequence[str], book: ApprovalBook) -> list[str]:
    """What a new pod of each workload is pinned to at admission, per tag, and, while a
    newer digest is held, why and until when (docs/adr/028)."""
    found = [
        f"  {key}  {ref.repository}:{ref.tag}  {approval_text(approval)}"
        for key in keys
        for ref, approval in sorted(book.of(key).items())
    ]
    if not found:
        return []
    return ["New pods are pinned to (pinning):", *found]


def approval_text(approval: Approval) -> str:
    """``sha256:… (the target)``, or the digest held back and why the target is not yet."""
    pinned = approval.digest.short if approval.digest is not None else "not pinned"
    if approval.held_by is None:
        return f"{pinned} (the registry's digest)"
    target = approval.target.short if approval.target is not None else "unknown"
    until = (
        f", until {approval.until.isoformat(timespec='seconds')}"
        if approval.until is not None
        else ""
    )
    return f"{pinned}; {target} held ({approval.held_by.value}{until}): {approval.detail}"


def foreign_lines(enrolled: Iterable[Enrolled]) -> list[str]:
    """One line per pod a workload's selector matches but another controller (or none)
    controls: such a pod is never counted and never deleted, and this says why it is not in
    the table (a canary sharing the app's label, a Job's pod, a ``helm test`` pod)."""
    found = [
        f"  {item.workload.key}: pod {pod.name} matches the selector, controlled by"
        f" {pod.controlled_by}"
        for item in enrolled
        for pod in item.foreign
    ]
    if not found:
        return []
    return ["Not counted, never deleted (another controller's pods):", *found]


def guardrail_lines(plan: RollPlan) -> list[str]:
    """The footer about the guardrails: the budget, and every pause or unreadable annotation
    (said even when nothing waits on it, so a forgotten pause is seen)."""
    budget = plan.budget
    period = format_duration(budget.period)
    rate = (
        f"{budget.used + budget.granted} of {budget.limit} deletions in the last {period}"
        if budget.limit
        else "deletions unlimited"
    )
    if budget.limit and budget.remaining == 0 and budget.frees_at is not None:
        rate += f" (the next at {budget.frees_at.isoformat(timespec='seconds')})"
    flight = (
        f"{len(budget.mid_roll)} of {budget.in_flight_limit} workloads mid-roll"
        if budget.in_flight_limit
        else f"{len(budget.mid_roll)} workload(s) mid-roll (unlimited)"
    )
    lines = [f"Budget: {rate}; {flight}."]
    if plan.paused_globally:
        lines.append("PAUSED: rolling is paused cluster-wide (ROLL_PAUSED=true).")
    if plan.paused:
        lines.append(f"Paused by annotation: {', '.join(plan.paused)}.")
    for key in plan.invalid:
        problems = "; ".join(str(p) for p in plan.policies[key].problems)
        lines.append(f"NOT ROLLED, fix the annotation: {key}: {problems}.")
    return lines


def _kind_list(kinds: Iterable[WorkloadKind]) -> str:
    """``Deployment, StatefulSet or DaemonSet``: the watched kinds as the API names them."""
    names = [kind.api_kind for kind in WorkloadKind if kind in set(kinds)]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"
