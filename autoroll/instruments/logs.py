"""Logging for the controller: text for people, JSON for log pipelines, secrets never shown.

Every module logs with the standard library (``logging.getLogger(__name__)``) and passes
structured fields with ``extra=``. ``configure`` (once per process; the CLI does it before
gunicorn forks, so the one worker inherits it) routes every record through one handler whose
formatter is structlog's ``ProcessorFormatter``:

    record ─► message ─► every ``extra=`` field (ExtraAdder) ─► context (``pass_id``) ─►
              level, logger, ts ─► exception text ─► secrets redacted ─► text or JSON

So each field a call site attaches reaches both formats, whatever its name; there is no
allow-list to forget. ``pass_context`` binds a pass id for the duration of one reconcile
pass, and every line logged in that thread meanwhile carries it.

Secrets are kept out of messages by construction (the config is logged redacted, the token
only lives in the registry session); the redaction step is the belt to those braces: any
known secret value in the message, a field or an exception's text becomes ``***``. Known
means the configured secrets in every form they take on the wire (``derived_forms``: the
base64 of ``user:token`` a Basic header carries, the percent-encoded token) and every Bearer
token the registry issued, registered as it is fetched (``redact_also``).
"""

from __future__ import annotations

import base64
import logging
import sys
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any, Final, TextIO
from urllib.parse import quote

import structlog
from structlog.contextvars import bound_contextvars, merge_contextvars
from structlog.stdlib import ExtraAdder, ProcessorFormatter
from structlog.typing import EventDict, Processor, WrappedLogger

LEVELS: Final = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}
FORMATS: Final = ("text", "json")
REDACTED: Final = "***"

#: Keys of the text format's head (``ts LEVEL logger message``); the rest follow as key=value.
_HEAD: Final = ("ts", "level", "logger", "message")


class SecretRedactor:
    """A processor that replaces every known secret value in an event with ``***``.

    Empty secrets are ignored: replacing ``""`` would mangle every message. Secrets learnt
    while running (a Bearer token the registry issued) are added with ``add``; the newest
    ``MAX_LEARNT`` are kept, as a token lives minutes and a process runs for weeks.
    """

    MAX_LEARNT: Final = 256

    def __init__(self, secrets: Iterable[str]) -> None:
        self._fixed = frozenset(s for s in secrets if s)
        self._learnt: dict[str, None] = {}  # insertion-ordered: the oldest goes first
        self._lock = threading.Lock()
        self._secrets = self._ordered()

    def _ordered(self) -> tuple[str, ...]:
        # Longest first, so a secret that contains another is replaced whole.
        return tuple(sorted(self._fixed | set(self._learnt), key=len, reverse=True))

    def add(self, secret: str) -> None:
        """Redact ``secret`` too from now on (thread-safe; a no-op for "" or a known one)."""
        if not secret or secret in self._fixed:
            return
        with self._lock:
            self._learnt.pop(secret, None)
            self._learnt[secret] = None
            while len(self._learnt) > self.MAX_LEARNT:
                del self._learnt[next(iter(self._learnt))]
            self._secrets = self._ordered()  # one assignment: readers see old or new

    def redact(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, REDACTED)
        return text

    def __call__(self, logger: WrappedLogger, name: str, event: EventDict) -> EventDict:
        if not self._secrets:
            return event
        for key, value in list(event.items()):
            if isinstance(value, str):
                event[key] = self.redact(value)
            elif not isinstance(value, int | float | bool | type(None)):
                event[key] = self.redact(str(value))
        return event


def derived_forms(*, user: str, token: str) -> tuple[str, ...]:
    """The forms a credential takes on the wire, each worth redacting on its own: the token,
    its percent-encoding (in a URL), and the base64 of ``user:token`` (an HTTP Basic header,
    which a debug log of a request would show)."""
    if not token:
        return ()
    basic = base64.b64encode(f"{user}:{token}".encode()).decode("ascii")
    return tuple(dict.fromkeys((token, quote(token, safe=""), basic)))


#: The redactor of the handler ``configure`` installed last (at most one), for
#: ``redact_also``.
_ACTIVE: Final[list[SecretRedactor]] = []


def redact_also(secret: str) -> None:
    """Redact ``secret`` in every line from now on: a credential learnt while running (a
    Bearer token fetched from the registry's realm). A no-op before ``configure``."""
    for redactor in _ACTIVE:
        redactor.add(secret)


