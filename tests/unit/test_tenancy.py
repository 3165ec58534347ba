"""Tenancy: the namespaces rolled, how they are reached, and each one's share of a pass's
registry lookups (``autoroll.core.tenancy``, ``autoroll.config.tenancy``, the adapter's lists)."""

from __future__ import annotations

import logging

import pytest

from autoroll.config import Config
from autoroll.config.errors import ConfigError
from autoroll.core.images import TagRef
from autoroll.core.model import WorkloadKind
from autoroll.core.tenancy import NAMESPACE_SHARE, fair_order
from tests.support.answering_registry import AnsweringRegistry
from tests.support.scripted_cluster import ScriptedWorld, container_doc, deployment_doc
from tests.support.shape_passes import (
    HASH,
    HOST,
    IMAGE,
    NEW,
    REF,
    app_pod,
    make_reconciler,
    run_pass,
)

BASE = {
    "FORGEJO_HOST": "git.example.org",
    "FORGEJO_USER": "robot",
    "FORGEJO_TOKEN": "token",
    "WEBHOOK_SECRET": "0123456789abcdef0123",
}


def ref(name: str) -> TagRef:
    return TagRef(HOST, f"team/{name}", "latest")


# --- fair_order ------------------------------------------------------------------------------


def test_tags_are_asked_in_turns_across_namespaces() -> None:
    order, left = fair_order(
        {"a": [ref("a1"), ref("a2"), ref("a3")], "b": [ref("b1")]}, per_namespace=0
    )
    assert order == [ref("a1"), ref("b1"), ref("a2"), ref("a3")]
    assert left == {}


def test_a_namespace_past_its_share_is_left_unasked_with_a_reason_the_others_not() -> None:
    order, left = fair_order(
        {"a": [ref(f"a{i}") for i in range(5)], "b": [ref("b1"), ref("b2")]}, per_namespace=2
    )
    assert order == [ref("a0"), ref("b1"), ref("a1"), ref("b2")]
    assert set(left) == {ref("a2"), ref("a3"), ref("a4")}
    unknown = left[ref("a3")]
    assert unknown.reason == NAMESPACE_SHARE
    assert "namespace a uses 5 tags" in unknown.detail
    assert "REGISTRY_LOOKUPS_PER_NAMESPACE" in unknown.detail


def test_a_tag_two_namespaces_use_is_asked_once_within_either_share() -> None:
    shared = ref("base")
    order, left = fair_order(
        {"a": [ref(f"a{i}") for i in range(3)] + [shared], "b": [shared]}, per_namespace=1
    )
    assert order == [ref("a0"), shared]  # a's turn is spent on a0; b's asks the shared tag
    assert shared not in left


# --- a whole pass: one tenant's thousands of tags --------------------------------------------


def test_a_tenant_with_more_tags_than_its_share_never_stalls_another_tenants_roll() -> None:
    world = ScriptedWorld()
    for i in range(30):  # tenant a: one Deployment per tag, far more tags than its share
        image = f"{HOST}/team/a{i}:latest"
        world.add(
            WorkloadKind.DEPLOYMENT,
            deployment_doc(
                f"a{i}", namespace="a", replicas=1, containers=[container_doc("app", image)]
            ),
        )
    world.add(
        WorkloadKind.DEPLOYMENT,
        deployment_doc("web", namespace="b", replicas=1, containers=[container_doc("app", IMAGE)]),
    )
    pod = app_pod(f"web-{HASH}-a")
    pod["metadata"]["namespace"] = "b"
    world.pods = [pod]
    asked: list[list[TagRef]] = []

    class Counting(AnsweringRegistry):
        def resolve(self, refs):  # type: ignore[no-untyped-def]
            refs = list(refs)
            asked.append(refs)
            return super().resolve(refs)

    registry = Counting({REF: NEW, **{ref(f"a{i}"): NEW for i in range(30)}})
    reconciler = make_reconciler(world, registry=registry, lookups_per_namespace=5)
    assert run_pass(world, reconciler=reconciler) == [f"web-{HASH}-a"]
    assert len(asked[0]) == 6 and REF in asked[0][:2]  # b's tag in the first turn


# --- the settings ---------------------------------------------------------------------------


def test_watch_and_allowed_namespaces_are_read_and_exclusive() -> None:
    config = Config.from_env({**BASE, "WATCH_NAMESPACES": "team-b, team-a"})
    assert config.tenancy.namespaces == ("team-a", "team-b") and config.tenancy.namespaced
    config = Config.from_env({**BASE, "ALLOWED_NAMESPACES": "team-a"})
    assert config.tenancy.namespaces == ("team-a",) and not config.tenancy.namespaced
    with pytest.raises(ConfigError, match="ALLOWED_NAMESPACES: cannot be set together"):
        Config.from_env({**BASE, "WATCH_NAMESPACES": "a", "ALLOWED_NAMESPACES": "b"})
    with pytest.raises(ConfigError, match="WATCH_NAMESPACES: 'Team_A' is invalid"):
        Config.from_env({**BASE, "WATCH_NAMESPACES": "Team_A"})
    assert Config.from_env(BASE).redacted()["ALLOWED_NAMESPACES"] == "(all)"


# --- the adapter: the namespaces rolled -------------------------------------------------------


def two_tenants() -> ScriptedWorld:
    world = ScriptedWorld()
    for namespace in ("team-a", "team-b"):
        world.add(
            WorkloadKind.DEPLOYMENT,
            deployment_doc(
                "web", namespace=namespace, replicas=1, containers=[container_doc("app", IMAGE)]
            ),
        )
        pod = app_pod(f"web-{HASH}-{namespace}")
        pod["metadata"]["namespace"] = namespace
        world.pods.append(pod)
    return world


def test_outside_the_allowed_namespaces_nothing_is_rolled_and_it_is_said_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    world = two_tenants()
    cluster = world.cluster(kinds=(WorkloadKind.DEPLOYMENT,), namespaces=("team-a",))
    first = cluster.snapshot()
    cluster.snapshot()
    assert [e.workload.namespace for e in first] == ["team-a"]
    said = [r for r in caplog.records if "not among ALLOWED_NAMESPACES" in r.getMessage()]
    assert len(said) == 1 and "team-b/deployment/web" in said[0].getMessage()
    # Cluster-wide lists, and team-b's pods were never listed.
    paths = [path for method, path, _ in world.requests if method == "GET"]
    assert paths == ["/apis/apps/v1/deployments", "/api/v1/namespaces/team-a/pods"] * 2


def test_namespaced_mode_lists_only_inside_its_namespaces() -> None:
    world = two_tenants()
    cluster = world.cluster(
        kinds=(WorkloadKind.DEPLOYMENT,), namespaces=("team-a",), namespaced=True
    )
    [found] = cluster.snapshot()
    assert found.workload.namespace == "team-a"
    paths = {path for _, path, _ in world.requests}
    assert paths == {
        "/apis/apps/v1/namespaces/team-a/deployments",
        "/api/v1/namespaces/team-a/pods",
    }
    fresh = cluster.read_now(found.workload)
    assert fresh is not None and [p.name for p in fresh.pods] == [f"web-{HASH}-team-a"]
    assert all("team-b" not in path for _, path, _ in world.requests)
