"""A real Gitea on 127.0.0.1: its container registry and its webhook deliveries, for tests.

Forgejo, where users host their images, cannot be fetched on these machines; its upstream
Gitea can (``scripts/tools.sh gitea`` builds it), and the container registry and webhook
delivery code are the code Forgejo forked. So the live-server tier runs against Gitea.

This module holds the running server (``GiteaServer``) and what is done through it: owners,
tokens, organisations and hooks are made through its API, and it is stopped here.
``gitea_launch.running_gitea`` starts one in a throw-away directory; images are pushed with
skopeo by ``gitea_images.Pusher``; ``gitea_proxy.BasicWithholdingProxy`` stands in front of
it for registries that honour only Bearer tokens on manifests. The fixtures are in
``gitea_fixtures``.

Gitea 1.27 has no API for a hook's delivery history (the web UI's "Recent deliveries"), so
``deliveries`` reads Gitea's own ``hook_task`` table, read-only, from its SQLite file: the
request it sent (headers included) and the answer it recorded.
"""

from __future__ import annotations

import json
import secrets
import sqlite3
import subprocess
from collections.abc import Sequence
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import requests

from tests.support.ports import OnLoopback
from tests.support.serve import stop_or_kill

#: Seconds one Gitea CLI call or skopeo copy may take.
COMMAND_TIMEOUT_SECONDS = 120.0

Visibility = Literal["public", "limited", "private"]


class GiteaError(RuntimeError):
    """Gitea could not start, or a setup call failed (the message says which and why)."""


# --------------------------------------------------------------------------------------------
# Owners and tokens


@dataclass(frozen=True)
class Account:
    """An owner of packages (a user or an organisation) and the credentials to act for it.

    For a user ``login`` is ``name``; for an organisation it is the owning user, whose
    password and token these are (an organisation has no credentials of its own).
    """

    name: str
    token: str
    password: str = ""
    login: str = ""

    @property
    def user(self) -> str:
        return self.login or self.name


@dataclass(frozen=True)
class Delivery:
    """One row of Gitea's hook-task history: what it sent and what it was answered."""

    hook_id: int
    event: str
    delivered: bool
    succeeded: bool
    request_headers: dict[str, str]
    request_body: str
    status: int
    response_body: str
    #: Gitea writes what it sent and what it got in one update after the request; until
    #: then the task is only marked ``delivered`` (which happens before it is sent).
    recorded: bool
    at_ns: int  # when the task was made; once recorded, when it was answered

    @property
    def finished(self) -> bool:
        return self.delivered and self.recorded


# --------------------------------------------------------------------------------------------
# The server process


