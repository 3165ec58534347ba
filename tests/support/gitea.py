"""A real Gitea on 127.0.0.1: its container registry and its webhook deliveries, for tests.

Forgejo, where users host their images, cannot be fetched on these machines; its upstream
Gitea can (``scripts/tools.sh gitea`` builds it), and the container registry and webhook
delivery code are the code Forgejo forked. So the live-server tier runs against Gitea.

``running_gitea`` starts one in a throw-away directory and always removes it: a pre-written
``app.ini`` (install lock, SQLite, packages on, webhooks allowed to loopback, HTTP on a
free port of 127.0.0.1 and nothing else), the schema made with ``gitea migrate``, a site
admin created with Gitea's own CLI, then ``gitea web``. Owners, tokens, organisations and
hooks are made through its API (``GiteaServer`` methods); images are pushed with skopeo
(``Pusher``), built here from small random layers as an OCI layout (``oci:``), or as a
``dir:`` directory for Docker media types, which skopeo's ``oci:`` transport does not read.
The fixtures are in ``gitea_fixtures``.

Gitea 1.27 has no API for a hook's delivery history (the web UI's "Recent deliveries"), so
``deliveries`` reads Gitea's own ``hook_task`` table, read-only, from its SQLite file: the
request it sent (headers included) and the answer it recorded.
"""

from __future__ import annotations

import hashlib
import json
import os
import pwd
import secrets
import shutil
import signal
import sqlite3
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import requests

from tests.support.local_http import LocalHttpServer, Request, reply
from tests.support.ports import OnLoopback, free_port

OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
OCI_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_CONFIG = "application/vnd.docker.container.image.v1+json"
DOCKER_LAYER = "application/vnd.docker.image.rootfs.diff.tar.gzip"

#: Seconds to wait for ``gitea web`` to answer ``/api/healthz`` (it migrates nothing by
#: then, but loads templates and locales; on two busy cores this takes a few seconds).
START_TIMEOUT_SECONDS = 120.0
#: Seconds one Gitea CLI call or skopeo copy may take.
COMMAND_TIMEOUT_SECONDS = 120.0
ADMIN = "gitea-admin"

Flavour = Literal["oci", "docker"]
Visibility = Literal["public", "limited", "private"]


class GiteaError(RuntimeError):
    """Gitea could not start, or a setup call failed (the message says which and why)."""


def sha256_digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


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
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
        self.process = None
        self._session.close()


def _app_ini(root: Path, static: Path, port: int, *, require_signin: bool) -> str:
    """Everything Gitea needs to run unattended on 127.0.0.1:port and nowhere else."""
    user = pwd.getpwuid(os.getuid()).pw_name
    as_root = "I_AM_BEING_UNSAFE_RUNNING_AS_ROOT = true\n" if os.getuid() == 0 else ""
    return f"""\
APP_NAME = autoroll tests
RUN_MODE = prod
RUN_USER = {user}
WORK_PATH = {root}
{as_root}
[server]
PROTOCOL = http
HTTP_ADDR = 127.0.0.1
HTTP_PORT = {port}
DOMAIN = 127.0.0.1
ROOT_URL = http://127.0.0.1:{port}/
STATIC_ROOT_PATH = {static}
APP_DATA_PATH = {root}/data
DISABLE_SSH = true
START_SSH_SERVER = false
LFS_START_SERVER = false
OFFLINE_MODE = true

[database]
DB_TYPE = sqlite3
PATH = {root}/data/gitea.db
SQLITE_JOURNAL_MODE = WAL

[repository]
ROOT = {root}/repositories

[security]
INSTALL_LOCK = true
SECRET_KEY = {secrets.token_hex(32)}
INTERNAL_TOKEN = {secrets.token_hex(32)}
; Throw-away passwords: a cheap hash keeps making owners fast on two busy cores.
PASSWORD_HASH_ALGO = pbkdf2$1000$32

[oauth2]
JWT_SECRET = {secrets.token_urlsafe(32)}

[service]
DISABLE_REGISTRATION = true
REQUIRE_SIGNIN_VIEW = {"true" if require_signin else "false"}
DEFAULT_KEEP_EMAIL_PRIVATE = true
NO_REPLY_ADDRESS = noreply.example.invalid

[packages]
ENABLED = true

[webhook]
; Forgejo's name for it (Gitea 1.27 also reads [security] ALLOWED_HOST_LIST): the hosts
; deliveries may go to. autoroll serve listens on 127.0.0.1 here.
ALLOWED_HOST_LIST = loopback
DELIVER_TIMEOUT = 5

[actions]
ENABLED = false

[mailer]
ENABLED = false

[cron]
ENABLED = false

[cron.update_checker]
ENABLED = false

[session]
PROVIDER = memory

[cache]
ADAPTER = memory

[queue]
TYPE = channel

[indexer]
ISSUE_INDEXER_TYPE = db
REPO_INDEXER_ENABLED = false

[picture]
DISABLE_GRAVATAR = true
ENABLE_FEDERATED_AVATAR = false

[log]
MODE = file
LEVEL = info
ROOT_PATH = {root}/log
"""


def _environment(root: Path) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(root / "home"),
        "GITEA_WORK_DIR": str(root),
        "USER": pwd.getpwuid(os.getuid()).pw_name,
    }


