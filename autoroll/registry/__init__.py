"""The registry adapter (``RegistryPort``): digests for tags, an index's children, and the
image configs a manifest stands for, from the one configured registry.

    client.py     RegistryClient: a tag's digest (HEAD), a pass's budget, the calls below
    origin.py     the one request path: which credentials ask, same-origin redirects
    fetcher.py    GET by digest: an index's children, an image's configs, cached by digest
    errors.py     the error tree; every failure becomes ``Unknown(reason)`` at the edge
    manifests.py  pure: media types, the digest header, index entries, config digests
    limits.py     Limits, the per-pass Deadline, and the seams the client reports through
    tls.py        the session's trusted roots (a private CA beside the defaults), refused certs

``from autoroll.registry import …`` gives the names callers use; the modules say why.
"""

from __future__ import annotations

from autoroll.registry.client import RegistryClient
from autoroll.registry.limits import Limits, NullObserver, RegistryObserver
from autoroll.registry.manifests import (
    DOCKER_LIST,
    DOCKER_MANIFEST,
    INDEX_TYPES,
    MANIFEST_ACCEPT,
    MAX_MANIFEST_BYTES,
    MAX_TOKEN_BYTES,
    OCI_INDEX,
    OCI_MANIFEST,
    retry_after_seconds,
)
from autoroll.registry.origin import MAX_REDIRECTS
from autoroll.registry.tls import proxies_in_use, registry_session

__all__ = [
    "DOCKER_LIST",
    "DOCKER_MANIFEST",
    "INDEX_TYPES",
    "MANIFEST_ACCEPT",
    "MAX_MANIFEST_BYTES",
    "MAX_REDIRECTS",
    "MAX_TOKEN_BYTES",
    "OCI_INDEX",
    "OCI_MANIFEST",
    "Limits",
    "NullObserver",
    "RegistryClient",
    "RegistryObserver",
    "proxies_in_use",
    "registry_session",
    "retry_after_seconds",
]
