"""The safety properties of ARCHITECTURE.md, checked over generated inputs (hypothesis).

The table tests in ``test_decide.py`` show each rule on a chosen case; these show that no
combination of pods, registry answers, children and sightings produces a deletion that
breaks properties 1, 2 or 4.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import event, given, settings
from hypothesis import strategies as st

from autoroll.decide import Sighting, decide, is_settled
from autoroll.images import TagRef, parse_image_id
from autoroll.model import (
    ContainerStatusView,
    ContainerView,
    DeploymentView,
    Digest,
    PodView,
    Unknown,
)

HOST = "forgejo.example"
IMAGES = {"app": f"{HOST}/team/app:latest", "side": f"{HOST}/team/side:v1"}
REFS = {"app": TagRef(HOST, "team/app", "latest"), "side": TagRef(HOST, "team/side", "v1")}
DIGESTS = [Digest("sha256:" + c * 64) for c in "0123"]
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def mostly(likely: object, *rare: object) -> st.SearchStrategy[object]:
    """``likely`` four times out of five: keeps generated scenarios near a deletion."""
    return st.sampled_from([likely] * 4 * max(1, len(rare)) + list(rare))


digests = st.sampled_from(DIGESTS)
image_ids = st.one_of(
    digests.map(lambda d: f"{HOST}/team/app@{d}"),
    digests.map(lambda d: f"{HOST}/team/app@{d}"),
    digests.map(lambda d: f"docker-pullable://{HOST}/team/app@{d}"),
    digests.map(str),  # a bare config ID: unknown
    st.just(""),
)
times = st.integers(min_value=0, max_value=10).map(lambda m: T0 + timedelta(minutes=m))


@st.composite
def pods(draw: st.DrawFn, index: int, calm: bool) -> PodView:
    """A pod; ``calm`` pods are Running and Ready, so that Deployments are often settled."""
    containers = []
    statuses = []
    for name, image in IMAGES.items():
        spec_image = str(draw(mostly(image, f"{HOST}/team/{name}:old")))
        containers.append(ContainerView(name, spec_image))
        if draw(mostly(True, False)):
            statuses.append(ContainerStatusView(name, spec_image, draw(image_ids)))
    return PodView(
        namespace="ns",
        name=f"pod-{index}",
        uid=f"uid-{index}",
        created_at=draw(times),
        phase="Running" if calm else str(draw(mostly("Running", "Pending", "Succeeded", "Failed"))),
        deleting=False if calm else bool(draw(mostly(False, True))),
        ready=True if calm else bool(draw(mostly(True, False))),
        containers=tuple(containers),
        statuses=tuple(statuses),
    )


@st.composite
def scenarios(draw: st.DrawFn) -> dict[str, object]:
    count = draw(st.integers(min_value=0, max_value=5))
    calm = draw(st.booleans())
    pod_list = [draw(pods(i, calm)) for i in range(count)]
    deployment = DeploymentView(
        namespace="ns",
        name="app",
        replicas=draw(st.integers(min_value=0, max_value=max(count, 1))),
        containers=tuple(
            ContainerView(n, i, str(draw(mostly("Always", "IfNotPresent", ""))))
            for n, i in IMAGES.items()
        ),
    )
    resolved: dict[TagRef, Digest | Unknown] = {}
    sightings: dict[TagRef, Sighting] = {}
    for ref in REFS.values():
        answer = draw(st.one_of(digests, digests, digests, st.just(Unknown("http-5xx"))))
        if draw(mostly(True, False)):
            resolved[ref] = answer
        seen_digest = answer if isinstance(answer, Digest) else draw(digests)
        if draw(mostly(True, False)):
            sightings[ref] = Sighting(
                seen_digest if draw(mostly(True, False)) else draw(digests), draw(times)
            )
    children: dict[Digest, frozenset[Digest] | Unknown] = {}
    for digest in DIGESTS:
        if draw(mostly(True, False)):
            children[digest] = draw(
                st.one_of(
                    st.just(frozenset[Digest]()),
                    st.frozensets(digests, max_size=2),
                    st.just(Unknown("timeout")),
                )
            )
    return {
        "deployment": deployment,
        "pods": pod_list,
        "resolved": resolved,
        "children": children,
        "sightings": sightings,
    }


@settings(max_examples=400, deadline=None)
@given(scenarios())
def test_no_deletion_breaks_a_safety_property(scenario: dict[str, object]) -> None:
    deployment = scenario["deployment"]
    pod_list = scenario["pods"]
    resolved = scenario["resolved"]
    children = scenario["children"]
    sightings = scenario["sightings"]
    assert isinstance(deployment, DeploymentView) and isinstance(pod_list, list)
    assert isinstance(resolved, dict) and isinstance(children, dict) and isinstance(sightings, dict)

    decision = decide(
        deployment=deployment,
        pods=pod_list,
        forgejo_host=HOST,
        resolved=resolved,
        sightings=sightings,
        children=children,
    )

    # Property 2: at most one deletion per Deployment, and only when settled.
    assert len(decision.actions) <= 1
    event("deletes" if decision.actions else "no deletion")
    if not decision.actions:
        return
    assert is_settled(pods=pod_list, replicas=deployment.replicas).is_settled
    (action,) = decision.actions
    victim = next(p for p in pod_list if p.name == action.name)
    assert not victim.is_terminal and not victim.deleting
    container = next(c for c in deployment.containers if c.name == action.container)
    assert container.image_pull_policy == "Always"
    # Only a pod of the current template, compared on the registry's known digest.
    assert victim.spec_image(container.name) == container.image
    ref = REFS[container.name]
    assert resolved[ref] == action.to_digest
    status = victim.status_of(container.name)
    assert status is not None
    # Property 1: both digests known, different, and not an index child.
    assert parse_image_id(status.image_id) == action.from_digest
    assert action.from_digest != action.to_digest
    known_children = children.get(action.to_digest)
    assert isinstance(known_children, frozenset)
    assert action.from_digest not in known_children
    # Property 4: never a pod created after its target digest was first seen.
    sighting = sightings[ref]
    assert sighting.digest == action.to_digest
    assert victim.created_at <= sighting.first_seen_at
