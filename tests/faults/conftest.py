"""Fixtures for the fault matrix: a real registry behind a fault proxy, a fake Kubernetes API
that fails on request, and the controller (``rig``) wired between them."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.faults.rig import Rig, build_rig
from tests.support.fake_kube import FaultyKubeApi, KubeApiServer
from tests.support.fault_proxy import FaultProxy
from tests.support.moved_tag import moved_tag
from tests.support.registry import ImagePusher, RegistryServer
from tests.support.registry_fixtures import fresh_registry, pusher, registry, repository

__all__ = ["evict", "fresh_registry", "index_rig", "pusher", "registry", "repository", "rig"]


@pytest.fixture
def evict() -> bool:
    """ROLLOUT_METHOD=evict for the rig; parametrize ``evict`` with True to switch it on."""
    return False


@contextmanager
def running_rig(
    registry: RegistryServer,
    repository: str,
    tmp_path: Path,
    *,
    old: str,
    new: str,
    evict: bool = False,
) -> Iterator[Rig]:
    with FaultProxy(registry) as proxy:
        api = FaultyKubeApi(image=f"{proxy.host}/{repository}:latest", running=old, target=new)
        kube = KubeApiServer(api)
        kube.start()
        kubeconfig = kube.write_kubeconfig(tmp_path / "kubeconfig")
        rig = build_rig(
            api,
            kube,
            proxy,
            str(kubeconfig),
            old=old,
            new=new,
            user=registry.user,
            token=registry.password,
            evict=evict,
        )
        try:
            yield rig
        finally:
            rig.stop()
            kube.stop()


@pytest.fixture
def rig(
    registry: RegistryServer, pusher: ImagePusher, repository: str, tmp_path: Path, evict: bool
) -> Iterator[Rig]:
    """The tag has moved (pods run ``old``, the tag names ``new``); no pass has run yet.

    Inject faults, then ``rig.start()``: the first pass meets them.
    """
    old, new = moved_tag(pusher, repository)
    with running_rig(registry, repository, tmp_path, old=old, new=new, evict=evict) as started:
        yield started


@pytest.fixture
def index_rig(
    registry: RegistryServer, pusher: ImagePusher, repository: str, tmp_path: Path
) -> Iterator[Rig]:
    """Multi-arch, CRI-O style: pods run a *child* of the old index; the tag names a new index.

    Deciding needs the new index's children (a GET), since the pod digest differs from it.
    """
    old_child = pusher.push_index(repository, "latest").children[0]
    new_index = pusher.push_index(repository, "latest").digest
    with running_rig(registry, repository, tmp_path, old=old_child, new=new_index) as started:
        yield started
