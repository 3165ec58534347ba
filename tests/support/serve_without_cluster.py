"""The real ``autoroll serve`` whose Kubernetes API is a closed port: every pass fails fast
and is counted, so what a test sees is the HTTP edge (webhooks, receivers, probes) and how
many passes it starts. Used by the webhook-abuse fault rows and the Gitea webhook tier."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.support.serve import Serve, dead_kubeconfig, start_serve
from tests.support.wait import wait_until


@contextmanager
def serving_without_cluster(
    tmp: Path,
    *,
    forgejo_host: str,
    token: str,
    secret: str,
    extra_env: dict[str, str] | None = None,
    first_pass_within: float = 30,
) -> Iterator[Serve]:
    """``autoroll serve`` started in ``tmp`` with a kubeconfig naming a closed port, reading
    ``forgejo_host``'s registry over plain HTTP as ``autoroll`` with ``token``, its Forgejo
    webhook signed with ``secret`` (``extra_env`` adds or overrides variables); yielded once
    its first pass is counted; after, terminated (an error if it takes longer than a pod's
    grace period) and killed in any case."""
    serve = start_serve(
        tmp,
        {
            "KUBECONFIG": str(dead_kubeconfig(tmp / "kubeconfig")),
            "FORGEJO_HOST": forgejo_host,
            "REGISTRY_SCHEME": "http",
            "FORGEJO_USER": "autoroll",
            "FORGEJO_TOKEN": token,
            "WEBHOOK_SECRET": secret,
            **(extra_env or {}),
        },
    )
    try:
        wait_until(lambda: serve.ticks() >= 1, first_pass_within, "the first pass")
        yield serve
    finally:
        try:
            serve.terminate()
        finally:
            serve.kill()
