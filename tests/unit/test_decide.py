"""Table tests for the pure decision core: at least one case per rule of issue 5.

Each case builds a Deployment, its pods and the registry's answers, and states the verdict,
reason and deletion it expects. Breaking any rule in ``autoroll.core.decide`` flips at least
one row here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

import pytest

from autoroll.controller.rolls import RollMemory
from autoroll.core.decide import (
    ChildrenRequest,
    ContentMatch,
    ContentRequest,
    Decision,
    PodState,
    Reason,
    SettledReason,
    Sighting,
    Verdict,
    decide,
    is_settled,
    match_content,
)
from autoroll.core.images import TagRef
from autoroll.core.model import (
    ContainerStatusView,
    ContainerView,
    Digest,
    Enrolled,
    ImageContent,
    PodView,
    Unknown,
    WorkloadView,
)
from autoroll.core.selection import refs_to_resolve
from autoroll.core.sightings import listed_uids, observe_targets
from tests.support.views import deployment_view, pod_view

HOST = "forgejo.example:3000"
IMAGE = f"{HOST}/team/app:latest"
REF = TagRef(HOST, "team/app", "latest")
SIDE_IMAGE = f"{HOST}/team/sidecar:stable"
SIDE_REF = TagRef(HOST, "team/sidecar", "stable")

OLD = Digest("sha256:" + "0" * 64)
NEW = Digest("sha256:" + "1" * 64)
CHILD = Digest("sha256:" + "2" * 64)
OTHER = Digest("sha256:" + "3" * 64)


def config(n: int) -> Digest:
    """An image config digest (``c`` + the number), distinct from every manifest digest here."""
    return Digest(f"sha256:c{n:063x}")


# The foreign-reference rows: a mirror repository that sorts before team/app holds NEW's
# config under a Docker-format manifest; a multi-arch build is an OCI index (NEW) and a
# Docker list of the same children's configs (DLIST).
FOREIGN = Digest("sha256:" + "4" * 64)
MIRROR_ID = f"{HOST}/aaa/mirror@{FOREIGN}"
DLIST = Digest("sha256:" + "5" * 64)
AMD, ARM = Digest("sha256:" + "6" * 64), Digest("sha256:" + "7" * 64)
AMD_CFG, ARM_CFG, ARM_OLD_CFG = config(0xA), config(0xB), config(0xC)
BUILD = ImageContent(
    frozenset({AMD_CFG, ARM_CFG}), (("linux/amd64", AMD_CFG), ("linux/arm64", ARM_CFG))
)
BUILD_AS_LIST = ImageContent(frozenset({AMD_CFG, ARM_CFG}))
#: An older build whose amd64 image was left unchanged by the multi-arch push.
HALF_OLD = ImageContent(
    frozenset({AMD_CFG, ARM_OLD_CFG}), (("linux/amd64", AMD_CFG), ("linux/arm64", ARM_OLD_CFG))
)

#: Outside the foreign-reference rows every manifest stands for its own config: digests
#: that differ are different content, as they were before content was compared.
OWN_CONTENT: dict[Digest, ImageContent | Unknown] = {
    d: ImageContent(frozenset({config(i)})) for i, d in enumerate([OLD, NEW, CHILD, OTHER])
}
FOREIGN_SAME: dict[Digest, ImageContent | Unknown] = {**OWN_CONTENT, FOREIGN: OWN_CONTENT[NEW]}

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
SEEN = T0 + timedelta(hours=1)  # when NEW was first seen for REF
BEFORE = T0  # pods created before the target was seen
AFTER = SEEN + timedelta(minutes=5)  # pods created after


def pod(
    name: str,
    *,
    digest: Digest | str | None = OLD,
    image: str = IMAGE,
    created: datetime = BEFORE,
    ready: bool = True,
    deleting: bool = False,
    phase: str = "Running",
    container: str = "app",
    extra: Sequence[tuple[str, str, Digest | str]] = (),
) -> PodView:
    """A pod of the app Deployment; ``digest`` None means no status reported yet."""
    image_id = f"{HOST}/team/app@{digest}" if isinstance(digest, Digest) else digest
    flags: dict[str, Any] = {"deleting": deleting, "phase": phase, "container": container}
    base = pod_view(name, image, image_id, created=created, ready=ready, **flags)
    specs = [ContainerView(name_, image_) for name_, image_, _ in extra]
    statuses = [
        ContainerStatusView(
            name_, image_, f"{HOST}/x@{digest_}" if isinstance(digest_, Digest) else digest_, ready
        )
        for name_, image_, digest_ in extra
    ]
    return replace(
        base, containers=(*base.containers, *specs), statuses=(*base.statuses, *statuses)
    )


def deployment(*containers: ContainerView, replicas: int = 2, name: str = "app") -> WorkloadView:
    return deployment_view(
        namespace="ns",
        name=name,
        replicas=replicas,
        containers=containers or (ContainerView("app", IMAGE, "Always"),),
    )


@dataclass(frozen=True)
class Case:
    id: str
    rule: str
    pods: Sequence[PodView]
    verdict: Verdict
    reason: Reason
    deletes: str | None = None
    deployment: WorkloadView = field(default_factory=deployment)
    resolved: Mapping[TagRef, Digest | Unknown] = field(default_factory=lambda: {REF: NEW})
    sightings: Mapping[TagRef, Sighting] = field(default_factory=lambda: {REF: Sighting(NEW, SEEN)})
    children: Mapping[Digest, frozenset[Digest] | Unknown] = field(
        default_factory=lambda: {NEW: frozenset()}
    )
    contents: Mapping[Digest, ImageContent | Unknown] = field(
        default_factory=lambda: dict(OWN_CONTENT)
    )
    container: int = 0
    # The pods read before autoroll's first deletion in this roll: by default it has deleted
    # and none of these pods was among them, so any pod made after the sighting may be the
    # replacement of its own (the strictest loop guard); None: it has deleted nothing.
    rolled_from: frozenset[str] | None = frozenset()
    pinning: bool = False  # the pinning webhook is on (docs/adr/028)


#: A pod the pinning webhook admitted: the template's image with ``@`` and the digest.
def pinned(digest: Digest) -> str:
    return f"{IMAGE}@{digest}"


CASES = [
    # --- which containers count -------------------------------------------------------------
    Case(
        "other-host-ignored",
        "only images on FORGEJO_HOST",
        [pod("a"), pod("b")],
        Verdict.SKIPPED,
        Reason.OTHER_HOST,
        deployment=deployment(ContainerView("app", "docker.io/library/nginx:latest", "Always")),
    ),
    Case(
        "host-compare-is-case-insensitive",
        "only images on FORGEJO_HOST",
        [
            pod("a", image=f"{HOST.upper()}/team/app:latest"),
            pod("b", digest=NEW, image=f"{HOST.upper()}/team/app:latest"),
        ],
        Verdict.STALE,
        Reason.STALE_POD,
        deletes="a",
        deployment=deployment(ContainerView("app", f"{HOST.upper()}/team/app:latest", "Always")),
    ),
    Case(
        "digest-pinned-ignored",
        "tag-referenced only; digest-pinned ignored",
        [pod("a"), pod("b")],
        Verdict.SKIPPED,
        Reason.DIGEST_PINNED,
        deployment=deployment(ContainerView("app", f"{HOST}/team/app@{OLD}", "Always")),
    ),
    Case(
        "tag-and-digest-is-pinned",
        "tag-referenced only; digest-pinned ignored",
        [pod("a"), pod("b")],
        Verdict.SKIPPED,
        Reason.DIGEST_PINNED,
        deployment=deployment(ContainerView("app", f"{HOST}/team/app:latest@{OLD}", "Always")),
    ),
    Case(
        "pull-policy-if-not-present-never-rolled",
        "pullPolicy != Always: never rolled, warning",
        [pod("a"), pod("b")],
        Verdict.SKIPPED,
        Reason.PULL_POLICY_NOT_ALWAYS,
        deployment=deployment(ContainerView("app", IMAGE, "IfNotPresent")),
    ),
    Case(
        "pull-policy-unset-never-rolled",
        "pullPolicy != Always: never rolled, warning",
        [pod("a"), pod("b")],
        Verdict.SKIPPED,
        Reason.PULL_POLICY_NOT_ALWAYS,
        deployment=deployment(ContainerView("app", IMAGE, "")),
    ),
    Case(
        "invalid-image-skipped",
        "which containers count",
        [pod("a"), pod("b")],
        Verdict.SKIPPED,
        Reason.INVALID_IMAGE,
        deployment=deployment(ContainerView("app", f"{HOST}/Team/App:latest", "Always")),
    ),
    # --- the registry -----------------------------------------------------------------------
    Case(
        "registry-unknown-skips",
        "registry unknown -> skip, never changed",
        [pod("a"), pod("b")],
        Verdict.SKIPPED,
        Reason.REGISTRY_UNKNOWN,
        resolved={REF: Unknown("http-500")},
    ),
    Case(
        "registry-not-asked-skips",
        "a tag a targeted pass did not ask about -> skip quietly, never changed",
        [pod("a"), pod("b")],
        Verdict.SKIPPED,
        Reason.NOT_IN_SCOPE,
        resolved={},
    ),
    # --- pinned pods (docs/adr/028) ----------------------------------------------------------
    Case(
        "pinned-to-the-target-is-current-whatever-the-runtime-names",
        "a pod pinned to the target digest is current",
        [
            pod("a", digest=MIRROR_ID, image=pinned(NEW)),
            pod("b", digest=None, image=pinned(NEW)),  # not started yet: the pin says it
        ],
        Verdict.CURRENT,
        Reason.UP_TO_DATE,
        contents={},  # nothing to fetch: the pin is the target
    ),
    Case(
        "pinned-to-the-old-approval-is-stale-and-rolls",
        "when approval moves, pods pinned to the old digest are stale and roll as today",
        [pod("a", digest=NEW, image=pinned(NEW)), pod("b", image=pinned(OLD))],
        Verdict.STALE,
        Reason.STALE_POD,
        deletes="b",
    ),
    Case(
        "pinned-to-neither-is-compared-by-content",
        "a pod pinned to neither digest is handled like any other running digest",
        [pod("a", digest=NEW, image=pinned(NEW)), pod("b", digest=OTHER, image=pinned(OTHER))],
        Verdict.NEEDS_CONTENT,
        Reason.CONTENT_NEEDED,
        contents={NEW: OWN_CONTENT[NEW]},
    ),
    Case(
        "pinned-to-neither-with-other-content-rolls",
        "a pod pinned to neither digest is handled like any other running digest",
        [pod("a", digest=NEW, image=pinned(NEW)), pod("b", digest=OTHER, image=pinned(OTHER))],
        Verdict.STALE,
        Reason.STALE_POD,
        deletes="b",
    ),
    Case(
        "pinned-to-neither-with-the-target-s-content-is-current",
        "a pod pinned to neither digest is handled like any other running digest",
        [pod("a", digest=NEW, image=pinned(NEW)), pod("b", image=pinned(FOREIGN))],
        Verdict.CURRENT,
        Reason.UP_TO_DATE,
        contents=FOREIGN_SAME,
    ),
    Case(
        "another-tag-pinned-is-an-older-template",
        "only the template's own image with @digest counts as pinned",
        [pod("a", image=f"{HOST}/team/app:v1@{OLD}"), pod("b", digest=NEW)],
        Verdict.CURRENT,
        Reason.UP_TO_DATE,
    ),
    Case(
        "if-not-present-rolls-with-pinning",
        "with pinning, IfNotPresent is rolled: the replacement is pinned to its digest",
        [pod("a", digest=NEW, image=pinned(NEW)), pod("b")],
        Verdict.STALE,
        Reason.STALE_POD,
        deletes="b",
        deployment=deployment(ContainerView("app", IMAGE, "IfNotPresent")),
        pinning=True,
    ),
    Case(
        "never-is-never-rolled-even-with-pinning",
        "with pinning, Never is still not rolled (the kubelet would not pull the pin)",
        [pod("a"), pod("b")],
        Verdict.SKIPPED,
        Reason.PULL_POLICY_NOT_ALWAYS,
        deployment=deployment(ContainerView("app", IMAGE, "Never")),
        pinning=True,
    ),
    # --- current / stale ----------------------------------------------------------------------
    Case(
        "all-current",
        "stale only when digests differ",
        [pod("a", digest=NEW), pod("b", digest=NEW)],
        Verdict.CURRENT,
        Reason.UP_TO_DATE,
    ),
    Case(
        "stale-deleted-when-settled",
        "stale + settled -> delete one",
        [pod("a", digest=NEW), pod("b")],
        Verdict.STALE,
        Reason.STALE_POD,
        deletes="b",
    ),
    Case(
        "oldest-stale-goes-first",
        "at most one deletion per tick",
        [pod("young", created=BEFORE + timedelta(minutes=1)), pod("old", created=BEFORE)],
        Verdict.STALE,
        Reason.STALE_POD,
        deletes="old",
    ),
    Case(
        "docker-pullable-prefix-stripped",
        "imageID forms",
        [pod("a", digest=f"docker-pullable://{HOST}/team/app@{NEW}"), pod("b", digest=NEW)],
        Verdict.CURRENT,
        Reason.UP_TO_DATE,
    ),
    Case(
        "child-digest-is-current",
        "pod digest among index children -> current",
        [pod("a", digest=CHILD), pod("b", digest=NEW)],
        Verdict.CURRENT,
        Reason.UP_TO_DATE,
        children={NEW: frozenset({CHILD})},
    ),
    Case(
        "not-a-child-is-stale",
        "stale = differ and not a child",
        [pod("a", digest=OTHER), pod("b", digest=NEW)],
        Verdict.STALE,
        Reason.STALE_POD,
        deletes="a",
        children={NEW: frozenset({CHILD})},
    ),
    Case(
        "mismatch-without-children-asks-for-them",
        "GET index children only on a mismatch",
        [pod("a"), pod("b", digest=NEW)],
        Verdict.NEEDS_CHILDREN,
        Reason.CHILDREN_NEEDED,
        children={},
    ),
    Case(
        "children-unknown-skips",
        "unknown never means changed (children)",
        [pod("a"), pod("b", digest=NEW)],
        Verdict.SKIPPED,
        Reason.CHILDREN_UNKNOWN,
        children={NEW: Unknown("timeout")},
    ),
    # --- pods that are not compared ---------------------------------------------------------
    Case(
        "old-template-pod-not-compared",
        "only pods with the template's image string",
        [pod("a", image=f"{HOST}/team/app:v1"), pod("b", digest=NEW)],
        Verdict.CURRENT,
        Reason.UP_TO_DATE,
    ),
    Case(
        "only-old-template-pods",
        "only pods with the template's image string",
        [pod("a", image=f"{HOST}/team/app:v1"), pod("b", image=f"{HOST}/team/app:v1")],
        Verdict.SKIPPED,
        Reason.NO_COMPARABLE_POD,
    ),
    Case(
        "failed-pod-ignored",
        "Succeeded/Failed pods ignored",
        [pod("a", digest=NEW), pod("b", digest=NEW), pod("evicted", phase="Failed", ready=False)],
        Verdict.CURRENT,
        Reason.UP_TO_DATE,
    ),
    Case(
        "succeeded-pod-ignored-and-not-deleted",
        "Succeeded/Failed pods ignored",
        [pod("a", digest=NEW), pod("b", digest=NEW), pod("done", phase="Succeeded", ready=False)],
        Verdict.CURRENT,
        Reason.UP_TO_DATE,
    ),
    Case(
        "no-image-id-skipped",
        "pod with no resolved imageID skipped",
        [pod("a", digest=""), pod("b", digest=None)],
        Verdict.SKIPPED,
        Reason.NO_COMPARABLE_POD,
    ),
    Case(
        "docker-scheme-config-id-never-deleted",
        "docker:// bare image ID is unknown (a config or an index digest, by Docker's store)",
        [pod("a", digest=f"docker://{OTHER}"), pod("b", digest=NEW)],
        Verdict.CURRENT,
        Reason.UP_TO_DATE,
    ),
    # --- stale means "runs other content" (issue 12) ---------------------------------------
    # containerd names the alphabetically first reference it recorded for the pod's config.
    Case(
        "foreign-reference-to-the-same-config-is-current",
        "same config under another repository's manifest: current, never stale",
        [pod("a", digest=MIRROR_ID), pod("b", digest=NEW)],
        Verdict.CURRENT,
        Reason.UP_TO_DATE,
        contents=FOREIGN_SAME,
    ),
    Case(
        "foreign-reference-only-pods-are-current-after-a-restart",
        "same config: current whoever listed the pods (a restarted controller's sighting)",
        [
            pod("a", digest=MIRROR_ID),
            pod("b", digest=MIRROR_ID, created=BEFORE + timedelta(seconds=1)),
        ],
        Verdict.CURRENT,
        Reason.UP_TO_DATE,
        sightings={REF: Sighting(NEW, SEEN, frozenset({"uid-a", "uid-b"}))},
        contents=FOREIGN_SAME,
    ),
    Case(
        "foreign-reference-of-replacements-is-not-a-loop",
        "same config on pods created after the sighting: current, not the loop guard",
        [pod("a", digest=MIRROR_ID, created=AFTER), pod("b", digest=MIRROR_ID, created=AFTER)],
        Verdict.CURRENT,
        Reason.UP_TO_DATE,
        contents=FOREIGN_SAME,
    ),
    Case(
        "foreign-reference-needs-no-sighting",
        "same config is never stale, so the missing sighting does not matter",
        [pod("a", digest=MIRROR_ID), pod("b", digest=NEW)],
        Verdict.CURRENT,
        Reason.UP_TO_DATE,
        sightings={},
        contents=FOREIGN_SAME,
    ),
    Case(
        "foreign-reference-to-the-old-config-is-stale",
        "a real push still rolls: the foreign name stands for the old config",
        [pod("a", digest=MIRROR_ID), pod("b", digest=NEW)],
        Verdict.STALE,
        Reason.STALE_POD,
        deletes="a",
        contents={**OWN_CONTENT, FOREIGN: ImageContent(frozenset({config(0)}))},
    ),
    Case(
        "docker-list-of-the-same-build-is-current",
        "an OCI index and a Docker list of one build in the same repository: current",
        [pod("a", digest=f"{HOST}/team/app@{DLIST}"), pod("b", digest=NEW)],
        Verdict.CURRENT,
        Reason.UP_TO_DATE,
        children={NEW: frozenset({AMD, ARM})},
        contents={NEW: BUILD, DLIST: BUILD_AS_LIST},
    ),
    Case(
        "index-sharing-some-platforms-is-platform-unknown",
        "partial overlap without the node's platform: unknown, never stale",
        [pod("a", digest=MIRROR_ID), pod("b", digest=NEW)],
        Verdict.SKIPPED,
        Reason.PLATFORM_UNKNOWN,
        children={NEW: frozenset({AMD, ARM})},
        contents={NEW: BUILD, FOREIGN: HALF_OLD},
    ),
    Case(
        "index-sharing-some-platforms-on-a-changed-platform-is-stale",
        "partial overlap with the node's platform (issue 18's seam): its config decides",
        [replace(pod("a", digest=MIRROR_ID), platform="linux/arm64"), pod("b", digest=NEW)],
        Verdict.STALE,
        Reason.STALE_POD,
        deletes="a",
        children={NEW: frozenset({AMD, ARM})},
        contents={NEW: BUILD, FOREIGN: HALF_OLD},
    ),
    Case(
        "index-sharing-some-platforms-on-an-unchanged-platform-is-current",
        "partial overlap with the node's platform (issue 18's seam): its config decides",
        [replace(pod("a", digest=MIRROR_ID), platform="linux/amd64"), pod("b", digest=NEW)],
        Verdict.CURRENT,
        Reason.UP_TO_DATE,
        children={NEW: frozenset({AMD, ARM})},
        contents={NEW: BUILD, FOREIGN: HALF_OLD},
    ),
    Case(
        "index-sharing-some-platforms-on-an-unnamed-platform-is-platform-unknown",
        "partial overlap, a platform neither index names: unknown, never stale",
        [replace(pod("a", digest=MIRROR_ID), platform="linux/s390x"), pod("b", digest=NEW)],
        Verdict.SKIPPED,
        Reason.PLATFORM_UNKNOWN,
        children={NEW: frozenset({AMD, ARM})},
        contents={NEW: BUILD, FOREIGN: HALF_OLD},
    ),
    Case(
        "foreign-reference-on-another-host-is-content-unknown",
        "a reference on another host cannot be resolved: unknown, never stale",
        [pod("a", digest=f"docker.io/team/app@{FOREIGN}"), pod("b", digest=NEW)],
        Verdict.SKIPPED,
        Reason.CONTENT_UNKNOWN,
        contents={},
    ),
    Case(
        "foreign-reference-without-a-readable-name-is-content-unknown",
        "a reference whose repository does not parse cannot be resolved: unknown",
        [pod("a", digest=f"{HOST}/Team/App@{FOREIGN}"), pod("b", digest=NEW)],
        Verdict.SKIPPED,
        Reason.CONTENT_UNKNOWN,
        contents={},
    ),
    Case(
        "foreign-reference-that-cannot-be-resolved-is-content-unknown",
        "the registry could not resolve the pod's reference: unknown, never stale",
        [pod("a", digest=MIRROR_ID), pod("b", digest=NEW)],
        Verdict.SKIPPED,
        Reason.CONTENT_UNKNOWN,
        contents={**OWN_CONTENT, FOREIGN: Unknown("forbidden", "HTTP 403")},
    ),
    Case(
        "target-content-unknown-skips",
        "the target's configs unknown: nothing can be called stale",
        [pod("a"), pod("b", digest=NEW)],
        Verdict.SKIPPED,
        Reason.TARGET_CONTENT_UNKNOWN,
        contents={**OWN_CONTENT, NEW: Unknown("timeout")},
    ),
    Case(
        "content-not-known-yet-is-asked-for",
        "resolve configs only when neither the target nor a child matches by digest",
        [pod("a", digest=MIRROR_ID), pod("b", digest=NEW)],
        Verdict.NEEDS_CONTENT,
        Reason.CONTENT_NEEDED,
        contents={},
    ),
    Case(
        "stale-pod-rolls-beside-an-unresolvable-one",
        "an unknown pod is skipped, not a reason to spare a pod proven stale",
        [
            pod("a", digest=f"docker.io/team/app@{FOREIGN}", created=BEFORE),
            pod("b", created=BEFORE + timedelta(seconds=1)),
        ],
        Verdict.STALE,
        Reason.STALE_POD,
        deletes="b",
    ),
    Case(
        "bare-config-of-the-target-is-current",
        "a bare sha256 imageID is the config the pod runs: compared with the target's",
        [pod("a", digest=str(config(1)))],
        Verdict.CURRENT,
        Reason.UP_TO_DATE,
        deployment=deployment(replicas=1),
    ),
    Case(
        "bare-config-of-other-content-is-stale",
        "a bare sha256 imageID is the config the pod runs: compared with the target's",
        [pod("a", digest=str(config(0))), pod("b", digest=NEW)],
        Verdict.STALE,
        Reason.STALE_POD,
        deletes="a",
    ),
    Case(
        "bare-config-among-the-index-configs-is-current",
        "a bare sha256 imageID is the config the pod runs: compared with the target's",
        [pod("a", digest=str(ARM_CFG))],
        Verdict.CURRENT,
        Reason.UP_TO_DATE,
        deployment=deployment(replicas=1),
        children={NEW: frozenset({AMD, ARM})},
        contents={NEW: BUILD},
    ),
    Case(
        "bare-config-with-the-target-content-unknown-never-deleted",
        "the target's configs unknown: nothing can be called stale",
        [pod("a", digest=str(config(0))), pod("b", digest=NEW)],
        Verdict.SKIPPED,
        Reason.TARGET_CONTENT_UNKNOWN,
        contents={NEW: Unknown("not-found")},
    ),
    # --- settled ----------------------------------------------------------------------------
    Case(
        "terminating-pod-blocks",
        "settled: no pod terminating",
        [pod("a"), pod("b", digest=NEW), pod("c", digest=NEW, deleting=True)],
        Verdict.WAITING,
        Reason.NOT_SETTLED,
    ),
    Case(
        "unready-pod-blocks",
        "settled: every pod Ready",
        [pod("a"), pod("b", digest=NEW, ready=False)],
        Verdict.WAITING,
        Reason.NOT_SETTLED,
    ),
    Case(
        "unready-old-template-pod-blocks",
        "settled: every pod Ready",
        [pod("a"), pod("b", digest=NEW), pod("c", image=f"{HOST}/team/app:v1", ready=False)],
        Verdict.WAITING,
        Reason.NOT_SETTLED,
        deployment=deployment(replicas=2),
    ),
    Case(
        "too-few-ready-blocks",
        "settled: ready >= spec.replicas",
        [pod("a"), pod("b", digest=NEW)],
        Verdict.WAITING,
        Reason.NOT_SETTLED,
        deployment=deployment(replicas=3),
    ),
    Case(
        "failed-pod-does-not-unsettle",
        "Succeeded/Failed pods ignored (settled)",
        [
            pod("a"),
            pod("b", digest=NEW),
            pod("evicted", phase="Failed", ready=False, created=T0 - timedelta(days=1)),
        ],
        Verdict.STALE,
        Reason.STALE_POD,
        deletes="a",
    ),
    Case(
        "single-replica-stale-deleted",
        "settled: ready >= spec.replicas",
        [pod("a")],
        Verdict.STALE,
        Reason.STALE_POD,
        deletes="a",
        deployment=deployment(replicas=1),
    ),
    # --- crash loop ---------------------------------------------------------------------------
    Case(
        "crash-looping-new-image-never-deleted",
        "crash-looping new image already matches",
        [pod("a", digest=NEW, ready=False), pod("b")],
        Verdict.WAITING,
        Reason.NOT_SETTLED,
    ),
    Case(
        "crash-looping-alone-is-current",
        "crash-looping new image already matches",
        [pod("a", digest=NEW, ready=False)],
        Verdict.CURRENT,
        Reason.UP_TO_DATE,
        deployment=deployment(replicas=1),
    ),
    # --- loop guard ---------------------------------------------------------------------------
    Case(
        "created-after-sighting-not-deleted",
        "loop guard",
        [pod("a", created=AFTER), pod("b", digest=NEW, created=AFTER)],
        Verdict.LOOP_GUARD,
        Reason.CREATED_AFTER_TARGET,
    ),
    Case(
        "created-before-sighting-deleted",
        "loop guard (boundary: the last whole second surely before the sighting)",
        [pod("a", created=SEEN - timedelta(seconds=1)), pod("b", digest=NEW, created=AFTER)],
        Verdict.STALE,
        Reason.STALE_POD,
        deletes="a",
    ),
    Case(
        "created-in-the-sightings-second-not-deleted",
        "loop guard (creationTimestamp has whole seconds: the same second may be after)",
        [pod("a", created=SEEN), pod("b", digest=NEW, created=AFTER)],
        Verdict.LOOP_GUARD,
        Reason.CREATED_AFTER_TARGET,
        sightings={REF: Sighting(NEW, SEEN + timedelta(milliseconds=822))},
    ),
    # Pods the sighting's own pass listed are older than it, whatever their stamp says.
    Case(
        "listed-at-sighting-same-second-deleted",
        "loop guard (a pod listed before the registry was asked predates the sighting)",
        [pod("a", created=SEEN), pod("b", digest=NEW, created=AFTER)],
        Verdict.STALE,
        Reason.STALE_POD,
        deletes="a",
        sightings={REF: Sighting(NEW, SEEN + timedelta(milliseconds=822), frozenset({"uid-a"}))},
    ),
    Case(
        "not-listed-same-second-not-deleted",
        "loop guard (a pod the sighting did not list is judged by its whole-second stamp)",
        [pod("a", created=SEEN), pod("b", digest=NEW, created=AFTER)],
        Verdict.LOOP_GUARD,
        Reason.CREATED_AFTER_TARGET,
        sightings={REF: Sighting(NEW, SEEN + timedelta(milliseconds=822), frozenset({"uid-b"}))},
    ),
    Case(
        "not-listed-created-well-before-deleted",
        "loop guard (timestamps still count for pods the sighting did not list)",
        [pod("a", created=BEFORE), pod("b", digest=NEW, created=AFTER)],
        Verdict.STALE,
        Reason.STALE_POD,
        deletes="a",
        sightings={REF: Sighting(NEW, SEEN, frozenset({"uid-b"}))},
    ),
    Case(
        "listed-at-sighting-deleted-despite-a-skewed-stamp",
        "loop guard (the API server's clock ahead of ours does not spare a listed pod)",
        [pod("a", created=SEEN + timedelta(seconds=3)), pod("b", digest=NEW, created=AFTER)],
        Verdict.STALE,
        Reason.STALE_POD,
        deletes="a",
        sightings={REF: Sighting(NEW, SEEN, frozenset({"uid-a"}))},
    ),
    Case(
        "uid-less-pod-never-counts-as-listed",
        "loop guard (an empty UID matches nothing remembered)",
        [replace(pod("a", created=SEEN), uid=""), pod("b", digest=NEW, created=AFTER)],
        Verdict.LOOP_GUARD,
        Reason.CREATED_AFTER_TARGET,
        sightings={REF: Sighting(NEW, SEEN, frozenset({""}))},
    ),
    Case(
        "listed-for-another-digest-not-deleted",
        "loop guard (a sighting of another digest guards nothing: no deletion without it)",
        [pod("a", created=SEEN), pod("b", digest=NEW, created=AFTER)],
        Verdict.SKIPPED,
        Reason.SIGHTING_MISSING,
        sightings={REF: Sighting(OLD, SEEN, frozenset({"uid-a"}))},
    ),
    # A pod made after the sighting by someone else (a drain, a scale-up, a revert within
    # one poll) while the tag pointed elsewhere is no replacement of autoroll's: it rolls.
    Case(
        "created-after-sighting-before-any-deletion-deleted",
        "loop guard (no deletion in this roll yet: no pod can be autoroll's replacement)",
        [pod("a", created=AFTER), pod("b", digest=NEW, created=AFTER)],
        Verdict.STALE,
        Reason.STALE_POD,
        deletes="a",
        rolled_from=None,
    ),
    Case(
        "created-after-sighting-listed-before-the-first-deletion-deleted",
        "loop guard (a pod read right before autoroll's first deletion is not its replacement)",
        [pod("a", created=AFTER), pod("b", digest=NEW, created=AFTER)],
        Verdict.STALE,
        Reason.STALE_POD,
        deletes="a",
        rolled_from=frozenset({"uid-a", "uid-x"}),
    ),
    Case(
        "created-after-the-first-deletion-not-deleted",
        "loop guard (a pod not read before autoroll's first deletion may be its replacement)",
        [pod("a", created=AFTER), pod("b", digest=NEW, created=AFTER)],
        Verdict.LOOP_GUARD,
        Reason.CREATED_AFTER_TARGET,
        rolled_from=frozenset({"uid-x", "uid-b"}),
    ),
    Case(
        "guard-picks-the-old-pod",
        "loop guard",
        [pod("new", created=AFTER), pod("old", created=BEFORE)],
        Verdict.STALE,
        Reason.STALE_POD,
        deletes="old",
    ),
    Case(
        "sighting-missing-never-deletes",
        "loop guard needs the first-seen time",
        [pod("a"), pod("b", digest=NEW)],
        Verdict.SKIPPED,
        Reason.SIGHTING_MISSING,
        sightings={},
    ),
    Case(
        "sighting-of-another-digest-never-deletes",
        "loop guard needs the first-seen time",
        [pod("a"), pod("b", digest=NEW)],
        Verdict.SKIPPED,
        Reason.SIGHTING_MISSING,
        sightings={REF: Sighting(OLD, SEEN)},
    ),
]


def run(case: Case) -> Decision:
    return decide(
        workload=case.deployment,
        pods=case.pods,
        registries={HOST},
        resolved=case.resolved,
        sightings=case.sightings,
        children=case.children,
        contents=case.contents,
        rolled_from=case.rolled_from,
        pinning=case.pinning,
    )


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_rule(case: Case) -> None:
    decision = run(case)
    verdict = decision.containers[case.container]
    assert (verdict.verdict, verdict.reason) == (case.verdict, case.reason), verdict.detail
    assert [a.name for a in decision.actions] == ([case.deletes] if case.deletes else [])
    assert len(decision.actions) <= 1


def test_deletion_names_pod_image_and_both_digests() -> None:
    decision = run(CASES[[c.id for c in CASES].index("stale-deleted-when-settled")])
    (action,) = decision.actions
    assert (action.namespace, action.name, action.uid) == ("ns", "b", "uid-b")
    assert (action.image, action.from_digest, action.to_digest) == (IMAGE, OLD, NEW)
    assert (action.workload, action.container) == ("app", "app")
    assert decision.containers[0].pod == "b"


def test_mismatch_requests_children_of_the_target_only() -> None:
    decision = run(CASES[[c.id for c in CASES].index("mismatch-without-children-asks-for-them")])
    assert decision.needs_children == frozenset({ChildrenRequest(REF, NEW)})
    assert decision.actions == ()


def test_no_children_request_without_a_mismatch() -> None:
    decision = decide(
        workload=deployment(),
        pods=[pod("a", digest=NEW), pod("b", digest=NEW)],
        registries={HOST},
        resolved={REF: NEW},
        sightings={REF: Sighting(NEW, SEEN)},
        children={},
        contents=OWN_CONTENT,
    )
    assert decision.needs_children == frozenset()
    assert decision.containers[0].verdict is Verdict.CURRENT


def test_decide_again_with_children_then_deletes() -> None:
    """The shell's two-pass flow: mismatch -> fetch children -> decide again."""
    pods = [pod("a", digest=OTHER), pod("b", digest=CHILD)]
    inputs = {
        "workload": deployment(),
        "pods": pods,
        "registries": {HOST},
        "resolved": {REF: NEW},
        "sightings": {REF: Sighting(NEW, SEEN)},
    }
    first = decide(**inputs, children={}, contents=OWN_CONTENT)  # type: ignore[arg-type]
    assert first.actions == () and first.needs_children
    second = decide(**inputs, children={NEW: frozenset({CHILD})}, contents=OWN_CONTENT)  # type: ignore[arg-type]
    assert [a.name for a in second.actions] == ["a"]
    states = {f.pod: f.state for f in second.containers[0].pods}
    assert states == {"a": PodState.STALE, "b": PodState.CURRENT_CHILD}


