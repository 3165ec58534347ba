"""How one pod's container compares with the target: the per-pod half of the core.

``compare_pod`` reads what the runtime reports (``imageID``) and says which ``PodState`` the
pod is in: current (the target, or a child of its index), mismatched or needing content
(the shell must fetch before the core can tell), stale (other content), or unknown. A name
is never evidence: another manifest is compared by the image configs both stand for
(``match_content``). ``guard`` then applies the loop guard to a stale finding. Pure, like
``autoroll.core.decide``, which calls these once per pod and container.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import timedelta
from enum import StrEnum

from autoroll.core.decision import PodFinding, PodState, Sighting
from autoroll.core.images import RunningImage, is_listed, parse_running_image
from autoroll.core.model import ContainerView, Digest, ImageContent, PodView, Unknown

#: The API server stamps ``creationTimestamp`` in whole seconds (RFC 3339, no fraction). Only
#: pods the sighting did not list itself are judged by their timestamp, rounded the safe way.
CREATION_TIMESTAMP_RESOLUTION = timedelta(seconds=1)
#: Registry answers a person can fix by granting the registry user read access.
_ACCESS_REASONS = frozenset({"unauthorized", "forbidden", "not-found"})


class ContentMatch(StrEnum):
    """How the configs a pod's reference stands for compare with the target's."""

    SAME = "same"  # every one is among the target's: the pod runs the target's content
    OTHER = "other"  # none is: the pod runs other content, whatever its node's platform
    PARTIAL = "partial"  # some are: which one the pod runs depends on its node's platform


def match_content(
    running: ImageContent, target: ImageContent, *, platform: str | None = None
) -> ContentMatch:
    """Does a pod whose reference stands for ``running`` run the target's content?

    containerd runs, of an index, the child for its node's platform, and names it by any
    reference it recorded for that child's config. So the pod's config is one of
    ``running.configs``: all among the target's is the target's content, none is other
    content. Some but not all (a multi-arch push that left some platforms unchanged) can be
    told only from the node's ``platform``, and only where both indexes give it one config
    (``ImageContent.config_for``); otherwise it stays ``PARTIAL``, which the core treats as
    unknown, never stale.
    """
    if running.configs <= target.configs:
        return ContentMatch.SAME
    if running.configs.isdisjoint(target.configs):
        return ContentMatch.OTHER
    if platform is not None:
        mine, theirs = running.config_for(platform), target.config_for(platform)
        if mine is not None and theirs is not None:
            return ContentMatch.SAME if mine == theirs else ContentMatch.OTHER
    return ContentMatch.PARTIAL


def compare_pod(
    pod: PodView,
    container: ContainerView,
    *,
    target: Digest,
    index_children: frozenset[Digest] | Unknown | None,
    contents: Mapping[Digest, ImageContent | Unknown],
    registries: Collection[str],
) -> PodFinding:
    """Compare one pod's container with the registry's digest (no loop guard yet)."""
    if pod.deleting:
        return PodFinding(pod.name, pod.uid, PodState.TERMINATING)
    if pod.spec_image(container.name) != container.image:
        # Pods of an older template are the Deployment controller's business.
        return PodFinding(pod.name, pod.uid, PodState.OLD_TEMPLATE)
    status = pod.status_of(container.name)
    running = parse_running_image(status.image_id) if status is not None else Unknown("no-status")
    if isinstance(running, Unknown):
        return PodFinding(pod.name, pod.uid, PodState.NO_DIGEST, running)
    if running.digest == target:
        return PodFinding(pod.name, pod.uid, PodState.CURRENT, running.digest, running)
    # Children first, a bare ``sha256:`` too: a runtime may report a platform child's
    # manifest digest (CRI-O does), with or without a repository, and no GET beyond the
    # index's tells it apart from a config ID.
    if not isinstance(index_children, frozenset):
        return PodFinding(pod.name, pod.uid, PodState.MISMATCH, running.digest, running)
    if running.digest in index_children:
        return PodFinding(pod.name, pod.uid, PodState.CURRENT_CHILD, running.digest, running)
    return _compare_content(pod, running, target=target, contents=contents, registries=registries)


def _compare_content(
    pod: PodView,
    running: RunningImage,
    *,
    target: Digest,
    contents: Mapping[Digest, ImageContent | Unknown],
    registries: Collection[str],
) -> PodFinding:
    """The name is not the target's: compare the image configs both stand for."""

    def found(state: PodState, note: str = "") -> PodFinding:
        return PodFinding(pod.name, pod.uid, state, running.digest, running, note)

    mine = _content_of(running, contents, registries=registries)
    if isinstance(mine, str):
        return found(PodState.CONTENT_UNKNOWN, mine)
    theirs = contents.get(target)
    if mine is None or theirs is None:
        return found(PodState.NEEDS_CONTENT)
    if isinstance(theirs, Unknown):
        return found(PodState.CONTENT_UNKNOWN, f"the target's image configs are {theirs}")
    if isinstance(mine, Unknown):
        return found(PodState.CONTENT_UNKNOWN, _unresolved_note(running, mine))
    return found(*_judge_content(pod, running, mine, theirs))


