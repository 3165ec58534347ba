"""The registry client: what digest does a tag point to right now, and what are an index's children?

Every answer is a ``Digest`` or an ``Unknown(reason)``. Failures never escape as exceptions
and never read as "changed": the core skips an unknown image for the tick.

- ``resolve(refs)``: one ``HEAD /v2/<repo>/manifests/<tag>`` per unique ref (a few in
  flight at once, ``Limits.lookup_concurrency``), with an Accept
  list naming the OCI index, OCI manifest, Docker manifest list and Docker v2 manifest types.
  Without the index types a registry answers a multi-arch tag with one platform's manifest
  (or 404), and that digest never equals the index digest containerd reports — so every pod
  would look stale forever.
- ``fetch_children(requests)``, ``fetch_content(requests)``: what a digest stands for, an
  index's children and the image configs, ``GET`` by digest only when a pod's digest did
  not match, verified and cached by digest (``autoroll.registry.fetcher``).
- ``holds_manifest(ref, digest)``: is a digest still in its repository (one HEAD by digest).

Authentication (``signin``, ``auth``): each lookup carries the credentials a pod would pull
with (``autoroll.core.lookups``); the registry's own (a chart Secret's, then the Forgejo
shorthand's ``FORGEJO_USER``/``FORGEJO_TOKEN``) follow them, and with none at all the registry
is asked anonymously, as the kubelet pulls. Each credential is tried in turn, HTTP Basic up
front; a 401 carrying a Bearer challenge (``realm``, ``service``, ``scope``) gets a token from
the realm with that credential, cached per credential and scope until it expires, and the
request is retried once. The realm must be on the registry's own origin (scheme, host and
port; never plain http for an https registry) or a configured realm host, so the credentials
are never sent anywhere else. ``WWW-Authenticate`` may offer several challenges in one answer
(Gitea and Forgejo send ``Bearer …`` and ``Basic realm="…"`` for a private owner); it is
parsed with ``authchallenge`` (RFC 9110), and the Bearer one is used wherever it stands.
Lookups that run at once and need a token for the same credential and scope fetch it once. A
refused request says what to fix (the Secret it came from; ``FORGEJO_USER``,
``FORGEJO_TOKEN`` and its ``read:package`` scope) in its ``Unknown`` detail. A GET by digest
asks with the chain that last answered its repository's HEAD (``autoroll.registry.origin``).

Time is bounded twice: each request has connect and read timeouts, and each tick (one
``resolve`` and the ``fetch_children`` and ``fetch_content`` calls after it) has an overall
budget, in seconds of registry time and in requests (``Limits.requests_per_pass``); lookups
left when it runs out are ``Unknown("budget-exhausted")``, so one slow or busy registry cannot
stall a tick. The budget's clock runs only inside those calls: the pass's own work between
them (deciding thousands of workloads, on a CPU it may share) spends none of it
(``limits.Deadline``; issue 28). ``lookup`` and ``fetch_content`` send a few requests at once
(``Limits.lookup_concurrency``).

Back-off (``wire``): a 429 (or a 503 carrying ``Retry-After``) makes the client send nothing
more to this registry until the time it names has passed — lookups meanwhile are
``Unknown("backoff")`` without a request; repeated 429s without a usable ``Retry-After``
wait longer each time. The state belongs to the client, and a client talks to one registry,
so other registries are never affected (``autoroll.registry.pool`` asks each in turn of its
own).

Redirects are followed on the registry's own origin only, with the same credentials
(``autoroll.registry.origin``, the one request path). The error tree and the pure parsing of
answers are in ``autoroll.registry.errors`` and ``autoroll.registry.manifests``; limits and the
observer seam in ``autoroll.registry.limits``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from urllib.parse import urlsplit

import requests

from autoroll.core.images import TagRef, registry_host
from autoroll.core.keyring import Credential, Keyring
from autoroll.core.lookups import Answer, Lookup
from autoroll.core.model import Digest, ImageContent, Unknown
from autoroll.registry.auth import FORGEJO_SOURCE, TokenFlow
from autoroll.registry.errors import RegistryError, StatusError
from autoroll.registry.fetcher import ContentFetcher
from autoroll.registry.limits import (
    ChildrenWanted,
    ContentWanted,
    Deadline,
    Limits,
    NullObserver,
    RegistryObserver,
    each_at_once,
)
from autoroll.registry.manifests import digest_header
from autoroll.registry.origin import RegistryOrigin
from autoroll.registry.signin import SignIn
from autoroll.registry.wire import Wire

# --------------------------------------------------------------------------------------------
# The client


class RegistryClient:
    """Digests for tags on one registry. One instance per process; ``session`` is injected.

    One caller at a time: the one reconcile thread owns it, and ``autoroll plan`` builds its
    own. Inside ``resolve`` its own worker threads share it; what they share is safe for
    that (single dict operations on the token cache, a lock per token scope around each
    token fetch, a quiet-period deadline that only moves later, a thread-safe observer,
    and ``requests``' connection pool).
    """

    def __init__(
        self,
        *,
        session: requests.Session,
        base_url: str,
        user: str = "",
        token: str = "",
        keyring: Keyring | None = None,
        observer: RegistryObserver | None = None,
        limits: Limits | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        on_secret: Callable[[str], None] | None = None,
        ca_file: str | None = None,
        realm_hosts: frozenset[str] = frozenset(),
    ) -> None:
        """``keyring`` holds the registry's own credentials (a chart Secret's, matched to each
        image as the kubelet matches), tried after a lookup's pull credentials; ``user`` and
        ``token`` are the Forgejo shorthand's, tried last (``FORGEJO_TOKEN``). None at all,
        and no pull credentials: anonymous.
        ``on_secret`` is told every credential learnt while running (each Bearer token
        fetched), so the log redactor can hide it (``autoroll.instruments.logs.redact_also``).
        ``ca_file`` is what ``session`` trusts beside the default roots (only named in a
        refused certificate's message; the session itself does the trusting).
        ``realm_hosts`` are other hosts credentials may be sent to for a token (Docker Hub's
        ``auth.docker.io``)."""
        parts = urlsplit(base_url)
        if parts.scheme not in {"http", "https"} or not parts.netloc or parts.path not in {"", "/"}:
            raise ValueError(f"base_url must be scheme://host[:port], got {base_url!r}")
        self._base = f"{parts.scheme}://{parts.netloc}"
        self._host = parts.netloc
        self._keyring = keyring or Keyring()
        self._forgejo = (
            (Credential(user, token, FORGEJO_SOURCE, self._host),) if user or token else ()
        )
        self._observer: RegistryObserver = observer or NullObserver()
        self._limits = limits or Limits()
        self._clock = clock
        self._wire = Wire(
            session=session,
            base_url=self._base,
            limits=self._limits,
            observer=self._observer,
            clock=clock,
            wall_clock=wall_clock,
            ca_file=ca_file,
        )
        tokens = TokenFlow(
            wire=self._wire,
            base_url=self._base,
            clock=clock,
            on_token=on_secret,
            realm_hosts=realm_hosts,
        )
        self._origin = RegistryOrigin(
            base=self._base,
            scheme=parts.scheme,
            host=self._host,
            own=self._own,
            wire=self._wire,
            signin=SignIn(wire=self._wire, tokens=tokens),
        )
        self._fetcher = ContentFetcher(
            origin=self._origin, limits=self._limits, observer=self._observer
        )
        self._tick: Deadline | None = None

    def _own(self, repository: str) -> tuple[Credential, ...]:
        """The registry's own credentials for ``repository``: its Secret's that serve it,
        then the Forgejo shorthand's."""
        # Named as images name it (Docker Hub's as docker.io/…), for the kubelet's matching.
        return self._keyring.lookup(f"{registry_host(self._host)}/{repository}") + self._forgejo

    @property
    def host(self) -> str:
        """The registry's ``host[:port]``, as its base URL names it."""
        return self._host

    @property
    def requests_this_pass(self) -> int:
        """Requests sent since the last ``resolve`` or ``lookup`` began."""
        return self._wire.sent

    def __repr__(self) -> str:
        return f"RegistryClient(base_url={self._base!r})"

    # -- public -------------------------------------------------------------------------------

    def resolve(self, refs: Iterable[TagRef]) -> dict[TagRef, Digest | Unknown]:
        """The registry's digest for each unique ref, asked with the registry's own
        credentials: one HEAD each. Starts a pass's budget."""
        answers = self.lookup(Lookup(ref) for ref in refs)
        return {lookup.ref: answer.value for lookup, answer in answers.items()}

    def lookup(self, lookups: Iterable[Lookup]) -> dict[Lookup, Answer]:
        """The registry's digest for each unique lookup: one HEAD each, with the lookup's
        credentials and then the registry's own (``signin``). Starts a pass's budget: its
        time, and its ``Limits.requests_per_pass``."""
        deadline = self.begin_pass()
        unique = list(dict.fromkeys(lookups))  # in the caller's order: it shares the budget
        # A few HEADs in flight at once: against a remote registry each is a round trip, and
        # a pass resolves every enrolled tag. Each lookup still checks the budget and any
        # quiet period before it sends, so after a 429 only the requests already in flight
        # (at most workers - 1) are answered; the rest are Unknown("backoff").
        with deadline.running():
            answers = each_at_once(lambda item: self._answer(item, deadline), unique, self._limits)
        return dict(zip(unique, answers, strict=True))

    def begin_pass(self) -> Deadline:
        """A pass starts: its time budget and request budget are full, and what failed in
        the last pass may be asked again. ``lookup`` calls it; a pool calls it for a
        registry the pass asks nothing of by tag (it may still GET by digest there)."""
        deadline = Deadline(self._clock, self._limits.budget_seconds)
        deadline.pause()  # it runs inside this client's calls only
        self._tick = deadline
        self._wire.new_pass()
        self._fetcher.new_pass()
        return deadline

    def known_children(self) -> Mapping[Digest, frozenset[Digest]]:
        """Every index expansion cached so far (pass it to ``decide`` as a start)."""
        return self._fetcher.known_children()

    def fetch_children(
        self, wanted: Iterable[ChildrenWanted]
    ) -> dict[Digest, frozenset[Digest] | Unknown]:
        """Child digests of each wanted index (empty for a plain manifest); cached by digest.

        Shares the budget of the last ``resolve`` (one tick). A failed index is not asked
        again until the next ``resolve``, however many Deployments want it.
        """
        deadline = self._tick or Deadline(self._clock, self._limits.budget_seconds)
        return self._fetcher.fetch_children(wanted, deadline)

    def known_content(self) -> Mapping[Digest, ImageContent]:
        """Every manifest's and index's configs resolved so far (pass it to ``decide``)."""
        return self._fetcher.known_content()

    def fetch_content(
        self, wanted: Iterable[ContentWanted]
    ) -> dict[Digest, ImageContent | Unknown]:
        """The image configs each wanted manifest or index stands for; cached by digest.

        Shares the budget of the last ``resolve`` (one tick). Content is the digest's, in
        whichever repository: a digest that failed in one repository may still come from
        another, but is not asked again from the same one until the next ``resolve``.
        """
        deadline = self._tick or Deadline(self._clock, self._limits.budget_seconds)
        return self._fetcher.fetch_content(wanted, deadline)

    def holds_manifest(self, ref: TagRef, digest: Digest) -> bool | None:
        """Does the registry still hold ``digest`` in ``ref``'s repository? One HEAD by
        digest, asked as the repository's last HEAD was (its pods' pull credentials), within
        the pass's budget: True (200), False (404), None (anything else: it cannot say).

        A digest a pod is pinned to must be pullable; Gitea and Forgejo drop a tag's previous
        manifest when the tag is pushed again (docs/adr/028)."""
        deadline = self._tick or Deadline(self._clock, self._limits.budget_seconds)
        url = f"{self._base}/v2/{ref.repository}/manifests/{digest}"
        try:
            self._origin.check_host(ref.host, f"{ref.host}/{ref.repository}@{digest}")
            with deadline.running():  # only the time inside the call counts (issue 28)
                response, _ = self._origin.send(
                    "HEAD", url, ref.repository, deadline, kind="manifest-presence"
                )
        except StatusError as refused:
            return False if refused.status == 404 else None
        except RegistryError as exc:
            self._observer.lookup_failed(exc.reason)
            return None
        response.close()
        return True

    # -- lookups ------------------------------------------------------------------------------

    def _answer(self, item: Lookup, deadline: Deadline) -> Answer:
        """One lookup's answer; every failure is Unknown(reason), reported once."""
        try:
            digest, source = self._head_digest(item, deadline)
        except RegistryError as exc:
            self._observer.lookup_failed(exc.reason)
            return Answer(exc.to_unknown())
        return Answer(digest, source)

    def _head_digest(self, item: Lookup, deadline: Deadline) -> tuple[Digest, str]:
        ref = item.ref
        self._origin.check_host(ref.host, str(ref))
        chain = item.credentials + self._own(ref.repository)
        url = f"{self._base}/v2/{ref.repository}/manifests/{ref.tag}"
        try:
            response, source = self._origin.send(
                "HEAD", url, ref.repository, deadline, kind="manifest-head", chain=chain
            )
        except StatusError as refused:
            if refused.status in (401, 403):
                # Credentials that stopped working (a rotated or deleted Secret) are not
                # kept for the repository's GETs either.
                self._origin.refused(ref.repository)
            raise
        response.close()
        self._origin.answered(ref.repository, chain)  # GETs by digest here ask as the HEAD did
        return digest_header(response), source
