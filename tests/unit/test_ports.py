"""Test servers listen outside the ephemeral range, so no client's source port can take
their port while they restart (see ``tests/support/ports.py``)."""

from __future__ import annotations

import socket

import pytest

from tests.support import ports
from tests.support.ports import FLOOR, ephemeral_range, free_port, worker_slice


def test_free_ports_lie_below_the_ephemeral_range_and_can_be_bound() -> None:
    low, _ = ephemeral_range()
    for _ in range(20):
        port = free_port()
        assert FLOOR <= port < low
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))


def test_the_kernel_source_port_range_is_read_from_proc() -> None:
    low, high = ephemeral_range()
    assert 0 < low < high <= 65535


def test_each_xdist_worker_draws_from_a_slice_of_its_own() -> None:
    candidates = range(20000, 32000)
    first = worker_slice(
        candidates, {"PYTEST_XDIST_WORKER": "gw0", "PYTEST_XDIST_WORKER_COUNT": "2"}
    )
    second = worker_slice(
        candidates, {"PYTEST_XDIST_WORKER": "gw1", "PYTEST_XDIST_WORKER_COUNT": "2"}
    )
    assert (first, second) == (range(20000, 26000), range(26000, 32000))
    assert worker_slice(candidates, {}) == candidates  # not a distributed run
    assert worker_slice(candidates, {"PYTEST_XDIST_WORKER": "gw0"}) == candidates  # one worker


def test_a_port_is_not_handed_out_again_while_the_caller_may_not_have_bound_it() -> None:
    # Two ports asked for before either is bound (a controller's LISTEN_ADDR and PROBE_ADDR)
    # must differ; drawing at random from a range of 1,000, 300 draws would repeat one.
    # The whole range, as outside a distributed run: under pytest -n, this worker's slice of
    # 1,000 ports would hold fewer than 300.
    low = FLOOR + 1000
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ports, "ephemeral_range", lambda: (low, 60999))
        patch.setattr(ports, "worker_slice", lambda candidates: candidates)
        handed = [free_port() for _ in range(300)]
    assert len(set(handed)) == len(handed)
    assert all(FLOOR <= port < low for port in handed)
