"""Notifications through Apprise, delivered for real: email to a real SMTP server (aiosmtpd,
Apprise's ``mailto://``) and JSON to a local receiver, the stand-in for the chat services
(Slack, ntfy, Gotify...), which cannot be fetched here. The notifier thread, the throttle,
the adapter and Apprise itself all run as ``autoroll serve`` runs them; the last test drives
a whole pass of the real Reconciler that quarantines a digest."""

from __future__ import annotations

import io
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import timedelta

import pytest
from prometheus_client import CollectorRegistry

from autoroll.controller.announcer import Announcer
from autoroll.controller.notifier import Notifier
from autoroll.controller.reconciler import Reconciler
from autoroll.core.happenings import Happening, HappeningKind
from autoroll.core.policy import Guardrails
from autoroll.instruments import logs
from autoroll.instruments.metrics import Metrics
from autoroll.notify import AppriseNotifier, NotifyConfigError
from autoroll.notify.apprise_notifier import secret_parts
from tests.support import reconciler_fakes as fakes
from tests.support.notify_receivers import JsonReceiver, SmtpServer
from tests.support.quarantine import MemoryQuarantine
from tests.support.wait import wait_until

pytestmark = pytest.mark.integration

WEB = fakes.enrolled("web", [fakes.pod("web-1")]).workload


def happening(kind: HappeningKind, name: str = "web") -> Happening:
    workload = replace(WEB, name=name)
    return Happening(
        kind,
        workload,
        "team/app:latest",
        str(fakes.OLD),
        str(fakes.NEW),
        f"something {kind.value} on {workload.key}",
        fakes.T0,
    )


@pytest.fixture
def smtp() -> Iterator[SmtpServer]:
    with SmtpServer() as server:
        yield server


@pytest.fixture
def chat() -> Iterator[JsonReceiver]:
    with JsonReceiver() as receiver:
        yield receiver


@contextmanager
def running(
    urls: list[str],
    *,
    throttle: float = 0.0,
    happenings: frozenset[HappeningKind] = frozenset(HappeningKind),
    on_secret: Callable[[str], None] | None = None,
) -> Iterator[tuple[Notifier, Metrics]]:
    """The notifier thread sending to ``urls`` through Apprise, with metrics of its own;
    stopped (5 s) when the block ends."""
    metrics = Metrics(CollectorRegistry())
    notifier = Notifier(
        AppriseNotifier(urls, on_secret=on_secret),
        metrics=metrics,
        happenings=happenings,
        throttle_seconds=throttle,
    )
    notifier.start()
    try:
        yield notifier, metrics
    finally:
        notifier.stop(5)


def sent(metrics: Metrics, kind: str, outcome: str = "sent") -> float:
    value = metrics.registry.get_sample_value(
        "autoroll_notifications_total", {"happening": kind, "outcome": outcome}
    )
    return value or 0.0


def test_a_quarantine_is_one_email_through_a_real_smtp_server(smtp: SmtpServer) -> None:
    with running([smtp.url()]) as (notifier, metrics):
        notifier.post(happening(HappeningKind.QUARANTINED))
        wait_until(smtp.received, timeout=20, what="the email")
    [mail] = smtp.received()
    assert mail.recipients == ("ops@example.com",)
    assert mail.subject == "autoroll: digest quarantined: shop/deployment/web (team/app:latest)"
    assert f"{fakes.OLD.short} → {fakes.NEW.short}" in mail.body
    assert sent(metrics, "quarantined") == 1


def test_a_burst_of_one_kind_is_one_message_per_interval_stand_in_chat(
    chat: JsonReceiver,
) -> None:
    """Five workloads done within the throttle: the first at once, the four others in one
    message at the interval's end; a quarantine meanwhile is not held by them."""
    with running([chat.apprise_url()], throttle=1.5) as (notifier, metrics):
        notifier.post(happening(HappeningKind.DONE, "w0"))
        wait_until(lambda: len(chat.received()) == 1, timeout=10, what="the first message")
        for n in range(1, 5):
            notifier.post(happening(HappeningKind.DONE, f"w{n}"))
        notifier.post(happening(HappeningKind.QUARANTINED, "bad"))
        wait_until(lambda: len(chat.received()) == 3, timeout=10, what="the batch")
    first, quarantined, batch = chat.received()
    assert first["title"] == "autoroll: rolled: shop/deployment/w0 (team/app:latest)"
    assert quarantined["title"].startswith("autoroll: digest quarantined: shop/deployment/bad")
    assert quarantined["type"] == "warning"
    assert batch["title"] == "autoroll: 4 rolls done"
    assert [line.split(":")[0] for line in batch["message"].splitlines()] == [
        f"shop/deployment/w{n}" for n in range(1, 5)
    ]
    assert sent(metrics, "done") == 5
    assert chat.received()[0]["path"] == "/hooks/autoroll"