def case(case_id: str) -> Case:
    return CASES[[c.id for c in CASES].index(case_id)]


def test_content_is_asked_of_the_repository_each_side_names() -> None:
    """The target from the enrolled repository, the pod's reference from its own; a bare
    config needs only the target's, and a reference on another host is never asked for."""
    pods = [
        pod("a", digest=MIRROR_ID),
        pod("b", digest=str(config(0))),
        pod("c", digest=f"docker.io/aaa/mirror@{OTHER}"),
        pod("d", digest=NEW),
    ]
    decision = decide(
        workload=deployment(replicas=4),
        pods=pods,
        registries={HOST},
        resolved={REF: NEW},
        sightings={REF: Sighting(NEW, SEEN)},
        children={NEW: frozenset()},
        contents={},
    )
    assert decision.actions == ()
    assert decision.needs_children == frozenset()
    assert decision.needs_content == frozenset(
        {ContentRequest(HOST, "team/app", NEW), ContentRequest(HOST, "aaa/mirror", FOREIGN)}
    )
    states = {f.pod: f.state for f in decision.containers[0].pods}
    assert states == {
        "a": PodState.NEEDS_CONTENT,
        "b": PodState.NEEDS_CONTENT,
        "c": PodState.CONTENT_UNKNOWN,
        "d": PodState.CURRENT,
    }


