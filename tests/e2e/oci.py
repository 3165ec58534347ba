"""A real docker-registry on 127.0.0.1 and pushes through its HTTP API (no docker daemon).

Used by the simulated kubelet's resolver tests and by ``scripts/demo.py``. Images are tiny:
a config blob and one layer blob whose bytes make each push distinct, so pushing again under
the same tag moves the tag to a new digest.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests

from tests.e2e.controlplane import free_port

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"


class RegistryError(RuntimeError):
    """docker-registry did not start, or refused a push (message says which and why)."""


@dataclass(frozen=True)
class Registry:
    """A running registry: ``host`` is ``127.0.0.1:<port>``; ``auth`` the Basic credentials."""

    host: str
    auth: tuple[str, str] | None
    log: Path

    @property
    def base(self) -> str:
        return f"http://{self.host}"


@contextlib.contextmanager
def running_registry(
    root: Path, *, binary: str = "docker-registry", auth: tuple[str, str] | None = None
) -> Iterator[Registry]:
    """Start ``docker-registry serve`` with its storage in ``root``; htpasswd auth if ``auth``."""
    root.mkdir(parents=True, exist_ok=True)
    port = free_port()
    config: dict[str, Any] = {
        "version": 0.1,
        "log": {"level": "warn"},
        "storage": {"filesystem": {"rootdirectory": str(root / "data")}},
        "http": {"addr": f"127.0.0.1:{port}"},
    }
    if auth is not None:
        htpasswd = shutil.which("htpasswd")
        if htpasswd is None:
            raise RegistryError("htpasswd is not on PATH (apt package apache2-utils)")
        users = subprocess.run(
            [htpasswd, "-Bbn", *auth], capture_output=True, text=True, check=True
        ).stdout
        (root / "htpasswd").write_text(users)
        config["auth"] = {"htpasswd": {"realm": "autoroll-e2e", "path": str(root / "htpasswd")}}
    (root / "config.yml").write_text(json.dumps(config))  # JSON is YAML
    log_path = root / "registry.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [binary, "serve", str(root / "config.yml")],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 20
        while True:
            with contextlib.suppress(requests.RequestException):
                # 401 without credentials still means "up".
                if requests.get(f"http://127.0.0.1:{port}/v2/", timeout=1).status_code in (
                    200,
                    401,
                ):
                    break
            if proc.poll() is not None:
                raise RegistryError(f"docker-registry exited: {log_path.read_text()[-2000:]}")
            if time.monotonic() > deadline:
                raise RegistryError(f"docker-registry did not answer /v2/ in 20s ({log_path})")
            time.sleep(0.1)
        yield Registry(host=f"127.0.0.1:{port}", auth=auth, log=log_path)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def sha256(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def push_blob(registry: Registry, repo: str, data: bytes) -> str:
    """Monolithic blob upload (POST then PUT with the digest); returns the digest."""
    digest = sha256(data)
    start = requests.post(
        f"{registry.base}/v2/{repo}/blobs/uploads/", auth=registry.auth, timeout=5
    )
    if start.status_code != 202:
        raise RegistryError(f"blob upload to {repo}: {start.status_code} {start.text}")
    location = start.headers["Location"]
    if location.startswith("/"):
        location = registry.base + location
    sep = "&" if "?" in location else "?"
    done = requests.put(f"{location}{sep}digest={digest}", data=data, auth=registry.auth, timeout=5)
    if done.status_code != 201:
        raise RegistryError(f"blob upload to {repo}: {done.status_code} {done.text}")
    return digest


def push_manifest(registry: Registry, repo: str, reference: str, body: dict[str, Any]) -> str:
    """PUT a manifest or index under a tag (or digest); returns its digest."""
    data = json.dumps(body).encode()
    response = requests.put(
        f"{registry.base}/v2/{repo}/manifests/{reference}",
        data=data,
        headers={"Content-Type": body["mediaType"]},
        auth=registry.auth,
        timeout=5,
    )
    if response.status_code != 201:
        raise RegistryError(f"manifest {repo}:{reference}: {response.status_code} {response.text}")
    return sha256(data)


@dataclass(frozen=True)
class Pushed:
    """A pushed manifest: its digest and size (what an index entry needs)."""

    digest: str
    size: int


def push_image(
    registry: Registry, repo: str, tag: str, *, content: str, arch: str = "amd64"
) -> Pushed:
    """Push a one-layer OCI image under ``tag``; ``content`` makes its digest distinct."""
    config = json.dumps({"architecture": arch, "os": "linux", "rootfs": {"type": "layers"}})
    config_digest = push_blob(registry, repo, config.encode())
    layer = content.encode()
    layer_digest = push_blob(registry, repo, layer)
    manifest = {
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
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
    digest = push_manifest(registry, repo, tag, manifest)
    return Pushed(digest=digest, size=len(json.dumps(manifest).encode()))


def push_index(registry: Registry, repo: str, tag: str, children: dict[str, Pushed]) -> str:
    """Push an OCI index under ``tag`` over already-pushed per-arch manifests (arch → Pushed)."""
    index = {
        "schemaVersion": 2,
        "mediaType": OCI_INDEX,
        "manifests": [
            {
                "mediaType": OCI_MANIFEST,
                "digest": child.digest,
                "size": child.size,
                "platform": {"os": "linux", "architecture": arch},
            }
            for arch, child in sorted(children.items())
        ],
    }
    return push_manifest(registry, repo, tag, index)
