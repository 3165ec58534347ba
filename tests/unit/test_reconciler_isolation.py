"""One workload whose deciding raises is that workload's unknown, never the pass's end."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import replace

import pytest

from autoroll.core.decide import (
    ContainerVerdict,
    ContentRequest,
    Decision,
    Reason,
    Settledness,
    SettledReason,
    Verdict,
    undecided,
)
from autoroll.core.images import TagRef
from autoroll.core.model import (
    ContainerRole,
    ContainerView,
    Digest,
    ImageContent,
    Unknown,
    WorkloadKind,
)
from tests.support import reconciler_fakes as fakes
from tests.support.kind_views import statefulset
from tests.support.views import deployment_view

OTHER_IMAGE = f"{fakes.HOST}/tenant/bad:latest"
OTHER_REF = TagRef(fakes.HOST, "tenant/bad", "latest")
BAD_TARGET = Digest("sha256:" + "b" * 64)


class RaisingRegistry(fakes.FakeRegistry):
    """Raises what the real client once let escape (a RecursionError from ``json.loads``)
    when asked for ``bad``'s content, and answers everything else as the fake does."""

    def __init__(
        self, answers: Mapping[TagRef, Digest | Unknown], *, bad: Digest, error: Exception
    ) -> None:
        super().__init__(answers)
        self.bad = bad
        self.error = error

    def fetch_content(
        self, wanted: Iterable[ContentRequest]
    ) -> Mapping[Digest, ImageContent | Unknown]:
        asked = list(wanted)
        if any(w.digest == self.bad for w in asked):
            raise self.error
        return super().fetch_content(asked)


@pytest.mark.parametrize(
    "error",
    [
        RecursionError("maximum recursion depth exceeded while decoding a JSON array"),
        KeyError("config"),
        ValueError("a bug nobody foresaw"),
    ],
)
def test_the_pass_goes_on_for_every_other_workload(
    error: Exception, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    good = fakes.enrolled("web", [fakes.pod("web-1")])
    bad = fakes.enrolled(
        "tenant-app",
        [fakes.pod("tenant-app-1", image=OTHER_IMAGE, namespace="tenant")],
        namespace="tenant",
        image=OTHER_IMAGE,
    )
    cluster = fakes.FakeCluster([bad, good])  # the bad one first: nothing after it may be lost
    registry = RaisingRegistry(
        {fakes.REF: fakes.NEW, OTHER_REF: BAD_TARGET}, bad=BAD_TARGET, error=error
    )
    reconciler, metrics = fakes.make(cluster, registry)

    report = reconciler.tick()

    assert cluster.deleted == [("shop", "web-1", "uid-web-1")]
    failed = next(d for d in report.decisions if d.name == "tenant-app")
    assert failed.actions == ()
    assert failed.settledness.reason is SettledReason.NOT_JUDGED
    [verdict] = failed.containers
    assert (verdict.verdict, verdict.reason) == (Verdict.SKIPPED, Reason.DECISION_FAILED)
    assert type(error).__name__ in verdict.detail
    assert fakes.sample(metrics, "autoroll_containers_skipped_total", reason="decision-failed") == 1
    raised = [r for r in caplog.records if getattr(r, "event", None) == "decision-failed"]
    assert len(raised) == 1  # logged once, with the workload's name and the traceback
    assert raised[0].__dict__["workload"] == "tenant/deployment/tenant-app"
    assert raised[0].exc_info is not None


def test_undecided_skips_every_container_with_the_reason_and_acts_on_nothing() -> None:
    workload = deployment_view(
        namespace="ns",
        name="two",
        replicas=1,
        containers=(ContainerView("a", "x:1", "Always"), ContainerView("b", "y:1", "Always")),
    )
    decision = undecided(workload, "deciding raised KeyError: 'config'")
    assert [(c.container, c.reason) for c in decision.containers] == [
        ("a", Reason.DECISION_FAILED),
        ("b", Reason.DECISION_FAILED),
    ]
    assert decision.actions == () and not decision.needs_anything
    assert not decision.settledness.is_settled
    assert Reason.DECISION_FAILED.is_warning


def test_the_bad_workload_is_decided_again_next_pass() -> None:
    # Unknown for one pass, not forgotten: once the input is fixed it rolls as usual.
    bad = fakes.enrolled("web", [fakes.pod("web-1", fakes.OLD)])
    registry = RaisingRegistry({fakes.REF: fakes.NEW}, bad=fakes.NEW, error=RecursionError("deep"))
    cluster = fakes.FakeCluster([bad])
    reconciler, _ = fakes.make(cluster, registry)
    reconciler.tick()
    assert cluster.deleted == []
    registry.bad = Digest("sha256:" + "f" * 64)
    reconciler.tick()
    assert cluster.deleted == [("shop", "web-1", "uid-web-1")]


def test_undecided_keeps_each_containers_name_image_and_role_and_the_workloads_kind() -> None:
    """The plan table and the log line name the workload and every container as it is, so the
    operator can find the bad input; only the verdict is ``decision-failed``."""
    sidecar = ContainerView("proxy", "p:2", "Always", ContainerRole.SIDECAR)
    workload = replace(statefulset(1), containers=(ContainerView("app", "x:1"), sidecar))
    detail = "deciding raised RecursionError: deep"
    assert undecided(workload, detail) == Decision(
        namespace="ns",
        name="db",
        settledness=Settledness(SettledReason.NOT_JUDGED, detail),
        containers=(
            ContainerVerdict("app", "x:1", Verdict.SKIPPED, Reason.DECISION_FAILED, detail),
            ContainerVerdict(
                "proxy",
                "p:2",
                Verdict.SKIPPED,
                Reason.DECISION_FAILED,
                detail,
                role=ContainerRole.SIDECAR,
            ),
        ),
        kind=WorkloadKind.STATEFULSET,
    )
