"""The e2e images (``images.py``) pushed to a real Gitea with skopeo, as a user's CI does.

``SkopeoPusher`` is a ``images.Pusher``: blobs are written to an OCI layout of its own, and
pushing a manifest writes it there, names it in the layout's ``index.json`` and runs
``skopeo copy oci:<layout>:<name> docker://<gitea>/<owner>/<image>:<tag>`` (digests
preserved). ``pushed_at`` holds ``time.monotonic()`` when each copy returned: "push
completion" in the push-to-deletion measurement.
"""

from __future__ import annotations

import secrets
import time
from pathlib import Path

from tests.support.gitea import Account, GiteaServer
from tests.support.gitea_images import Image as LayoutImage
from tests.support.gitea_images import Layout, skopeo_copy


class SkopeoPusher:
    """Push ``owner/<image>`` repositories of ``account`` to ``server`` with skopeo."""

    def __init__(self, server: GiteaServer, account: Account, skopeo: str, workdir: Path) -> None:
        self.server = server
        self.account = account
        self.skopeo = skopeo
        self.workdir = workdir
        self.layout = Layout(workdir / "layout")
        self.pushed_at: list[float] = []  # time.monotonic() as each copy returned
        self.pushed_ns: list[int] = []  # time.time_ns() then (Gitea's history is wall time)

    def push_blob(self, repository: str, data: bytes) -> str:
        """Only written to the layout: skopeo uploads what the manifest names."""
        return self.layout.blob(data)

    def push_manifest(self, repository: str, reference: str, body: bytes, media_type: str) -> str:
        owner = repository.partition("/")[0]
        if owner != self.account.name:
            raise ValueError(f"{repository}: Gitea repositories here are {self.account.name}/…")
        digest = self.layout.blob(body)
        name = f"{reference.replace(':', '-')}-{secrets.token_hex(3)}"
        self.layout.tag(name, LayoutImage(digest, media_type))
        skopeo_copy(
            self.skopeo,
            self.workdir,
            f"oci:{self.layout.path}:{name}",
            f"{self.server.host}/{repository}:{reference}",
            user=self.account.user,
            token=self.account.token,
        )
        self.pushed_at.append(time.monotonic())
        self.pushed_ns.append(time.time_ns())
        return digest
