"""``WatchStream.abort`` never raises: it runs in the reconcile process's SIGTERM handler, and
an exception there ended the process (exit 1) before its pass logged the DELETE it had just
made. urllib3's ``shutdown`` raises when there is nothing left to unblock; each way is here."""

from __future__ import annotations

from typing import Any, cast

import pytest

from autoroll.kube.watch_stream import WatchStream


class Response:
    def __init__(self, error: Exception | None) -> None:
        self.error = error
        self.shut = False

    def shutdown(self) -> None:
        self.shut = True
        if self.error is not None:
            raise self.error


@pytest.mark.parametrize(
    "error",
    [
        None,
        ValueError("Cannot shutdown socket as self._sock_shutdown is not set"),
        RuntimeError("Cannot shutdown as connection has already been released to the pool"),
        OSError(107, "Transport endpoint is not connected"),
    ],
    ids=["open", "never-opened", "released-to-the-pool", "socket-gone"],
)
def test_abort_never_raises(error: Exception | None) -> None:
    response = Response(error)
    WatchStream(cast(Any, None), "pods in shop", response).abort()
    assert response.shut


def test_a_response_without_shutdown_is_left_alone() -> None:
    WatchStream(cast(Any, None), "pods in shop", object()).abort()
