"""The pinning bench's quick mode: every answer right, and no 40 ms stall per request (the
delayed-ACK and Nagle interaction a two-write answer causes without TCP_NODELAY, which the
bench found). The p95 target itself is the full bench's (``python -m bench.pinning``)."""

from __future__ import annotations

from bench.pinning import run


def test_every_answer_pins_what_the_book_says_without_a_stall_per_request() -> None:
    result = run(workloads=1_000, requests=200, clients=1)
    assert (result["requests"], result["errors"]) == (200, 0), result["first_error"]
    # A stall would put the median at 40 ms or more, whatever the machine's load.
    assert result["p50_ms"] < 30, result
