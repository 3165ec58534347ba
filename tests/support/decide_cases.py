"""The decision table's builders: one Deployment ``app`` with image ``IMAGE`` on ``HOST``, its pods
and the registry's answers as ``Case`` rows, shared by the ``tests/unit/test_decide*.py`` tables.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from autoroll.core import model
from autoroll.core.decide import Decision, Reason, Sighting, Verdict, decide
from autoroll.core.images import TagRef
from tests.support.views import deployment_view, pod_view

HOST = "forgejo.example:3000"
IMAGE = f"{HOST}/team/app:latest"
REF = TagRef(HOST, "team/app", "latest")
SIDE_IMAGE = f"{HOST}/team/sidecar:stable"
SIDE_REF = TagRef(HOST, "team/sidecar", "stable")

OLD = model.Digest("sha256:" + "0" * 64)
NEW = model.Digest("sha256:" + "1" * 64)
CHILD = model.Digest("sha256:" + "2" * 64)
OTHER = model.Digest("sha256:" + "3" * 64)


def config(n: int) -> model.Digest:
    """An image config digest (``c`` + the number), distinct from every manifest digest here."""
    return model.Digest(f"sha256:c{n:063x}")


# The foreign-reference rows: a mirror repository that sorts before team/app holds NEW's
# config under a Docker-format manifest; a multi-arch build is an OCI index (NEW) and a
# Docker list of the same children's configs (DLIST).
FOREIGN = model.Digest("sha256:" + "4" * 64)
MIRROR_ID = f"{HOST}/aaa/mirror@{FOREIGN}"
DLIST = model.Digest("sha256:" + "5" * 64)
AMD, ARM = model.Digest("sha256:" + "6" * 64), model.Digest("sha256:" + "7" * 64)
AMD_CFG, ARM_CFG, ARM_OLD_CFG = config(0xA), config(0xB), config(0xC)
BUILD = model.ImageContent(
    frozenset({AMD_CFG, ARM_CFG}), (("linux/amd64", AMD_CFG), ("linux/arm64", ARM_CFG))
)
BUILD_AS_LIST = model.ImageContent(frozenset({AMD_CFG, ARM_CFG}))
#: An older build whose amd64 image was left unchanged by the multi-arch push.
HALF_OLD = model.ImageContent(
    frozenset({AMD_CFG, ARM_OLD_CFG}), (("linux/amd64", AMD_CFG), ("linux/arm64", ARM_OLD_CFG))
)

#: Outside the foreign-reference rows every manifest stands for its own config: digests
#: that differ are different content, as they were before content was compared.
OWN_CONTENT: dict[model.Digest, model.ImageContent | model.Unknown] = {
    d: model.ImageContent(frozenset({config(i)})) for i, d in enumerate([OLD, NEW, CHILD, OTHER])
}
FOREIGN_SAME: dict[model.Digest, model.ImageContent | model.Unknown] = {
    **OWN_CONTENT,
    FOREIGN: OWN_CONTENT[NEW],
}

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
SEEN = T0 + timedelta(hours=1)  # when NEW was first seen for REF
BEFORE = T0  # pods created before the target was seen
AFTER = SEEN + timedelta(minutes=5)  # pods created after


def pod(
    name: str,
    *,
    digest: model.Digest | str | None = OLD,
    image: str = IMAGE,
    created: datetime = BEFORE,
    ready: bool = True,
    deleting: bool = False,
    phase: str = "Running",
    container: str = "app",
    extra: Sequence[tuple[str, str, model.Digest | str]] = (),
) -> model.PodView:
    """A pod of the app Deployment; ``digest`` None means no status reported yet."""
    image_id = f"{HOST}/team/app@{digest}" if isinstance(digest, model.Digest) else digest
    flags: dict[str, Any] = {"deleting": deleting, "phase": phase, "container": container}
    base = pod_view(name, image, image_id, created=created, ready=ready, **flags)
    specs = [model.ContainerView(name_, image_) for name_, image_, _ in extra]
    statuses = [
        model.ContainerStatusView(
            name_,
            image_,
            f"{HOST}/x@{digest_}" if isinstance(digest_, model.Digest) else digest_,
            ready,
        )
        for name_, image_, digest_ in extra
    ]
    return replace(
        base, containers=(*base.containers, *specs), statuses=(*base.statuses, *statuses)
    )


def deployment(
    *containers: model.ContainerView, replicas: int = 2, name: str = "app"
) -> model.WorkloadView:
    return deployment_view(
        namespace="ns",
        name=name,
        replicas=replicas,
        containers=containers or (model.ContainerView("app", IMAGE, "Always"),),
    )


@dataclass(frozen=True)
class Case:
    id: str
    rule: str
    pods: Sequence[model.PodView]
    verdict: Verdict
    reason: Reason
    deletes: str | None = None
    deployment: model.WorkloadView = field(default_factory=deployment)
    resolved: Mapping[TagRef, model.Digest | model.Unknown] = field(
        default_factory=lambda: {REF: NEW}
    )
    sightings: Mapping[TagRef, Sighting] = field(default_factory=lambda: {REF: Sighting(NEW, SEEN)})
    children: Mapping[model.Digest, frozenset[model.Digest] | model.Unknown] = field(
        default_factory=lambda: {NEW: frozenset()}
    )
    contents: Mapping[model.Digest, model.ImageContent | model.Unknown] = field(
        default_factory=lambda: dict(OWN_CONTENT)
    )
    container: int = 0
    # The pods read before autoroll's first deletion in this roll: by default it has deleted
    # and none of these pods was among them, so any pod made after the sighting may be the
    # replacement of its own (the strictest loop guard); None: it has deleted nothing.
    rolled_from: frozenset[str] | None = frozenset()
    pinning: bool = False  # the pinning webhook is on (docs/adr/028)


#: A pod the pinning webhook admitted: the template's image with ``@`` and the digest.
def pinned(digest: model.Digest) -> str:
    return f"{IMAGE}@{digest}"


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


def check_rule(case: Case) -> None:
    """What ``test_rule`` asserts of each row, in every module that holds rows of the table."""
    decision = run(case)
    verdict = decision.containers[case.container]
    assert (verdict.verdict, verdict.reason) == (case.verdict, case.reason), verdict.detail
    assert [a.name for a in decision.actions] == ([case.deletes] if case.deletes else [])
    assert len(decision.actions) <= 1
