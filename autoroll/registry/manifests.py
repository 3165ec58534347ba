"""Manifests and indexes as the registry answers them: media types, digests, entries (pure).

An index's runnable children and a manifest's image config are read from the JSON body;
``Retry-After`` is read as delta-seconds or an HTTP date. Nothing here does I/O; a body
that does not say what it must is a ``BadResponseError``.
"""

from __future__ import annotations

import email.utils
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

import requests

from autoroll.core import boundedjson
from autoroll.core.model import Digest, is_digest
from autoroll.registry.errors import BadResponseError, RequestTimeoutError, TransportError
from autoroll.registry.limits import Deadline

OCI_INDEX: Final = "application/vnd.oci.image.index.v1+json"
OCI_MANIFEST: Final = "application/vnd.oci.image.manifest.v1+json"
DOCKER_LIST: Final = "application/vnd.docker.distribution.manifest.list.v2+json"
DOCKER_MANIFEST: Final = "application/vnd.docker.distribution.manifest.v2+json"
#: Index types first: a multi-arch tag must answer with the index digest runtimes record.
MANIFEST_ACCEPT: Final = ", ".join((OCI_INDEX, DOCKER_LIST, OCI_MANIFEST, DOCKER_MANIFEST))
INDEX_TYPES: Final = frozenset({OCI_INDEX, DOCKER_LIST})
#: buildx stores provenance and SBOMs as index entries with this annotation (and platform
#: ``unknown/unknown``); no runtime ever runs one, so they stand for no content.
ATTESTATION_ANNOTATION: Final = "vnd.docker.reference.type"

#: The OCI distribution spec lets registries refuse manifests over 4 MiB; we do the same.
MAX_MANIFEST_BYTES: Final = 4 * 1024 * 1024
#: A token answer is a few hundred bytes (a JWT and two numbers); 64 KiB is generous.
MAX_TOKEN_BYTES: Final = 64 * 1024


def digest_header(response: requests.Response) -> Digest:
    raw = response.headers.get("Docker-Content-Digest")
    if raw is None or not raw.strip():
        raise BadResponseError("missing-digest", f"{response.url}: no Docker-Content-Digest header")
    value = raw.strip()
    if not is_digest(value):
        raise BadResponseError(
            "malformed-digest", f"{response.url}: Docker-Content-Digest {value[:80]!r}"
        )
    return Digest(value)


def retry_after_seconds(value: str | None, *, now: float) -> float | None:
    """Seconds to wait from a ``Retry-After`` value (delta-seconds or HTTP date), or None.

    ``now`` is the wall-clock time (epoch seconds) an HTTP date is measured against. A
    date in the past means "no wait"; anything unparsable is None (the caller decides).
    """
    if value is None or not value.strip():
        return None
    text = value.strip()
    if text.isdigit():
        return float(text)
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # RFC 9110 dates are GMT; a naive one is read as such
        return None
    return max(0.0, when.timestamp() - now)


@dataclass(frozen=True, slots=True)
class Entry:
    """One ``manifests[]`` entry of an index."""

    digest: Digest
    platform: str | None  # os/arch[/variant], when the index names it
    is_attestation: bool  # buildx provenance or SBOM: never run


def is_index(document: Mapping[str, object]) -> bool:
    return document.get("mediaType") in INDEX_TYPES or document.get("manifests") is not None


def index_entries(document: Mapping[str, object], url: str) -> list[Entry]:
    """The entries of an index, each with a valid digest (else ``bad-manifest``)."""
    manifests = document.get("manifests")
    if not isinstance(manifests, list):
        raise BadResponseError("bad-manifest", f"{url}: index without a manifests list")
    entries: list[Entry] = []
    for entry in manifests:
        digest = entry.get("digest") if isinstance(entry, dict) else None
        if not isinstance(digest, str) or not is_digest(digest):
            raise BadResponseError("bad-manifest", f"{url}: index entry with a malformed digest")
        assert isinstance(entry, dict)
        platform = entry.get("platform")
        os_name = platform.get("os") if isinstance(platform, dict) else None
        arch = platform.get("architecture") if isinstance(platform, dict) else None
        variant = platform.get("variant") if isinstance(platform, dict) else None
        annotations = entry.get("annotations")
        attested = isinstance(annotations, dict) and ATTESTATION_ANNOTATION in annotations
        name: str | None = None
        if isinstance(os_name, str) and isinstance(arch, str) and os_name and arch:
            name = f"{os_name}/{arch}" + (
                f"/{variant}" if isinstance(variant, str) and variant else ""
            )
        entries.append(Entry(Digest(digest), name, attested or "unknown" in {os_name, arch}))
    return entries


def config_digest(document: Mapping[str, object], url: str) -> Digest:
    """The config digest of an image manifest (schema 2 or OCI); else ``bad-manifest``."""
    config = document.get("config")
    digest = config.get("digest") if isinstance(config, dict) else None
    if not isinstance(digest, str) or not is_digest(digest):
        raise BadResponseError("bad-manifest", f"{url}: a manifest without a config digest")
    return Digest(digest)


def manifest_document(body: bytes, url: str) -> dict[str, object]:
    """A manifest's or index's JSON object, parsed within the size and depth caps.

    Too deep or not JSON is ``bad-manifest`` (its content is unknown), never a crash: the
    standard parser recurses per level and would raise ``RecursionError`` (ADR 020).
    """
    try:
        document = boundedjson.loads(body, max_bytes=MAX_MANIFEST_BYTES)
    except boundedjson.TooDeepError as exc:
        raise BadResponseError("bad-manifest", f"{url}: {exc}") from exc
    except ValueError as exc:
        raise BadResponseError("bad-manifest", f"{url}: not JSON") from exc
    if not isinstance(document, dict):
        raise BadResponseError("bad-manifest", f"{url}: not a JSON object")
    return document


def read_capped(
    response: requests.Response, deadline: Deadline, *, cap: int = MAX_MANIFEST_BYTES
) -> bytes:
    """Read a body, stopping at ``cap`` bytes or when the budget runs out mid-body."""
    chunks: list[bytes] = []
    size = 0
    try:
        for chunk in response.iter_content(chunk_size=65536):
            size += len(chunk)
            if size > cap:
                raise BadResponseError("too-large", f"{response.url}: body over {cap} bytes")
            chunks.append(chunk)
            deadline.remaining()
    except requests.Timeout as exc:
        raise RequestTimeoutError(f"reading {response.url}: {type(exc).__name__}") from exc
    except requests.RequestException as exc:
        raise TransportError(f"reading {response.url}: {type(exc).__name__}") from exc
    finally:
        response.close()
    return b"".join(chunks)