def test_a_known_side_is_not_asked_for_again() -> None:
    decision = decide(
        workload=deployment(),
        pods=[pod("a", digest=MIRROR_ID), pod("b", digest=NEW)],
        registries={HOST},
        resolved={REF: NEW},
        sightings={REF: Sighting(NEW, SEEN)},
        children={NEW: frozenset()},
        contents={NEW: OWN_CONTENT[NEW]},
    )
    assert decision.needs_content == frozenset({ContentRequest(HOST, "aaa/mirror", FOREIGN)})


def test_children_then_content_then_the_decision() -> None:
    """The shell's flow: a mismatch asks for the index's children; not a child, it asks
    for both sides' configs; then it decides (here: the old build, under a mirror's name)."""
    run_once = partial(
        decide,
        workload=deployment(),
        pods=[pod("a", digest=MIRROR_ID), pod("b", digest=NEW)],
        registries={HOST},
        resolved={REF: NEW},
        sightings={REF: Sighting(NEW, SEEN)},
    )
    first = run_once(children={}, contents={})
    assert first.needs_children == frozenset({ChildrenRequest(REF, NEW)})
    assert first.needs_content == frozenset()
    second = run_once(children={NEW: frozenset()}, contents={})
    assert second.needs_content and second.actions == ()
    contents: dict[Digest, ImageContent | Unknown] = {
        NEW: OWN_CONTENT[NEW],
        FOREIGN: OWN_CONTENT[OLD],
    }
    third = run_once(children={NEW: frozenset()}, contents=contents)
    assert not third.needs_children and not third.needs_content
    assert [a.name for a in third.actions] == ["a"]
    assert third.actions[0].from_digest == FOREIGN