def _unresolved_note(running: RunningImage, mine: Unknown) -> str:
    """Why the pod's own image configs are not known, and what would fix it."""
    hint = (
        f"give autoroll's registry user read access to {running.repository},"
        " or delete the pod by hand"
        if mine.reason in _ACCESS_REASONS - {"not-found"}
        else (
            "the registry no longer holds it: Gitea and Forgejo drop a tag's previous"
            " manifest when the tag is pushed again, and autoroll knows its content"
            " only if it saw it as the target before; delete the pod by hand"
        )
        if mine.reason == "not-found"
        else "asked again next pass"
    )
    return (
        f"{running.reference} could not be resolved: {mine};"
        f" not rolled, not counted current ({hint})"
    )


def _judge_content(
    pod: PodView, running: RunningImage, mine: ImageContent, theirs: ImageContent
) -> tuple[PodState, str]:
    """The pod's state and note from both sides' image configs, both known."""
    reference = running.reference
    match match_content(mine, theirs, platform=pod.platform):
        case ContentMatch.SAME if not mine.configs <= theirs.configs:
            # Decided by the node's platform: its child is unchanged, other platforms moved.
            return (
                PodState.SAME_PLATFORM,
                f"its node's platform {pod.platform} has the same image in {reference} and"
                " in the target (only other platforms changed)",
            )
        case ContentMatch.SAME:
            return (
                PodState.SAME_CONTENT,
                f"runs the target's content under another name: {reference}",
            )
        case ContentMatch.OTHER:
            return PodState.STALE, ""
        case ContentMatch.PARTIAL:
            why = (
                "its node's platform, which autoroll reads only with PLATFORM_AWARE=true"
                if pod.platform is None
                else f"its node's platform {pod.platform}, which one of the two indexes does"
                " not name (or names twice)"
            )
            return (
                PodState.PLATFORM_UNKNOWN,
                f"{reference} shares only some platforms' image configs with the target (a"
                f" multi-arch push that left some platforms unchanged): which one the pod runs"
                f" depends on {why}; not rolled, not counted current (delete the pod by hand"
                " to replace it)",
            )


def guard(
    finding: PodFinding,
    pods: Sequence[PodView],
    sighting: Sighting,
    rolled_from: frozenset[str] | None = None,
) -> PodFinding:
    """Turn STALE into LOOP_GUARD for a pod that may replace one autoroll deleted: created
    after the target was first seen, and not among the pods read right before autoroll's
    first deletion in this workload's roll (``rolled_from``; None when it deleted none, so
    no pod can be its replacement).

    A pod the sighting's own pass had listed is surely older than the sighting. Any other
    pod is judged by ``creationTimestamp``, which has whole-second resolution: one stamped in
    the same second as the sighting may be younger than it (a replacement created
    milliseconds after a deletion), so it counts as created after. Whether a pod predates
    autoroll's first deletion is told by UIDs only (no clock is compared), so a pod the
    Deployment controller made for that deletion is never taken for an older one.
    """
    if finding.state is not PodState.STALE:
        return finding
    if finding.uid and finding.uid in sighting.older_uids:
        # Listed before the registry was asked: older than the sighting, whatever its stamp.
        return finding
    pod = next(p for p in pods if p.name == finding.pod)
    if pod.created_at + CREATION_TIMESTAMP_RESOLUTION <= sighting.first_seen_at:
        return finding
    if rolled_from is None or (finding.uid and finding.uid in rolled_from):
        # Not a replacement of autoroll's: made while the tag pointed elsewhere (a drain, a
        # scale-up, a revert within one poll), so it pulled other content. Rolling it cannot
        # loop: if its replacement comes back stale too, that one is guarded.
        return finding
    return PodFinding(finding.pod, finding.uid, PodState.LOOP_GUARD, finding.digest)


def _content_of(
    running: RunningImage,
    contents: Mapping[Digest, ImageContent | Unknown],
    *,
    registries: Collection[str],
) -> ImageContent | Unknown | str | None:
    """The image configs a pod's reference stands for: known, Unknown, None (not fetched
    yet), or, as text, why it can never be fetched."""
    reference = running.reference
    if running.is_config:
        # A bare config ID is exactly what the container runs.
        return ImageContent(frozenset({running.digest}))
    if running.host is None or running.repository is None:
        return (
            f"{reference} names no repository autoroll can read; not rolled, not counted"
            " current (delete the pod by hand to replace it)"
        )
    if not is_listed(running.host, registries):
        # Only the configured registries are asked; another host's copy cannot be resolved.
        return (
            f"{reference} is on another registry host than the configured ones"
            f" ({', '.join(sorted(registries))}), which autoroll does not ask; not rolled, not"
            " counted current (delete the pod by hand to replace it)"
        )
    return contents.get(running.digest)
