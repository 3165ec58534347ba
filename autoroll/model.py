"""Plain data that crosses the boundary between the adapters and the pure core.

The Kubernetes adapter turns client models into these frozen dataclasses and the registry
client answers with ``Digest`` or ``Unknown``; nothing from a client library reaches
``decide``. Every type here is immutable, hashable and cheap to build in a test table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Final

_SHA256: Final = re.compile(r"sha256:[0-9a-f]{64}")

#: Pod phases after which a pod never runs again; such pods are ignored by the core.
TERMINAL_PHASES: Final = frozenset({"Succeeded", "Failed"})

#: The only pull policy under which a recreated pod is guaranteed to pull the tag again.
PULL_ALWAYS: Final = "Always"


@dataclass(frozen=True, slots=True, order=True)
class Digest:
    """A content digest, always ``sha256:`` followed by 64 lowercase hex digits.

    Validated on construction so that a malformed header or imageID can never be
    compared as if it were a digest.
    """

    value: str

    def __post_init__(self) -> None:
        if not is_digest(self.value):
            raise ValueError(f"not a digest (expected sha256:<64 lowercase hex>): {self.value!r}")

    def __str__(self) -> str:
        return self.value

    @property
    def short(self) -> str:
        """``sha256:`` and the first 12 hex digits, for tables and log lines."""
        return self.value[:19]


def is_digest(text: str) -> bool:
    """Is ``text`` exactly ``sha256:`` + 64 lowercase hex digits?"""
    return _SHA256.fullmatch(text) is not None


@dataclass(frozen=True, slots=True)
class Unknown:
    """A value we could not learn this tick. Unknown is never read as "changed".

    ``reason`` is a short, stable label (metrics use it); ``detail`` is for humans.
    """

    reason: str
    detail: str = ""

    def __str__(self) -> str:
        return (
            f"unknown ({self.reason})"
            if not self.detail
            else f"unknown ({self.reason}: {self.detail})"
        )


@dataclass(frozen=True, slots=True)
class ImageContent:
    """The image configs a manifest or index digest stands for: what a container runs.

    A manifest stands for its one config; an index for its runnable children's configs
    (attestations left out). ``platforms`` pairs ``os/arch[/variant]`` with a child's config
    where the index names the platform (empty for a plain manifest, whose platform is only
    in its config). Content-addressed like the digest it was read from, so never stale.
    """

    configs: frozenset[Digest]
    platforms: tuple[tuple[str, Digest], ...] = ()

    def __post_init__(self) -> None:
        if not self.configs:
            # Empty would be "disjoint from everything": every pod stale. Never allowed.
            raise ValueError("an image content names at least one config")
        stray = {config for _, config in self.platforms} - self.configs
        if stray:
            raise ValueError(f"platform configs not among the configs: {sorted(map(str, stray))}")

    def config_for(self, platform: str) -> Digest | None:
        """The one config this index gives ``platform``, or None when it names none or two."""
        found = {config for name, config in self.platforms if name == platform}
        return next(iter(found)) if len(found) == 1 else None


@dataclass(frozen=True, slots=True)
class ContainerView:
    """A container of a pod template or of a pod spec: what was asked for."""

    name: str
    image: str
    image_pull_policy: str = PULL_ALWAYS


@dataclass(frozen=True, slots=True)
class ContainerStatusView:
    """One ``pod.status.containerStatuses[]`` entry: what the runtime reports it runs.

    ``image_id`` is kept raw (``docker-pullable://…``, ``repo@sha256:…``, ``sha256:…``
    or empty); ``autoroll.images.parse_image_id`` interprets it.
    """

    name: str
    image: str = ""
    image_id: str = ""
    ready: bool = False
    restart_count: int = 0


@dataclass(frozen=True, slots=True)
class DeploymentView:
    """An enrolled Deployment: its desired replica count and its pod template containers.

    The adapter lists Deployments by label, so enrollment is already decided when one of
    these exists; ``labels`` are carried for logs and tables only.
    """

    namespace: str
    name: str
    replicas: int
    containers: tuple[ContainerView, ...]
    labels: tuple[tuple[str, str], ...] = ()
    uid: str = ""
    generation: int | None = None

    @property
    def key(self) -> str:
        """``namespace/name``, the way people and log lines name a Deployment."""
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class PodView:
    """A pod that belongs to a Deployment (the adapter resolved the ownership).

    ``containers`` is the pod *spec* (the image string asked for); ``statuses`` is what the
    runtime reports. ``deleting`` is true once ``metadata.deletionTimestamp`` is set.
    ``ready`` is the pod's ``Ready`` condition, ``ready_changed_at`` when it last changed
    (its ``lastTransitionTime``; None when not reported). ``platform`` is its node's
    ``os/arch[/variant]``: None until platform awareness (issue 18) fills it; the core then
    cannot tell which child of a multi-arch index the pod runs.
    """

    namespace: str
    name: str
    uid: str
    created_at: datetime
    phase: str = "Running"
    deleting: bool = False
    ready: bool = True
    containers: tuple[ContainerView, ...] = ()
    statuses: tuple[ContainerStatusView, ...] = field(default=())
    platform: str | None = None
    ready_changed_at: datetime | None = None

    def __post_init__(self) -> None:
        if self.created_at.tzinfo is None:
            raise ValueError(f"pod {self.namespace}/{self.name}: created_at must be timezone-aware")

    @property
    def is_terminal(self) -> bool:
        """Has the pod finished for good (Succeeded or Failed, e.g. evicted)?"""
        return self.phase in TERMINAL_PHASES

    def spec_image(self, container: str) -> str | None:
        """The image string the pod spec asks for in ``container``, if it has one."""
        for spec in self.containers:
            if spec.name == container:
                return spec.image
        return None

    def status_of(self, container: str) -> ContainerStatusView | None:
        """The runtime's status for ``container``, if it reported one yet."""
        for status in self.statuses:
            if status.name == container:
                return status
        return None
