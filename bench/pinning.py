"""Admission latency of the pinning webhook (docs/adr/028) at 10,000 enrolled workloads.

The real handler: ``autoroll.edge.admission.AdmissionServer`` over TLS on 127.0.0.1, with a
certificate ``ControllerCertificates`` made, answering from an ``ApprovalBook`` filled with
``WORKLOADS`` enrolled Deployments (one to three tags each, a third of them held back on an
older digest), as a pass publishes it. The client is what the API server is: another process
(here ``--clients`` processes), each with a keep-alive HTTPS connection, sending pod CREATE
reviews (the pod of a random enrolled Deployment: one to three containers and a native
sidecar on another registry), each timed from the request's first byte to the answer's last.
Every answer is checked (allowed, and the JSONPatch pins what the book says), so a fast wrong
answer cannot pass.

The figure depends on the machine's load, so the report carries ``os.getloadavg()`` taken
before and after::

    .venv/bin/python -m bench.pinning [--workloads 10000] [--requests 5000] [--clients 4]
"""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import multiprocessing
import os
import random
import ssl
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from prometheus_client import CollectorRegistry

from autoroll.controller.approvals import ApprovalBook
from autoroll.core.approval import Approval, HeldBy
from autoroll.core.images import TagRef
from autoroll.core.model import Digest
from autoroll.edge.admission import AdmissionServer
from autoroll.edge.webhook_pki import ControllerCertificates
from autoroll.instruments.pinning_metrics import PinningMetrics

HOST: Final = "registry.example"
NAME: Final = "autoroll.autoroll.svc"
TARGET_P95_MS: Final = 10.0


class _Config:
    def __init__(self) -> None:
        self.bundle = b""

    def ca_bundle(self) -> bytes:
        return self.bundle

    def set_ca_bundle(self, pem: bytes) -> None:
        self.bundle = pem


def _digest(n: int) -> Digest:
    return Digest(f"sha256:{n:064x}")


def fill(book: ApprovalBook, workloads: int, rng: random.Random) -> list[tuple[str, list[TagRef]]]:
    """``workloads`` Deployments in 100 namespaces, each with its tags' approvals."""
    found: dict[str, list[Approval]] = {}
    layout: list[tuple[str, list[TagRef]]] = []
    for i in range(workloads):
        key = f"ns-{i % 100}/deployment/app-{i}"
        refs = [TagRef(HOST, f"team/app-{(i + t) % 500}", "latest") for t in range(1 + i % 3)]
        approvals = []
        for t, ref in enumerate(refs):
            target = _digest(i * 10 + t + 1)
            if rng.random() < 1 / 3:
                held = _digest(i * 10 + t + 5)
                approvals.append(Approval(ref, held, target, HeldBy.MATURING, "young"))
            else:
                approvals.append(Approval(ref, target, target))
        found[key] = approvals
        layout.append((key, refs))
    book.publish(found, whole=True, now=datetime.now(UTC))
    return layout


def review(uid: str, key: str, images: list[str]) -> dict[str, Any]:
    namespace, _, name = key.split("/")
    containers = [{"name": f"c{j}", "image": image} for j, image in enumerate(images)]
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "operation": "CREATE",
            "namespace": namespace,
            "object": {
                "metadata": {
                    "generateName": f"{name}-7c9d-",
                    "labels": {"app": name, "pod-template-hash": "7c9d"},
                    "ownerReferences": [
                        {
                            "apiVersion": "apps/v1",
                            "kind": "ReplicaSet",
                            "name": f"{name}-7c9d",
                            "uid": "u",
                            "controller": True,
                        }
                    ],
                },
                "spec": {
                    "initContainers": [
                        {
                            "name": "proxy",
                            "image": "docker.io/library/envoy:v1",
                            "restartPolicy": "Always",
                        }
                    ],
                    "containers": containers,
                    "serviceAccountName": "default",
                },
            },
        },
    }


