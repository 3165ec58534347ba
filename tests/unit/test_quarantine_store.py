"""The quarantine's ConfigMap over the adapter's real request path (a scripted ApiClient), the
views people read (``autoroll plan``'s lines, ``quarantine list|clear``, ``history``), and the
notification throttle."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from autoroll.core.happenings import Happening, HappeningKind, Recorded
from autoroll.core.model import Digest
from autoroll.core.ports import QuarantineConflictError
from autoroll.core.quarantine import (
    QuarantineBook,
    QuarantineEntry,
    QuarantineKey,
    QuarantineReason,
    record,
)
from autoroll.core.throttle import due
from autoroll.edge.quarantine_view import clear_in, history_text, list_text, quarantine_lines
from autoroll.kube.errors import ClusterForbiddenError
from autoroll.kube.history import recorded
from autoroll.kube.quarantine_store import (
    KubeQuarantine,
    book_from_json,
    data_key,
    entry_from_json,
    entry_json,
)
from autoroll.kube.transport import KubeRest
from tests.support.fake_api_client import FakeApiClient, Reply, status_body
from tests.support.quarantine import MemoryQuarantine
from tests.support.views import deployment_view

T = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
HOST = "forgejo.example"
KEY = QuarantineKey.named(HOST, "team/app", "latest")
BAD = Digest("sha256:" + "b" * 64)
ENTRY = QuarantineEntry(
    KEY, BAD, QuarantineReason.CRASH_LOOP, "shop/deployment/web", "web-3", "4 restart(s)", T
)
PATH = "/api/v1/namespaces/autoroll/configmaps"


class FakeConfigMaps:
    """One ConfigMap as the API server keeps it: a resourceVersion that moves on each write,
    409 for a stale one, 404 before it exists."""

    def __init__(self, *, error: int | None = None) -> None:
        self.stored: dict[str, Any] | None = None
        self.version = 0
        self.error = error
        self.calls: list[tuple[str, str]] = []

    def answer(self, method: str, path: str, request: dict[str, Any]) -> Reply:
        self.calls.append((method, path))
        if self.error is not None:
            return self.error, status_body(self.error)
        if method == "GET":
            if self.stored is None:
                return 404, status_body(404)
            return 200, json.dumps(self.stored).encode()
        body = request["body"]
        if method == "POST":
            assert path == PATH
            if self.stored is not None:
                return 409, status_body(409)
        else:
            assert path == f"{PATH}/autoroll-quarantine"
            if body["metadata"].get("resourceVersion") != str(self.version):
                return 409, status_body(409)
        self.version += 1
        self.stored = {
            **body,
            "metadata": {**body["metadata"], "resourceVersion": str(self.version)},
        }
        return 200, json.dumps(self.stored).encode()


def store(api: FakeConfigMaps) -> KubeQuarantine:
    return KubeQuarantine(
        namespace="autoroll", name="autoroll-quarantine", rest=KubeRest(FakeApiClient(api.answer))
    )


def test_no_configmap_yet_is_an_empty_book_and_the_first_write_creates_it() -> None:
    api = FakeConfigMaps()
    book = store(api).load()
    assert book == QuarantineBook()
    written = store(api).save(record(book, [ENTRY])[0])
    assert written.version == "1" and written.entries == {KEY: ENTRY}
    assert api.calls[-1] == ("POST", PATH)
    assert api.stored is not None
    assert api.stored["metadata"]["labels"] == {
        "app.kubernetes.io/component": "autoroll-quarantine"
    }
    assert list(api.stored["data"]) == [data_key(KEY)]


def test_a_write_names_the_version_it_read_and_a_stale_one_is_a_conflict() -> None:
    api = FakeConfigMaps()
    first = store(api).save(record(QuarantineBook(), [ENTRY])[0])
    again = store(api).save(replace(first, entries={}))
    assert again.version == "2" and again.entries == {}
    with pytest.raises(QuarantineConflictError):
        store(api).save(first)  # read at version 1, the record is at 2
    with pytest.raises(QuarantineConflictError):
        store(api).save(QuarantineBook({KEY: ENTRY}))  # a create when it exists


def test_a_refused_read_names_the_rule_and_the_role_that_grants_it() -> None:
    with pytest.raises(ClusterForbiddenError, match="configmaps: get") as error:
        store(FakeConfigMaps(error=403)).load()
    assert "QUARANTINE_CONFIGMAP" in str(error.value)


def test_an_entry_round_trips_and_a_bad_one_is_left_out_said_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    cleared = replace(ENTRY, cleared_at=T + timedelta(minutes=5))
    assert entry_from_json(entry_json(cleared)) == cleared
    document = {
        "metadata": {"resourceVersion": "9"},
        "data": {"ok": entry_json(ENTRY), "bad": '{"repository": "x"}', "worse": "not json"},
    }
    book = book_from_json(document)
    assert book.entries == {KEY: ENTRY} and book.version == "9"
    assert sorted(r.__dict__["key"] for r in caplog.records) == ["bad", "worse"]


def test_a_data_key_is_a_valid_configmap_key_and_unique_per_tag() -> None:
    one = data_key(QuarantineKey.named(HOST, "team/app", "latest"))
    other = data_key(QuarantineKey.named(HOST, "team_app", "latest"))
    assert one != other
    for key in (one, other, data_key(QuarantineKey.named(HOST, "a/" * 150 + "b", "v1"))):
        assert len(key) <= 253 and all(c.isalnum() or c in "-._" for c in key)


# --- what people see ----------------------------------------------------------------------------


def test_the_plan_names_each_quarantine_where_why_and_the_command_that_clears_it() -> None:
    lines = quarantine_lines(QuarantineBook({KEY: ENTRY}))
    assert lines[0].startswith("QUARANTINED")
    assert (
        "team/app:latest sha256:bbbbbbbbbbbb: crash-loop on shop/deployment/web (pod web-3)"
        in lines[1]
    )
    assert lines[2] == "    clear: autoroll quarantine clear forgejo.example/team/app:latest"
    assert quarantine_lines(QuarantineBook({KEY: replace(ENTRY, cleared_at=T)})) == []


def test_clear_marks_the_entry_and_survives_a_concurrent_write() -> None:
    memory = MemoryQuarantine()
    memory.save(record(QuarantineBook(), [ENTRY])[0])

    class Racing(MemoryQuarantine):
        """The controller writes once between the clear's read and its write."""

        raced = False

        def save(self, book: QuarantineBook) -> QuarantineBook:
            if not self.raced:
                self.raced = True
                other = replace(ENTRY, key=QuarantineKey.named(HOST, "team/other", "v1"))
                super().save(record(self.load(), [other])[0])
            return super().save(book)

    racing = Racing()
    racing.book, racing.version = memory.book, memory.version
    said = clear_in(racing, KEY, now=T)
    assert "cleared the quarantine of sha256:bbbbbbbbbbbb" in said
    assert racing.book.entries[KEY].cleared_at == T
    assert QuarantineKey.named(HOST, "team/other", "v1") in racing.book.entries
    assert "already cleared" in clear_in(racing, KEY, now=T)
    with pytest.raises(KeyError):
        clear_in(racing, QuarantineKey.named(HOST, "team/none", "latest"))
    assert "QUARANTINED" in list_text(memory.load())
    assert "cleared 2026-12-02T12:00:00+00:00" in list_text(racing.load())
    assert list_text(QuarantineBook()) == "Nothing is quarantined.\n"


