"""The admission decision (autoroll.core.pinning): which workload a new pod belongs to, which
of its containers are pinned, and the JSONPatch; a property: only enrolled containers of
enrolled workloads are ever pinned, and only to the view's digest."""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from hypothesis import given
from hypothesis import strategies as st

from autoroll.core.images import TagRef
from autoroll.core.model import Digest
from autoroll.core.pinning import (
    AdmittedContainer,
    OwnerReference,
    PinOutcome,
    PodAdmission,
    WhyNot,
    pin_pod,
    workload_key,
)

HOST = "forgejo.example"
APP = TagRef(HOST, "team/app", "latest")
SIDE = TagRef(HOST, "team/side", "v1")
OLD, NEW = (Digest("sha256:" + c * 64) for c in "01")
RS = OwnerReference("apps/v1", "ReplicaSet", "web-5d8f7", controller=True)
HASH = {"pod-template-hash": "5d8f7", "app": "web"}
KEY = "shop/deployment/web"


class View:
    """A hand-written ApprovedDigests: approvals by workload key and tag."""

    def __init__(self, approvals: Mapping[str, Mapping[TagRef, Digest | None]]) -> None:
        self._approvals = approvals

    def approved(self, key: str, ref: TagRef) -> Digest | None:
        return self._approvals.get(key, {}).get(ref)

    def knows(self, key: str) -> bool:
        return key in self._approvals


VIEW = View({KEY: {APP: OLD, SIDE: NEW}})


def container(
    name: str = "app",
    image: str = f"{HOST}/team/app:latest",
    *,
    field: str = "containers",
    index: int = 0,
    policy: str = "Always",
) -> AdmittedContainer:
    return AdmittedContainer(name, image, field, index, policy)


def admission(
    *containers: AdmittedContainer,
    owners: tuple[OwnerReference, ...] = (RS,),
    labels: Mapping[str, str] = HASH,
) -> PodAdmission:
    return PodAdmission("shop", "web-5d8f7-", labels, owners, containers or (container(),))


# --- which workload ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("owners", "labels", "expected"),
    [
        ((RS,), HASH, "shop/deployment/web"),
        # The ReplicaSet must be <deployment>-<this pod's hash>: another hash is not a
        # Deployment's (docs/adr/018).
        ((RS,), {"pod-template-hash": "other"}, None),
        ((RS,), {}, None),
        (
            (OwnerReference("apps/v1", "ReplicaSet", "web-a-5d8f7", True),),
            HASH,
            "shop/deployment/web-a",
        ),
        ((OwnerReference("apps/v1", "StatefulSet", "db", True),), {}, "shop/statefulset/db"),
        ((OwnerReference("apps/v1", "DaemonSet", "agent", True),), {}, "shop/daemonset/agent"),
        # Only the controller reference counts, and only the apps group.
        ((OwnerReference("apps/v1", "StatefulSet", "db", False),), {}, None),
        ((OwnerReference("batch/v1", "Job", "migrate", True),), {}, None),
        ((OwnerReference("example.com/v1", "StatefulSet", "db", True),), {}, None),
        ((), HASH, None),
        ((OwnerReference("apps/v1", "ReplicaSet", "5d8f7", True),), HASH, None),
        ((OwnerReference("apps/v1", "ReplicaSet", "-5d8f7", True),), HASH, None),
    ],
)
def test_the_workload_is_found_through_the_controller_reference(
    owners: tuple[OwnerReference, ...], labels: Mapping[str, str], expected: str | None
) -> None:
    assert workload_key("shop", owners, labels) == expected


# --- which containers ----------------------------------------------------------------------


def test_an_enrolled_container_is_pinned_to_the_approved_digest() -> None:
    result = pin_pod(admission(), approvals=VIEW, registries={HOST})
    assert result.why is WhyNot.PINNED
    assert result.workload == KEY
    assert result.patch == (
        {
            "op": "replace",
            "path": "/spec/containers/0/image",
            "value": f"{HOST}/team/app:latest@{OLD}",
        },
    )


def test_init_containers_and_native_sidecars_are_pinned_like_containers() -> None:
    pod = admission(
        container("init", f"{HOST}/team/side:v1", field="initContainers", index=0),
        container("sidecar", f"{HOST}/team/app:latest", field="initContainers", index=1),
        container("app", f"{HOST}/team/app:latest", index=0),
    )
    result = pin_pod(pod, approvals=VIEW, registries={HOST})
    assert [(p["path"], p["value"]) for p in result.patch] == [
        ("/spec/initContainers/0/image", f"{HOST}/team/side:v1@{NEW}"),
        ("/spec/initContainers/1/image", f"{HOST}/team/app:latest@{OLD}"),
        ("/spec/containers/0/image", f"{HOST}/team/app:latest@{OLD}"),
    ]


