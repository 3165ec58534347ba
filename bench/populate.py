"""Fill the benchmark cluster cheaply: objects are written directly, no node ever runs them.

What is created, through the real API server (admission, validation and etcd included):

- namespaces ``bench-00`` … and their ``default`` ServiceAccount (no controller manager);
- Deployments with 3 replicas, one container ``<registry>/bench/img-<k>:latest`` with
  ``imagePullPolicy: Always``, enrolled by a label;
- each Deployment's ``deployments/status`` patched to what its controller writes once rolled
  out (every replica updated and available, the generation observed);
- for each Deployment, 3 pods created directly: labelled to match the Deployment's selector
  and with a ``pod-template-hash``, controlled (an ownerReference) by the ReplicaSet
  ``<deployment>-<hash>`` the Deployment controller would have made (never created: no
  garbage collector runs), no node; then ``pods/status`` is patched to what a kubelet would
  write (``Running``, ``Ready``, ``imageID`` = ``<registry>/<repo>@<current digest>``);
- background pods of unenrolled workloads (another host's image), also Running and Ready,
  spread over the same namespaces, so the per-namespace pod lists carry them too.

The requests go through a pooled ``requests.Session`` from a thread pool, not the
Kubernetes client: populating is setup, not what is measured, and this keeps it to minutes.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Final

import requests
from requests.adapters import HTTPAdapter

ENROLL_LABEL: Final = "bench.autoroll/enrolled"
BACKGROUND_IMAGE: Final = "docker.io/library/nginx:1.27"
BACKGROUND_DIGEST: Final = "sha256:" + "b" * 64
REPLICAS: Final = 3
WORKERS: Final = 12
#: The pod-template-hash of every Deployment's one (never created) ReplicaSet.
TEMPLATE_HASH: Final = "5b7c9d8f6"


@dataclass(frozen=True)
class Layout:
    """Where every object goes; pure, so tests and the report can name the same objects."""

    namespaces: int
    registry_host: str
    unique_images: int

    def namespace(self, index: int) -> str:
        return f"bench-{index % self.namespaces:02d}"

    def repository(self, image: int) -> str:
        return f"bench/img-{image:03d}"

    def image(self, deployment: int) -> str:
        """Deployment ``i`` runs image ``i mod unique_images``."""
        return f"{self.registry_host}/{self.repository(deployment % self.unique_images)}:latest"

    def deployment_name(self, index: int) -> str:
        return f"app-{index:04d}"


class ApiWriter:
    """Raw JSON calls to the API server as cluster admin; raises on any non-2xx answer."""

    def __init__(self, server: str, token: str, ca_file: str) -> None:
        self.server = server
        self.session = requests.Session()
        self.session.trust_env = False  # REQUESTS_CA_BUNDLE would override ``verify``
        self.session.verify = ca_file
        self.session.headers["Authorization"] = f"Bearer {token}"
        self.session.mount("https://", HTTPAdapter(pool_connections=4, pool_maxsize=WORKERS * 2))

    def send(self, method: str, path: str, body: Mapping[str, Any], content_type: str = "") -> None:
        headers = {"Content-Type": content_type} if content_type else {}
        response = self.session.request(
            method, self.server + path, json=body, headers=headers, timeout=60
        )
        if response.status_code >= 300:
            raise RuntimeError(f"{method} {path}: {response.status_code} {response.text[:300]}")


def _pod(name: str, app: str, image: str) -> dict[str, Any]:
    """A pod of Deployment ``app``, as its ReplicaSet would create it."""
    replica_set = f"{app}-{TEMPLATE_HASH}"
    owner = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "name": replica_set,
        "uid": str(uuid.uuid5(uuid.NAMESPACE_URL, replica_set)),
        "controller": True,
        "blockOwnerDeletion": True,
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "labels": {"app": app, "pod-template-hash": TEMPLATE_HASH},
            "ownerReferences": [owner],
        },
        "spec": {
            "containers": [{"name": "app", "image": image, "imagePullPolicy": "Always"}],
            "terminationGracePeriodSeconds": 5,
        },
    }


def _running_status(image: str, image_id: str) -> dict[str, Any]:
    """The status a kubelet running containerd writes for a started, Ready pod."""
    return {
        "status": {
            "phase": "Running",
            "conditions": [
                # With its time, as a kubelet writes it: the health window counts from it.
                {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"},
                {"type": "ContainersReady", "status": "True"},
            ],
            "containerStatuses": [
                {
                    "name": "app",
                    "image": image,
                    "imageID": image_id,
                    "ready": True,
                    "started": True,
                    "restartCount": 0,
                    "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}},
                }
            ],
        }
    }


def deployment_body(name: str, image: str, labels: Mapping[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": dict(labels)},
        "spec": {
            "replicas": REPLICAS,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "containers": [{"name": "app", "image": image, "imagePullPolicy": "Always"}],
                    "terminationGracePeriodSeconds": 5,
                },
            },
        },
    }


def rolled_out_status() -> dict[str, Any]:
    """The status the Deployment controller writes once every replica is updated and available."""
    return {
        "status": {
            "observedGeneration": 1,
            "replicas": REPLICAS,
            "updatedReplicas": REPLICAS,
            "readyReplicas": REPLICAS,
            "availableReplicas": REPLICAS,
        }
    }


def create_deployment(
    writer: ApiWriter, namespace: str, name: str, image: str, labels: Mapping[str, str]
) -> None:
    """Create a Deployment, then write the status its controller would once rolled out."""
    path = f"/apis/apps/v1/namespaces/{namespace}/deployments"
    writer.send("POST", path, deployment_body(name, image, labels))
    writer.send(
        "PATCH", f"{path}/{name}/status", rolled_out_status(), "application/merge-patch+json"
    )


def run_all(tasks: Iterable[Callable[[], None]]) -> int:
    done = 0
    with ThreadPoolExecutor(WORKERS) as pool:
        for future in [pool.submit(task) for task in tasks]:
            future.result()
            done += 1
    return done


def create_namespace(writer: ApiWriter, name: str) -> None:
    """A namespace and, since no controller manager runs, its default ServiceAccount."""
    writer.send("POST", "/api/v1/namespaces", {"metadata": {"name": name}})
    writer.send(
        "POST", f"/api/v1/namespaces/{name}/serviceaccounts", {"metadata": {"name": "default"}}
    )


def create_namespaces(writer: ApiWriter, layout: Layout) -> None:
    """The layout's namespaces (with their default ServiceAccount)."""
    for index in range(layout.namespaces):
        create_namespace(writer, layout.namespace(index))


