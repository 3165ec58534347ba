"""autoroll's own webhook format, for a CI job or a registry autoroll has no reader for (pure).

    POST /webhook/generic
    Content-Type: application/json
    X-Signature: sha256=<lowercase hex HMAC-SHA256 of the raw body, keyed with the secret>

    {"image": "registry.example.org/team/app:latest"}
    {"images": ["registry.example.org/team/app:latest", "ghcr.io/team/tool:v2"]}

Each image is a reference with a tag, as a pod template writes it (a reference without a host
is on Docker Hub; one without a tag is ``:latest``, as every runtime reads it). A reference
pinned by digest moves no tag and is left out. The signature header is the one Flux's
``generic-hmac`` receiver reads, so a sender already configured for Flux can sign for
autoroll too; only ``sha256`` is accepted. The same object is the ``data`` of the CloudEvent
type ``se.aethnet.autoroll.image.pushed`` (``autoroll.core.receivers.cloudevents``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from autoroll.core.images import ImageRefError, parse_image
from autoroll.core.pushed import Pushed
from autoroll.core.receivers import Reading, mapping, pushed, reads_json, unreadable

#: Images read from one delivery at most (a scope of more is a full pass anyway).
MAX_IMAGES: Final = 64


def image_pushes(data: Mapping[str, Any]) -> Reading:
    """``{"image": ...}`` or ``{"images": [...]}``: each tagged reference as a push."""
    if "image" in data and "images" in data:
        return unreadable('give "image" or "images", not both')
    images = [data["image"]] if "image" in data else data.get("images")
    if not isinstance(images, list) or not images:
        return unreadable('expected {"image": "<reference>"} or {"images": ["<reference>", ...]}')
    if len(images) > MAX_IMAGES:
        return unreadable(f"{len(images)} images (at most {MAX_IMAGES} read)")
    found: list[Pushed] = []
    for image in images:
        if not isinstance(image, str):
            return unreadable(f"an image is not a string: {image!r:.80}")
        try:
            ref = parse_image(image)
        except ImageRefError as exc:
            return unreadable(str(exc))
        tag_ref = ref.tag_ref
        found.append(Pushed(ref.host, ref.repository, tag_ref.tag if tag_ref else None))
    return pushed(found, otherwise="every image is pinned by digest: no tag moved")


@reads_json
def read_generic(document: Any) -> Reading:
    """A generic delivery (module docstring)."""
    if not isinstance(document, dict):
        return unreadable("the body is not a JSON object")
    return image_pushes(mapping(document))


__all__ = ["MAX_IMAGES", "image_pushes", "read_generic"]
