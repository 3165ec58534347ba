"""Gitea's own package webhooks delivered to the real ``autoroll serve`` (gunicorn).

Hooks are of type gitea, on package events, at the user or the organisation level (those
fire for every package of the owner; repository hooks only for packages linked to that
repository). What each delivery was answered is read from Gitea's own hook-task history.
The Kubernetes API is a closed port, so each pass fails fast and is counted; what matters
here is the HTTP edge and how many passes a push causes.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import requests

from tests.support.gitea import Account, Delivery, GiteaServer
from tests.support.gitea_images import Pusher
from tests.support.local_http import LocalHttpServer, Request, reply
from tests.support.serve import Serve
from tests.support.serve_without_cluster import serving_without_cluster
from tests.support.wait import wait_until

pytestmark = pytest.mark.gitea

SECRET = "gitea-webhook-secret-" + secrets.token_hex(8)
#: What a form-encoded delivery's 403 and the log line must tell the user.
USE_JSON = "set the webhook's POST content type to application/json"
#: Seconds for Gitea to deliver after a push (its queue, then one POST of at most 5 s).
DELIVERY_TIMEOUT = 60.0


@pytest.fixture(scope="module")
def serve(tmp_path_factory: pytest.TempPathFactory, gitea: GiteaServer) -> Iterator[Serve]:
    with serving_without_cluster(
        tmp_path_factory.mktemp("serve"),
        forgejo_host=gitea.host,
        token="not-used-here-" + secrets.token_hex(8),
        secret=SECRET,
        first_pass_within=60,
    ) as server:
        yield server


def delivered(gitea: GiteaServer, hook: int, count: int) -> list[Delivery]:
    """Wait until Gitea has delivered ``count`` tasks of ``hook``; exactly those, in order."""

    def done() -> bool:
        return sum(d.finished for d in gitea.deliveries(hook)) >= count

    wait_until(done, DELIVERY_TIMEOUT, f"{count} deliveries of hook {hook}")
    tasks = gitea.deliveries(hook)
    assert len(tasks) == count, [(t.event, t.status) for t in tasks]
    return tasks


@dataclass(frozen=True)
class Outcomes:
    """The controller's webhook counters at one moment."""

    values: dict[str, float]

    @classmethod
    def of(cls, serve: Serve) -> Outcomes:
        names = (
            "accepted",
            "targeted",
            "digest-version",
            "bad-signature",
            "missing-signature",
            "form-encoded",
        )
        found = {n: serve.metric("autoroll_webhook_requests_total", outcome=n) for n in names}
        found["nudges"] = serve.metric("autoroll_nudges_total")
        found["coalesced"] = serve.metric("autoroll_nudges_coalesced_total")
        return cls(found)

    def since(self, earlier: Outcomes) -> dict[str, float]:
        return {k: v - earlier.values[k] for k, v in self.values.items() if v != earlier.values[k]}


# --------------------------------------------------------------------------------------------
# Accepted


def test_a_user_hook_delivers_a_push_and_gitea_records_202(
    gitea: GiteaServer, serve: Serve, gitea_pusher: Pusher, owner: Account, image: str
) -> None:
    hook = gitea.create_hook(owner, url=f"{serve.url}/webhook", secret=SECRET)
    before = Outcomes.of(serve)
    gitea_pusher.push(owner, image, "latest")

    (task,) = delivered(gitea, hook, 1)

    # The signed body names the tag, so the pass is limited to it (issue 17).
    targeted = f"targeted pass requested for {gitea.host}/{owner.name}/{image}:latest\n"
    assert (task.status, task.succeeded, task.response_body) == (202, True, targeted)
    assert task.event == "package"
    headers = task.request_headers
    assert headers["Content-Type"] == "application/json"
    assert headers["X-Gitea-Event"] == "package"
    assert len(headers["X-Gitea-Signature"]) == 64
    assert headers["X-Hub-Signature-256"] == "sha256=" + headers["X-Gitea-Signature"]
    assert Outcomes.of(serve).since(before) == {"targeted": 1, "nudges": 1}


def test_an_org_hook_delivers_a_push_to_the_org_and_gitea_records_202(
    gitea: GiteaServer, serve: Serve, gitea_pusher: Pusher, owner: Account, image: str
) -> None:
    org = gitea.create_org(f"o-{owner.name}", owner=owner, visibility="public")
    hook = gitea.create_hook(org, url=f"{serve.url}/webhook", secret=SECRET, org=True)
    gitea_pusher.push(org, image, "latest")

    (task,) = delivered(gitea, hook, 1)

    assert (task.status, task.succeeded) == (202, True)
    assert task.request_headers["X-Gitea-Hook-Installation-Target-Type"] == "organization"