class _ByName(http.client.HTTPSConnection):
    def connect(self) -> None:
        http.client.HTTPConnection.connect(self)
        self.sock = self._context.wrap_socket(self.sock, server_hostname=NAME)  # type: ignore[attr-defined]


def _client(
    port: int, bundle: bytes, work: list[tuple[str, list[str], list[str]]]
) -> tuple[list[float], list[str]]:
    """One API server connection, in a process of its own (the API server is one): each
    review's latency, and every answer that is not the expected pin."""
    context = ssl.create_default_context(cadata=bundle.decode())
    connection = _ByName("127.0.0.1", port, context=context, timeout=10)
    latencies: list[float] = []
    errors: list[str] = []
    try:
        for n, (key, images, wanted) in enumerate(work):
            body = json.dumps(review(f"{key}-{n}", key, images)).encode()
            started = time.perf_counter()
            connection.request("POST", "/pin", body, {"Content-Type": "application/json"})
            data = connection.getresponse().read()
            latencies.append(time.perf_counter() - started)
            answer = json.loads(data)["response"]
            patch = json.loads(base64.b64decode(answer["patch"])) if "patch" in answer else []
            if not answer["allowed"] or [p["value"] for p in patch] != wanted:
                errors.append(f"{key}: {answer}")
    finally:
        connection.close()
    return latencies, errors


def run(*, workloads: int, requests: int, clients: int, seed: int = 1) -> dict[str, Any]:
    rng = random.Random(seed)
    load_before = os.getloadavg()
    book = ApprovalBook()
    started = time.perf_counter()
    layout = fill(book, workloads, rng)
    fill_seconds = time.perf_counter() - started
    config = _Config()
    certificates = ControllerCertificates(dns_names=(NAME,), lifetime=_week(), config=config)
    certificates.start()
    metrics = PinningMetrics(CollectorRegistry())
    server = AdmissionServer(
        "127.0.0.1",
        0,
        context=certificates.context,
        approvals=book,
        registries={HOST},
        metrics=metrics,
    )
    server.start()
    latencies: list[float] = []
    errors: list[str] = []
    share = requests // clients
    jobs = []
    for _ in range(clients):
        work = []
        for key, refs in (rng.choice(layout) for _ in range(share)):
            images = [f"{r.host}/{r.repository}:{r.tag}" for r in refs]
            wanted = [f"{i}@{book.approved(key, r)}" for i, r in zip(images, refs, strict=True)]
            work.append((key, images, wanted))
        jobs.append((server.port, config.bundle, work))
    try:
        with multiprocessing.get_context("spawn").Pool(clients) as pool:
            for found, wrong in pool.starmap(_client, jobs):
                latencies.extend(found)
                errors.extend(wrong)
    finally:
        server.stop()
    ordered = sorted(latencies)

    def pct(p: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(p * len(ordered)))] * 1000, 3)

    return {
        "workloads": workloads,
        "requests": len(latencies),
        "clients": clients,
        "errors": len(errors),
        "first_error": errors[0] if errors else "",
        "p50_ms": pct(0.50),
        "p95_ms": pct(0.95),
        "p99_ms": pct(0.99),
        "mean_ms": round(statistics.fmean(latencies) * 1000, 3),
        "target_p95_ms": TARGET_P95_MS,
        "book_fill_seconds": round(fill_seconds, 3),
        "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in os.getloadavg()],
        "cpus": os.cpu_count(),
    }


def _week() -> timedelta:
    return timedelta(days=7)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.pinning", description=__doc__)
    parser.add_argument("--workloads", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=5_000)
    parser.add_argument("--clients", type=int, default=4)
    args = parser.parse_args(argv)
    result = run(workloads=args.workloads, requests=args.requests, clients=args.clients)
    json.dump(result, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0 if not result["errors"] and result["p95_ms"] < TARGET_P95_MS else 1


if __name__ == "__main__":
    raise SystemExit(main())
