"""Images for a real Gitea: OCI layouts written here, pushed to it with skopeo.

``Pusher`` builds images from small random layers as an OCI layout (``oci:``), or as a
``dir:`` directory for Docker media types, which skopeo's ``oci:`` transport does not read,
and copies them to a ``gitea.GiteaServer`` as an owner. Kept apart from the server: nothing
here calls Gitea's API, only its registry, through skopeo.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from tests.support.gitea import COMMAND_TIMEOUT_SECONDS, Account, GiteaError, GiteaServer

OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
OCI_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_CONFIG = "application/vnd.docker.container.image.v1+json"
DOCKER_LAYER = "application/vnd.docker.image.rootfs.diff.tar.gzip"

Flavour = Literal["oci", "docker"]


def sha256_digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class Image:
    """An image written to a layout: the digest of what the tag names, and its children."""

    digest: str
    media_type: str
    children: tuple[str, ...] = ()


class Layout:
    """An OCI image layout directory (blobs + ``index.json``) that skopeo reads with ``oci:``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        (path / "blobs" / "sha256").mkdir(parents=True, exist_ok=True)
        (path / "oci-layout").write_text('{"imageLayoutVersion": "1.0.0"}')
        self._refs: list[dict[str, Any]] = []

    def blob(self, data: bytes) -> str:
        digest = sha256_digest(data)
        (self.path / "blobs" / "sha256" / digest.removeprefix("sha256:")).write_bytes(data)
        return digest

    def image(self, *, flavour: Flavour = "oci", architecture: str = "amd64") -> Image:
        """One platform's manifest over one small random layer."""
        oci = flavour == "oci"
        layer = secrets.token_bytes(256)
        config = json.dumps(
            {
                "architecture": architecture,
                "os": "linux",
                "rootfs": {"type": "layers", "diff_ids": [sha256_digest(layer)]},
                "config": {},
            },
            sort_keys=True,
        ).encode()
        media_type = OCI_MANIFEST if oci else DOCKER_MANIFEST
        manifest = json.dumps(
            {
                "schemaVersion": 2,
                "mediaType": media_type,
                "config": {
                    "mediaType": OCI_CONFIG if oci else DOCKER_CONFIG,
                    "digest": self.blob(config),
                    "size": len(config),
                },
                "layers": [
                    {
                        "mediaType": OCI_LAYER if oci else DOCKER_LAYER,
                        "digest": self.blob(layer),
                        "size": len(layer),
                    }
                ],
            },
            sort_keys=True,
        ).encode()
        return Image(self.blob(manifest), media_type)

    def index(
        self, *, flavour: Flavour = "oci", architectures: Sequence[str] = ("amd64", "arm64")
    ) -> Image:
        """A multi-platform index over one image per architecture."""
        entries = []
        children = []
        for arch in architectures:
            child = self.image(flavour=flavour, architecture=arch)
            children.append(child.digest)
            size = (self.path / "blobs" / "sha256" / child.digest[7:]).stat().st_size
            entries.append(
                {
                    "mediaType": child.media_type,
                    "digest": child.digest,
                    "size": size,
                    "platform": {"architecture": arch, "os": "linux"},
                }
            )
        media_type = OCI_INDEX if flavour == "oci" else DOCKER_LIST
        body = json.dumps(
            {"schemaVersion": 2, "mediaType": media_type, "manifests": entries}, sort_keys=True
        ).encode()
        return Image(self.blob(body), media_type, tuple(children))

    def tag(self, name: str, image: Image) -> None:
        """Name ``image`` as ``name`` in ``index.json`` (what ``oci:<dir>:<name>`` reads)."""
        size = (self.path / "blobs" / "sha256" / image.digest[7:]).stat().st_size
        key = "org.opencontainers.image.ref.name"
        self._refs = [r for r in self._refs if r["annotations"][key] != name]
        self._refs.append(
            {
                "mediaType": image.media_type,
                "digest": image.digest,
                "size": size,
                "annotations": {key: name},
            }
        )
        (self.path / "index.json").write_text(
            json.dumps({"schemaVersion": 2, "manifests": self._refs}, sort_keys=True)
        )

    def read(self, digest: str) -> bytes:
        return (self.path / "blobs" / "sha256" / digest.removeprefix("sha256:")).read_bytes()

    def export_dir(self, image: Image, path: Path) -> Path:
        """``image`` as a skopeo ``dir:`` directory (which, unlike ``oci:``, holds Docker types).

        ``manifest.json`` is what the tag names; each child of a list is
        ``<hex>.manifest.json``; blobs are named by their hex digest.
        """
        path.mkdir(parents=True)
        (path / "version").write_text("Directory Transport Version: 1.1\n")
        top = self.read(image.digest)
        (path / "manifest.json").write_bytes(top)
        manifests = [top]
        for child in image.children:
            body = self.read(child)
            (path / f"{child.removeprefix('sha256:')}.manifest.json").write_bytes(body)
            manifests.append(body)
        for body in manifests:
            document = json.loads(body)
            for blob in [document.get("config"), *document.get("layers", [])]:
                if blob:
                    name = str(blob["digest"]).removeprefix("sha256:")
                    (path / name).write_bytes(self.read(blob["digest"]))
        return path


def skopeo_copy(
    skopeo: str, workdir: Path, source: str, destination: str, *, user: str, token: str
) -> None:
    """``skopeo copy --all --preserve-digests <source> docker://<destination>``."""
    home = workdir / "skopeo-home"
    home.mkdir(exist_ok=True)
    result = subprocess.run(
        [
            skopeo,
            "--insecure-policy",
            "copy",
            "--all",
            "--preserve-digests",
            "--dest-tls-verify=false",
            "--dest-creds",
            f"{user}:{token}",
            source,
            f"docker://{destination}",
        ],
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home)},
        capture_output=True,
        timeout=COMMAND_TIMEOUT_SECONDS,
        check=False,
    )
    if result.returncode != 0:
        raise GiteaError(
            f"skopeo copy to {destination} exited {result.returncode}:\n"
            f"{result.stdout.decode(errors='replace')}{result.stderr.decode(errors='replace')}"
        )


class Pusher:
    """Writes images to a private layout and pushes them to Gitea with skopeo."""

    def __init__(self, server: GiteaServer, skopeo: str, workdir: Path) -> None:
        self.server = server
        self.skopeo = skopeo
        self.workdir = workdir
        self.layout = Layout(workdir / "layout")

    def push(
        self,
        owner: Account,
        image: str,
        tag: str,
        *,
        flavour: Flavour = "oci",
        architectures: Sequence[str] = (),
    ) -> Image:
        """Push ``owner/image:tag``: an index over ``architectures``, else one manifest."""
        built = (
            self.layout.index(flavour=flavour, architectures=architectures)
            if architectures
            else self.layout.image(flavour=flavour)
        )
        name = f"{image}-{tag}-{secrets.token_hex(3)}"
        if flavour == "oci":
            self.layout.tag(name, built)
            source = f"oci:{self.layout.path}:{name}"
        else:
            source = f"dir:{self.layout.export_dir(built, self.workdir / name)}"
        skopeo_copy(
            self.skopeo,
            self.workdir,
            source,
            f"{self.server.host}/{owner.name}/{image}:{tag}",
            user=owner.user,
            token=owner.token,
        )
        return built
