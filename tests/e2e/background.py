"""A helper object that runs one daemon thread between ``__enter__`` and ``__exit__``: the
pod watch (``scenario.Recorder``) and the scheduler stand-in (``node_binder.Binder``) start
and stop theirs the same way, so that way is written once here.
"""

from __future__ import annotations

import threading
from collections.abc import Callable


class BackgroundThread:
    """Base of a context whose thread runs until ``_stop`` is set: ``_start_thread`` starts
    it (from ``__enter__``); ``__exit__`` sets ``_stop`` and waits up to 10 s for the thread.
    The subclass makes ``_stop`` and ``_thread`` (``None``) in its ``__init__``."""

    _stop: threading.Event
    _thread: threading.Thread | None

    def _start_thread(self, target: Callable[..., None], name: str, *args: object) -> None:
        self._thread = threading.Thread(target=target, args=args, name=name, daemon=True)
        self._thread.start()

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)