def test_same_content_says_why_the_pod_is_current() -> None:
    verdict = run(case("foreign-reference-to-the-same-config-is-current")).containers[0]
    assert verdict.detail == f"a: the target's content under another name ({MIRROR_ID})"
    (finding,) = [f for f in verdict.pods if f.pod == "a"]
    assert finding.state is PodState.SAME_CONTENT
    assert finding.running is not None and finding.running.reference == MIRROR_ID
    assert "under another name" in finding.note


@pytest.mark.parametrize(
    ("case_id", "fragments"),
    [
        ("foreign-reference-on-another-host-is-content-unknown", ["another registry host", HOST]),
        ("foreign-reference-without-a-readable-name-is-content-unknown", ["no repository"]),
        (
            "foreign-reference-that-cannot-be-resolved-is-content-unknown",
            ["forbidden", "read access to aaa/mirror"],
        ),
        ("index-sharing-some-platforms-is-platform-unknown", ["some platforms", "node's platform"]),
    ],
)
def test_an_unresolved_pod_says_why_and_what_to_do(case_id: str, fragments: list[str]) -> None:
    verdict = run(case(case_id)).containers[0]
    (finding,) = [f for f in verdict.pods if f.pod == "a"]
    assert finding.state in {PodState.CONTENT_UNKNOWN, PodState.PLATFORM_UNKNOWN}
    for fragment in [*fragments, "not rolled", "delete the pod by hand"]:
        assert fragment in finding.note
    assert verdict.detail == f"a: {finding.note}"


