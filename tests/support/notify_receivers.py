"""Where notifications land in tests: a real SMTP server (aiosmtpd, for Apprise's
``mailto://``) and a local JSON receiver, the stand-in for the chat services (Slack, ntfy,
Gotify, Matrix...), which cannot be fetched here; Apprise's ``json://`` posts to it what it
posts to any generic webhook."""

from __future__ import annotations

import email
import json
import threading
from dataclasses import dataclass
from email.message import Message
from typing import Any, ClassVar, Self

from aiosmtpd.controller import Controller

from tests.support.local_http import LocalHttpServer, Request, reply
from tests.support.ports import free_port


@dataclass(frozen=True)
class Mail:
    """One message the SMTP server accepted."""

    sender: str
    recipients: tuple[str, ...]
    subject: str
    body: str


class SmtpServer:
    """A real SMTP server on 127.0.0.1 (aiosmtpd), keeping every message it accepts."""

    def __init__(self) -> None:
        self.port = free_port()
        self.mails: list[Mail] = []
        self._lock = threading.Lock()
        self._controller = Controller(self, hostname="127.0.0.1", port=self.port)

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802
        message: Message = email.message_from_bytes(envelope.content)
        body = ""
        for part in message.walk():
            if part.get_content_type() == "text/plain":
                payload = part.get_payload(decode=True)
                body = payload.decode("utf-8", "replace") if isinstance(payload, bytes) else ""
                break
        with self._lock:
            self.mails.append(
                Mail(
                    envelope.mail_from,
                    tuple(envelope.rcpt_tos),
                    str(message.get("Subject", "")),
                    body,
                )
            )
        return "250 OK"

    def url(self, *, sender: str = "autoroll@example.com", to: str = "ops@example.com") -> str:
        """The Apprise URL that sends here (plain SMTP, no login)."""
        return f"mailto://127.0.0.1:{self.port}?from={sender}&to={to}&mode=insecure"

    def received(self) -> list[Mail]:
        with self._lock:
            return list(self.mails)

    def __enter__(self) -> Self:
        self._controller.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._controller.stop()


class JsonReceiver(LocalHttpServer):
    """A generic JSON webhook receiver: the stand-in for a chat service's incoming hook."""

    methods: ClassVar[tuple[str, ...]] = ("POST",)

    def __init__(self, port: int | None = None) -> None:
        super().__init__(port)
        self.posts: list[dict[str, Any]] = []
        self._posts_lock = threading.Lock()

    def handle(self, request: Request) -> None:
        length = int(request.headers.get("Content-Length") or 0)
        body = json.loads(request.rfile.read(length) or b"{}")
        with self._posts_lock:
            self.posts.append({"path": request.path, **body})
        reply(request, 200, {"Content-Type": "application/json"}, b"{}")

    def apprise_url(self, path: str = "/hooks/autoroll") -> str:
        """The Apprise URL that posts here."""
        return f"json://127.0.0.1:{self.port}{path}"

    def received(self) -> list[dict[str, Any]]:
        with self._posts_lock:
            return list(self.posts)


__all__ = ["JsonReceiver", "Mail", "SmtpServer"]
