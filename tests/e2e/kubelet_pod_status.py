"""The simulated kubelet's pure part: pod status from what it knows about a pod.

The status of a pod is a pure function (``pod_status``) of its spec, what the kubelet recorded
about it (``PodRecord``: when seen, when pulled, which digests) and the clock; the kubelet's
thread only writes when that function's answer changed. No API, no thread: tests call these
directly.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tests.e2e.kubelet_behaviour import Behaviour

# A crash-looping container restarts this often (the real back-off grows to 5 min; tests wait
# for a growing restartCount, not for the exact schedule).
CRASH_PERIOD_SECONDS = 1.0


@dataclass
class PodRecord:
    """What the simulated kubelet remembers about one pod (by uid)."""

    seen_at: float
    pod_ip: str
    pulled_at: float | None = None
    image_ids: dict[str, str] = field(default_factory=dict)
    pull_error: str | None = None
    deleting_since: float | None = None
    delete_sent: bool = False
    last_written: dict[str, Any] | None = None


def ts(t: float) -> str:
    """``t`` (seconds since the epoch) as the API writes a timestamp, in UTC."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def _condition(kind: str, ok: bool, since: float, reason: str | None = None) -> dict[str, Any]:
    cond: dict[str, Any] = {
        "type": kind,
        "status": "True" if ok else "False",
        "lastProbeTime": None,
        "lastTransitionTime": ts(since),
    }
    if reason:
        cond["reason"] = reason
    return cond


def _conditions(
    scheduled: dict[str, Any],
    initialized: dict[str, Any],
    *,
    ready: bool,
    since: float,
    reason: str | None,
) -> list[dict[str, Any]]:
    """A pod's four conditions: ContainersReady and Ready always agree (one container set)."""
    return [
        scheduled,
        initialized,
        _condition("ContainersReady", ready, since, reason),
        _condition("Ready", ready, since, reason),
    ]


def runs_to_completion(pod: Mapping[str, Any]) -> bool:
    """Job pods (restartPolicy Never/OnFailure) exit; Deployment pods run forever."""
    return bool(pod.get("spec", {}).get("restartPolicy", "Always") != "Always")


def pod_status(
    *,
    pod: Mapping[str, Any],
    record: PodRecord,
    behaviour: Behaviour,
    now: float,
    host_ip: str = "127.0.0.1",
) -> dict[str, Any]:
    """The status fields kubelet owns, for this pod at ``now``."""
    containers = pod["spec"]["containers"]
    base: dict[str, Any] = {
        "hostIP": host_ip,
        "hostIPs": [{"ip": host_ip}],
        "startTime": ts(record.seen_at),
    }
    init_statuses = [
        {
            "name": c["name"],
            "image": c["image"],
            "imageID": record.image_ids.get(c["name"], ""),
            "ready": True,
            "restartCount": 0,
            "state": {"terminated": {"exitCode": 0, "reason": "Completed"}},
        }
        for c in pod["spec"].get("initContainers", [])
    ]
    if init_statuses:
        base["initContainerStatuses"] = init_statuses
    scheduled = _condition("PodScheduled", True, record.seen_at)

    if record.pulled_at is None:
        # Still pulling (or the pull failed): no imageID yet, nothing ready.
        waiting = (
            {"reason": "ErrImagePull", "message": record.pull_error}
            if record.pull_error
            else {"reason": "ContainerCreating"}
        )
        return base | {
            "phase": "Pending",
            "conditions": _conditions(
                scheduled,
                _condition("Initialized", True, record.seen_at),
                ready=False,
                since=record.seen_at,
                reason="ContainersNotReady",
            ),
            "containerStatuses": [_status(c, "", {"waiting": waiting}) for c in containers],
        }

    started = record.pulled_at
    ip = {"podIP": record.pod_ip, "podIPs": [{"ip": record.pod_ip}]}
    initialized = _condition("Initialized", True, started)

    if runs_to_completion(pod):
        exit_at = started + behaviour.run_seconds
        if now >= exit_at:
            failed = behaviour.crash_loop
            code = 1 if failed else 0
            terminated = {
                "exitCode": code,
                "reason": "Error" if failed else "Completed",
                "startedAt": ts(started),
                "finishedAt": ts(exit_at),
            }
            return (
                base
                | ip
                | {
                    "phase": "Failed" if failed else "Succeeded",
                    "conditions": _conditions(
                        scheduled, initialized, ready=False, since=exit_at, reason="PodCompleted"
                    ),
                    "containerStatuses": [
                        _status(c, record.image_ids[c["name"]], {"terminated": terminated})
                        for c in containers
                    ],
                }
            )

    if behaviour.crash_loop and not runs_to_completion(pod):
        # Never Ready: each container waits out its back-off after the last crash.
        restarts = 1 + int((now - started) / CRASH_PERIOD_SECONDS)
        last_exit = started + (restarts - 1) * CRASH_PERIOD_SECONDS
        ready, since = False, started
        statuses = [
            _status(
                c,
                record.image_ids[c["name"]],
                {
                    "waiting": {
                        "reason": "CrashLoopBackOff",
                        "message": f"back-off restarting failed container {c['name']}",
                    }
                },
                restarts=restarts,
                last={
                    "terminated": {
                        "exitCode": 1,
                        "reason": "Error",
                        "startedAt": ts(last_exit),
                        "finishedAt": ts(last_exit),
                    }
                },
            )
            for c in containers
        ]
    else:
        ready_at = started + behaviour.ready_after
        ready = now >= ready_at
        since = ready_at if ready else started
        statuses = [
            _status(
                c,
                record.image_ids[c["name"]],
                {"running": {"startedAt": ts(started)}},
                ready=ready,
                started=True,
            )
            for c in containers
        ]
    return (
        base
        | ip
        | {
            "phase": "Running",
            "conditions": _conditions(
                scheduled,
                initialized,
                ready=ready,
                since=since,
                reason=None if ready else "ContainersNotReady",
            ),
            "containerStatuses": statuses,
        }
    )


def _status(
    container: Mapping[str, Any],
    image_id: str,
    state: dict[str, Any],
    *,
    ready: bool = False,
    started: bool = False,
    restarts: int = 0,
    last: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One ``containerStatuses[]`` entry, as the kubelet writes it."""
    status = {
        "name": container["name"],
        "image": container["image"],
        "imageID": image_id,
        "ready": ready,
        "started": started,
        "restartCount": restarts,
        "state": state,
    }
    return status if last is None else {**status, "lastState": last}
