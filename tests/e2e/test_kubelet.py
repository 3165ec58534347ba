"""The simulated kubelet's pure parts, and its registry resolver against a real docker-registry.

No control plane here: these pin what the kubelet reports (``pod_status``), how it names images
(``ImageRef``), and that its "pull" resolves tags the way containerd does (index digest for a
multi-arch tag; the platform child on request, as CRI-O has reported).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.kubelet import SimulatedKubelet
from tests.e2e.kubelet_behaviour import Behaviour
from tests.e2e.kubelet_images import ImageRef, RegistryResolver
from tests.e2e.kubelet_pod_status import PodRecord, pod_status
from tests.support.ports import free_port
from tests.support.registry import ImagePusher, RegistryServer

DIGEST = "sha256:" + "d" * 64
POD: dict[str, Any] = {
    "metadata": {"name": "p", "uid": "u"},
    "spec": {"containers": [{"name": "app", "image": "127.0.0.1:5000/app:latest"}]},
}


@pytest.mark.parametrize(
    ("image", "host", "repository", "tag", "digest"),
    [
        ("127.0.0.1:5000/team/app:latest", "127.0.0.1:5000", "team/app", "latest", None),
        ("registry.example/app", "registry.example", "app", None, None),
        (f"localhost/app@{DIGEST}", "localhost", "app", None, DIGEST),
        (f"reg.example/app:v1@{DIGEST}", "reg.example", "app", "v1", DIGEST),
        ("nginx:1.27", "docker.io", "library/nginx", "1.27", None),
        ("bitnami/redis", "docker.io", "bitnami/redis", None, None),
    ],
)
def test_image_ref_parse(
    image: str, host: str, repository: str, tag: str | None, digest: str | None
) -> None:
    assert ImageRef.parse(image) == ImageRef(host, repository, tag, digest)


def test_image_id_is_the_repo_digest_containerd_reports() -> None:
    ref = ImageRef.parse("127.0.0.1:5000/team/app:latest")
    assert ref.repo_digest(DIGEST) == f"127.0.0.1:5000/team/app@{DIGEST}"


def conditions(status: dict[str, Any]) -> dict[str, str]:
    return {c["type"]: c["status"] for c in status["conditions"]}


def test_pod_being_pulled_is_pending_without_image_id() -> None:
    status = pod_status(
        pod=POD, record=PodRecord(seen_at=0, pod_ip="10.0.0.9"), behaviour=Behaviour(), now=5
    )
    assert status["phase"] == "Pending"
    assert status["containerStatuses"][0]["imageID"] == ""
    assert status["containerStatuses"][0]["state"]["waiting"]["reason"] == "ContainerCreating"
    assert conditions(status)["Ready"] == "False"


def test_pulled_pod_is_ready_after_ready_after_seconds() -> None:
    record = PodRecord(seen_at=0, pod_ip="10.0.0.9", pulled_at=10, image_ids={"app": "x@" + DIGEST})
    slow = Behaviour(ready_after=5)
    before = pod_status(pod=POD, record=record, behaviour=slow, now=14.9)
    after = pod_status(pod=POD, record=record, behaviour=slow, now=15)
    assert before["phase"] == after["phase"] == "Running"
    assert conditions(before)["Ready"] == "False"
    assert conditions(after)["Ready"] == "True"
    assert after["containerStatuses"][0]["imageID"] == "x@" + DIGEST


def test_crash_loop_restart_count_grows_and_never_ready() -> None:
    record = PodRecord(seen_at=0, pod_ip="10.0.0.9", pulled_at=10, image_ids={"app": "x@" + DIGEST})
    counts = [
        pod_status(pod=POD, record=record, behaviour=Behaviour(crash_loop=True), now=t)
        for t in (10, 12.5, 100)
    ]
    assert [s["containerStatuses"][0]["restartCount"] for s in counts] == [1, 3, 91]
    assert {conditions(s)["Ready"] for s in counts} == {"False"}


def test_status_is_stable_between_transitions() -> None:
    """The kubelet writes only when the status changes, so it must not depend on the clock."""
    record = PodRecord(seen_at=0, pod_ip="10.0.0.9", pulled_at=10, image_ids={"app": "x@" + DIGEST})
    assert pod_status(pod=POD, record=record, behaviour=Behaviour(), now=20) == pod_status(
        pod=POD, record=record, behaviour=Behaviour(), now=3000
    )


def test_run_to_completion_pod_succeeds_after_run_seconds() -> None:
    job_pod = {**POD, "spec": {**POD["spec"], "restartPolicy": "Never"}}
    record = PodRecord(seen_at=0, pod_ip="10.0.0.9", pulled_at=10, image_ids={"app": "x@" + DIGEST})
    assert pod_status(pod=job_pod, record=record, behaviour=Behaviour(), now=10.1)["phase"] == (
        "Running"
    )
    done = pod_status(pod=job_pod, record=record, behaviour=Behaviour(), now=11)
    assert done["phase"] == "Succeeded"
    assert done["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 0


# --- against a real docker-registry -------------------------------------------------


@pytest.mark.integration
def test_registry_resolver_returns_the_manifest_digest_of_a_tag(
    docker_registry: RegistryServer,
) -> None:
    pushed = ImagePusher(docker_registry).push_image("team/single", "latest", content=b"v1")
    resolve = RegistryResolver(auth=docker_registry.auth)
    host = docker_registry.host
    assert resolve(f"{host}/team/single:latest") == pushed.digest
    assert resolve(f"{host}/team/single:missing") is None
    assert resolve.child(f"{host}/team/single:latest") is None  # not an index
    assert RegistryResolver()(f"{host}/team/single:latest") is None  # 401 without credentials


@pytest.mark.integration
def test_registry_resolver_gives_index_digest_and_platform_child(
    docker_registry: RegistryServer,
) -> None:
    index = ImagePusher(docker_registry).push_index(
        "team/multi", "latest", architectures=("arm64", "amd64")
    )
    resolve = RegistryResolver(auth=docker_registry.auth)
    assert resolve(f"{docker_registry.host}/team/multi:latest") == index.digest
    # The platform's entry (amd64, listed second), not simply the first one.
    assert resolve.child(f"{docker_registry.host}/team/multi:latest") == index.children[1]


def test_registry_resolver_reports_an_unreachable_registry_as_none() -> None:
    port = free_port()  # nothing listens there
    assert RegistryResolver(timeout=1)(f"127.0.0.1:{port}/team/app:latest") is None


def test_bad_behaviour_annotations_are_rejected_naming_the_problem() -> None:
    with pytest.raises(ValueError, match=r"unknown field\(s\) \['crashloop'\]"):
        Behaviour.from_annotation('{"crashloop": true}')
    with pytest.raises(ValueError, match="not JSON"):
        Behaviour.from_annotation("crash")
    with pytest.raises(ValueError, match="expected a JSON object"):
        Behaviour.from_annotation("[1]")


def test_the_node_keeps_its_platform_labels(kube: Any, kubelet: SimulatedKubelet) -> None:
    from tests.e2e.helpers import core_api

    labels = core_api(kube).read_node(kubelet.node_name).metadata.labels
    assert labels["kubernetes.io/os"] == "linux"
    assert labels["kubernetes.io/arch"] == "amd64"
