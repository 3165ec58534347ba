"""Whole passes with pull credentials: each workload's images asked with its own pods'
credentials, a wrong or missing secret unknown by name and never a deletion."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Mapping
from dataclasses import replace

from autoroll.controller.credentials import PullCredentials
from autoroll.controller.reconciler import Reconciler
from autoroll.core.decide import Reason, Verdict
from autoroll.core.images import TagRef
from autoroll.core.keyring import PullSecret
from autoroll.core.lookups import ANONYMOUS, Answer, Lookup
from autoroll.core.model import Digest, Enrolled, Unknown
from autoroll.edge.plan import render
from tests.support.reconciler_fakes import (
    HOST,
    NEW,
    REF,
    FakeCluster,
    FakeRegistry,
    enrolled,
    pod,
    reconciler_with,
)
from tests.unit.test_pull_credentials import Secrets

RIGHT = "right-token"


def dockerconfig(password: str) -> dict[str, bytes]:
    pair = base64.b64encode(f"owner:{password}".encode()).decode()
    return {".dockerconfigjson": json.dumps({"auths": {HOST: {"auth": pair}}}).encode()}


class CheckingRegistry(FakeRegistry):
    """A registry that answers only lookups carrying the right password (``LookupPort``)."""

    def __init__(self, answers: Mapping[TagRef, Digest | Unknown]) -> None:
        super().__init__(answers)
        self.lookups: list[Lookup] = []

    def lookup(self, lookups: Iterable[Lookup]) -> dict[Lookup, Answer]:
        found: dict[Lookup, Answer] = {}
        for item in lookups:
            self.lookups.append(item)
            good = [c for c in item.credentials if c.password == RIGHT]
            if good:
                found[item] = Answer(self.answers[item.ref], good[0].source)
            else:
                tried = ", ".join(c.source for c in item.credentials) or "an anonymous request"
                found[item] = Answer(
                    Unknown("unauthorized", f"HTTP 401: the registry refused {tried}")
                )
        return found


def with_secrets(item: Enrolled, *names: str) -> Enrolled:
    return Enrolled(replace(item.workload, pull_secrets=names), item.pods)


def reconciler(cluster: FakeCluster, registry: FakeRegistry, secrets: Secrets) -> Reconciler:
    credentials = PullCredentials(secrets=secrets, hosts={HOST})
    return reconciler_with(cluster, registry=registry, credentials=credentials)[0]


def secrets() -> Secrets:
    found = Secrets()
    found.add("good", dockerconfig(RIGHT))
    found.add("wrong", dockerconfig("wrong-token"))
    return found


def test_a_wrong_secret_is_unknown_by_name_while_the_right_one_rolls_the_same_tag() -> None:
    good = with_secrets(enrolled("web", [pod("web-1")]), "good")
    bad = with_secrets(enrolled("api", [pod("api-1")]), "wrong")
    cluster = FakeCluster([good, bad])
    registry = CheckingRegistry({REF: NEW})
    report = reconciler(cluster, registry, secrets()).tick()
    assert [name for _, name, _ in cluster.deleted] == ["web-1"]
    verdicts = {d.name: d.containers[0] for d in report.decisions}
    assert verdicts["api"].reason is Reason.REGISTRY_UNKNOWN
    assert "imagePullSecret shop/wrong" in verdicts["api"].detail
    assert verdicts["web"].verdict is Verdict.STALE
    assert report.resolved[REF] == NEW  # the tag's digest, whoever read it
    # Two credential sets, two lookups of one tag; each answered for its own workload.
    assert len(registry.lookups) == 2
    table = render(report)
    assert f"{HOST} · imagePullSecret shop/good" in table
    assert RIGHT not in table and "wrong-token" not in table


def test_a_missing_secret_makes_the_image_unknown_naming_it_and_deletes_nothing() -> None:
    item = with_secrets(enrolled("web", [pod("web-1"), pod("web-2")]), "gone")
    cluster = FakeCluster([item])
    report = reconciler(cluster, CheckingRegistry({REF: NEW}), secrets()).tick()
    assert cluster.deleted == []
    [verdict] = report.decisions[0].containers
    assert verdict.reason is Reason.REGISTRY_UNKNOWN
    assert "imagePullSecret shop/gone not found" in verdict.detail
    assert "anonymous" in verdict.detail


def test_without_pull_secrets_a_registry_that_takes_lookups_says_who_answered() -> None:
    class Open(CheckingRegistry):
        def lookup(self, lookups: Iterable[Lookup]) -> dict[Lookup, Answer]:
            return {item: Answer(self.answers[item.ref], ANONYMOUS) for item in lookups}

    cluster = FakeCluster([enrolled("web", [pod("web-1")])])
    report = reconciler_with(cluster, registry=Open({REF: NEW}))[0].tick()
    assert report.sources == {"shop/deployment/web": {REF: f"{HOST} · anonymous"}}
    assert [name for _, name, _ in cluster.deleted] == ["web-1"]


def test_pull_secret_is_the_registry_type_only() -> None:
    """A fake check on the fixture: an Opaque Secret adds nothing, so asked anonymously."""
    found = Secrets()
    found.secrets[("shop", "opaque")] = PullSecret("shop", "opaque", "Opaque", dockerconfig(RIGHT))
    item = with_secrets(enrolled("web", [pod("web-1")]), "opaque")
    cluster = FakeCluster([item])
    reconciler(cluster, CheckingRegistry({REF: NEW}), found).tick()
    assert cluster.deleted == []
