"""The events of one open watch, read as they stream in (``KubeRest.watch`` opens it).

A watch answers newline-delimited JSON, one event a line, across chunk boundaries; each is
parsed without its ``managedFields``. An ERROR event and a broken stream raise the adapter's
errors (``autoroll.kube.errors``); ``abort`` ends the stream from another thread (the
informer's restart, the Lease watch's stop); the connection goes back to the pool either way.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from typing import Any

from urllib3.exceptions import HTTPError

from autoroll.kube.errors import Operation, api_error, unreachable


class WatchStream:
    """The events of one open watch; ``abort`` ends it from another thread."""

    def __init__(self, operation: Operation, target: str, response: Any) -> None:
        self._operation = operation
        self._target = target
        self._response = response
        self._lock = threading.Lock()

    def events(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """``(type, object)`` per event until the server ends the watch; ERROR events and a
        broken stream raise the adapter's errors."""
        try:
            for line in _lines(self._response):
                event = json.loads(line, object_hook=_without_managed_fields)
                kind = str(event.get("type") or "")
                document = event.get("object") or {}
                if kind == "ERROR":
                    code = int(document.get("code") or 0)
                    raise api_error(
                        self._operation, self._target, code, str(document.get("message") or "")
                    )
                yield kind, document
        except (HTTPError, OSError) as exc:
            raise unreachable(self._operation, self._target, exc) from exc
        finally:
            release(self._response)

    def abort(self) -> None:
        """Unblock a reader waiting in another thread (urllib3 >= 2.3 ``shutdown``).

        Never raises: a stream whose connection is already gone (ended, released, or not yet
        open) has nothing to unblock, and urllib3 says so with a ValueError, or a RuntimeError
        when the stream ended and its connection went back to the pool between the reader's
        last line and this call. It runs in the reconcile process's SIGTERM handler, where an
        exception would end the process before its pass logs what it did.
        """
        raw = getattr(self._response, "response", self._response)
        shutdown = getattr(raw, "shutdown", None)
        if callable(shutdown):
            with contextlib.suppress(ValueError, RuntimeError, OSError):
                shutdown()


def _without_managed_fields(obj: dict[str, Any]) -> dict[str, Any]:
    # Nothing reads managedFields, often an object's largest part: dropped while parsing.
    obj.pop("managedFields", None)
    return obj


def _lines(response: Any) -> Iterator[bytes]:
    """Newline-delimited JSON from a streaming response, across chunk boundaries."""
    raw = getattr(response, "response", response)
    buffer = b""
    for chunk in raw.stream(amt=None, decode_content=False):
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            if line.strip():
                yield line
    if buffer.strip():
        yield buffer


def release(response: Any) -> None:
    """Give a (``preload_content=False``) response's connection back to the pool."""
    raw = getattr(response, "response", None) or response
    release = getattr(raw, "release_conn", None)
    if callable(release):
        release()


__all__ = ["WatchStream", "release"]
