"""The informer's loop over the real request path (``KubeRest``) with a scripted ``ApiClient``:
paged lists, watch events, resuming from bookmarks, 410 and broken streams, restarts,
resyncs and stopping."""

from __future__ import annotations

import json
import queue
import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from autoroll.kube.informer import Informer
from autoroll.kube.listing import LISTS_AT_ONCE, Collection
from autoroll.kube.operations import LIST_PODS, WATCH_PODS
from autoroll.kube.transport import KubeRest, LazyRest
from tests.support.wait import wait_until


class BlockingStream:
    """A watch body: scripted events, then (unless ``end``) it blocks until shut down."""

    def __init__(self, events: list[dict[str, Any] | bytes], *, end: bool = False) -> None:
        self.events = events
        self.end = end
        self.closed = threading.Event()
        self.ended = threading.Event()  # set: the server ends the watch normally

    def stream(self, amt: Any = None, decode_content: bool = False) -> Iterator[bytes]:
        for event in self.events:
            yield event if isinstance(event, bytes) else json.dumps(event).encode() + b"\n"
        if not self.end:
            deadline = time.monotonic() + 30
            while not self.closed.is_set() and not self.ended.is_set():
                if time.monotonic() > deadline:
                    return
                self.closed.wait(0.01)
            if self.closed.is_set():
                raise OSError("connection shut down")

    def shutdown(self) -> None:
        self.closed.set()

    def release_conn(self) -> None:
        pass


class Response:
    def __init__(self, status: int, body: bytes = b"", stream: BlockingStream | None = None):
        self.status, self.reason, self._body = status, "Reason", body
        self.response: Any = stream if stream is not None else self

    def read(self) -> bytes:
        return self._body

    def release_conn(self) -> None:
        pass


class Api:
    """Answers lists from ``pages`` (by continue token) and watches from ``watches``."""

    def __init__(self) -> None:
        self.pages: dict[str, dict[str, Any]] = {}
        self.watches: queue.Queue[BlockingStream | Exception] = queue.Queue()
        self.requests: list[dict[str, str]] = []
        self._serialized: list[dict[str, Any]] = []

    def param_serialize(self, **kwargs: Any) -> tuple[Any, ...]:
        self._serialized.append(kwargs)
        return (len(self._serialized) - 1,)

    def call_api(self, index: int, *, _request_timeout: Any) -> Response:
        query = dict(self._serialized[index]["query_params"])
        self.requests.append(query)
        if query.get("watch") == "true":
            answer = self.watches.get(timeout=30)
            if isinstance(answer, Exception):
                raise answer
            return Response(200, stream=answer)
        page = self.pages[query.get("continue", "")]
        return Response(200, json.dumps(page).encode())

    def lists(self) -> list[dict[str, str]]:
        return [q for q in self.requests if q.get("watch") != "true"]

    def watched(self) -> list[dict[str, str]]:
        return [q for q in self.requests if q.get("watch") == "true"]


class Recorder:
    def __init__(self) -> None:
        self.items: dict[str, str] = {}
        self.log: list[str] = []

    def replaced(self, items: Mapping[str, str]) -> None:
        self.items = dict(items)
        self.log.append(f"replaced {sorted(items.values())}")

    def upserted(self, uid: str, item: str) -> None:
        self.items[uid] = item
        self.log.append(f"upserted {item}")

    def deleted(self, uid: str) -> None:
        self.items.pop(uid, None)
        self.log.append(f"deleted {uid}")

    def unsynced(self) -> None:
        self.log.append("unsynced")


def obj(name: str, version: str = "1") -> dict[str, Any]:
    return {"metadata": {"name": name, "uid": f"u-{name}", "resourceVersion": version}}


def event(kind: str, name: str, version: str) -> dict[str, Any]:
    return {"type": kind, "object": obj(name, version)}


def page(*names: str, version: str = "10", token: str = "") -> dict[str, Any]:
    return {
        "metadata": {"resourceVersion": version, "continue": token},
        "items": [obj(n) for n in names],
    }


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def api() -> Api:
    built = Api()
    built.pages[""] = page("a", "b", version="10")
    return built


