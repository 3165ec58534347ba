"""A hand-written stand-in for the Kubernetes client's ``ApiClient``: the two methods
``autoroll.kube.transport.KubeRest`` calls, answering from a script, recording every request.

With it the adapter's real request path runs in unit tests: ``KubeRest`` builds the
request, this answers it (a status and a body, or an exception as the client raises it),
and the error mapping of ``autoroll.kube.errors`` is exercised as in production.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

#: An answer: (status, body) or an exception the client raises instead of answering.
Reply = tuple[int, bytes] | BaseException
#: Picks the reply for (method, path, serialized request).
Router = Callable[[str, str, dict[str, Any]], Reply]


class Stream:
    """A streaming body (a watch): chunks, then the end; ``shutdown`` ends it early."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = list(chunks)
        self.stopped = False
        self.released = False

    def stream(self, amt: Any = None, decode_content: bool = False) -> Any:
        for chunk in self.chunks:
            if self.stopped:
                return
            yield chunk

    def shutdown(self) -> None:
        self.stopped = True

    def release_conn(self) -> None:
        self.released = True


class Answer:
    """What ``ApiClient.call_api`` returns: status, reason, a body to read, a connection."""

    def __init__(self, status: int, data: bytes, stream: Stream | None = None) -> None:
        self.status, self.reason, self._data = status, "Reason", data
        self.response: Any = stream if stream is not None else self
        self.released = False

    def read(self) -> bytes:
        return self._data

    def release_conn(self) -> None:
        self.released = True


@dataclass
class FakeApiClient:
    """Answers every request with ``router``'s reply (default: 200 and an empty list)."""

    router: Router = field(default=lambda method, path, request: (200, b'{"items": []}'))
    serialized: list[dict[str, Any]] = field(default_factory=list)
    timeouts: list[Any] = field(default_factory=list)
    answers: list[Answer] = field(default_factory=list)
    streams: dict[str, Stream] = field(default_factory=dict)  # path -> watch body

    def param_serialize(self, **kwargs: Any) -> tuple[Any, ...]:
        self.serialized.append(kwargs)
        return (kwargs["method"], kwargs["resource_path"], len(self.serialized) - 1)

    def call_api(self, method: str, path: str, index: int, *, _request_timeout: Any) -> Answer:
        self.timeouts.append(_request_timeout)
        stream = self.streams.get(path) if method == "GET" else None
        if stream is not None and ("watch", "true") in self.serialized[index]["query_params"]:
            answer = Answer(200, b"", stream)
        else:
            reply = self.router(method, path, self.serialized[index])
            if isinstance(reply, BaseException):
                raise reply
            answer = Answer(*reply)
        self.answers.append(answer)
        return answer


def status_body(code: int, reason: str = "Injected") -> bytes:
    return json.dumps(
        {"kind": "Status", "status": "Failure", "code": code, "reason": reason}
    ).encode()


def always(reply: Reply) -> Router:
    """A router that answers every request with ``reply``."""
    return lambda method, path, request: reply


__all__ = ["Answer", "FakeApiClient", "Reply", "Router", "Stream", "always", "status_body"]