def create_running_pod(
    writer: ApiWriter, namespace: str, name: str, *, app: str, image: str, image_id: str
) -> None:
    """Create a pod, then write the status a kubelet would: Running, Ready, ``image_id``."""
    writer.send("POST", f"/api/v1/namespaces/{namespace}/pods", _pod(name, app, image))
    writer.send(
        "PATCH",
        f"/api/v1/namespaces/{namespace}/pods/{name}/status",
        _running_status(image, image_id),
        "application/merge-patch+json",
    )


def create_background(writer: ApiWriter, layout: Layout, count: int) -> int:
    """``count`` unenrolled Running pods (10 per app label), spread over the namespaces."""
    image_id = f"docker.io/library/nginx@{BACKGROUND_DIGEST}"

    def task(k: int) -> Callable[[], None]:
        return lambda: create_running_pod(
            writer,
            layout.namespace(k),
            f"bg-{k:05d}",
            app=f"bg-{k // 10:04d}",
            image=BACKGROUND_IMAGE,
            image_id=image_id,
        )

    return run_all(task(k) for k in range(count))


def create_enrolled(
    writer: ApiWriter,
    layout: Layout,
    indices: Sequence[int],
    digests: Mapping[str, str],
    *,
    labels: Mapping[str, str] | None = None,
) -> int:
    """Enrolled Deployments ``indices`` and 3 current, Ready pods each; returns pods created.

    ``digests`` maps repository → the digest its ``:latest`` points to now.
    """
    deployment_labels = {ENROLL_LABEL: "true", **(labels or {})}

    def deployment_task(i: int) -> Callable[[], None]:
        namespace, name = layout.namespace(i), layout.deployment_name(i)
        return lambda: create_deployment(
            writer, namespace, name, layout.image(i), deployment_labels
        )

    def pod_task(i: int, replica: int) -> Callable[[], None]:
        repository = layout.repository(i % layout.unique_images)
        image_id = f"{layout.registry_host}/{repository}@{digests[repository]}"
        name = layout.deployment_name(i)
        return lambda: create_running_pod(
            writer,
            layout.namespace(i),
            f"{name}-{replica}",
            app=name,
            image=layout.image(i),
            image_id=image_id,
        )

    run_all(deployment_task(i) for i in indices)
    return run_all(pod_task(i, r) for i in indices for r in range(REPLICAS))
