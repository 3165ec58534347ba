"""Every configured registry behind one ``RegistryPort``: each host asked by its own client.

A pass's tags may sit on several registries (a Forgejo, a Harbor, Docker Hub); each has its
``RegistryClient`` with its own limits, credentials, quiet period and budget. ``lookup``
splits the pass's lookups by host and asks the registries side by side, one thread each, so a
registry that is slow, quiet after a 429 or out of budget makes only its own images unknown
and holds no other registry's answers back (docs/adr/024-pull-credentials.md). A tag on a
host no client serves is ``Unknown("other-host")`` (the core never asks for one: it skips
such images as ``other-host`` first). Index children and image configs go to the client of
the host they name; the caches stay per client (digests are per registry's content).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import TypeVar

from autoroll.core.images import TagRef, registry_host
from autoroll.core.lookups import Answer, Lookup
from autoroll.core.model import Digest, ImageContent, Unknown
from autoroll.registry.client import RegistryClient
from autoroll.registry.limits import ChildrenWanted, ContentWanted

_K = TypeVar("_K")
_V = TypeVar("_V")


class RegistryPool:
    """The configured registries, by ``registry_host`` (implements ``RegistryPort``)."""

    def __init__(self, clients: Mapping[str, RegistryClient]) -> None:
        self._clients = {registry_host(host): client for host, client in clients.items()}

    def __repr__(self) -> str:
        return f"RegistryPool({sorted(self._clients)})"

    @property
    def hosts(self) -> frozenset[str]:
        return frozenset(self._clients)

    def client(self, host: str) -> RegistryClient | None:
        return self._clients.get(registry_host(host))

    # -- RegistryPort -------------------------------------------------------------------------

    def resolve(self, refs: Iterable[TagRef]) -> dict[TagRef, Digest | Unknown]:
        answers = self.lookup(Lookup(ref) for ref in refs)
        return {item.ref: answer.value for item, answer in answers.items()}

    def lookup(self, lookups: Iterable[Lookup]) -> dict[Lookup, Answer]:
        """Each registry's answers to its lookups, the registries asked side by side."""
        unique = list(dict.fromkeys(lookups))
        by_host: dict[str, list[Lookup]] = {}
        for item in unique:
            by_host.setdefault(registry_host(item.ref.host), []).append(item)
        answers: dict[Lookup, Answer] = {}
        for host in [h for h in by_host if h not in self._clients]:
            for item in by_host.pop(host):
                answers[item] = Answer(
                    Unknown("other-host", f"{host} is not a configured registry")
                )
        for host, client in self._clients.items():
            if host not in by_host:
                client.begin_pass()  # asked nothing by tag, but maybe by digest this pass
        results = _side_by_side(
            {host: partial(self._clients[host].lookup, by_host[host]) for host in by_host}
        )
        for found in results.values():
            answers.update(found)
        return {item: answers[item] for item in unique}  # in the caller's order

    def known_children(self) -> Mapping[Digest, frozenset[Digest]]:
        known: dict[Digest, frozenset[Digest]] = {}
        for client in self._clients.values():
            known.update(client.known_children())
        return known

    def fetch_children(
        self, wanted: Iterable[ChildrenWanted]
    ) -> dict[Digest, frozenset[Digest] | Unknown]:
        answers: dict[Digest, frozenset[Digest] | Unknown] = {}
        for host, items in _grouped(wanted, lambda w: w.ref.host).items():
            client = self._clients.get(host)
            if client is None:
                answers.update({w.digest: Unknown("other-host", host) for w in items})
            else:
                answers.update(client.fetch_children(items))
        return answers

    def known_content(self) -> Mapping[Digest, ImageContent]:
        known: dict[Digest, ImageContent] = {}
        for client in self._clients.values():
            known.update(client.known_content())
        return known

    def fetch_content(
        self, wanted: Iterable[ContentWanted]
    ) -> dict[Digest, ImageContent | Unknown]:
        answers: dict[Digest, ImageContent | Unknown] = {}
        for host, items in _grouped(wanted, lambda w: w.host).items():
            client = self._clients.get(host)
            found: Mapping[Digest, ImageContent | Unknown] = (
                {w.digest: Unknown("other-host", host) for w in items}
                if client is None
                else client.fetch_content(items)
            )
            for digest, answer in found.items():
                # One digest asked of several registries: content from any one of them.
                if not isinstance(answers.get(digest), ImageContent):
                    answers[digest] = answer
        return answers


def _grouped(items: Iterable[_V], host_of: Callable[[_V], str]) -> dict[str, list[_V]]:
    groups: dict[str, list[_V]] = {}
    for item in items:
        groups.setdefault(registry_host(host_of(item)), []).append(item)
    return groups


def _side_by_side(calls: Mapping[_K, Callable[[], _V]]) -> dict[_K, _V]:
    """Run each call on a thread of its own (one alone runs here), all to the end."""
    if len(calls) <= 1:
        return {key: call() for key, call in calls.items()}
    with ThreadPoolExecutor(len(calls), thread_name_prefix="autoroll-registries") as pool:
        futures = {key: pool.submit(call) for key, call in calls.items()}
        return {key: future.result() for key, future in futures.items()}


__all__ = ["RegistryPool"]