def _message_key(logger: WrappedLogger, name: str, event: EventDict) -> EventDict:
    """The record's text goes to ``message``: ``event`` is a field of ours (``extra=``)."""
    event["message"] = event.pop("event")
    return event


def _drop_formatting_leftovers(logger: WrappedLogger, name: str, event: EventDict) -> EventDict:
    """Another handler that formatted the record first leaves ``asctime`` behind."""
    event.pop("asctime", None)
    return event


class TextRenderer:
    """``ts LEVEL logger message key=value…`` on one line (the exception, if any, below)."""

    def __init__(self) -> None:
        self._pairs = structlog.processors.LogfmtRenderer(bool_as_flag=False)

    def __call__(self, logger: WrappedLogger, name: str, event: EventDict) -> str:
        head = " ".join(
            [str(event.pop("ts", "")), str(event.pop("level", "")).upper()]
            + [str(event.pop(key, "")) for key in _HEAD[2:]]
        )
        exception = event.pop("exception", None)
        fields = {k: v for k, v in event.items() if v is not None}
        line = f"{head} {self._pairs(logger, name, fields)}" if fields else head
        return f"{line}\n{exception}" if exception else line


def make_formatter(
    *, log_format: str, secrets: Iterable[str] = (), redactor: SecretRedactor | None = None
) -> ProcessorFormatter:
    """The formatter for ``log_format`` (``text`` or ``json``), redacting ``secrets`` (with
    ``redactor``, when given, instead: one that may learn more later)."""
    if log_format not in FORMATS:
        raise ValueError(f"LOG_FORMAT={log_format!r}: expected one of {', '.join(FORMATS)}")
    pre_chain: list[Processor] = [
        _message_key,
        ExtraAdder(),
        _drop_formatting_leftovers,
        merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True, key="ts"),
    ]
    renderer: Processor = (
        structlog.processors.JSONRenderer(default=str) if log_format == "json" else TextRenderer()
    )
    return ProcessorFormatter(
        foreign_pre_chain=pre_chain,
        processors=[
            ProcessorFormatter.remove_processors_meta,
            structlog.processors.format_exc_info,
            redactor if redactor is not None else SecretRedactor(secrets),
            renderer,
        ],
    )


def make_handler(
    *,
    log_format: str,
    secrets: Iterable[str] = (),
    stream: TextIO | None = None,
    redactor: SecretRedactor | None = None,
) -> logging.Handler:
    """A stream handler with the chosen format and the secret redaction installed."""
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(make_formatter(log_format=log_format, secrets=secrets, redactor=redactor))
    return handler


def configure(
    *,
    level: str,
    log_format: str,
    secrets: Iterable[str] = (),
    stream: TextIO | None = None,
) -> None:
    """Route every logger through one redacting handler on the root logger.

    Replaces earlier root handlers so that calling it twice (tests, ``plan`` then ``serve``)
    never doubles lines. Chatty client libraries are held at ERROR unless LOG_LEVEL=debug.
    """
    if level.lower() not in LEVELS:
        raise ValueError(f"LOG_LEVEL={level!r}: expected one of {', '.join(LEVELS)}")
    numeric = LEVELS[level.lower()]
    root = logging.getLogger()
    redactor = SecretRedactor(secrets)
    _ACTIVE[:] = [redactor]
    handler = make_handler(log_format=log_format, stream=stream, redactor=redactor)
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(numeric)
    # urllib3 warns on every retry; the adapter's one error line per failure says it better.
    quiet = numeric if numeric == logging.DEBUG else logging.ERROR
    for noisy in ("urllib3", "kubernetes", "werkzeug"):
        logging.getLogger(noisy).setLevel(quiet)


@contextmanager
def pass_context(pass_id: str, **fields: Any) -> Iterator[None]:
    """Every line logged in this thread until the block ends carries ``pass_id``."""
    with bound_contextvars(pass_id=pass_id, **fields):
        yield


__all__ = [
    "FORMATS",
    "LEVELS",
    "REDACTED",
    "SecretRedactor",
    "TextRenderer",
    "configure",
    "derived_forms",
    "make_formatter",
    "make_handler",
    "pass_context",
    "redact_also",
]