def test_a_transient_failure_is_asked_again_not_blamed_on_access() -> None:
    decision = decide(
        workload=deployment(),
        pods=[pod("a", digest=MIRROR_ID), pod("b", digest=NEW)],
        registries={HOST},
        resolved={REF: NEW},
        sightings={REF: Sighting(NEW, SEEN)},
        children={NEW: frozenset()},
        contents={**OWN_CONTENT, FOREIGN: Unknown("timeout")},
    )
    (finding,) = [f for f in decision.containers[0].pods if f.pod == "a"]
    assert "asked again next pass" in finding.note and "read access" not in finding.note


@pytest.mark.parametrize(
    ("running", "target", "platform", "expected"),
    [
        (BUILD_AS_LIST, BUILD, None, ContentMatch.SAME),
        (ImageContent(frozenset({AMD_CFG})), BUILD, None, ContentMatch.SAME),
        (BUILD, ImageContent(frozenset({AMD_CFG})), None, ContentMatch.PARTIAL),
        (ImageContent(frozenset({ARM_OLD_CFG})), BUILD, None, ContentMatch.OTHER),
        (HALF_OLD, BUILD, None, ContentMatch.PARTIAL),
        (HALF_OLD, BUILD, "linux/amd64", ContentMatch.SAME),
        (HALF_OLD, BUILD, "linux/arm64", ContentMatch.OTHER),
        (HALF_OLD, BUILD, "linux/riscv64", ContentMatch.PARTIAL),
        # A Docker list of the half-old build names no platforms: still partial.
        (ImageContent(HALF_OLD.configs), BUILD, "linux/arm64", ContentMatch.PARTIAL),
    ],
)
def test_match_content(
    running: ImageContent, target: ImageContent, platform: str | None, expected: ContentMatch
) -> None:
    assert match_content(running, target, platform=platform) is expected