def test_a_multi_arch_push_delivers_once_per_child_and_once_for_the_tag_and_passes_once(
    gitea: GiteaServer, serve: Serve, gitea_pusher: Pusher, owner: Account, image: str
) -> None:
    hook = gitea.create_hook(owner, url=f"{serve.url}/webhook", secret=SECRET)
    ticks = serve.ticks()
    before = Outcomes.of(serve)
    pushed = gitea_pusher.push(owner, image, "latest", architectures=("amd64", "arm64", "s390x"))

    tasks = delivered(gitea, hook, len(pushed.children) + 1)

    # One delivery per platform manifest (its version the digest), then the tag's; all
    # within a few hundred milliseconds, faster than one pass against a real cluster.
    versions = [_package_version(t) for t in tasks]
    assert sorted(versions[:-1]) == sorted(pushed.children)
    assert versions[-1] == "latest"
    answers = [(t.status, t.response_body) for t in tasks]
    assert answers == [(202, "a digest version moves no tag; no pass\n")] * 3 + [
        (202, f"targeted pass requested for {gitea.host}/{owner.name}/{image}:latest\n")
    ]
    change = Outcomes.of(serve).since(before)
    assert change == {"digest-version": 3, "targeted": 1, "nudges": 1}
    # The bound is two passes; the tag's delivery alone starts one.
    wait_until(lambda: serve.ticks() >= ticks + 1, 60, "the pass")
    assert serve.ticks() <= ticks + 2


def _package_version(task: Delivery) -> str:
    return str(json.loads(task.request_body)["package"]["version"])


# --------------------------------------------------------------------------------------------
# Refused: what each 403 means


def test_a_hook_with_another_secret_is_403_bad_signature(
    gitea: GiteaServer, serve: Serve, gitea_pusher: Pusher, owner: Account, image: str
) -> None:
    hook = gitea.create_hook(owner, url=f"{serve.url}/webhook", secret=SECRET + "-not")
    before = Outcomes.of(serve)
    gitea_pusher.push(owner, image, "latest")

    (task,) = delivered(gitea, hook, 1)

    assert (task.status, task.response_body) == (403, "bad signature\n")
    assert Outcomes.of(serve).since(before) == {"bad-signature": 1}


def test_a_hook_without_a_secret_is_403_missing_signature(
    gitea: GiteaServer, serve: Serve, gitea_pusher: Pusher, owner: Account, image: str
) -> None:
    hook = gitea.create_hook(owner, url=f"{serve.url}/webhook", secret="")
    before = Outcomes.of(serve)
    gitea_pusher.push(owner, image, "latest")

    (task,) = delivered(gitea, hook, 1)

    # Gitea still sends the headers, empty: X-Gitea-Signature "" and X-Hub-Signature-256 "sha256=".
    assert task.request_headers["X-Gitea-Signature"] == ""
    assert task.request_headers["X-Hub-Signature-256"] == "sha256="
    assert (task.status, task.response_body) == (403, "missing signature\n")
    assert Outcomes.of(serve).since(before) == {"missing-signature": 1}


def test_a_form_encoded_hook_is_403_with_a_body_and_log_line_that_say_to_use_json(
    gitea: GiteaServer, serve: Serve, gitea_pusher: Pusher, owner: Account, image: str
) -> None:
    hook = gitea.create_hook(owner, url=f"{serve.url}/webhook", secret=SECRET, content_type="form")
    before = Outcomes.of(serve)
    gitea_pusher.push(owner, image, "latest")

    (task,) = delivered(gitea, hook, 1)

    assert task.request_headers["Content-Type"] == "application/x-www-form-urlencoded"
    assert task.status == 403
    assert USE_JSON in task.response_body
    assert Outcomes.of(serve).since(before) == {"form-encoded": 1}
    wait_until(lambda: USE_JSON in serve.output(), 10, "the warning in the log")


class Tamperer(LocalHttpServer):
    """Between Gitea and autoroll: forwards each delivery with one byte of its body changed."""

    methods = ("POST",)

    def __init__(self, target: str) -> None:
        super().__init__()
        self.target = target

    def handle(self, handler: Request) -> None:
        body = bytearray(handler.rfile.read(int(handler.headers.get("Content-Length", "0"))))
        body[len(body) // 2] ^= 0x01
        headers = {
            k: v
            for k, v in handler.headers.items()
            if k.lower().startswith("x-") or k.lower() == "content-type"
        }
        answer = requests.post(self.target, data=bytes(body), headers=headers, timeout=10)
        reply(handler, answer.status_code, {"Content-Type": "text/plain"}, answer.content)


def test_a_delivery_changed_on_the_way_is_403_bad_signature(
    gitea: GiteaServer, serve: Serve, gitea_pusher: Pusher, owner: Account, image: str
) -> None:
    with Tamperer(f"{serve.url}/webhook") as tamperer:
        hook = gitea.create_hook(owner, url=f"{tamperer.url}/webhook", secret=SECRET)
        before = Outcomes.of(serve)
        gitea_pusher.push(owner, image, "latest")

        (task,) = delivered(gitea, hook, 1)

    assert (task.status, task.response_body) == (403, "bad signature\n")
    assert tamperer.count("POST") == 1
    assert Outcomes.of(serve).since(before) == {"bad-signature": 1}
