"""One collection of API objects kept in memory by list + watch, in a thread of its own.

::

    ┌─► list, paged (LIST_PAGE objects a request) ──► the sink's items replaced: synced
    │      │
    │      ▼
    │   watch from the list's resourceVersion, bookmarks on ◄──┐ the server ends the watch
    │      ADDED / MODIFIED ─► sink.upserted                   │ after about WATCH_SECONDS:
    │      DELETED          ─► sink.deleted                    │ resume from the last
    │      BOOKMARK         ─► only the resourceVersion moves  │ resourceVersion seen
    │      (stream ends) ──────────────────────────────────────┘
    │      ERROR (410 Gone: too old) or a broken stream or any failure:
    └── sink.unsynced(); wait (backoff, 0.5 s doubling to 30 s); list again.
        Also every RESYNC_SECONDS (``resync_seconds``), and on ``restart`` (a new selector).

So the sink never holds stale data for long: a watch that ends normally is resumed where it
stopped (bookmarks keep that point recent, so a quiet collection costs a watch request a
minute, never a list); one that breaks is not resumed but replaced by a fresh list, and
until that list is in the sink says it is not synced (its owner then reads the API
directly). A connection that dies silently is noticed by the read timeout, at most
``WATCH_SECONDS + WATCH_READ_MARGIN`` seconds after the last byte.

Every request goes through ``KubeRest`` (``send`` for the lists, ``watch`` for the
watches), so errors are mapped in one place and every request is counted. What to list and
watch (``Collection``, importable from here too: the informer's argument) and the paged list
itself are ``autoroll.kube.listing``'s.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Generic, Protocol, TypeVar

from autoroll.kube.errors import ClusterApiError, ClusterError
from autoroll.kube.listing import Collection, list_whole, with_selector
from autoroll.kube.transport import REQUEST_TIMEOUT, LazyRest
from autoroll.kube.watch_stream import WatchStream

log = logging.getLogger(__name__)

#: Seconds a watch asks the server to keep it open (each one jittered up to +25 %).
WATCH_SECONDS: Final = 60
#: Seconds of silence past a watch's own timeout after which its connection counts as dead.
WATCH_READ_MARGIN: Final = 15.0
#: Backoff after a failure: first and longest wait before the next list, in seconds.
BACKOFF_FIRST: Final = 0.5
BACKOFF_MAX: Final = 30.0

T = TypeVar("T")
T_contra = TypeVar("T_contra", contravariant=True)


class Sink(Protocol[T_contra]):
    """Where an informer's objects go (the owner locks; calls come from the thread)."""

    def replaced(self, items: Mapping[str, T_contra]) -> None: ...

    def upserted(self, uid: str, item: T_contra) -> None: ...

    def deleted(self, uid: str) -> None: ...

    def unsynced(self) -> None: ...


class _RestartRequestedError(Exception):
    """The informer was told to list again (a new selector); not a failure."""