def test_image_content_is_never_empty_and_its_platforms_are_its_configs() -> None:
    with pytest.raises(ValueError, match="at least one config"):
        ImageContent(frozenset())
    with pytest.raises(ValueError, match="not among the configs"):
        ImageContent(frozenset({AMD_CFG}), (("linux/arm64", ARM_CFG),))
    twice = ImageContent(
        frozenset({AMD_CFG, ARM_CFG}), (("linux/amd64", AMD_CFG), ("linux/amd64", ARM_CFG))
    )
    assert twice.config_for("linux/amd64") is None  # two answers are no answer
    assert BUILD.config_for("linux/arm64") == ARM_CFG


def test_one_deletion_per_deployment_across_containers() -> None:
    """Two containers stale in two different pods: only one pod goes this tick."""
    dep = deployment(
        ContainerView("app", IMAGE, "Always"), ContainerView("side", SIDE_IMAGE, "Always")
    )
    pods = [
        pod("a", extra=[("side", SIDE_IMAGE, NEW)]),  # app stale
        pod("b", digest=NEW, extra=[("side", SIDE_IMAGE, OLD)]),  # side stale
    ]
    decision = decide(
        workload=dep,
        pods=pods,
        registries={HOST},
        resolved={REF: NEW, SIDE_REF: NEW},
        sightings={REF: Sighting(NEW, SEEN), SIDE_REF: Sighting(NEW, SEEN)},
        children={NEW: frozenset()},
        contents=OWN_CONTENT,
    )
    assert [a.name for a in decision.actions] == ["a"]
    assert [(c.verdict, c.reason) for c in decision.containers] == [
        (Verdict.STALE, Reason.STALE_POD),
        (Verdict.WAITING, Reason.ONE_PER_TICK),
    ]


def test_same_pod_stale_in_two_containers_is_one_deletion() -> None:
    dep = deployment(
        ContainerView("app", IMAGE, "Always"), ContainerView("side", SIDE_IMAGE, "Always")
    )
    pods = [
        pod("a", extra=[("side", SIDE_IMAGE, OLD)]),
        pod("b", digest=NEW, extra=[("side", SIDE_IMAGE, NEW)]),
    ]
    decision = decide(
        workload=dep,
        pods=pods,
        registries={HOST},
        resolved={REF: NEW, SIDE_REF: NEW},
        sightings={REF: Sighting(NEW, SEEN), SIDE_REF: Sighting(NEW, SEEN)},
        children={NEW: frozenset()},
        contents=OWN_CONTENT,
    )
    assert [a.name for a in decision.actions] == ["a"]
    assert [c.verdict for c in decision.containers] == [Verdict.STALE, Verdict.STALE]
    assert [c.pod for c in decision.containers] == ["a", "a"]


