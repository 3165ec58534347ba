"""A real ``docker-registry`` on 127.0.0.1 with htpasswd auth, and a way to push images to it.

The one registry helper module: the registry integration tests, the end-to-end tests (which
push ``:latest`` and watch pods roll) and ``scripts/demo.py`` all use it. Images are built from
small fake layers and pushed through the registry's HTTP API (blob upload + manifest PUT), so
no container tooling is needed. A ``RegistryServer`` can be stopped and started again on the
same port with the same storage: "the registry is offline for a while".
A misbehaving proxy in front of one is ``tests.support.faulty_proxy.FaultyProxy``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import shutil
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import requests

from tests.support.pki import PrivateCA
from tests.support.ports import OnLoopback, free_port
from tests.support.serve import stop_or_kill

OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
OCI_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_CONFIG = "application/vnd.docker.container.image.v1+json"
DOCKER_LAYER = "application/vnd.docker.image.rootfs.diff.tar.gzip"

START_TIMEOUT_SECONDS = 15.0


class RegistryError(RuntimeError):
    """docker-registry could not start or stopped answering (the message says why)."""


def sha256_digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def basic_auth(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode("ascii")


# --------------------------------------------------------------------------------------------
# Image documents, pushed here and written to an OCI layout by ``tests.support.gitea_images``

Flavour = Literal["oci", "docker"]


def config_body(architecture: str, layer: bytes) -> bytes:
    """The image config of a ``linux/<architecture>`` image of one ``layer``."""
    return json.dumps(
        {
            "architecture": architecture,
            "os": "linux",
            "rootfs": {"type": "layers", "diff_ids": [sha256_digest(layer)]},
            "config": {},
        },
        sort_keys=True,
    ).encode()


def manifest_body(config: bytes, layer: bytes, flavour: Flavour) -> tuple[bytes, str]:
    """A single-platform manifest of ``config`` and one ``layer``, and its media type."""
    oci = flavour == "oci"
    media_type = OCI_MANIFEST if oci else DOCKER_MANIFEST
    body = {
        "schemaVersion": 2,
        "mediaType": media_type,
        "config": {
            "mediaType": OCI_CONFIG if oci else DOCKER_CONFIG,
            "digest": sha256_digest(config),
            "size": len(config),
        },
        "layers": [
            {
                "mediaType": OCI_LAYER if oci else DOCKER_LAYER,
                "digest": sha256_digest(layer),
                "size": len(layer),
            }
        ],
    }
    return json.dumps(body, sort_keys=True).encode(), media_type


def platform_entry(media_type: str, digest: str, size: int, architecture: str) -> dict[str, Any]:
    """An index's entry for a ``linux/<architecture>`` manifest."""
    return {
        "mediaType": media_type,
        "digest": digest,
        "size": size,
        "platform": {"architecture": architecture, "os": "linux"},
    }


def index_body(entries: Sequence[dict[str, Any]], flavour: Flavour) -> tuple[bytes, str]:
    """A multi-platform index of ``entries`` (``platform_entry``), and its media type."""
    media_type = OCI_INDEX if flavour == "oci" else DOCKER_LIST
    body = {"schemaVersion": 2, "mediaType": media_type, "manifests": list(entries)}
    return json.dumps(body, sort_keys=True).encode(), media_type


# --------------------------------------------------------------------------------------------
# The registry process


