"""Bytes the watched cache retains per cached object, over synthetic list answers.

No API server: the real ``WatchCache`` is built with a played informer (``_PlayedInformer``)
that parses each list answer with the informer's own ``list_page`` and hands the converted
items to the cache's sinks, as ``Informer`` does after a list. The list answers are JSON text
shaped like what an API server sends for the benchmark's objects (``bench.populate``: the
same names, labels, images, owner references and statuses, with the fields the server and a
kubelet add: uid, resourceVersion, creationTimestamp, node, conditions with their times,
container states); they are made before measuring, and parsed while measuring, so every
string the cache keeps from them is counted.

Method: ``tracemalloc`` counts the bytes of every live allocation. After the workloads are
listed (and the garbage collected), the growth over the empty cache is the workloads' cost;
after every namespace's pods are listed, the further growth is the pods'. Each divided by
the objects held: bytes per cached workload and per cached pod. What is shared (an interned
namespace, a container spec, a selector table entry) is counted once and spread over the
objects that share it, as it costs. Allocator overhead (pymalloc's rounding, free blocks in
arenas) is not counted, so the process's RSS grows by somewhat more.

``python -m bench.cache_memory`` prints the figures at the three sizes of ``bench.run``.
"""

from __future__ import annotations

import gc
import json
import sys
import tracemalloc
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Final

from autoroll.kube.cache import WatchCache
from autoroll.kube.informer import Sink
from autoroll.kube.listing import Collection
from autoroll.kube.lists import list_page
from autoroll.kube.transport import LazyRest
from bench.cache_report import MEMORY_COLUMNS, memory_row
from bench.populate import (
    ENROLL_LABEL,
    REPLICAS,
    Layout,
    _pod,
    _running_status,
    deployment_body,
    rolled_out_status,
)
from bench.tables import header, row

#: (Deployments, unique images) measured, as in ``bench.run``'s full sizes.
SIZES: Final = ((500, 50), (2000, 50), (10000, 200))
NAMESPACES: Final = 20
REGISTRY_HOST: Final = "127.0.0.1:5000"
CREATED: Final = "2026-01-01T00:00:00Z"


@dataclass(frozen=True)
class CacheMemory:
    deployments: int
    workloads: int
    pods: int
    workload_bytes: float  # per cached workload
    pod_bytes: float  # per cached pod

    @property
    def object_bytes(self) -> float:
        """Per cached object, workloads and pods together."""
        return (self.workload_bytes * self.workloads + self.pod_bytes * self.pods) / (
            self.workloads + self.pods
        )


class _PlayedInformer:
    """Stands in for ``Informer``: ``play`` parses a list answer and fills the sink. Built by
    ``measure``'s factory, which drops the arguments only a watching thread uses."""

    def __init__(
        self, collection: Collection, convert: Callable[[dict[str, Any]], Any], sink: Sink[Any]
    ) -> None:
        self.collection = collection
        self.convert = convert
        self.sink = sink
        self.listing_selector = collection.label_selector
        self.alive = True

    def start(self) -> None:
        pass

    def restart(self, label_selector: str | None) -> None:
        self.listing_selector = label_selector

    def request_stop(self) -> None:
        self.alive = False

    def stop(self, timeout: float) -> None:
        self.alive = False

    def play(self, body: str) -> None:
        items: dict[str, Any] = {}
        for raw in list_page(body).items:
            uid = str((raw.get("metadata") or {}).get("uid") or "")
            converted = self.convert(raw) if uid else None
            if converted is not None:
                items[uid] = converted
        self.sink.replaced(items)


def _uid(text: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, text))


def _list(items: Sequence[dict[str, Any]]) -> str:
    return json.dumps({"kind": "List", "metadata": {"resourceVersion": "1"}, "items": items})


def _deployment(layout: Layout, index: int) -> dict[str, Any]:
    namespace, name = layout.namespace(index), layout.deployment_name(index)
    body = deployment_body(name, layout.image(index), {ENROLL_LABEL: "true"})
    body["metadata"].update(
        namespace=namespace,
        uid=_uid(f"deployment/{namespace}/{name}"),
        resourceVersion=str(1000 + index),
        generation=1,
        creationTimestamp=CREATED,
        annotations={"deployment.kubernetes.io/revision": "1"},
    )
    body["spec"].update(
        strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%"}},
        revisionHistoryLimit=10,
        progressDeadlineSeconds=600,
    )
    status = rolled_out_status()["status"]
    status["conditions"] = [
        {
            "type": kind,
            "status": "True",
            "reason": reason,
            "lastUpdateTime": CREATED,
            "lastTransitionTime": CREATED,
        }
        for kind, reason in (
            ("Available", "MinimumReplicasAvailable"),
            ("Progressing", "NewReplicaSetAvailable"),
        )
    ]
    body["status"] = status
    return body