def test_a_receiver_that_is_down_is_counted_and_never_raises(chat: JsonReceiver) -> None:
    with running([chat.apprise_url()]) as (notifier, metrics):
        chat.stop()
        notifier.post(happening(HappeningKind.HALTED))
        wait_until(
            lambda: sent(metrics, "halted", "failed") == 1, timeout=20, what="the failed send"
        )


def test_only_the_happenings_asked_for_are_sent(chat: JsonReceiver) -> None:
    quarantines = frozenset({HappeningKind.QUARANTINED})
    with running([chat.apprise_url()], happenings=quarantines) as (notifier, _):
        notifier.post(happening(HappeningKind.STARTED))
        notifier.post(happening(HappeningKind.QUARANTINED))
        wait_until(chat.received, timeout=10, what="the quarantine")
        notifier.post(happening(HappeningKind.DONE))
        notifier.send_due()
    assert [p["title"].split(":")[1].strip() for p in chat.received()] == ["digest quarantined"]


def test_the_urls_and_their_tokens_are_never_logged_even_at_debug(chat: JsonReceiver) -> None:
    """The controller's own log (its handler, its redactor) at LOG_LEVEL=debug, where the
    HTTP library under Apprise logs each request's path: the token in the URL is redacted."""
    token = "s3cr3t-t0ken-in-the-url"
    url = f"json://bot:{token}@127.0.0.1:{chat.port}/hooks/{token}"
    out = io.StringIO()
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    logs.configure(level="debug", log_format="json", stream=out)
    try:
        with running([url], on_secret=logs.redact_also) as (notifier, metrics):
            notifier.post(happening(HappeningKind.QUARANTINED))
            wait_until(lambda: sent(metrics, "quarantined") == 1, timeout=10, what="the send")
    finally:
        for handler in list(root.handlers):
            root.removeHandler(handler)
        for handler in saved[0]:
            root.addHandler(handler)
        root.setLevel(saved[1])
    assert chat.received()[0]["path"] == f"/hooks/{token}"
    text = out.getvalue()
    assert "notification sent" in text
    assert "POST /hooks/" in text, "the library's request line is logged, redacted"
    assert token not in text


def test_the_parts_of_a_url_that_may_carry_a_credential() -> None:
    parts = secret_parts("slack://T0A1B2C3D/B0E4F5G6H/abcdefghijklmnopqrstuvwx?footer=no")
    assert parts[1:] == ["T0A1B2C3D", "B0E4F5G6H", "abcdefghijklmnopqrstuvwx"]
    assert secret_parts("json://u:pw@hooks.example/hooks/autoroll")[1:] == ["u", "pw"]


def test_a_url_apprise_cannot_use_is_refused_naming_its_line_not_its_text() -> None:
    with pytest.raises(NotifyConfigError, match="URL 2 is not one Apprise can use") as error:
        AppriseNotifier(["json://127.0.0.1:9/ok", "nosuchscheme://s3cr3t@example.com"])
    assert "s3cr3t" not in str(error.value)


def test_a_pass_that_quarantines_a_digest_sends_one_notification(chat: JsonReceiver) -> None:
    """The whole chain, pass by pass: web's replacement restarted inside its window; the
    pass quarantines the digest (one notification), api is held; passes after it send
    nothing more."""
    fresh = replace(
        fakes.pod("web-3", fakes.NEW, created=fakes.T0 - timedelta(seconds=20)),
        ready_changed_at=fakes.T0,
    )
    status = replace(fresh.statuses[0], restart_count=1)
    cluster = fakes.FakeCluster(
        [
            fakes.enrolled("web", [fakes.pod("web-1"), replace(fresh, statuses=(status,))]),
            fakes.enrolled("api", [fakes.pod("api-1")]),
        ]
    )
    metrics = Metrics(CollectorRegistry())
    notifier = Notifier(AppriseNotifier([chat.apprise_url()]), metrics=metrics, throttle_seconds=0)
    notifier.start()
    reconciler = Reconciler(
        cluster=cluster,
        registry=fakes.FakeRegistry({fakes.REF: fakes.NEW}),
        metrics=metrics,
        registries={fakes.HOST},
        dry_run=False,
        clock=fakes.Clock(),
        guardrails=Guardrails(healthy=timedelta(seconds=30)),
        quarantine=MemoryQuarantine(),
        announcer=Announcer(metrics=metrics, notify=notifier.post),
    )
    try:
        for _ in range(3):
            reconciler.tick()
        wait_until(chat.received, timeout=10, what="the notification")
        notifier.send_due()
    finally:
        notifier.stop(5)
    assert cluster.deleted == []
    [only] = chat.received()
    assert (
        only["title"]
        == f"autoroll: digest quarantined: shop/deployment/web ({fakes.HOST}/team/app:latest)"
    )
    assert f"autoroll quarantine clear {fakes.HOST}/team/app:latest" in only["message"]
