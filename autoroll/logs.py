"""Logging for the controller: text for people, JSON for log pipelines, secrets never shown.

``configure`` is called once per process (the CLI does it before gunicorn forks, so the one
worker inherits it). Structured fields travel in ``extra=`` (see ``FIELDS``): the text format
appends them as ``key=value``, the JSON format emits them as keys, so one log call serves both.

Secrets are kept out of messages by construction (the config is logged redacted, the token
only lives in the registry session). ``SecretRedactor`` is the belt to those braces: every
record passing through a handler has any known secret value replaced by ``***``, whether it
sits in the message, its arguments, a structured field or an exception's text.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Final, TextIO

#: Structured fields the controller attaches with ``extra=``; rendered by both formats.
FIELDS: Final = (
    "event",
    "deployment",
    "container",
    "pod",
    "image",
    "running_digest",
    "registry_digest",
    "verdict",
    "reason",
    "dry_run",
    "duration_seconds",
)

LEVELS: Final = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}
FORMATS: Final = ("text", "json")
REDACTED: Final = "***"


class SecretRedactor(logging.Filter):
    """Replace every known secret value in a record with ``***`` before it is formatted.

    Installed on handlers (not loggers) so records from every logger, including libraries
    that propagate to the root, pass through it. Empty secrets are ignored: replacing ``""``
    would mangle every message.
    """

    def __init__(self, secrets: Iterable[str]) -> None:
        super().__init__()
        # Longest first, so a secret that contains another is replaced whole.
        self._secrets = tuple(sorted({s for s in secrets if s}, key=len, reverse=True))

    def redact(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, REDACTED)
        return text

    def filter(self, record: logging.LogRecord) -> bool:
        if not self._secrets:
            return True
        # Render once, then freeze the result: args may hold secrets in any type.
        record.msg = self.redact(record.getMessage())
        record.args = None
        for name in FIELDS:
            value = record.__dict__.get(name)
            if isinstance(value, str):
                record.__dict__[name] = self.redact(value)
        if record.exc_info and record.exc_info[0] is not None:
            record.exc_text = self.redact(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
        return True


class TextFormatter(logging.Formatter):
    """``time level logger message key=value…``: one line per event, grep-friendly."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        pairs = [
            f"{name}={_text_value(record.__dict__[name])}"
            for name in FIELDS
            if record.__dict__.get(name) is not None
        ]
        if not pairs:
            return line
        head, newline, tail = line.partition("\n")
        return f"{head} {' '.join(pairs)}{newline}{tail}"


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ``ts``, ``level``, ``logger``, ``message`` and the fields."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "ts": datetime.fromtimestamp(record.created, tz=UTC).isoformat(),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name in FIELDS:
            value = record.__dict__.get(name)
            if value is not None:
                entry[name] = value
        if record.exc_info and record.exc_info[0] is not None:
            entry["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            entry["exception"] = record.exc_text
        return json.dumps(entry, default=str)


def _text_value(value: object) -> str:
    text = str(value)
    return json.dumps(text) if (not text or any(c in text for c in ' "=')) else text


def make_handler(
    *, log_format: str, secrets: Iterable[str] = (), stream: TextIO | None = None
) -> logging.Handler:
    """A stream handler with the chosen format and the secret redactor installed."""
    if log_format not in FORMATS:
        raise ValueError(f"LOG_FORMAT={log_format!r}: expected one of {', '.join(FORMATS)}")
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter())
    handler.addFilter(SecretRedactor(secrets))
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
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(make_handler(log_format=log_format, secrets=secrets, stream=stream))
    root.setLevel(numeric)
    # urllib3 warns on every retry; the adapter's one error line per failure says it better.
    quiet = numeric if numeric == logging.DEBUG else logging.ERROR
    for noisy in ("urllib3", "kubernetes", "werkzeug"):
        logging.getLogger(noisy).setLevel(quiet)