@dataclass
class RegistryServer(OnLoopback):
    """A running (or stopped) ``docker-registry``; ``host`` is ``127.0.0.1:<port>``."""

    binary: str
    root: Path
    port: int
    user: str
    password: str
    process: subprocess.Popen[bytes] | None = None
    #: served over HTTPS with this CA's server certificate (None: plain HTTP)
    tls: PrivateCA | None = None
    #: ``notifications.endpoints`` of the registry's configuration (each endpoint's ``url``,
    #: ``headers``, ``timeout`` ...): the registry POSTs its events there (docs/adr/025)
    notifications: list[dict[str, Any]] | None = None
    log_path: Path = field(init=False)

    def __post_init__(self) -> None:
        self.log_path = self.root / "registry.log"

    @property
    def scheme(self) -> str:  # type: ignore[override]
        return "https" if self.tls else "http"

    @property
    def verify(self) -> str | bool:
        """What ``requests`` should verify this server's certificate with."""
        return str(self.tls.ca_cert) if self.tls else True

    @property
    def authorization(self) -> str:
        return basic_auth(self.user, self.password)

    @property
    def auth(self) -> tuple[str, str]:
        """``(user, password)`` as ``requests`` takes it."""
        return (self.user, self.password)

    @property
    def running(self) -> bool:
        return self.process is not None

    def _tls_files(self) -> dict[str, str]:
        assert self.tls is not None
        return {"certificate": str(self.tls.server_cert), "key": str(self.tls.server_key)}

    def write_config(self) -> Path:
        """Filesystem storage, htpasswd (bcrypt) auth, bound to 127.0.0.1 only."""
        htpasswd = shutil.which("htpasswd")
        if htpasswd is None:
            raise RegistryError("htpasswd is not on PATH (apt-get install apache2-utils)")
        entry = subprocess.run(
            [htpasswd, "-Bbn", self.user, self.password],
            check=True,
            capture_output=True,
            timeout=30,
        ).stdout
        (self.root / "htpasswd").write_bytes(entry)
        config: dict[str, Any] = {
            "version": 0.1,
            "log": {"level": "warn", "accesslog": {"disabled": True}},
            "storage": {
                "filesystem": {"rootdirectory": str(self.root / "data")},
                "delete": {"enabled": True},
            },
            "http": {
                "addr": self.host,
                "secret": secrets.token_hex(16),
                **(
                    {
                        "tls": {
                            "certificate": str(self.tls.server_cert),
                            "key": str(self.tls.server_key),
                        }
                    }
                    if self.tls
                    else {}
                ),
            },
            "auth": {"htpasswd": {"realm": "autoroll-test", "path": str(self.root / "htpasswd")}},
        }
        if self.notifications:
            config["notifications"] = {"endpoints": self.notifications}
        path = self.root / "config.yml"
        # JSON is valid YAML, and avoids a YAML dependency in the support code.
        path.write_text(json.dumps(config, indent=2))
        return path

    def start(self) -> None:
        """Start the process and wait until ``/v2/`` answers (401 without credentials)."""
        if self.process is not None:
            raise RegistryError("registry already running")
        config = self.root / "config.yml"
        if not config.exists():
            config = self.write_config()
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [self.binary, "serve", str(config)],
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.root,
                # Out of the terminal's process group: a Ctrl-C reaches the caller, which then
                # stops the registry in order (the demo tears down this way).
                start_new_session=True,
            )
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RegistryError(f"docker-registry exited early:\n{self.log_path.read_text()}")
            try:
                answer = requests.get(f"{self.url}/v2/", timeout=1, verify=self.verify)
                if answer.status_code in {200, 401}:
                    return
            except requests.ConnectionError:
                time.sleep(0.05)
        self.stop()
        raise RegistryError(f"docker-registry did not answer within {START_TIMEOUT_SECONDS}s")

    def stop(self) -> None:
        """Stop the process (the port stays reserved in ``self.port``; restartable)."""
        if self.process is None:
            return
        stop_or_kill(self.process, 10)
        self.process = None


@contextmanager
def running_registry(
    binary: str,
    root: Path,
    *,
    user: str = "robot",
    password: str | None = None,
    tls: PrivateCA | None = None,
    notifications: list[dict[str, Any]] | None = None,
) -> Iterator[RegistryServer]:
    """Start a registry in ``root`` and always stop it afterwards."""
    root.mkdir(parents=True, exist_ok=True)
    server = RegistryServer(
        binary=binary,
        root=root,
        port=free_port(),
        user=user,
        password=password or secrets.token_hex(12),
        tls=tls,
        notifications=notifications,
    )
    server.start()
    try:
        yield server
    finally:
        server.stop()