def test_all_pods_stale_still_one_deletion() -> None:
    pods = [pod(f"p{i}", created=BEFORE + timedelta(seconds=i)) for i in range(5)]
    decision = decide(
        workload=deployment(replicas=5),
        pods=pods,
        registries={HOST},
        resolved={REF: NEW},
        sightings={REF: Sighting(NEW, SEEN)},
        children={NEW: frozenset()},
        contents=OWN_CONTENT,
    )
    assert [a.name for a in decision.actions] == ["p0"]


def test_rollout_simulation_replaces_every_pod_once() -> None:
    """Ticks as often as you like: each stale pod goes only after the last replacement is Ready."""
    pods = [pod(f"p{i}", created=BEFORE + timedelta(seconds=i)) for i in range(3)]
    deleted: list[str] = []
    clock = AFTER
    for _ in range(20):
        decision = decide(
            workload=deployment(replicas=3),
            pods=pods,
            registries={HOST},
            resolved={REF: NEW},
            sightings={REF: Sighting(NEW, SEEN)},
            children={NEW: frozenset()},
            contents=OWN_CONTENT,
        )
        if decision.actions:
            (action,) = decision.actions
            deleted.append(action.name)
            # The ReplicaSet replaces it; the replacement is not Ready on the next tick.
            pods = [p for p in pods if p.name != action.name]
            clock += timedelta(minutes=1)
            pods.append(pod(f"r{len(deleted)}", digest=NEW, created=clock, ready=False))
        else:
            pods = [replace(p, ready=True) for p in pods]
    assert deleted == ["p0", "p1", "p2"]
    assert all(f.state is PodState.CURRENT for f in decision.containers[0].pods)


def test_loop_guard_bounds_deletions_when_runtime_reports_old_digest() -> None:
    """A runtime that keeps reporting the old digest: each original pod goes once, no more."""
    pods = [pod(f"p{i}", created=BEFORE + timedelta(seconds=i)) for i in range(3)]
    deletions = 0
    clock = AFTER
    rolls = RollMemory()  # as the reconciler keeps it
    workload = deployment(replicas=3)
    for _ in range(30):
        decision = decide(
            workload=workload,
            pods=pods,
            registries={HOST},
            resolved={REF: NEW},
            sightings={REF: Sighting(NEW, SEEN)},
            children={NEW: frozenset()},
            contents=OWN_CONTENT,
            rolled_from=rolls.rolled_from(workload.key),
        )
        for action in decision.actions:
            rolls.deleting(Enrolled(workload, tuple(pods)))
            deletions += 1
            clock += timedelta(minutes=1)
            pods = [p for p in pods if p.name != action.name]
            pods.append(pod(f"r{deletions}", digest=OLD, created=clock))  # still "old"
    assert deletions == 3
    assert decision.loop_guard_hits == 3
    assert decision.containers[0].verdict is Verdict.LOOP_GUARD


def test_waiting_names_the_reason_and_next_pod() -> None:
    decision = run(CASES[[c.id for c in CASES].index("terminating-pod-blocks")])
    verdict = decision.containers[0]
    assert "c" in verdict.detail and "terminating" in verdict.detail
    assert verdict.pod == "a"
    assert decision.settledness.reason is SettledReason.POD_TERMINATING


def test_warnings_are_flagged() -> None:
    assert Reason.PULL_POLICY_NOT_ALWAYS.is_warning
    assert Reason.CREATED_AFTER_TARGET.is_warning
    assert Reason.REGISTRY_UNKNOWN.is_warning  # the registry is offline: rolling has stopped
    assert Reason.CHILDREN_UNKNOWN.is_warning
    assert Reason.TARGET_CONTENT_UNKNOWN.is_warning  # no pod of the image can roll
    # One pod's unresolvable reference can last as long as the pod: the shell warns once.
    assert not Reason.CONTENT_UNKNOWN.is_warning
    assert not Reason.PLATFORM_UNKNOWN.is_warning
    assert not Reason.UP_TO_DATE.is_warning
    assert not Reason.NOT_IN_SCOPE.is_warning  # a targeted pass looks at other tags: normal
    assert not Reason.NOT_SETTLED.is_warning  # waiting for readiness is normal


@pytest.mark.parametrize(
    ("pods", "replicas", "expected"),
    [
        ([], 0, SettledReason.SETTLED),
        ([pod("a")], 1, SettledReason.SETTLED),
        ([pod("a"), pod("b", deleting=True)], 1, SettledReason.POD_TERMINATING),
        ([pod("a", ready=False)], 1, SettledReason.POD_NOT_READY),
        ([pod("a")], 2, SettledReason.TOO_FEW_READY),
        ([pod("a"), pod("x", phase="Succeeded", ready=False)], 1, SettledReason.SETTLED),
        ([pod("a"), pod("x", phase="Failed", ready=False)], 2, SettledReason.TOO_FEW_READY),
        # Deleted, containers exited: Succeeded/Failed while the kubelet still terminates it.
        (
            [pod("a"), pod("b"), pod("x", phase="Succeeded", ready=False, deleting=True)],
            2,
            SettledReason.POD_TERMINATING,
        ),
        (
            [pod("a"), pod("b"), pod("x", phase="Failed", ready=False, deleting=True)],
            2,
            SettledReason.POD_TERMINATING,
        ),
    ],
)
def test_is_settled(pods: list[PodView], replicas: int, expected: SettledReason) -> None:
    assert is_settled(workload=deployment(replicas=replicas), pods=pods).reason is expected


def test_refs_to_resolve_dedups_and_filters() -> None:
    deps = [
        deployment(ContainerView("app", IMAGE, "Always"), name="one"),
        deployment(
            ContainerView("app", f"{HOST}/team/app", "Always"),  # same ref, default tag
            ContainerView("side", SIDE_IMAGE, "Always"),
            ContainerView("pinned", f"{HOST}/team/app@{OLD}", "Always"),
            ContainerView("never", f"{HOST}/team/other:latest", "IfNotPresent"),
            ContainerView("hub", "nginx:latest", "Always"),
            name="two",
        ),
    ]
    assert refs_to_resolve(deps, registries={HOST}) == {REF, SIDE_REF}


def test_observe_targets_remembers_first_sighting() -> None:
    now = SEEN
    memory = observe_targets({}, {REF: NEW}, now=now)
    assert memory == {REF: Sighting(NEW, now)}
    later = observe_targets(memory, {REF: NEW}, now=now + timedelta(hours=1))
    assert later == {REF: Sighting(NEW, now)}, "same digest keeps its first sighting"


def test_observe_targets_unknown_keeps_previous_and_moves_reset() -> None:
    memory = {REF: Sighting(OLD, T0)}
    assert observe_targets(memory, {REF: Unknown("timeout")}, now=SEEN) == memory
    assert observe_targets({}, {REF: Unknown("timeout")}, now=SEEN) == {}
    moved = observe_targets(memory, {REF: NEW}, now=SEEN)
    assert moved == {REF: Sighting(NEW, SEEN)}
    # Moving back to an older digest is a new sighting, so intermediate pods can be replaced.
    back = observe_targets(moved, {REF: OLD}, now=AFTER)
    assert back == {REF: Sighting(OLD, AFTER)}


def test_observe_targets_forgets_unenrolled_refs() -> None:
    memory = {REF: Sighting(NEW, SEEN), SIDE_REF: Sighting(NEW, SEEN)}
    assert observe_targets(memory, {REF: NEW}, now=AFTER) == {REF: Sighting(NEW, SEEN)}