def _pod_json(layout: Layout, index: int, replica: int) -> dict[str, Any]:
    namespace, app = layout.namespace(index), layout.deployment_name(index)
    name = f"{app}-{replica}"
    repository = layout.repository(index % layout.unique_images)
    image = layout.image(index)
    digest = "sha256:" + uuid.uuid5(uuid.NAMESPACE_URL, repository).hex * 2
    body = _pod(name, app, image)
    body["metadata"].update(
        namespace=namespace,
        uid=_uid(f"pod/{namespace}/{name}"),
        resourceVersion=str(100000 + 3 * index + replica),
        creationTimestamp=CREATED,
    )
    body["spec"].update(
        nodeName=f"node-{index % 50:02d}",
        restartPolicy="Always",
        dnsPolicy="ClusterFirst",
        schedulerName="default-scheduler",
        serviceAccountName="default",
    )
    status = _running_status(image, f"{REGISTRY_HOST}/{repository}@{digest}")["status"]
    for condition in status["conditions"]:
        condition["lastTransitionTime"] = CREATED
    status.update(hostIP="10.0.0.1", podIP=f"10.1.{index % 250}.{replica}", startTime=CREATED)
    status["containerStatuses"][0]["containerID"] = f"containerd://{uuid.uuid4().hex * 2}"
    body["status"] = status
    return body


def measure(deployments: int, images: int = 50, *, namespaces: int = NAMESPACES) -> CacheMemory:
    """Bytes the cache holds per workload and per pod with ``deployments`` enrolled
    Deployments of ``REPLICAS`` pods each (module docstring)."""
    layout = Layout(namespaces, REGISTRY_HOST, images)
    deployments_body = _list([_deployment(layout, i) for i in range(deployments)])
    pods_bodies: dict[str, list[dict[str, Any]]] = {}
    for i in range(deployments):
        for replica in range(REPLICAS):
            pods_bodies.setdefault(layout.namespace(i), []).append(_pod_json(layout, i, replica))
    pod_lists = {ns: _list(items) for ns, items in pods_bodies.items()}
    del pods_bodies
    made: list[_PlayedInformer] = []

    def informer(
        collection: Collection,
        *,
        convert: Callable[[dict[str, Any]], Any],
        sink: Sink[Any],
        **_watching: object,
    ) -> _PlayedInformer:
        made.append(_PlayedInformer(collection, convert, sink))
        return made[-1]

    cache = WatchCache(
        label_selector=f"{ENROLL_LABEL}=true",
        rest=LazyRest(lambda: None),
        informer=informer,  # type: ignore[arg-type]
    )
    cache.start()
    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    try:
        gc.collect()
        empty = tracemalloc.get_traced_memory()[0]
        kinds = list(made)
        for kind_informer in kinds:
            body = deployments_body if "deployments" in kind_informer.collection.path else "{}"
            kind_informer.play(body)
        gc.collect()
        with_workloads = tracemalloc.get_traced_memory()[0]
        for pod_informer in made[len(kinds) :]:
            namespace = pod_informer.collection.path.split("/")[4]
            pod_informer.play(pod_lists[namespace])
        gc.collect()
        with_pods = tracemalloc.get_traced_memory()[0]
    finally:
        if started:
            tracemalloc.stop()
    workloads, pods = cache.counts()
    if not cache.synced or workloads != deployments or pods != deployments * REPLICAS:
        raise RuntimeError(f"the cache holds {workloads} workloads and {pods} pods, not all")
    return CacheMemory(
        deployments,
        workloads,
        pods,
        (with_workloads - empty) / workloads,
        (with_pods - with_workloads) / pods,
    )


def main(argv: Sequence[str] = ()) -> int:
    sizes = [(int(a), 50) for a in argv] or list(SIZES)
    print(header(*MEMORY_COLUMNS), end="")
    for deployments, images in sizes:
        print(row(memory_row(asdict(measure(deployments, images)))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
