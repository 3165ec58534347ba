"""The simulated kubelet's pure parts, and its registry resolver against a real docker-registry.

No control plane here: these pin what the kubelet reports (``pod_status``), how it names images
(``ImageRef``), and that its "pull" resolves tags the way containerd does (index digest for a
multi-arch tag; the platform child on request, as CRI-O has reported).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from tests.conftest import require_tool
from tests.e2e.controlplane import free_port
from tests.e2e.kubelet import Behaviour, ImageRef, PodRecord, RegistryResolver, pod_status

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


@pytest.fixture(scope="module")
def docker_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A docker-registry on 127.0.0.1 (no auth): yields ``host:port``."""
    binary = require_tool("docker-registry")
    root = tmp_path_factory.mktemp("registry")
    port = free_port()
    config = root / "config.yml"
    config.write_text(
        json.dumps(
            {
                "version": 0.1,
                "log": {"level": "warn"},
                "storage": {"filesystem": {"rootdirectory": str(root / "data")}},
                "http": {"addr": f"127.0.0.1:{port}"},
            }
        )
    )
    log = (root / "registry.log").open("wb")
    proc = subprocess.Popen([binary, "serve", str(config)], stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                if requests.get(f"http://127.0.0.1:{port}/v2/", timeout=1).status_code == 200:
                    break
            except requests.RequestException:
                pass
            assert proc.poll() is None, (root / "registry.log").read_text()
            assert time.monotonic() < deadline, "docker-registry did not answer /v2/"
            time.sleep(0.1)
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(10)
        log.close()


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _push_blob(base: str, repo: str, data: bytes) -> str:
    digest = _digest(data)
    start = requests.post(f"{base}/v2/{repo}/blobs/uploads/", timeout=5)
    assert start.status_code == 202, start.text
    location = start.headers["Location"]
    if location.startswith("/"):
        location = base + location
    sep = "&" if "?" in location else "?"
    done = requests.put(f"{location}{sep}digest={digest}", data=data, timeout=5)
    assert done.status_code == 201, done.text
    return digest


def _push_manifest(base: str, repo: str, reference: str, body: dict[str, Any]) -> str:
    data = json.dumps(body).encode()
    response = requests.put(
        f"{base}/v2/{repo}/manifests/{reference}",
        data=data,
        headers={"Content-Type": body["mediaType"]},
        timeout=5,
    )
    assert response.status_code == 201, response.text
    return _digest(data)


def push_image(base: str, repo: str, tag: str, arch: str = "amd64") -> tuple[str, int]:
    """Push a one-layer OCI image; return its manifest digest and size."""
    config = json.dumps({"architecture": arch, "os": "linux", "rootfs": {"type": "layers"}})
    config_digest = _push_blob(base, repo, config.encode())
    layer = f"layer for {repo}:{tag} {arch}".encode()
    layer_digest = _push_blob(base, repo, layer)
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {
            "mediaType": "application/vnd.oci.image.config.v1+json",
            "digest": config_digest,
            "size": len(config),
        },
        "layers": [
            {
                "mediaType": "application/vnd.oci.image.layer.v1.tar",
                "digest": layer_digest,
                "size": len(layer),
            }
        ],
    }
    data = json.dumps(manifest).encode()
    return _push_manifest(base, repo, tag, manifest), len(data)


@pytest.mark.integration
def test_registry_resolver_returns_the_manifest_digest_of_a_tag(docker_registry: str) -> None:
    base = f"http://{docker_registry}"
    digest, _ = push_image(base, "team/single", "latest")
    resolve = RegistryResolver()
    assert resolve(f"{docker_registry}/team/single:latest") == digest
    assert resolve(f"{docker_registry}/team/single:missing") is None
    assert resolve.child(f"{docker_registry}/team/single:latest") is None  # not an index


@pytest.mark.integration
def test_registry_resolver_gives_index_digest_and_platform_child(docker_registry: str) -> None:
    base = f"http://{docker_registry}"
    amd64, amd64_size = push_image(base, "team/multi", "amd64-only", "amd64")
    arm64, arm64_size = push_image(base, "team/multi", "arm64-only", "arm64")
    index = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [
            {
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "digest": arm64,
                "size": arm64_size,
                "platform": {"os": "linux", "architecture": "arm64"},
            },
            {
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "digest": amd64,
                "size": amd64_size,
                "platform": {"os": "linux", "architecture": "amd64"},
            },
        ],
    }
    index_digest = _push_manifest(base, "team/multi", "latest", index)
    resolve = RegistryResolver()
    assert resolve(f"{docker_registry}/team/multi:latest") == index_digest
    assert resolve.child(f"{docker_registry}/team/multi:latest") == amd64


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