class Informer(Generic[T]):
    """Keeps ``collection`` in ``sink`` (module docstring); ``convert`` turns each object
    into what is kept, or None to leave it out (it logs why)."""

    def __init__(
        self,
        collection: Collection,
        *,
        rest: LazyRest,
        convert: Callable[[dict[str, Any]], T | None],
        sink: Sink[T],
        resync_seconds: float,
        on_list: Callable[[str], None] = lambda cause: None,
        clock: Callable[[], float] = time.monotonic,
        name: str = "informer",
    ) -> None:
        self._collection = collection
        self._rest = rest
        self._convert = convert
        self._sink = sink
        self._resync = resync_seconds
        self._on_list = on_list
        self._clock = clock
        self._lock = threading.Lock()
        self._stream: WatchStream | None = None
        self._restart: str | None = None  # a new label selector to list with
        self._stop = threading.Event()
        self._synced = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"autoroll-{name}", daemon=True)
        self._listed_at = 0.0
        self.lists = 0  # list passes made (a paged list counts once), for tests and logs

    @property
    def synced(self) -> bool:
        return self._synced.is_set()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    @property
    def listing_selector(self) -> str | None:
        """The label selector of the list (or watch) in progress: what the sink's items are
        selected by. A restart takes effect at the next list."""
        return self._collection.label_selector

    def wait_synced(self, timeout: float) -> bool:
        return self._synced.wait(timeout)

    def start(self) -> None:
        self._thread.start()

    def restart(self, label_selector: str | None) -> None:
        """List again with ``label_selector`` (the old watch is ended at once)."""
        with self._lock:
            self._restart = label_selector or ""
            stream = self._stream
        # Not synced from now on (the owner asked, so it is not told again).
        self._synced.clear()
        if stream is not None:
            stream.abort()

    def request_stop(self) -> None:
        self._stop.set()
        with self._lock:
            stream = self._stream
        if stream is not None:
            stream.abort()

    def stop(self, timeout: float) -> None:
        self.request_stop()
        if self._thread.ident is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                raise RuntimeError(f"{self._thread.name} still running after {timeout:g}s")

    # -- the loop ----------------------------------------------------------------------------

    def _run(self) -> None:
        cause = "start"
        backoff = BACKOFF_FIRST
        troubled = False
        while not self._stop.is_set():
            try:
                self._take_restart()
                version = self._list(cause)
                if troubled:
                    log.info("watching %s again", self._describe())
                troubled, backoff = False, BACKOFF_FIRST
                cause = self._follow(version)
            except _RestartRequestedError:
                cause = "selector"
            except ClusterApiError as exc:
                if exc.status == 410:
                    # Resumed too late (the server no longer has that resourceVersion): list.
                    cause = "expired"
                    self._set_unsynced()
                    log.info("watching %s: %s; listing again", self._describe(), exc)
                    continue
                cause = "broken"
                troubled, backoff = self._trouble(exc, troubled, backoff)
            except ClusterError as exc:
                cause = "broken"
                troubled, backoff = self._trouble(exc, troubled, backoff)
            except Exception as exc:  # never let the thread die: the cache would freeze
                log.exception("watching %s failed unexpectedly", self._describe())
                cause = "broken"
                troubled, backoff = self._trouble(exc, True, backoff)

    def _trouble(self, exc: Exception, troubled: bool, backoff: float) -> tuple[bool, float]:
        """Unsynced at once; one warning when trouble starts, then debug; wait, longer each time.
        The sink hears of each failure, even one before the first list succeeded, so a pass
        waiting for the first sync can stop waiting and list (and report the error) itself."""
        self._set_unsynced(failed=True)
        if self._stop.is_set():
            return troubled, backoff
        level = logging.DEBUG if troubled else logging.WARNING
        log.log(
            level,
            "watching %s: %s; listing again in %.1fs",
            self._describe(),
            exc,
            backoff,
            extra={"event": "watch-broken"},
        )
        self._stop.wait(backoff)
        return True, min(BACKOFF_MAX, backoff * 2)

    def _take_restart(self) -> None:
        with self._lock:
            if self._restart is not None:
                self._collection = with_selector(self._collection, self._restart or None)
                self._restart = None

    def _list(self, cause: str) -> str:
        """The whole collection, page by page, into the sink; returns the resourceVersion."""
        self._on_list(cause)
        self.lists += 1
        items, version = list_whole(
            self._rest, self._collection, self._convert, between_pages=self._check_restart
        )
        self._check_restart()
        self._sink.replaced(items)
        self._synced.set()
        self._listed_at = self._clock()
        return version

    def _follow(self, version: str) -> str:
        """Watch from ``version`` until a resync is due; returns the next list's cause."""
        while not self._stop.is_set():
            if self._clock() - self._listed_at >= self._resync:
                return "resync"
            version = self._watch_once(version)
            self._check_restart()
        return "stopped"

    def _watch_once(self, version: str) -> str:
        """One watch request, until the server ends it; returns the last resourceVersion."""
        collection = self._collection
        seconds = int(WATCH_SECONDS * random.uniform(1.0, 1.25))
        query = [
            *collection.query(),
            ("watch", "true"),
            ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", str(seconds)),
        ]
        if version:
            query.append(("resourceVersion", version))
        connect_seconds, _ = REQUEST_TIMEOUT
        stream = self._rest().watch(
            collection.watch_operation,
            collection.target,
            collection.path,
            query=query,
            timeout=(connect_seconds, seconds + WATCH_READ_MARGIN),
        )
        with self._lock:
            self._stream = stream
            restarting = self._restart is not None
        if restarting:  # asked for before this stream could be aborted
            stream.abort()
        try:
            for kind, document in stream.events():
                if self._stop.is_set():
                    break
                version = self._apply(kind, document) or version
        except ClusterError:
            if self._stop.is_set():
                return version
            self._check_restart()  # an abort for a restart is not a failure
            raise
        finally:
            with self._lock:
                self._stream = None
        return version

    def _apply(self, kind: str, document: dict[str, Any]) -> str:
        """Apply one event; returns its resourceVersion."""
        meta = document.get("metadata") or {}
        version = str(meta.get("resourceVersion") or "")
        if kind == "BOOKMARK":
            return version
        uid = str(meta.get("uid") or "")
        if not uid:
            return version
        if kind == "DELETED":
            self._sink.deleted(uid)
        elif kind in ("ADDED", "MODIFIED"):
            converted = self._convert(document)
            if converted is None:
                self._sink.deleted(uid)  # no longer readable: keep nothing stale of it
            else:
                self._sink.upserted(uid, converted)
        return version

    def _check_restart(self) -> None:
        with self._lock:
            if self._restart is not None:
                raise _RestartRequestedError

    def _set_unsynced(self, *, failed: bool = False) -> None:
        if self._synced.is_set():
            self._synced.clear()
            self._sink.unsynced()
        elif failed:
            self._sink.unsynced()

    def _describe(self) -> str:
        what = self._collection.watch_operation.action.removeprefix("watch ")
        return f"{what} {self._collection.target}"


def stop_all(informers: Sequence[Informer[Any]], timeout: float) -> None:
    """Tell every informer to stop, then join them against one deadline."""
    for informer in informers:
        informer.request_stop()
    deadline = time.monotonic() + timeout
    for informer in informers:
        informer.stop(max(0.05, deadline - time.monotonic()))


__all__ = [
    "BACKOFF_MAX",
    "WATCH_READ_MARGIN",
    "WATCH_SECONDS",
    "Collection",
    "Informer",
    "Sink",
    "stop_all",
]
