"""Parse image references and the imageID strings runtimes report. Strings in, data out.

Image references follow the distribution reference grammar: an optional registry host
(the first path component, when it contains ``.`` or ``:`` or is ``localhost``), a
repository path, an optional ``:tag`` and an optional ``@digest``. With neither tag nor
digest the tag is ``latest``, as every runtime assumes.

imageID forms seen in the wild (``pod.status.containerStatuses[].imageID``):

- ``docker-pullable://host/repo@sha256:…`` (dockershim) and ``docker://…``: strip the scheme.
- ``host/repo@sha256:…`` (containerd, CRI-O): a manifest (or index) digest under a
  repository name. containerd names, for every container of an image, the alphabetically
  first of all ``repo@digest`` references it has recorded for that image's *config*, so the
  name may be another repository's (or another manifest of the same build): the digest says
  which manifest, not necessarily which pull (``RunningImage``; ``autoroll.core.decide`` resolves
  it to the configs it stands for before calling a pod stale).
- bare ``sha256:…``: containerd's image ID when it has recorded no repo digest: the digest of
  the image *config* the container runs (``RunningImage.is_config``).
- ``docker://sha256:…`` (cri-dockerd): Docker's image ID — a config digest with Docker's
  classic store, but an index digest with its containerd store, so neither kind can be
  assumed: unknown.
- empty: the runtime has not resolved the image yet — unknown.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from functools import lru_cache
from typing import Final, Self

from autoroll.core.model import Digest, Unknown, is_digest

DEFAULT_HOST: Final = "docker.io"
DEFAULT_TAG: Final = "latest"
#: The names Docker Hub answers to; one registry, written ``docker.io`` (``registry_host``).
DOCKER_HUB_ALIASES: Final = frozenset({"docker.io", "index.docker.io", "registry-1.docker.io"})

_COMPONENT: Final = re.compile(r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*")
#: The reference grammar's tag, ``[\w][\w.-]{0,127}`` with ``\w`` meaning ASCII
#: ``[A-Za-z0-9_]`` (Python's ``\w`` alone would accept any Unicode letter or digit).
_TAG: Final = re.compile(r"[\w][\w.-]{0,127}", re.ASCII)
_HOST: Final = re.compile(
    r"(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*"
    r"(?::[0-9]{1,5})?|\[[0-9a-fA-F:.]+\](?::[0-9]{1,5})?"
)
_DIGEST_ANY: Final = re.compile(r"[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]{32,}")
_IMAGE_ID_SCHEMES: Final = ("docker-pullable://", "docker://")


class ImageRefError(ValueError):
    """An image reference that does not follow the reference grammar."""


@dataclass(frozen=True, slots=True, order=True)
class TagRef:
    """What the registry is asked about: one repository:tag on one host.

    One HEAD per unique ``TagRef`` per tick; the registry client keys its answers by it.
    """

    host: str
    repository: str
    tag: str

    def __str__(self) -> str:
        return f"{self.host}/{self.repository}:{self.tag}"


@dataclass(frozen=True, slots=True)
class ImageRef:
    """A parsed image reference. ``digest`` is the raw ``algo:hex`` text when pinned."""

    host: str
    repository: str
    tag: str | None
    digest: str | None

    @property
    def is_pinned(self) -> bool:
        """Is the image pinned by digest? Then the tag (if any) is ignored by runtimes."""
        return self.digest is not None

    @property
    def tag_ref(self) -> TagRef | None:
        """The ref to ask the registry about, or None for a digest-pinned image."""
        if self.digest is not None:
            return None
        return TagRef(self.host, self.repository, self.tag or DEFAULT_TAG)


def parse_image(reference: str) -> ImageRef:
    """Parse ``[host[:port]/]repo/path[:tag][@digest]``; raise ``ImageRefError`` on a fault."""
    text = reference.strip()
    if not text:
        raise ImageRefError("empty image reference")
    if text != reference:
        raise ImageRefError(f"image reference {reference!r} has surrounding whitespace")

    rest, at, digest = text.partition("@")
    if at and not _DIGEST_ANY.fullmatch(digest):
        raise ImageRefError(f"image reference {reference!r}: malformed digest {digest!r}")

    tag: str | None = None
    last_slash = rest.rfind("/")
    colon = rest.rfind(":")
    if colon > last_slash:
        rest, tag = rest[:colon], rest[colon + 1 :]
        if not _TAG.fullmatch(tag):
            raise ImageRefError(f"image reference {reference!r}: malformed tag {tag!r}")

    host, path = _split_host(rest)
    if host is None:
        host = DEFAULT_HOST
    elif not _HOST.fullmatch(host):
        raise ImageRefError(f"image reference {reference!r}: malformed registry host {host!r}")
    host = registry_host(host)
    path = canonical_repository(host, path)
    for component in path.split("/"):
        if not _COMPONENT.fullmatch(component):
            raise ImageRefError(
                f"image reference {reference!r}: repository component {component!r} must be"
                " lowercase letters, digits and single separators (. _ __ -)"
            )
    return ImageRef(host=host, repository=path, tag=tag, digest=digest if at else None)


def registry_host(host: str) -> str:
    """The one name of a registry host: ``host[:port]`` lowercased, and every Docker Hub alias
    (``docker.io``, ``index.docker.io``, ``registry-1.docker.io``) as ``docker.io``.

    Images, configured registries and webhook bodies all compare hosts through this, so
    ``Index.Docker.IO/library/nginx`` and ``nginx`` are one image on one registry.
    """
    lowered = host.strip().lower()
    return DEFAULT_HOST if lowered in DOCKER_HUB_ALIASES else lowered


def canonical_repository(host: str, repository: str) -> str:
    """``repository`` as the registry names it: on Docker Hub a one-part name is an official
    image, ``library/<name>`` (``nginx`` is ``library/nginx``); elsewhere unchanged."""
    if registry_host(host) == DEFAULT_HOST and "/" not in repository:
        return f"library/{repository}"
    return repository


@dataclass(frozen=True, slots=True, order=True)
class CanonicalTag:
    """A tag of a repository on one registry host, normalised as images are compared.

    Build it with ``named`` (or ``of``), which normalises: ``host`` through
    ``registry_host`` (lowercase ``host[:port]``, Docker Hub's aliases as ``docker.io``),
    ``repository`` lowercase with Docker Hub's implied ``library/``. The tag is compared
    exactly (tags are case-sensitive).
    """

    host: str
    repository: str
    tag: str

    def __str__(self) -> str:
        return f"{self.host}/{self.repository}:{self.tag}"

    @classmethod
    def named(cls, host: str, repository: str, tag: str) -> Self:
        """The tag, normalised as the class docstring says."""
        canonical = registry_host(host)
        return cls(canonical, canonical_repository(canonical, repository.lower()), tag)

    @classmethod
    def of(cls, ref: TagRef) -> Self:
        return cls.named(ref.host, ref.repository, ref.tag)


def is_listed(host: str, registries: Collection[str]) -> bool:
    """Is ``host`` one of the configured ``registries`` (hosts already ``registry_host``-ed)?"""
    return registry_host(host) in registries


def _split_host(name: str) -> tuple[str | None, str]:
    """Split the registry host off ``name`` using the runtimes' rule for the first component."""
    first, slash, remainder = name.partition("/")
    if slash and ("." in first or ":" in first or first == "localhost" or first != first.lower()):
        return first, remainder
    return None, name


@dataclass(frozen=True, slots=True)
class RunningImage:
    """What a runtime's imageID names: a manifest or index under a repository name, or (bare
    ``sha256:…``) the image config itself.

    ``host`` and ``repository`` are None for a config ID, and for a ``name@digest`` whose
    name does not parse (its digest is still known, the repository to ask is not).
    """

    digest: Digest
    host: str | None = None
    repository: str | None = None
    is_config: bool = False

    @property
    def reference(self) -> str:
        """``host/repository@digest`` as the runtime named it, or the bare digest."""
        if self.host is None or self.repository is None:
            return str(self.digest)
        return f"{self.host}/{self.repository}@{self.digest}"


@lru_cache(maxsize=4096)
def parse_running_image(image_id: str) -> RunningImage | Unknown:
    """What a runtime reports a container runs, or Unknown with the reason (module docstring).

    Remembered by its text (both answers are frozen): the pods of one image report one
    imageID, so a pass over 30,000 pods parses a few hundred and shares the answers (issue
    28: the parsed copies were a third of what a pass held at 10,000 Deployments)."""
    text = image_id.strip()
    scheme = next((s for s in _IMAGE_ID_SCHEMES if text.startswith(s)), "")
    text = text[len(scheme) :]
    if not text:
        return Unknown("no-image-id", "the runtime has not resolved the image yet")
    if "@" in text:
        name, _, candidate = text.rpartition("@")
        if not is_digest(candidate):
            return Unknown("malformed-image-id", image_id)
        try:
            named = parse_image(name)
        except ImageRefError:
            return RunningImage(Digest(candidate))
        if named.tag is not None or named.digest is not None:
            return RunningImage(Digest(candidate))
        return RunningImage(Digest(candidate), named.host, named.repository)
    if is_digest(text):
        if scheme:
            return Unknown(
                "image-config-id",
                "Docker's image ID is a config or an index digest, depending on its image store",
            )
        return RunningImage(Digest(text), is_config=True)
    return Unknown("malformed-image-id", image_id)


def parse_image_id(image_id: str) -> Digest | Unknown:
    """The manifest digest a runtime reports for a container, or Unknown with the reason.

    A bare ``sha256:…`` is an image config ID; it never equals a manifest digest, so
    comparing it with one would make every pod look stale — it is unknown here, never a
    digest (``parse_running_image`` keeps it, for comparing with the target's configs).
    """
    running = parse_running_image(image_id)
    if isinstance(running, Unknown):
        return running
    if running.is_config:
        return Unknown("image-config-id", "a bare sha256 is an image config ID, not a manifest")
    return running.digest


def pinned_digest(template_image: str, pod_image: str) -> Digest | None:
    """The digest ``pod_image`` pins ``template_image`` to, or None when it does not.

    The pinning webhook (docs/adr/028) admits a pod of ``repo:tag`` as ``repo:tag@sha256:…``:
    the template's image string, unchanged, then ``@`` and a digest. Only that exact form
    counts: a pod of an older template differs before the ``@`` and stays the workload
    controller's business; a template that pins by itself is never rolled at all.
    """
    head, at, digest = pod_image.rpartition("@")
    if not at or head != template_image or "@" in template_image or not is_digest(digest):
        return None
    return Digest(digest)


def is_tag(text: str) -> bool:
    """Is ``text`` a tag as the reference grammar allows one (``[A-Za-z0-9_][A-Za-z0-9_.-]*``,
    at most 128 characters)?"""
    return _TAG.fullmatch(text) is not None


def is_repository(text: str) -> bool:
    """Is ``text`` a repository path (``/``-separated lowercase components, no host)?"""
    return bool(text) and all(_COMPONENT.fullmatch(part) for part in text.split("/"))


def host_matches(host: str, other: str) -> bool:
    """Are ``host`` and ``other`` the same registry (``registry_host`` of each)?"""
    return registry_host(host) == registry_host(other)
