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
known secret value in the message, a field or an exception's text becomes ``***``.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any, Final, TextIO

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

    Empty secrets are ignored: replacing ``""`` would mangle every message.
    """

    def __init__(self, secrets: Iterable[str]) -> None:
        # Longest first, so a secret that contains another is replaced whole.
        self._secrets = tuple(sorted({s for s in secrets if s}, key=len, reverse=True))

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


def make_formatter(*, log_format: str, secrets: Iterable[str] = ()) -> ProcessorFormatter:
    """The formatter for ``log_format`` (``text`` or ``json``), redacting ``secrets``."""
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
            SecretRedactor(secrets),
            renderer,
        ],
    )


def make_handler(
    *, log_format: str, secrets: Iterable[str] = (), stream: TextIO | None = None
) -> logging.Handler:
    """A stream handler with the chosen format and the secret redaction installed."""
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(make_formatter(log_format=log_format, secrets=secrets))
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
    handler = make_handler(log_format=log_format, secrets=secrets, stream=stream)
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
    "make_formatter",
    "make_handler",
    "pass_context",
]