def test_observe_targets_remembers_the_pods_listed_at_a_first_sighting_only() -> None:
    listed = {REF: frozenset({"uid-a", "uid-b"}), SIDE_REF: frozenset({"uid-s"})}
    memory = observe_targets({}, {REF: NEW}, now=SEEN, listed=listed)
    assert memory == {REF: Sighting(NEW, SEEN, frozenset({"uid-a", "uid-b"}))}, "only refs asked"

    # The same digest again: the set is the sighting's, never extended by later listings
    # (a replacement listed now was created after the sighting).
    later = observe_targets(
        memory, {REF: NEW}, now=AFTER, listed={REF: frozenset({"uid-b", "uid-r"})}
    )
    assert later == memory
    # Unknown keeps the sighting with its set.
    assert observe_targets(later, {REF: Unknown("timeout")}, now=AFTER, listed={}) == memory


def test_observe_targets_replaces_the_pods_when_the_digest_moves() -> None:
    memory = {REF: Sighting(NEW, SEEN, frozenset({"uid-a", "uid-b"}))}
    moved = observe_targets(
        memory, {REF: OTHER}, now=AFTER, listed={REF: frozenset({"uid-b", "uid-r"})}
    )
    assert moved == {REF: Sighting(OTHER, AFTER, frozenset({"uid-b", "uid-r"}))}
    # Nothing listed for the ref (say its only Deployment has no pods): an empty set.
    assert observe_targets(memory, {REF: OTHER}, now=AFTER) == {REF: Sighting(OTHER, AFTER)}


def test_observe_targets_forgets_the_pods_of_unenrolled_refs() -> None:
    memory = {
        REF: Sighting(NEW, SEEN, frozenset({"uid-a"})),
        SIDE_REF: Sighting(NEW, SEEN, frozenset({"uid-s"})),
    }
    after = observe_targets(memory, {SIDE_REF: NEW}, now=AFTER, listed={REF: frozenset({"x"})})
    assert after == {SIDE_REF: Sighting(NEW, SEEN, frozenset({"uid-s"}))}


def test_listed_uids_groups_pod_uids_by_the_refs_their_deployment_uses() -> None:
    both = deployment(
        ContainerView("app", IMAGE, "Always"), ContainerView("side", SIDE_IMAGE, "Always")
    )
    app_only = deployment(name="other")
    ignored = deployment(ContainerView("app", "nginx:latest", "Always"), name="hub")
    snapshot = [
        (both, [pod("a"), pod("b"), replace(pod("nameless"), uid="")]),
        (app_only, [pod("c")]),
        (ignored, [pod("h")]),
        (deployment(name="empty"), []),
    ]
    assert listed_uids(snapshot, registries={HOST}) == {
        REF: frozenset({"uid-a", "uid-b", "uid-c"}),
        SIDE_REF: frozenset({"uid-a", "uid-b"}),
    }


def test_loop_guard_memory_across_passes_closes_the_same_second_window() -> None:
    """The shell's pure flow over three passes: list, observe, decide.

    Pass 1 first sees NEW in the second pod "a" was created: "a" was listed, so it goes.
    Pass 2: its replacement, stamped in that same second, still reports OLD (a runtime
    quirk): it was not listed at the sighting, so the guard spares it. Pass 3: the tag moves
    to OTHER; the replacement was listed at that sighting, so it is stale again, not guarded.
    """
    dep = deployment(replicas=2)
    second = SEEN  # a whole second: what creationTimestamp can say
    pods = [pod("a", created=second), pod("b", digest=NEW, created=BEFORE)]
    memory: dict[TagRef, Sighting] = {}
    rolls = RollMemory()

    def one_pass(now: datetime, target: Digest) -> Decision:
        nonlocal memory
        listed = listed_uids([(dep, pods)], registries={HOST})
        memory = observe_targets(memory, {REF: target}, now=now, listed=listed)
        decision = decide(
            workload=dep,
            pods=pods,
            registries={HOST},
            resolved={REF: target},
            sightings=memory,
            children={target: frozenset()},
            contents=OWN_CONTENT,
            rolled_from=rolls.rolled_from(dep.key),
        )
        if decision.actions:
            rolls.deleting(Enrolled(dep, tuple(pods)))
        rolls.settle([(dep.key, decision)])
        return decision

    first = one_pass(second + timedelta(milliseconds=400), NEW)
    assert [a.name for a in first.actions] == ["a"]
    pods = [pod("a2", created=second), pods[1]]  # created at .600, stamped in the same second

    spared = one_pass(second + timedelta(seconds=30), NEW)
    assert spared.actions == ()
    assert spared.containers[0].verdict is Verdict.LOOP_GUARD
    assert memory[REF].older_uids == frozenset({"uid-a", "uid-b"})

    moved = one_pass(second + timedelta(seconds=60), OTHER)
    states = {f.pod: f.state for f in moved.containers[0].pods}
    assert states == {"a2": PodState.STALE, "b": PodState.STALE}  # "b", the oldest, goes first
    assert [a.name for a in moved.actions] == ["b"]
    assert memory[REF] == Sighting(
        OTHER, second + timedelta(seconds=60), frozenset({"uid-a2", "uid-b"})
    )


def test_observe_targets_requires_aware_time() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        observe_targets({}, {}, now=datetime(2026, 1, 1))


VARIANTS = ImageContent(
    frozenset({AMD_CFG, ARM_CFG, ARM_OLD_CFG}),
    (("linux/amd64", AMD_CFG), ("linux/arm64/v8", ARM_CFG), ("linux/arm/v7", ARM_OLD_CFG)),
)


@pytest.mark.parametrize(
    ("content", "platform", "expected"),
    [
        # A node's labels say os/arch only; an index may name a variant.
        (VARIANTS, "linux/arm64", ARM_CFG),
        (VARIANTS, "linux/arm64/v8", ARM_CFG),  # exact
        (VARIANTS, "linux/arm", ARM_OLD_CFG),  # one variant of arm: its config
        (VARIANTS, "linux/amd64", AMD_CFG),
        (VARIANTS, "linux/s390x", None),
        (VARIANTS, "linux", None),
        # two variants of one os/arch with different images: which one runs is the CPU's call
        (
            ImageContent(
                frozenset({ARM_CFG, ARM_OLD_CFG}),
                (("linux/arm/v6", ARM_CFG), ("linux/arm/v7", ARM_OLD_CFG)),
            ),
            "linux/arm",
            None,
        ),
        # two variants with one image: no doubt
        (
            ImageContent(
                frozenset({ARM_CFG}), (("linux/arm/v6", ARM_CFG), ("linux/arm/v7", ARM_CFG))
            ),
            "linux/arm",
            ARM_CFG,
        ),
    ],
)
def test_a_nodes_os_arch_matches_an_indexs_variants_only_without_doubt(
    content: ImageContent, platform: str, expected: Digest | None
) -> None:
    assert content.config_for(platform) == expected


def test_a_pod_current_by_its_nodes_platform_says_so() -> None:
    decision = run(case("index-sharing-some-platforms-on-an-unchanged-platform-is-current"))
    [verdict] = decision.containers
    states = {f.pod: f.state for f in verdict.pods}
    assert states["a"] is PodState.SAME_PLATFORM
    assert "a: only other platforms changed" in verdict.detail
    [note] = [f.note for f in verdict.pods if f.pod == "a"]
    assert "its node's platform linux/amd64 has the same image" in note
