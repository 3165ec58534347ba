"""The request-read deadline of the gunicorn worker, on a real socket pair."""

from __future__ import annotations

import socket
import time

import pytest

from autoroll.edge.http_worker import DeadlineSocket


def test_reads_end_at_the_deadline_and_stay_ended() -> None:
    ours, theirs = socket.socketpair()
    with ours, theirs:
        wrapped = DeadlineSocket(ours)
        wrapped.start(0.3)
        theirs.sendall(b"P")
        assert wrapped.recv(10) == b"P"
        started = time.monotonic()
        assert wrapped.recv(10) == b""  # nothing more within the deadline: EOF
        assert 0.2 < time.monotonic() - started < 1.0
        assert wrapped.cut
        wrapped.start(5)
        assert wrapped.recv(10) == b""  # a cut stream never yields bytes again


def test_a_shorter_timeout_of_the_caller_is_kept_and_restored() -> None:
    ours, theirs = socket.socketpair()
    with ours, theirs:
        wrapped = DeadlineSocket(ours)
        wrapped.start(10)
        ours.settimeout(0.1)
        with pytest.raises(TimeoutError):
            wrapped.recv(10)
        assert not wrapped.cut
        assert ours.gettimeout() == 0.1
        ours.settimeout(None)
        theirs.sendall(b"ok")
        assert wrapped.recv(10) == b"ok"
        assert ours.gettimeout() is None


def test_everything_else_passes_through() -> None:
    ours, theirs = socket.socketpair()
    with ours, theirs:
        wrapped = DeadlineSocket(ours)
        assert wrapped.fileno() == ours.fileno()
        wrapped.sendall(b"hi")
        assert theirs.recv(10) == b"hi"
