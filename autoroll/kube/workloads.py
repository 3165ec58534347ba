"""Deployment, StatefulSet and DaemonSet JSON into the core's ``WorkloadView``.

Pure: each kind's status as its controller writes it (a Deployment's replica counts,
``spec.paused`` and its progress deadline, a StatefulSet's update strategy and revisions, a
DaemonSet's scheduled counts), ``spec.minReadySeconds``, the template's containers and init
containers (a native sidecar is an init container with ``restartPolicy: Always``) with the
pull policy the API would default, and only the annotations under autoroll's prefix. The
field names are the API's own, because lists are read as raw JSON
(docs/adr/005-reading-the-cluster.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from autoroll.core.images import DEFAULT_TAG, ImageRefError, parse_image
from autoroll.core.model import (
    PULL_ALWAYS,
    ContainerRole,
    ContainerView,
    DaemonSetStatus,
    DeploymentStatus,
    StatefulSetStatus,
    UpdateStrategy,
    WorkloadKind,
    WorkloadView,
)
from autoroll.core.policy import PREFIX as ANNOTATION_PREFIX
from autoroll.kube.selectors import LabelSelector, selector_from_json


def default_pull_policy(image: str) -> str:
    """The pull policy the API server would default: Always for ``:latest`` or no tag.

    Only used when an object arrives without one (the API server always fills it in).
    An unparsable image gets no policy, so the core never rolls it.
    """
    try:
        ref = parse_image(image)
    except ImageRefError:
        return ""
    if ref.digest is None and (ref.tag is None or ref.tag == DEFAULT_TAG):
        return PULL_ALWAYS
    return "IfNotPresent"


def template_repositories(view: WorkloadView) -> set[str]:
    """The repositories a workload's template names, on any host: a superset of those a
    targeted pass may concern (the pass narrows it to the configured host and the tags)."""
    found = set()
    for container in view.containers:
        try:
            found.add(parse_image(container.image).repository.lower())
        except ImageRefError:
            continue
    return found


#: The reason the Deployment controller gives its ``Progressing`` condition when a rollout
#: ran past ``spec.progressDeadlineSeconds`` (kubectl's ``TimedOutReason``).
PROGRESS_DEADLINE_EXCEEDED: Final = "ProgressDeadlineExceeded"


def container_from_json(
    container: Mapping[str, Any], role: ContainerRole = ContainerRole.CONTAINER
) -> ContainerView:
    """Convert a ``Container`` (pod template or pod spec) of ``containers[]``, or of
    ``initContainers[]`` (``role`` INIT; SIDECAR when its ``restartPolicy`` is Always)."""
    image = container.get("image") or ""
    policy = container.get("imagePullPolicy") or default_pull_policy(image)
    if role is ContainerRole.INIT and container.get("restartPolicy") == "Always":
        role = ContainerRole.SIDECAR
    return ContainerView(
        name=container.get("name", ""), image=image, image_pull_policy=policy, role=role
    )


def pod_spec_containers(pod_spec: Mapping[str, Any]) -> tuple[ContainerView, ...]:
    """Every container of a pod spec that runs an image: init containers (native sidecars
    among them) first, in the order the kubelet starts them, then the containers. Ephemeral
    containers (``kubectl debug``) are not part of a workload's template and are left out."""
    inits = pod_spec.get("initContainers") or ()
    return tuple(container_from_json(c, ContainerRole.INIT) for c in inits) + tuple(
        container_from_json(c) for c in pod_spec.get("containers") or ()
    )


def workload_from_json(
    kind: WorkloadKind, document: Mapping[str, Any]
) -> tuple[WorkloadView, LabelSelector]:
    """Convert a Deployment, StatefulSet or DaemonSet into the core's view plus the selector
    to match pods with. What cannot be read raises ``ValueError`` naming the field."""
    meta = document.get("metadata") or {}
    spec = document.get("spec") or {}
    status = document.get("status") or {}
    pod_spec = (spec.get("template") or {}).get("spec") or {}
    kind_status: DeploymentStatus | StatefulSetStatus | DaemonSetStatus
    if kind is WorkloadKind.DAEMONSET:
        daemon = _daemonset_status(status)
        replicas, kind_status = daemon.desired_number_scheduled, daemon
    else:
        raw = spec.get("replicas")
        replicas = 1 if raw is None else int(raw)  # the API's default
        if kind is WorkloadKind.STATEFULSET:
            kind_status = _statefulset_status(spec, status)
        else:
            kind_status = _deployment_status(spec, status)
    view = WorkloadView(
        namespace=meta.get("namespace", ""),
        name=meta.get("name", ""),
        replicas=replicas,
        containers=pod_spec_containers(pod_spec),
        labels=tuple(sorted((meta.get("labels") or {}).items())),
        uid=meta.get("uid") or "",
        generation=meta.get("generation"),
        annotations=_autoroll_annotations(meta.get("annotations")),
        kind=kind,
        status=kind_status,
        min_ready_seconds=int(spec.get("minReadySeconds") or 0),
        pull_secrets=pull_secret_names(pod_spec),
        service_account=str(pod_spec.get("serviceAccountName") or ""),
    )
    return view, selector_from_json(spec.get("selector"))


