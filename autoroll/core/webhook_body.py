"""What a signed webhook body names: which image tag to look at, if it says.

Read only after the signature checked out (``autoroll.edge.web``). The body is then known to come
from the Forgejo (or Gitea) instance that holds the secret, so it may be trusted for *what
to look at* — never for *what the digest is*: the pass asks the registry for that, as
always, and decides on a fresh read of the cluster.

Forgejo and Gitea send one ``package`` event per package version created or deleted. For a
container image (``package.type == "container"``) the registry repository is
``<package.owner.login>/<package.name>`` and the version is either the tag that moved or,
for each platform manifest of a multi-arch push, a digest (``sha256:…``), delivered just
before the tag's own event. So (the shapes are Gitea 1.27's own deliveries, kept in
``tests/unit/data/``):

- a tag version names a ``Pushed`` tag on the configured registry (``autoroll.core.pushed``
  turns it into the scope): the pass looks only at workloads using it;
- a digest version moves no tag: no pass (the tag's event follows and covers it);
- anything else — not JSON, nested or sized past the caps (``autoroll.core.boundedjson``),
  another event, another package type, names that do not parse as an image reference —
  names nothing: a full pass, as before targeted passes existed.

Pure: bytes in, a ``BodyReading`` out.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

from autoroll.core import boundedjson
from autoroll.core.images import is_repository, is_tag
from autoroll.core.model import is_digest
from autoroll.core.pushed import Pushed

#: Largest webhook body read, in bytes. Forgejo package events are a few KiB.
MAX_BODY_BYTES: Final = 1024 * 1024


class BodyKind(StrEnum):
    TAG = "tag"  # a container package version that is a tag: a targeted pass
    DIGEST_VERSION = "digest-version"  # a platform manifest of a multi-arch push: no pass
    NOTHING = "nothing"  # nothing readable: a full pass


@dataclass(frozen=True, slots=True)
class BodyReading:
    """What the body names; ``detail`` says why it names nothing (for the debug log)."""

    kind: BodyKind
    tag: Pushed | None = None  # no host: a package event is about the configured Forgejo
    detail: str = ""


def _nothing(detail: str) -> BodyReading:
    return BodyReading(BodyKind.NOTHING, detail=detail)


def read_body(body: bytes) -> BodyReading:
    """Read a signed delivery: a tag to target, a digest version, or nothing (module doc)."""
    try:
        document: Any = boundedjson.loads(body, max_bytes=MAX_BODY_BYTES)
    except boundedjson.BoundedJsonError as exc:
        # Too deep or too large to be a package event: names nothing, never a crash.
        return _nothing(f"the body is refused: {exc}")
    except ValueError:
        return _nothing("the body is not JSON")
    package = document.get("package") if isinstance(document, dict) else None
    if not isinstance(package, dict):
        return _nothing("not a package event")
    if package.get("type") != "container":
        return _nothing(f"package type {package.get('type')!r} is not container")
    version = package.get("version")
    if not isinstance(version, str):
        return _nothing("the package names no version")
    if is_digest(version):
        return BodyReading(BodyKind.DIGEST_VERSION)
    owner = package.get("owner")
    login = (owner.get("login") or owner.get("username")) if isinstance(owner, dict) else None
    name = package.get("name")
    if not isinstance(login, str) or not isinstance(name, str) or not login or not name:
        return _nothing("the package names no owner or name")
    repository = f"{login}/{name}".lower()
    if not is_repository(repository) or not is_tag(version):
        return _nothing(f"{repository}:{version} is not an image reference")
    return BodyReading(BodyKind.TAG, Pushed(None, repository, version))


__all__ = ["MAX_BODY_BYTES", "BodyKind", "BodyReading", "read_body"]