@pytest.mark.parametrize(
    ("pinned", "outcome"),
    [
        (container(image=f"{HOST}/team/app:latest@{NEW}"), PinOutcome.ALREADY_PINNED),
        (container(image=f"{HOST}/team/app@{NEW}"), PinOutcome.ALREADY_PINNED),
        (container(image="docker.io/library/nginx:latest"), PinOutcome.OTHER_HOST),
        (container(image="nginx"), PinOutcome.OTHER_HOST),
        (container(image="Not A Reference"), PinOutcome.INVALID_IMAGE),
        (container(policy="Never"), PinOutcome.PULL_POLICY_NEVER),
        (container(image=f"{HOST}/team/other:latest"), PinOutcome.NOT_APPROVED),
        (container(image=f"{HOST}/team/app:v2"), PinOutcome.NOT_APPROVED),
    ],
)
def test_a_container_that_is_not_autoroll_s_to_pin_is_left_as_it_is(
    pinned: AdmittedContainer, outcome: PinOutcome
) -> None:
    result = pin_pod(admission(pinned), approvals=VIEW, registries={HOST})
    assert [p.outcome for p in result.containers] == [outcome]
    assert result.patch == ()
    assert result.why is WhyNot.NOTHING_TO_PIN


def test_if_not_present_is_pinned_too_and_an_unset_policy_is_read_as_admission_defaults_it() -> (
    None
):
    assert container(policy="").pull_policy == "Always"  # :latest
    assert container(image=f"{HOST}/team/app:v1", policy="").pull_policy == "IfNotPresent"
    result = pin_pod(admission(container(policy="IfNotPresent")), approvals=VIEW, registries={HOST})
    assert result.why is WhyNot.PINNED


def test_a_pod_without_a_workload_or_of_a_workload_not_enrolled_is_not_patched() -> None:
    bare = pin_pod(admission(owners=()), approvals=VIEW, registries={HOST})
    assert (bare.why, bare.patch) == (WhyNot.NO_CONTROLLER, ())
    other = OwnerReference("apps/v1", "StatefulSet", "db", True)
    unknown = pin_pod(admission(owners=(other,)), approvals=VIEW, registries={HOST})
    assert (unknown.why, unknown.workload, unknown.patch) == (
        WhyNot.NOT_ENROLLED,
        "shop/statefulset/db",
        (),
    )


def test_a_tag_with_no_approved_digest_is_not_pinned() -> None:
    view = View({KEY: {APP: None}})
    result = pin_pod(admission(), approvals=view, registries={HOST})
    assert (result.why, result.patch) == (WhyNot.NOTHING_TO_PIN, ())


# --- the property --------------------------------------------------------------------------

_IMAGES = st.sampled_from(
    [
        f"{HOST}/team/app:latest",
        f"{HOST}/team/side:v1",
        f"{HOST}/team/app:latest@{NEW}",
        f"{HOST}/team/other:latest",
        "docker.io/library/nginx:1",
        "ghcr.io/x/y:latest",
        "not a ref",
    ]
)
_POLICIES = st.sampled_from(["Always", "IfNotPresent", "Never", ""])
_DIGESTS = st.sampled_from([OLD, NEW, None])


@given(
    images=st.lists(st.tuples(_IMAGES, _POLICIES, st.booleans()), min_size=1, max_size=5),
    approvals=st.dictionaries(
        st.sampled_from([KEY, "shop/deployment/api"]),
        st.dictionaries(st.sampled_from([APP, SIDE]), _DIGESTS, max_size=2),
        max_size=2,
    ),
    owner=st.sampled_from([(RS,), (), (OwnerReference("apps/v1", "ReplicaSet", "api-1", True),)]),
)
def test_only_enrolled_containers_are_pinned_and_only_to_the_view_s_digest(
    images: list[tuple[str, str, bool]],
    approvals: dict[str, dict[TagRef, Digest | None]],
    owner: tuple[OwnerReference, ...],
) -> None:
    containers = tuple(
        container(
            f"c{i}", image, field="initContainers" if init else "containers", index=i, policy=p
        )
        for i, (image, p, init) in enumerate(images)
    )
    pod = admission(*containers, owners=owner)
    view = View(approvals)
    result = pin_pod(pod, approvals=view, registries={HOST})
    patched = {p["path"]: p["value"] for p in result.patch}
    key = workload_key("shop", owner, HASH)
    for c in containers:
        if c.path not in patched:
            continue
        # Pinned: the workload is enrolled in the view, the image is a tag on a listed
        # registry that is not pinned yet, its pull policy pulls, and the digest is the view's.
        assert key is not None and view.knows(key)
        assert "@" not in c.image and c.image.startswith(f"{HOST}/")
        assert c.pull_policy in ("Always", "IfNotPresent")
        ref = APP if "/team/app:" in c.image else SIDE
        digest = approvals[key][ref]
        assert digest is not None
        assert patched[c.path] == f"{c.image}@{digest}"
    assert all(p["op"] == "replace" for p in result.patch)
