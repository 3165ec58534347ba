"""One registry's HTTP manners: quiet periods, the per-pass request budget, timeouts.

Every request the client and its token flow send to one registry goes through ``Wire.send``,
so the politeness rules hold for all of them (docs/adr/024-pull-credentials.md):

- **Retry-After.** A 429, or a 503 that names a wait, starts a quiet period: nothing more is
  sent to this registry until it ends; lookups meanwhile are ``Unknown("backoff")`` without a
  request. ``Retry-After`` is seconds or an HTTP date, capped at ``Limits.max_backoff_seconds``
  (a bogus "tomorrow" must not silence autoroll for a day).
- **Backoff.** A 429 without a usable ``Retry-After`` waits ``Limits.default_backoff_seconds``,
  doubled for each such 429 in a row (capped as above); any other answer resets the count.
- **Budget.** At most ``Limits.requests_per_pass`` requests per pass (0: no cap), token
  requests included; past it, ``BudgetError``: the rest of the pass's lookups on this
  registry are ``Unknown("budget-exhausted")``, never stale, and no other registry waits.
- **Time.** Each request's connect and read timeouts are cut to what is left of the pass's
  ``Deadline``.

The state is per registry (one ``Wire`` per ``RegistryClient``), so one registry's 429 never
quiets another.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping

import requests

from autoroll.registry.errors import (
    BackoffError,
    BudgetError,
    RequestTimeoutError,
    TransportError,
    UntrustedCertError,
)
from autoroll.registry.limits import Deadline, Limits, RegistryObserver
from autoroll.registry.manifests import retry_after_seconds
from autoroll.registry.tls import is_untrusted, untrusted_message


class Wire:
    """The HTTP side of one registry (module docstring). Thread-safe: ``resolve`` shares it
    between its worker threads."""

    def __init__(
        self,
        *,
        session: requests.Session,
        base_url: str,
        limits: Limits,
        observer: RegistryObserver,
        clock: Callable[[], float],
        wall_clock: Callable[[], float],
        ca_file: str | None = None,
    ) -> None:
        self._session = session
        self._base = base_url
        self._limits = limits
        self._observer = observer
        self._clock = clock
        self._wall_clock = wall_clock
        self._ca_file = ca_file  # named in a refused certificate's message
        self._lock = threading.Lock()
        self._quiet_until = float("-inf")  # monotonic time before which nothing is sent
        self._throttled = 0  # 429s without Retry-After in a row
        self._sent = 0  # requests this pass

    def new_pass(self) -> None:
        """A pass starts: its request budget is full again."""
        with self._lock:
            self._sent = 0

    @property
    def sent(self) -> int:
        """Requests sent this pass."""
        return self._sent

    def check_quiet(self) -> None:
        """Raise while a Retry-After (or backoff) from this registry is still running."""
        left = self._quiet_until - self._clock()
        if left > 0:
            raise BackoffError(f"{self._base} asked us to wait; {left:.0f}s left")

    def note_answer(self, response: requests.Response) -> None:
        """Start a quiet period on a 429, or on a 503 that names one; reset the backoff on
        any other answer."""
        status = response.status_code
        if status not in (429, 503):
            if status < 500:
                with self._lock:
                    self._throttled = 0
            return
        wait = retry_after_seconds(response.headers.get("Retry-After"), now=self._wall_clock())
        with self._lock:
            if wait is None:
                if status != 429:
                    return
                wait = self._limits.default_backoff_seconds * 2**self._throttled
                self._throttled = min(self._throttled + 1, 16)
            wait = min(wait, self._limits.max_backoff_seconds)
            self._quiet_until = max(self._quiet_until, self._clock() + wait)

    def spend(self) -> None:
        """Count one request against the pass's budget; raise once it is spent."""
        cap = self._limits.requests_per_pass
        with self._lock:
            if cap and self._sent >= cap:
                raise BudgetError(
                    f"{self._base}: this pass's {cap} requests are spent (the registry's"
                    " requestsPerPass); the rest waits for the next pass"
                )
            self._sent += 1

    def send(
        self,
        method: str,
        url: str,
        deadline: Deadline,
        headers: Mapping[str, str],
        *,
        kind: str,
        params: Mapping[str, str] | None = None,
    ) -> requests.Response:
        """One request, never following redirects, streamed; errors in the tree."""
        self.check_quiet()
        self.spend()
        timeout = (
            min(self._limits.connect_seconds, deadline.remaining()),
            min(self._limits.read_seconds, deadline.remaining()),
        )
        self._observer.request_sent(kind)
        try:
            return self._session.request(
                method,
                url,
                params=params,
                headers=dict(headers),
                timeout=timeout,
                allow_redirects=False,
                stream=True,
            )
        except requests.Timeout as exc:
            raise RequestTimeoutError(f"{method} {url}: {type(exc).__name__}") from exc
        except requests.exceptions.SSLError as exc:
            if is_untrusted(exc):
                message = untrusted_message(exc, ca_file=self._ca_file)
                raise UntrustedCertError(f"{method} {url}: {message}") from exc
            raise TransportError(f"{method} {url}: {type(exc).__name__}") from exc
        except requests.RequestException as exc:
            raise TransportError(f"{method} {url}: {type(exc).__name__}") from exc


__all__ = ["Wire"]