def start(
    api: Api, sink: Recorder, *, clock: Clock | None = None, causes: list[str] | None = None
) -> Informer[str]:
    informer: Informer[str] = Informer(
        Collection(
            "/api/v1/namespaces/shop/pods",
            "in namespace shop",
            LIST_PODS,
            WATCH_PODS,
            "app in (a)",
            "status.phase!=Failed",
        ),
        rest=LazyRest(lambda: api, KubeRest(api)),
        convert=lambda raw: raw["metadata"]["name"],
        sink=sink,
        resync_seconds=600,
        on_list=(causes.append if causes is not None else lambda cause: None),
        clock=clock or Clock(),
        name="test",
    )
    informer.start()
    return informer


@pytest.fixture
def sink() -> Recorder:
    return Recorder()


def test_a_paged_list_fills_the_sink_then_the_watch_starts_at_the_lists_version(
    api: Api, sink: Recorder
) -> None:
    api.pages[""] = page("a", version="10", token="next")
    api.pages["next"] = page("b", version="10")
    api.watches.put(BlockingStream([]))
    informer = start(api, sink)
    try:
        assert informer.wait_synced(10)
        wait_until(lambda: len(api.watched()) == 1, 10, "the watch")
        assert sink.items == {"u-a": "a", "u-b": "b"}
        first, second = api.lists()
        assert (first["limit"], first["labelSelector"], first["fieldSelector"]) == (
            "500",
            "app in (a)",
            "status.phase!=Failed",
        )
        assert "continue" not in first and second["continue"] == "next"
        [watch] = api.watched()
        assert watch["resourceVersion"] == "10"
        assert watch["allowWatchBookmarks"] == "true"
        assert 60 <= int(watch["timeoutSeconds"]) <= 75
    finally:
        informer.stop(5)


def test_events_are_applied_and_a_watch_that_ends_resumes_from_the_last_bookmark(
    api: Api, sink: Recorder
) -> None:
    api.watches.put(
        BlockingStream(
            [
                event("ADDED", "c", "11"),
                event("MODIFIED", "a", "12"),
                event("DELETED", "b", "13"),
                {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "20"}}},
            ],
            end=True,
        )
    )
    api.watches.put(BlockingStream([]))
    informer = start(api, sink)
    try:
        wait_until(lambda: len(api.watched()) == 2, 10, "the second watch")
        assert sink.items == {"u-a": "a", "u-c": "c"}
        assert api.watched()[1]["resourceVersion"] == "20"
        assert len(api.lists()) == 1, "a watch that ends normally is resumed, not relisted"
        assert informer.synced
    finally:
        informer.stop(5)


def test_a_410_lists_again_at_once(api: Api, sink: Recorder) -> None:
    causes: list[str] = []
    gone = {"type": "ERROR", "object": {"kind": "Status", "code": 410, "message": "too old"}}
    api.watches.put(BlockingStream([gone], end=True))
    api.watches.put(BlockingStream([]))
    informer = start(api, sink, causes=causes)
    try:
        wait_until(lambda: len(api.watched()) == 2, 10, "the watch after the relist")
        assert causes == ["start", "expired"]
        assert sink.log == ["replaced ['a', 'b']", "unsynced", "replaced ['a', 'b']"]
    finally:
        informer.stop(5)


def test_a_broken_stream_is_not_resumed_but_unsynced_and_listed_again(
    api: Api, sink: Recorder
) -> None:
    causes: list[str] = []
    api.watches.put(BlockingStream([event("ADDED", "c", "11"), b'{"type": "ADD']))
    informer = start(api, sink, causes=causes)
    try:
        wait_until(lambda: sink.log[1:2] == ["upserted c"], 10, "the event")
        api.watches.put(BlockingStream([]))
        informer._stream.abort()  # type: ignore[union-attr]  # the connection drops
        wait_until(lambda: causes == ["start", "broken"], 10, "the relist")
        wait_until(lambda: informer.synced, 10, "synced again")
        assert sink.log[2] == "unsynced"
        assert sink.items == {"u-a": "a", "u-b": "b"}, "what the relist says, not the stream"
    finally:
        informer.stop(5)


