"""The simulated kubelet's images: how it names them, where it resolves them, how it pulls.

``ImageRef`` splits an image the way a runtime does; a resolver answers ``image -> digest |
None`` (``StaticResolver`` from memory, ``RegistryResolver`` from a real OCI registry, as a
container runtime pulls); ``pull`` resolves a pod's images through the node's image cache and
records the imageIDs the runtime would report. None of it touches the API server.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import requests

from tests.e2e.kubelet_behaviour import Behaviour
from tests.e2e.kubelet_pod_status import PodRecord

Resolve = Callable[[str], str | None]

# The manifest media types a runtime accepts; with the index types listed, a multi-arch tag
# answers with the index digest, which is what containerd records as the repo digest.
MANIFEST_ACCEPT = ", ".join(
    [
        "application/vnd.oci.image.index.v1+json",
        "application/vnd.oci.image.manifest.v1+json",
        "application/vnd.docker.distribution.manifest.list.v2+json",
        "application/vnd.docker.distribution.manifest.v2+json",
    ]
)
INDEX_TYPES = {
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
}


# --- image references -----------------------------------------------------------


@dataclass(frozen=True)
class ImageRef:
    """``host/repo[:tag][@digest]`` split the way a runtime does (no Docker Hub defaults)."""

    host: str
    repository: str
    tag: str | None
    digest: str | None

    @classmethod
    def parse(cls, image: str) -> ImageRef:
        name, _, digest = image.partition("@")
        slash = name.rfind("/")
        colon = name.rfind(":")
        tag = None
        if colon > slash:
            name, tag = name[:colon], name[colon + 1 :]
        host, _, repository = name.partition("/")
        if not repository or not ("." in host or ":" in host or host == "localhost"):
            # Docker Hub short names: what containerd would expand them to.
            host, repository = "docker.io", name if "/" in name else f"library/{name}"
        return cls(host=host, repository=repository, tag=tag or None, digest=digest or None)

    def repo_digest(self, digest: str) -> str:
        """The imageID containerd reports: ``host/repo@sha256:…``."""
        return f"{self.host}/{self.repository}@{digest}"


# --- resolvers ------------------------------------------------------------------


class StaticResolver:
    """An in-memory registry: image string → digest; ``None`` (or absent) is "pull fails"."""

    def __init__(self, digests: Mapping[str, str | None] | None = None) -> None:
        self._lock = threading.Lock()
        self._digests: dict[str, str | None] = dict(digests or {})
        self.calls: list[str] = []

    def set(self, image: str, digest: str | None) -> None:
        with self._lock:
            self._digests[image] = digest

    def __call__(self, image: str) -> str | None:
        with self._lock:
            self.calls.append(image)
            return self._digests.get(image)


class RegistryResolver:
    """Resolve tags against a real OCI registry over HTTP, as a container runtime pulls them.

    ``resolve`` HEADs the manifest with the index types accepted (the index digest for a
    multi-arch tag); ``child`` GETs the index and picks the platform's manifest digest.
    Every failure is ``None`` ("the pull failed"), never an exception.
    """

    def __init__(
        self,
        *,
        scheme: str = "http",
        auth: tuple[str, str] | None = None,
        timeout: float = 3.0,
        platform: tuple[str, str] = ("linux", "amd64"),
        session: requests.Session | None = None,
    ) -> None:
        self.scheme = scheme
        self.auth = auth
        self.timeout = timeout
        self.platform = platform
        self.session = session or requests.Session()

    def _manifest(self, send: Callable[..., requests.Response], ref: ImageRef) -> requests.Response:
        """``send`` (the session's ``head`` or ``get``) for ``ref``'s manifest, any of
        ``MANIFEST_ACCEPT``; a failed request raises ``requests.RequestException``."""
        reference = ref.digest or ref.tag or "latest"
        url = f"{self.scheme}://{ref.host}/v2/{ref.repository}/manifests/{reference}"
        return send(url, headers={"Accept": MANIFEST_ACCEPT}, auth=self.auth, timeout=self.timeout)

    def __call__(self, image: str) -> str | None:
        ref = ImageRef.parse(image)
        try:
            response = self._manifest(self.session.head, ref)
        except requests.RequestException:
            return None
        digest = response.headers.get("Docker-Content-Digest", "")
        return digest if response.status_code == 200 and digest.startswith("sha256:") else None

    def child(self, image: str) -> str | None:
        ref = ImageRef.parse(image)
        try:
            response = self._manifest(self.session.get, ref)
            body = response.json() if response.status_code == 200 else None
        except (requests.RequestException, ValueError):
            return None
        if not isinstance(body, dict) or body.get("mediaType") not in INDEX_TYPES:
            return None
        os_name, arch = self.platform
        for manifest in body.get("manifests", []):
            platform = manifest.get("platform", {})
            if platform.get("os") == os_name and platform.get("architecture") == arch:
                digest = manifest.get("digest")
                return digest if isinstance(digest, str) else None
        return None


# --- the pull ------------------------------------------------------------------


def pull(
    pod: Mapping[str, Any],
    record: PodRecord,
    behaviour: Behaviour,
    now: float,
    *,
    lock: threading.Lock,
    resolve: Resolve,
    resolve_child: Resolve | None,
    cached_digest: dict[str, str],
    first_digest: dict[str, str],
    digest_knob: Callable[[str], Behaviour],
) -> None:
    """Resolve every container image; all succeed or the pod stays in ErrImagePull.

    ``cached_digest`` (image -> digest this node pulled last) and ``first_digest`` (image ->
    digest this node first pulled) are the node's image cache, read and written under ``lock``;
    ``digest_knob`` gives the behaviour set for a digest.
    """
    ids: dict[str, str] = {}
    for container in [*pod["spec"].get("initContainers", []), *pod["spec"]["containers"]]:
        image = container["image"]
        ref = ImageRef.parse(image)
        policy = container.get("imagePullPolicy", "IfNotPresent")
        with lock:
            cached = cached_digest.get(image)
            first = first_digest.get(image)
        if ref.digest:
            digest: str | None = ref.digest
        elif policy != "Always" and cached:
            digest = cached  # IfNotPresent/Never: the node's copy, no registry call
        else:
            digest = resolve(image)
        if digest is None:
            record.pull_error = f"failed to resolve reference {image!r}"
            return
        with lock:
            cached_digest[image] = digest
            first_digest.setdefault(image, digest)
            first = first_digest[image]
        reported = digest
        if behaviour.keep_old_digest or digest_knob(digest).keep_old_digest:
            reported = first
        if behaviour.report_child or digest_knob(digest).report_child:
            child = resolve_child(image) if resolve_child else None
            if child is None:
                record.pull_error = f"no platform manifest for {image!r}"
                return
            reported = child
        ids[container["name"]] = ref.repo_digest(reported)
    record.image_ids = ids
    record.pull_error = None
    record.pulled_at = now
