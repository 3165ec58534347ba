"""Real, runnable test images, built here from Debian's ``busybox-static`` (no pulls possible).

Every image has one layer: ``/bin/busybox`` and a symlink per applet the images use; its
script is the image's entrypoint, so a pod's ``args`` do not replace it. The layer
is byte-for-byte the same every time (fixed mtimes, owners and gzip header), so a node pulls
it once; images differ only in their config (command and environment), which is enough for a
new manifest and config digest per push.

- ``app``: serves ``$BUILD`` over HTTP on port 8080 (``busybox httpd``), so a readiness probe
  has something real to ask; exits 0 on SIGTERM, as most servers do; with ``crash=True`` it
  exits 3 at once, every time (a broken release); with ``crash_after=N`` it serves for N
  seconds, then exits 3 (a release that passes readiness and fails a little later).
- ``sidecar``: sleeps until SIGTERM, with ``$BUILD`` in its environment (a distinct config
  per push): a native sidecar beside the app.
- ``pause``: the pod sandbox image (containerd's ``pinned_images.sandbox``): sleeps until
  SIGTERM.
- ``push_index``: a multi-platform OCI index whose amd64 child is the app and whose arm64
  child has the same layer and an arm64 config (never pulled here, but real in the registry).
- ``push_app(..., flavour="docker")``: the same layer and the very same config bytes under a
  Docker-format manifest, so a different manifest digest with the same config digest.
"""

from __future__ import annotations

import gzip
import io
import json
import tarfile
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Literal, Protocol

from tests.support.registry import DOCKER_LIST, OCI_INDEX, manifest_body, sha256_digest

BUSYBOX = Path("/bin/busybox")
APPLETS = ("sh", "httpd", "sleep", "echo", "test", "mkdir", "cat", "wget", "true", "false", "env")
APP_PORT = 8080

APP_SCRIPT = (
    'test -z "$CRASH" || { echo "release $BUILD is broken"; exit 3; }; '
    'mkdir -p /tmp/www && echo "$BUILD" > /tmp/www/index.html; '
    "trap 'exit 0' TERM INT; "
    f"httpd -f -p {APP_PORT} -h /tmp/www & "
    'if test -n "$CRASH_AFTER"; then sleep "$CRASH_AFTER" & wait $!; '
    'echo "release $BUILD fails after ${CRASH_AFTER}s"; exit 3; fi; wait'
)
SIDECAR_SCRIPT = "trap 'exit 0' TERM INT; while true; do sleep 3600 & wait; done"
PAUSE_SCRIPT = "trap 'exit 0' TERM INT; while true; do sleep 3600 & wait; done"
JOB_SCRIPT = 'echo "job $BUILD ran"'


class RegistryHost(Protocol):
    """Where a pusher's images land: ``host`` is ``127.0.0.1:<port>``."""

    @property
    def host(self) -> str: ...


class Pusher(Protocol):
    """What the images here are pushed with: ``tests.support.registry.ImagePusher`` (plain
    HTTP calls to docker-registry) or ``gitea_pusher.SkopeoPusher`` (skopeo, to Gitea)."""

    @property
    def server(self) -> RegistryHost: ...

    def push_blob(self, repository: str, data: bytes) -> str: ...

    def push_manifest(self, repository: str, reference: str, body: bytes, media_type: str) -> str:
        """Push ``body`` as ``repository:reference``; its digest as the registry stores it."""
        ...


class ImageError(RuntimeError):
    """The test images cannot be built (busybox-static missing)."""


@dataclass(frozen=True)
class Layer:
    blob: bytes  # gzip-compressed tar
    digest: str  # of the blob
    diff_id: str  # of the uncompressed tar


@dataclass(frozen=True)
class Image:
    """A pushed image: manifest (or index) digest, config digest, and platform children."""

    reference: str  # host/repository:tag
    digest: str
    config: str
    media_type: str
    children: tuple[str, ...] = ()

    @property
    def pinned(self) -> str:
        """``host/repository@digest``."""
        return f"{self.reference.rpartition(':')[0]}@{self.digest}"


@cache
def busybox_layer(busybox: Path = BUSYBOX) -> Layer:
    """The one layer every test image has (deterministic bytes)."""
    if not busybox.exists():
        raise ImageError(f"{busybox} is missing: apt-get install busybox-static")
    data = busybox.read_bytes()
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:

        def add(name: str, kind: bytes, mode: int, payload: bytes = b"", link: str = "") -> None:
            info = tarfile.TarInfo(name)
            info.type, info.mode, info.mtime, info.uid, info.gid = kind, mode, 0, 0, 0
            info.uname = info.gname = "root"
            info.size, info.linkname = len(payload), link
            tar.addfile(info, io.BytesIO(payload) if payload else None)

        add("bin", tarfile.DIRTYPE, 0o755)
        add("tmp", tarfile.DIRTYPE, 0o1777)
        add("bin/busybox", tarfile.REGTYPE, 0o755, data)
        for applet in APPLETS:
            add(f"bin/{applet}", tarfile.SYMTYPE, 0o777, link="busybox")
    tar_bytes = raw.getvalue()
    blob = gzip.compress(tar_bytes, mtime=0)
    return Layer(blob=blob, digest=sha256_digest(blob), diff_id=sha256_digest(tar_bytes))