def _cli(binary: str, root: Path, *args: str) -> str:
    """One ``gitea`` CLI call against this instance's config; its stdout."""
    result = subprocess.run(
        [
            binary,
            "--config",
            str(root / "custom" / "conf" / "app.ini"),
            "--work-path",
            str(root),
            *args,
        ],
        env=_environment(root),
        cwd=root,
        capture_output=True,
        timeout=COMMAND_TIMEOUT_SECONDS,
        check=False,
    )
    if result.returncode != 0:
        raise GiteaError(
            f"gitea {' '.join(args[:3])} exited {result.returncode}:\n"
            f"{result.stdout.decode(errors='replace')}{result.stderr.decode(errors='replace')}"
        )
    return result.stdout.decode()


def static_root(binary: str) -> Path:
    """Gitea's locales, templates and public files, cached beside the binary by tools.sh."""
    path = Path(binary).resolve().parent / "static"
    if not (path / "options" / "locale").is_dir():
        raise GiteaError(f"{path} lacks Gitea's options/locale (rebuild: scripts/tools.sh gitea)")
    return path


@contextmanager
def running_gitea(binary: str, *, require_signin: bool = False) -> Iterator[GiteaServer]:
    """Gitea in a fresh temporary directory; stopped and the directory removed afterwards."""
    root = Path(tempfile.mkdtemp(prefix="autoroll-gitea-"))
    server: GiteaServer | None = None
    try:
        port = free_port()
        (root / "custom" / "conf").mkdir(parents=True)
        (root / "home").mkdir()
        (root / "custom" / "conf" / "app.ini").write_text(
            _app_ini(root, static_root(binary), port, require_signin=require_signin)
        )
        _cli(binary, root, "migrate")
        password = secrets.token_urlsafe(18)
        token = _cli(
            binary,
            root,
            "admin",
            "user",
            "create",
            "--username",
            ADMIN,
            "--email",
            f"{ADMIN}@example.invalid",
            "--password",
            password,
            "--admin",
            "--must-change-password=false",
            "--access-token",
            "--access-token-name",
            "setup",
            "--access-token-scopes",
            "all",
        )
        server = GiteaServer(binary, root, port, Account(ADMIN, _token_from(token), password))
        with (root / "gitea.stdout").open("wb") as out:
            server.process = subprocess.Popen(
                [binary, "web", "--config", str(server.config), "--work-path", str(root)],
                env=_environment(root),
                cwd=root,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        _wait_healthy(server)
        yield server
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(root, ignore_errors=True)


def _token_from(cli_output: str) -> str:
    """The token in ``admin user create --access-token`` output ("Access token was ...")."""
    for line in cli_output.splitlines():
        words = line.split()
        if words and len(words[-1]) == 40 and all(c in "0123456789abcdef" for c in words[-1]):
            return words[-1]
    raise GiteaError(f"no access token in: {cli_output!r}")


def _wait_healthy(server: GiteaServer) -> None:
    assert server.process is not None
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise GiteaError(f"gitea web exited {server.process.returncode}:\n{server.log_text()}")
        try:
            if requests.get(f"{server.url}/api/healthz", timeout=2).status_code == 200:
                return
        except requests.ConnectionError:
            pass
        time.sleep(0.1)
    raise GiteaError(f"gitea web did not answer in {START_TIMEOUT_SECONDS}s:\n{server.log_text()}")


# --------------------------------------------------------------------------------------------
# Images: OCI layouts written here, pushed with skopeo


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


# --------------------------------------------------------------------------------------------
# A stand-in for a registry that honours only Bearer tokens on manifests


class BasicWithholdingProxy(LocalHttpServer):
    """Forwards to Gitea, but sends manifest requests on without a Basic Authorization.

    Gitea takes Basic credentials on every registry path, so a client that sends them never
    meets its Bearer flow. Registries that honour only tokens on manifests make clients
    take it; this proxy makes Gitea one of them, and nothing else: Gitea itself answers
    every request (its two challenges, its token endpoint, its check of the token it
    issued). ``Host`` is forwarded, so Gitea's realm names this proxy and token requests
    pass through it too (counted in ``token_requests``).

    ``hold`` > 1 makes that many Basic-stripped manifest requests wait for each other
    before any is forwarded, so lookups running at once are all refused before any of
    them can ask for a token.
    """

    def __init__(self, upstream: GiteaServer, *, hold: int = 1) -> None:
        super().__init__()
        self.upstream = upstream
        self._together = threading.Barrier(hold, timeout=30) if hold > 1 else None
        self.challenges: list[str] = []  # WWW-Authenticate of every 401 passed back

    @property
    def token_requests(self) -> int:
        with self._lock:
            return sum(1 for s in self.seen if s.path.startswith("/v2/token"))

    def handle(self, handler: Request) -> None:
        auth = handler.headers.get("Authorization", "")
        if "/manifests/" in handler.path and auth.startswith("Basic "):
            auth = ""
            if self._together is not None:
                self._together.wait()
        answer = requests.request(
            handler.command,
            f"{self.upstream.url}{handler.path}",
            headers={
                "Accept": handler.headers.get("Accept", ""),
                "Authorization": auth,
                "Host": self.host,
            },
            timeout=30,
            allow_redirects=False,
        )
        headers = {
            k: v
            for k, v in answer.headers.items()
            if k.lower() in {"content-type", "docker-content-digest"}
        }
        if answer.status_code == 401:
            # Several WWW-Authenticate lines, as Gitea sent them (urllib3 keeps them apart).
            lines = answer.raw.headers.getlist("WWW-Authenticate")
            with self._lock:
                self.challenges.append(", ".join(lines))
            handler.send_response(401)
            for line in lines:
                handler.send_header("WWW-Authenticate", line)
            handler.send_header("Content-Length", "0")
            handler.end_headers()
            return
        head = handler.command == "HEAD"
        length = int(answer.headers.get("Content-Length", "0")) if head else None
        reply(handler, answer.status_code, headers, answer.content, length=length)
