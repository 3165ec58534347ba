"""A request body that never ends, for the tests of the HTTP edge's body cap."""

from __future__ import annotations

import io


class Endless(io.RawIOBase):
    """A body that would never end; counts what was taken from it."""

    def __init__(self) -> None:
        self.served = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray) -> int:  # type: ignore[override]
        n = min(len(buffer), 4096)  # short reads, like a socket
        buffer[:n] = b"a" * n
        self.served += n
        return n