@dataclass
class GiteaServer(OnLoopback):
    """A running ``gitea web``; ``url`` is ``http://127.0.0.1:<port>``."""

    binary: str
    root: Path
    port: int
    admin: Account
    process: subprocess.Popen[bytes] | None = None
    _session: requests.Session = field(default_factory=requests.Session)

    @property
    def config(self) -> Path:
        return self.root / "custom" / "conf" / "app.ini"

    @property
    def database(self) -> Path:
        return self.root / "data" / "gitea.db"

    def log_text(self) -> str:
        parts = [p.read_text(errors="replace") for p in sorted((self.root / "log").glob("*.log"))]
        stdout = self.root / "gitea.stdout"
        if stdout.exists():
            parts.append(stdout.read_text(errors="replace"))
        return "\n".join(parts)

    # -- the API ------------------------------------------------------------------------------

    def api(
        self,
        method: str,
        path: str,
        *,
        token: str | None = None,
        basic: tuple[str, str] | None = None,
        body: object = None,
        expect: tuple[int, ...] = (200, 201, 204),
    ) -> Any:
        """One call to ``/api/v1``; the admin's token unless ``token`` or ``basic`` is given."""
        headers = {"Accept": "application/json"}
        if basic is None:
            headers["Authorization"] = f"token {token or self.admin.token}"
        response = self._session.request(
            method,
            f"{self.url}/api/v1{path}",
            headers=headers,
            auth=basic,
            json=body,
            timeout=30,
        )
        if response.status_code not in expect:
            raise GiteaError(
                f"{method} /api/v1{path}: HTTP {response.status_code}: {response.text[:500]}"
            )
        return response.json() if response.content else None

    def create_user(
        self,
        name: str,
        *,
        scopes: Sequence[str] = ("write:package",),
        visibility: Visibility = "public",
    ) -> Account:
        """A user (through the admin API) with one token of ``scopes``."""
        password = secrets.token_urlsafe(18)
        self.api(
            "POST",
            "/admin/users",
            body={
                "username": name,
                "email": f"{name}@example.invalid",
                "password": password,
                "must_change_password": False,
                "visibility": visibility,
            },
        )
        return Account(name, self.create_token(name, password, scopes), password)

    def create_token(self, user: str, password: str, scopes: Sequence[str]) -> str:
        """A new access token of ``user`` (Gitea issues tokens only to the user's password)."""
        answer = self.api(
            "POST",
            f"/users/{user}/tokens",
            basic=(user, password),
            body={"name": f"t-{secrets.token_hex(4)}", "scopes": list(scopes)},
        )
        return str(answer["sha1"])

    def create_org(self, name: str, *, owner: Account, visibility: Visibility) -> Account:
        """An organisation owned by ``owner``; its ``token`` is the owner's."""
        self.api(
            "POST",
            "/orgs",
            basic=(owner.user, owner.password),
            body={"username": name, "visibility": visibility},
        )
        return Account(name, owner.token, owner.password, login=owner.user)

    def create_hook(
        self,
        owner: Account,
        *,
        url: str,
        secret: str,
        org: bool = False,
        content_type: Literal["json", "form"] = "json",
    ) -> int:
        """A user- (or organisation-) level hook of type gitea on package events."""
        path = f"/orgs/{owner.name}/hooks" if org else "/user/hooks"
        answer = self.api(
            "POST",
            path,
            basic=(owner.user, owner.password),
            body={
                "type": "gitea",
                "active": True,
                "events": ["package"],
                "config": {"url": url, "content_type": content_type, "secret": secret},
            },
        )
        return int(answer["id"])

    def stored_digest(self, owner: str, image: str, tag: str) -> str:
        """The digest Gitea stores for ``owner/image:tag`` (its package file's sha256)."""
        files = self.api("GET", f"/packages/{owner}/container/{image}/{tag}/files")
        manifests = [f for f in files if f["name"] == "manifest.json"]
        if len(manifests) != 1:
            raise GiteaError(f"{owner}/{image}:{tag}: files {[f['name'] for f in files]}")
        return "sha256:" + str(manifests[0]["sha256"])

    # -- hook-task history ------------------------------------------------------------------

    def deliveries(self, hook_id: int) -> list[Delivery]:
        """Every task of ``hook_id`` in Gitea's history, oldest first (delivered or not)."""
        uri = f"file:{self.database}?mode=ro"
        with closing(sqlite3.connect(uri, uri=True, timeout=10)) as db:
            rows = db.execute(
                "SELECT hook_id, event_type, is_delivered, is_succeed, request_content,"
                " response_content, delivered FROM hook_task WHERE hook_id = ? ORDER BY id",
                (hook_id,),
            ).fetchall()
        found = []
        for hook, event, delivered, succeeded, request_text, response_text, at in rows:
            sent = json.loads(request_text) if request_text else {}
            answer = json.loads(response_text) if response_text else {}
            found.append(
                Delivery(
                    hook_id=int(hook),
                    event=str(event),
                    delivered=bool(delivered),
                    succeeded=bool(succeeded),
                    request_headers=dict(sent.get("headers") or {}),
                    request_body=str(sent.get("body") or ""),
                    status=int(answer.get("status") or 0),
                    response_body=str(answer.get("body") or ""),
                    recorded=bool(request_text),
                    at_ns=int(at or 0),
                )
            )
        return found

    # -- lifecycle ----------------------------------------------------------------------------

    def stop(self) -> None:
        if self.process is None:
            return
        stop_or_kill(self.process, 30)
        self.process = None
        self._session.close()