def pull_secret_names(pod_spec: Mapping[str, Any]) -> tuple[str, ...]:
    """The names in a pod spec's ``imagePullSecrets``, in order; an entry without a name is
    skipped, as the kubelet skips it (``getPullSecretsForPod``)."""
    refs = pod_spec.get("imagePullSecrets") or ()
    return tuple(str(r["name"]) for r in refs if isinstance(r, Mapping) and r.get("name"))


def _autoroll_annotations(annotations: object) -> tuple[tuple[str, str], ...]:
    """The object's annotations under autoroll's prefix only: the guardrail overrides. Others
    (``last-applied-configuration`` can be the size of the object) are not kept."""
    if not isinstance(annotations, Mapping):
        return ()
    return tuple(
        sorted(
            (key, str(value))
            for key, value in annotations.items()
            if isinstance(key, str) and key.startswith(ANNOTATION_PREFIX)
        )
    )


def deployment_from_json(deployment: Mapping[str, Any]) -> tuple[WorkloadView, LabelSelector]:
    """Convert a ``Deployment`` (``workload_from_json`` for that kind)."""
    return workload_from_json(WorkloadKind.DEPLOYMENT, deployment)


def _count(status: Mapping[str, Any], name: str) -> int:
    """A status count; the API omits those that are zero."""
    return int(status.get(name) or 0)


def _observed(status: Mapping[str, Any]) -> int | None:
    raw = status.get("observedGeneration")
    return None if raw is None else int(raw)


def _deployment_status(spec: Mapping[str, Any], status: Mapping[str, Any]) -> DeploymentStatus:
    conditions = status.get("conditions") or ()
    timed_out = any(
        isinstance(c, Mapping)
        and c.get("type") == "Progressing"
        and c.get("reason") == PROGRESS_DEADLINE_EXCEEDED
        for c in conditions
    )
    return DeploymentStatus(
        observed_generation=_observed(status),
        replicas=_count(status, "replicas"),
        updated_replicas=_count(status, "updatedReplicas"),
        ready_replicas=_count(status, "readyReplicas"),
        available_replicas=_count(status, "availableReplicas"),
        unavailable_replicas=_count(status, "unavailableReplicas"),
        paused=spec.get("paused") is True,
        progress_deadline_exceeded=timed_out,
    )


def _statefulset_status(spec: Mapping[str, Any], status: Mapping[str, Any]) -> StatefulSetStatus:
    strategy = spec.get("updateStrategy") or {}
    raw_type = strategy.get("type") or UpdateStrategy.ROLLING_UPDATE.value  # the API's default
    try:
        update_strategy = UpdateStrategy(raw_type)
    except ValueError:
        raise ValueError(
            f"spec.updateStrategy.type {raw_type!r} is not one of"
            f" {', '.join(s.value for s in UpdateStrategy)}"
        ) from None
    rolling = strategy.get("rollingUpdate") or {}
    return StatefulSetStatus(
        update_strategy=update_strategy,
        partition=int(rolling.get("partition") or 0),
        ready_replicas=_count(status, "readyReplicas"),
        available_replicas=_count(status, "availableReplicas"),
        observed_generation=_observed(status),
        current_revision=str(status.get("currentRevision") or ""),
        update_revision=str(status.get("updateRevision") or ""),
    )


def _daemonset_status(status: Mapping[str, Any]) -> DaemonSetStatus:
    return DaemonSetStatus(
        desired_number_scheduled=_count(status, "desiredNumberScheduled"),
        number_ready=_count(status, "numberReady"),
        number_available=_count(status, "numberAvailable"),
        number_unavailable=_count(status, "numberUnavailable"),
        updated_number_scheduled=_count(status, "updatedNumberScheduled"),
        observed_generation=_observed(status),
    )


__all__ = [
    "PROGRESS_DEADLINE_EXCEEDED",
    "container_from_json",
    "default_pull_policy",
    "deployment_from_json",
    "pod_spec_containers",
    "template_repositories",
    "workload_from_json",
]
