"""A tag that has moved, the situation most integration and fault tests start from: the
pods run the digest ``latest`` named first, the tag now names another."""

from __future__ import annotations

from tests.support.fake_kube import FaultyKubeApi
from tests.support.registry import ImagePusher


def moved_tag(pusher: ImagePusher, repository: str) -> tuple[str, str]:
    """Push ``repository:latest`` twice; returns (the first digest, which the pods run,
    the second, which the tag names now)."""
    old = pusher.push_image(repository, "latest").digest
    new = pusher.push_image(repository, "latest").digest
    return old, new


def api_on_moved_tag(
    pusher: ImagePusher, repository: str, *, host: str
) -> tuple[FaultyKubeApi, str, str]:
    """``moved_tag``, and a fake API whose ``shop/web`` pods run the old digest of
    ``host/repository:latest`` (``host``: the registry, or a proxy in front of it); returns
    (the API, old, new)."""
    old, new = moved_tag(pusher, repository)
    return FaultyKubeApi(image=f"{host}/{repository}:latest", running=old, target=new), old, new