def test_history_reads_autoroll_s_events_and_their_facts() -> None:
    web = deployment_view("shop", "web", 2, ())
    happening = Happening(
        HappeningKind.STARTED,
        web,
        "team/app:latest",
        "sha256:" + "a" * 64,
        str(BAD),
        "x",
        T,
        trigger="a pass for team/app:latest",
    )
    event = happening.event()
    body = {
        "reportingComponent": "aethnet.se/autoroll",
        "metadata": {"annotations": dict(event.annotations)},
        "involvedObject": {"kind": "Deployment", "namespace": "shop", "name": "web"},
        "reason": event.reason,
        "message": event.message,
        "lastTimestamp": "2026-12-02T12:00:00Z",
    }
    row = recorded(body)
    assert row == Recorded(
        T,
        "shop/deployment/web",
        "started",
        "team/app:latest",
        "sha256:" + "a" * 64,
        str(BAD),
        "a pass for team/app:latest",
        event.message,
    )
    assert recorded({**body, "reportingComponent": "kubelet"}) is None
    text = history_text([row])
    assert text.splitlines()[0].split() == [
        "TIME",
        "WORKLOAD",
        "WHAT",
        "TAG",
        "FROM",
        "TO",
        "TRIGGER",
    ]
    assert "sha256:aaaaaaaaaaaa  sha256:bbbbbbbbbbbb  a pass for team/app:latest" in text
    assert "No autoroll Events found" in history_text([])


# --- the throttle -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("waiting", "last", "now", "ready", "next_at"),
    [
        ({"done": 3}, {}, 100.0, {"done"}, None),  # never sent: at once
        ({"done": 3}, {"done": 90.0}, 100.0, set(), 150.0),  # within the interval: waits
        ({"done": 3}, {"done": 40.0}, 100.0, {"done"}, None),  # the interval is over
        ({"done": 3, "quarantined": 1}, {"done": 90.0}, 100.0, {"quarantined"}, 150.0),
        ({"done": 0}, {}, 100.0, set(), None),  # nothing waits
    ],
)
def test_one_message_per_kind_per_interval(
    waiting: dict[str, int],
    last: dict[str, float],
    now: float,
    ready: set[str],
    next_at: float | None,
) -> None:
    assert due(waiting, last, now=now, interval=60.0) == (frozenset(ready), next_at)
