"""Starting a throw-away Gitea on 127.0.0.1 for tests, and removing it afterwards.

``running_gitea`` starts one in a throw-away directory and always removes it: a pre-written
``app.ini`` (install lock, SQLite, packages on, webhooks allowed to loopback, HTTP on a
free port of 127.0.0.1 and nothing else), the schema made with ``gitea migrate``, a site
admin created with Gitea's own CLI, then ``gitea web``. It stands apart from the server
(``gitea.GiteaServer``) because only the fixtures start one; everything else uses a
running server. ``run_command`` runs the CLI here and skopeo in ``gitea_images``.
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import requests

from tests.support.gitea import COMMAND_TIMEOUT_SECONDS, Account, GiteaError, GiteaServer
from tests.support.ports import free_port

#: Seconds to wait for ``gitea web`` to answer ``/api/healthz`` (it migrates nothing by
#: then, but loads templates and locales; on two busy cores this takes a few seconds).
START_TIMEOUT_SECONDS = 120.0
ADMIN = "gitea-admin"


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


def run_command(
    argv: list[str], what: str, *, env: dict[str, str], cwd: Path | None = None
) -> bytes:
    """One command the Gitea tier runs (Gitea's CLI, skopeo): its stdout, or a ``GiteaError``
    that names ``what`` and shows the command's output."""
    result = subprocess.run(
        argv, env=env, cwd=cwd, capture_output=True, timeout=COMMAND_TIMEOUT_SECONDS, check=False
    )
    if result.returncode != 0:
        raise GiteaError(
            f"{what} exited {result.returncode}:\n"
            f"{result.stdout.decode(errors='replace')}{result.stderr.decode(errors='replace')}"
        )
    return result.stdout


def _cli(binary: str, root: Path, *args: str) -> str:
    """One ``gitea`` CLI call against this instance's config; its stdout."""
    config = ["--config", str(root / "custom" / "conf" / "app.ini"), "--work-path", str(root)]
    return run_command(
        [binary, *config, *args],
        f"gitea {' '.join(args[:3])}",
        env=_environment(root),
        cwd=root,
    ).decode()


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
