"""Reading a webhook's body within its cap, and the plain-text answers every webhook route gives.

Shared by Forgejo's ``/webhook`` (``autoroll.edge.web``) and the registries' receivers
(``autoroll.edge.receivers``), so every route reads untrusted bodies the same bounded way.
"""

from __future__ import annotations

from flask import Response, request
from werkzeug.exceptions import RequestEntityTooLarge

from autoroll.core.webhook_body import MAX_BODY_BYTES


def read_capped_body() -> bytes | None:
    """The raw body, or None when it is larger than ``MAX_BODY_BYTES``.

    A declared Content-Length over the cap is refused before a byte is read; a chunked
    body is read at most one byte past the cap, never in full.
    """
    declared = request.content_length
    if declared is not None and declared > MAX_BODY_BYTES:
        return None
    stream = request.stream
    chunks: list[bytes] = []
    total = 0
    try:
        while True:
            # Reads may come back short (sockets); loop until EOF or one byte past the cap.
            chunk = stream.read(min(64 * 1024, MAX_BODY_BYTES + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > MAX_BODY_BYTES:
                return None
    except RequestEntityTooLarge:
        return None
    return b"".join(chunks)


def answer(status: int, text: str) -> Response:
    """A plain-text answer: what the sender's delivery log shows."""
    return Response(text + "\n", status=status, mimetype="text/plain")


__all__ = ["answer", "read_capped_body"]
