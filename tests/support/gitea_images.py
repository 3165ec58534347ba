"""Images for a real Gitea: OCI layouts written here, pushed to it with skopeo.

``Pusher`` builds images from small random layers as an OCI layout (``oci:``), or as a
``dir:`` directory for Docker media types, which skopeo's ``oci:`` transport does not read,
and copies them to a ``gitea.GiteaServer`` as an owner. Kept apart from the server: nothing
here calls Gitea's API, only its registry, through skopeo.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.gitea import Account, GiteaServer
from tests.support.gitea_launch import run_command
from tests.support.registry import (
    Flavour,
    config_body,
    index_body,
    manifest_body,
    platform_entry,
    sha256_digest,
)


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
        layer = secrets.token_bytes(256)
        config = config_body(architecture, layer)
        self.blob(config)
        self.blob(layer)
        manifest, media_type = manifest_body(config, layer, flavour)
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
            entries.append(platform_entry(child.media_type, child.digest, size, arch))
        body, media_type = index_body(entries, flavour)
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
    run_command(
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
        f"skopeo copy to {destination}",
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home)},
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