def image_config(
    *, script: str, env: dict[str, str], architecture: str = "amd64", layer: Layer
) -> bytes:
    body = {
        "architecture": architecture,
        "os": "linux",
        "config": {
            # An entrypoint, not a command: a chart that passes flags to its binary (``args``)
            # hands them to the script as positional parameters, which it ignores.
            "Entrypoint": ["/bin/sh", "-c", script, "image"],
            "Env": ["PATH=/bin", *(f"{k}={v}" for k, v in sorted(env.items()))],
            "WorkingDir": "/",
        },
        "rootfs": {"type": "layers", "diff_ids": [layer.diff_id]},
    }
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


def push_config(
    pusher: Pusher,
    repository: str,
    tag: str | None,
    config: bytes,
    *,
    flavour: Literal["oci", "docker"] = "oci",
) -> Image:
    """Push the layer, ``config`` and a manifest for them (by digest when ``tag`` is None)."""
    layer = busybox_layer()
    pusher.push_blob(repository, layer.blob)
    pusher.push_blob(repository, config)
    manifest, media_type = manifest_body(config, layer.blob, flavour)
    reference = tag if tag is not None else sha256_digest(manifest)
    digest = pusher.push_manifest(repository, reference, manifest, media_type)
    host = pusher.server.host
    return Image(
        f"{host}/{repository}:{tag or 'untagged'}", digest, sha256_digest(config), media_type
    )


def app_config(
    build: str, *, crash: bool = False, architecture: str = "amd64", crash_after: int = 0
) -> bytes:
    env = {"BUILD": build, **({"CRASH": "1"} if crash else {})}
    if crash_after:
        env["CRASH_AFTER"] = str(crash_after)
    return image_config(
        script=APP_SCRIPT, env=env, architecture=architecture, layer=busybox_layer()
    )


def push_app(
    pusher: Pusher,
    repository: str,
    tag: str = "latest",
    *,
    build: str,
    crash: bool = False,
    crash_after: int = 0,
    flavour: Literal["oci", "docker"] = "oci",
) -> Image:
    """The app image (see the module docstring) as ``repository:tag``."""
    config = app_config(build, crash=crash, crash_after=crash_after)
    return push_config(pusher, repository, tag, config, flavour=flavour)


def push_sidecar(pusher: Pusher, repository: str, tag: str = "latest", *, build: str) -> Image:
    """The sidecar image (see the module docstring) as ``repository:tag``."""
    config = image_config(script=SIDECAR_SCRIPT, env={"BUILD": build}, layer=busybox_layer())
    return push_config(pusher, repository, tag, config)


def push_pause(pusher: Pusher, repository: str = "e2e-node/pause", tag: str = "1") -> Image:
    config = image_config(script=PAUSE_SCRIPT, env={}, layer=busybox_layer())
    return push_config(pusher, repository, tag, config)


def push_job(pusher: Pusher, repository: str, tag: str, *, build: str) -> Image:
    """An image whose container prints a line and exits 0 (a migration Job)."""
    config = image_config(script=JOB_SCRIPT, env={"BUILD": build}, layer=busybox_layer())
    return push_config(pusher, repository, tag, config)


def push_index(
    pusher: Pusher,
    repository: str,
    tag: str = "latest",
    *,
    build: str,
    flavour: Literal["oci", "docker"] = "oci",
    builds: Mapping[str, str] | None = None,
) -> Image:
    """A two-platform index (amd64 runnable, arm64 a second child) as ``repository:tag``.
    ``builds`` gives a platform's child a build of its own (``{"arm64": "2"}``: a push that
    changes only the arm64 image)."""
    entries = []
    children = []
    for arch in ("amd64", "arm64"):
        own = app_config((builds or {}).get(arch, build), architecture=arch)
        child = push_config(pusher, repository, None, own, flavour=flavour)
        children.append(child.digest)
        entries.append(
            {
                "mediaType": child.media_type,
                "digest": child.digest,
                "size": len(manifest_body(own, busybox_layer().blob, flavour)[0]),
                "platform": {"architecture": arch, "os": "linux"},
            }
        )
    media_type = OCI_INDEX if flavour == "oci" else DOCKER_LIST
    body = json.dumps(
        {"schemaVersion": 2, "mediaType": media_type, "manifests": entries}, sort_keys=True
    ).encode()
    digest = pusher.push_manifest(repository, tag, body, media_type)
    config = sha256_digest(app_config((builds or {}).get("amd64", build)))
    return Image(
        f"{pusher.server.host}/{repository}:{tag}", digest, config, media_type, tuple(children)
    )