def test_a_watch_that_cannot_open_unsyncs_and_retries_with_a_list(api: Api, sink: Recorder) -> None:
    causes: list[str] = []
    api.watches.put(ConnectionRefusedError("refused"))
    api.watches.put(BlockingStream([]))
    informer = start(api, sink, causes=causes)
    try:
        wait_until(lambda: causes == ["start", "broken"] and informer.synced, 10, "relisted")
        assert "unsynced" in sink.log
    finally:
        informer.stop(5)


def test_restart_ends_the_watch_and_lists_with_the_new_selector(api: Api, sink: Recorder) -> None:
    causes: list[str] = []
    api.watches.put(BlockingStream([]))
    informer = start(api, sink, causes=causes)
    try:
        wait_until(lambda: len(api.watched()) == 1, 10, "the watch")
        api.watches.put(BlockingStream([]))
        informer.restart("app in (a,b)")
        assert not informer.synced
        wait_until(lambda: len(api.watched()) == 2, 10, "the new watch")
        assert causes == ["start", "selector"]
        assert api.lists()[-1]["labelSelector"] == "app in (a,b)"
        assert api.watched()[-1]["labelSelector"] == "app in (a,b)"
        assert informer.listing_selector == "app in (a,b)"
        assert "unsynced" not in sink.log, "the owner asked; it is not told again"
    finally:
        informer.stop(5)


def test_a_resync_lists_again_after_resync_seconds(api: Api, sink: Recorder) -> None:
    causes: list[str] = []
    clock = Clock()
    first = BlockingStream([])
    api.watches.put(first)
    api.watches.put(BlockingStream([]))
    informer = start(api, sink, clock=clock, causes=causes)
    try:
        wait_until(lambda: len(api.watched()) == 1, 10, "the first watch")
        clock.now = 601.0  # past resync_seconds when the first watch ends
        first.ended.set()
        wait_until(lambda: causes == ["start", "resync"], 10, "the resync")
        wait_until(lambda: len(api.watched()) == 2, 10, "the watch after it")
    finally:
        informer.stop(5)


def test_stop_ends_a_blocked_watch_promptly(api: Api, sink: Recorder) -> None:
    api.watches.put(BlockingStream([]))
    informer = start(api, sink)
    wait_until(lambda: len(api.watched()) == 1, 10, "the watch")
    informer.stop(5)
    assert not informer.alive


class InFlight:
    """How many list pages are being answered at once, across several APIs."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now = 0
        self.most = 0


class SlowPages(Api):
    """Every list page takes a while to answer, counted in a shared ``InFlight``."""

    def __init__(self, counter: InFlight) -> None:
        super().__init__()
        self.counter = counter

    def call_api(self, index: int, *, _request_timeout: Any) -> Response:
        if (
            self._serialized[index]["query_params"]
            and dict(self._serialized[index]["query_params"]).get("watch") != "true"
        ):
            with self.counter.lock:
                self.counter.now += 1
                self.counter.most = max(self.counter.most, self.counter.now)
            time.sleep(0.02)
            with self.counter.lock:
                self.counter.now -= 1
        return super().call_api(index, _request_timeout=_request_timeout)


def test_informers_starting_together_list_at_most_lists_at_once_pages_at_a_time() -> None:
    """Issue 28: at start every informer lists (one per kind, one per namespace); each
    parsed page is held while converted, so they take turns, ``LISTS_AT_ONCE`` at a time."""
    counter = InFlight()
    sinks, informers = [], []
    try:
        for _ in range(8):
            api = SlowPages(counter)
            api.pages[""] = page("a", token="2")
            api.pages["2"] = page("b", token="3")
            api.pages["3"] = page("c")
            api.watches.put(BlockingStream([]))
            sinks.append(Recorder())
            informers.append(start(api, sinks[-1]))
        for informer in informers:
            assert informer.wait_synced(20)
        assert all(s.items == {"u-a": "a", "u-b": "b", "u-c": "c"} for s in sinks)
        assert counter.most == LISTS_AT_ONCE
    finally:
        for informer in informers:
            informer.stop(5)