def image_reference(host: str, repository: str, tag: str = "latest") -> str:
    """The image string a pod template would use for ``repository:tag`` on ``host``."""
    return f"{host}/{repository}:{tag}"


def image_id(host: str, repository: str, digest: str) -> str:
    """The ``imageID`` containerd reports for an image pulled by (index) ``digest``."""
    return f"{host}/{repository}@{digest}"


# --------------------------------------------------------------------------------------------
# Pushing images through the HTTP API


@dataclass(frozen=True)
class Pushed:
    """What a push produced: the manifest (or index) digest and its exact bytes."""

    digest: str
    media_type: str
    body: bytes
    children: tuple[str, ...] = ()


class ImagePusher:
    """Push blobs, manifests and indexes with plain HTTP calls (Basic auth)."""

    def __init__(self, server: RegistryServer, session: requests.Session | None = None) -> None:
        self.server = server
        self.session = session or requests.Session()
        self.session.headers["Authorization"] = server.authorization
        if server.tls:
            # requests lets REQUESTS_CA_BUNDLE beat session.verify (psf/requests#3829).
            self.session.trust_env = False
            self.session.verify = server.verify

    def push_blob(self, repository: str, data: bytes) -> str:
        digest = sha256_digest(data)
        base = self.server.url
        start = self.session.post(f"{base}/v2/{repository}/blobs/uploads/", timeout=10)
        start.raise_for_status()
        location = start.headers["Location"]
        if location.startswith("/"):
            location = base + location
        separator = "&" if "?" in location else "?"
        done = self.session.put(
            f"{location}{separator}digest={digest}",
            data=data,
            headers={"Content-Type": "application/octet-stream"},
            timeout=10,
        )
        done.raise_for_status()
        return digest

    def push_manifest(self, repository: str, reference: str, body: bytes, media_type: str) -> str:
        response = self.session.put(
            f"{self.server.url}/v2/{repository}/manifests/{reference}",
            data=body,
            headers={"Content-Type": media_type},
            timeout=10,
        )
        if response.status_code != 201:
            raise RuntimeError(f"manifest PUT {response.status_code}: {response.text}")
        digest = response.headers["Docker-Content-Digest"]
        if digest != sha256_digest(body):
            raise RuntimeError("registry reported a different digest than the body's")
        return digest

    def push_image(
        self,
        repository: str,
        tag: str | None,
        *,
        content: bytes | None = None,
        architecture: str = "amd64",
        flavour: Flavour = "oci",
    ) -> Pushed:
        """One single-platform image with one small random layer; ``tag`` None pushes by digest."""
        layer = content if content is not None else secrets.token_bytes(256)
        config = config_body(architecture, layer)
        self.push_blob(repository, layer)
        self.push_blob(repository, config)
        manifest, media_type = manifest_body(config, layer, flavour)
        reference = tag if tag is not None else sha256_digest(manifest)
        digest = self.push_manifest(repository, reference, manifest, media_type)
        return Pushed(digest, media_type, manifest)

    def push_index(
        self,
        repository: str,
        tag: str | None,
        *,
        architectures: Sequence[str] = ("amd64", "arm64"),
        flavour: Flavour = "oci",
        contents: Mapping[str, bytes] | None = None,
    ) -> Pushed:
        """A multi-platform index: children pushed by digest first, then the index as ``tag``
        (``tag`` None pushes it by digest). ``contents`` gives an architecture's layer; the
        same layer and architecture make the same image config, in either flavour."""
        entries: list[dict[str, Any]] = []
        children: list[str] = []
        for arch in architectures:
            child = self.push_image(
                repository,
                None,
                architecture=arch,
                flavour=flavour,
                content=(contents or {}).get(arch),
            )
            children.append(child.digest)
            entries.append(platform_entry(child.media_type, child.digest, len(child.body), arch))
        body, media_type = index_body(entries, flavour)
        digest = self.push_manifest(repository, tag or sha256_digest(body), body, media_type)
        return Pushed(digest, media_type, body, tuple(children))
