"""The safety properties of ARCHITECTURE.md, checked over generated inputs (hypothesis).

The table tests in ``test_decide.py`` show each rule on a chosen case; these show that no
combination of pods, registry answers, children, image contents and sightings produces a
deletion that breaks properties 1, 2, 4 or 6. Over many passes: the loop guard in
``test_decide_loop_guard_properties.py``, property 6 in ``test_decide_content_properties.py``;
the shared strategies in ``tests.support.decide_strategies``.
"""

from __future__ import annotations

from datetime import timedelta

from hypothesis import event, given, settings
from hypothesis import strategies as st

from autoroll.core import model
from autoroll.core.decide import Sighting, decide, is_settled
from autoroll.core.images import RunningImage, TagRef, parse_running_image
from tests.support.decide_strategies import (
    CONFIGS,
    DIGESTS,
    HOST,
    IMAGES,
    PLATFORMS,
    REFS,
    digests,
    mostly,
    stamps,
)
from tests.support.views import deployment_view

image_ids = st.one_of(
    digests.map(lambda d: f"{HOST}/team/app@{d}"),
    digests.map(lambda d: f"{HOST}/team/app@{d}"),
    digests.map(lambda d: f"docker-pullable://{HOST}/team/app@{d}"),
    digests.map(lambda d: f"{HOST}/aaa/mirror@{d}"),  # another repository on our host
    digests.map(lambda d: f"docker.io/team/app@{d}"),  # another registry: never resolved
    st.sampled_from(CONFIGS).map(str),  # a bare config ID: what the container runs
    digests.map(lambda d: f"docker://{d}"),  # Docker's image ID: unknown
    st.just(""),
)


@st.composite
def image_contents(draw: st.DrawFn) -> model.ImageContent:
    """Some configs, each maybe named for a platform (as an index names its children)."""
    configs = draw(st.frozensets(st.sampled_from(CONFIGS), min_size=1, max_size=3))
    platforms = tuple(
        (platform, config)
        for platform, config in zip(PLATFORMS, sorted(configs), strict=False)
        if draw(st.booleans())
    )
    return model.ImageContent(configs, platforms)


fractions = st.sampled_from([0, 1, 500, 999]).map(lambda ms: timedelta(milliseconds=ms))
SECOND = timedelta(seconds=1)


@st.composite
def pods(draw: st.DrawFn, index: int, calm: bool) -> model.PodView:
    """A pod; ``calm`` pods are Running and Ready, so that Deployments are often settled."""
    containers = []
    statuses = []
    for name, image in IMAGES.items():
        spec_image = str(draw(mostly(image, f"{HOST}/team/{name}:old")))
        containers.append(model.ContainerView(name, spec_image))
        if draw(mostly(True, False)):
            statuses.append(model.ContainerStatusView(name, spec_image, draw(image_ids)))
    return model.PodView(
        namespace="ns",
        name=f"pod-{index}",
        uid=f"uid-{index}",
        created_at=draw(stamps),
        phase="Running" if calm else str(draw(mostly("Running", "Pending", "Succeeded", "Failed"))),
        deleting=False if calm else bool(draw(mostly(False, True))),
        ready=True if calm else bool(draw(mostly(True, False))),
        containers=tuple(containers),
        statuses=tuple(statuses),
        platform=draw(st.sampled_from([None, None, *PLATFORMS])),
    )


@st.composite
def scenarios(draw: st.DrawFn) -> dict[str, object]:
    count = draw(st.integers(min_value=0, max_value=5))
    calm = draw(st.booleans())
    pod_list = [draw(pods(i, calm)) for i in range(count)]
    deployment = deployment_view(
        namespace="ns",
        name="app",
        replicas=draw(st.integers(min_value=0, max_value=max(count, 1))),
        containers=tuple(
            model.ContainerView(n, i, str(draw(mostly("Always", "IfNotPresent", ""))))
            for n, i in IMAGES.items()
        ),
    )
    resolved: dict[TagRef, model.Digest | model.Unknown] = {}
    sightings: dict[TagRef, Sighting] = {}
    for ref in REFS.values():
        answer = draw(st.one_of(digests, digests, digests, st.just(model.Unknown("http-5xx"))))
        if draw(mostly(True, False)):
            resolved[ref] = answer
        seen_digest = answer if isinstance(answer, model.Digest) else draw(digests)
        if draw(mostly(True, False)):
            seen_at = draw(stamps) + draw(fractions)
            # Pods the sighting's pass listed were created before it, so none is stamped
            # later than it; any of them may be missing (another Deployment, not enrolled yet).
            listed = frozenset(
                p.uid for p in pod_list if p.created_at <= seen_at and draw(st.booleans())
            )
            sightings[ref] = Sighting(
                seen_digest if draw(mostly(True, False)) else draw(digests), seen_at, listed
            )
    children: dict[model.Digest, frozenset[model.Digest] | model.Unknown] = {}
    for digest in DIGESTS:
        if draw(mostly(True, False)):
            children[digest] = draw(
                st.one_of(
                    st.just(frozenset[model.Digest]()),
                    st.frozensets(digests, max_size=2),
                    st.just(model.Unknown("timeout")),
                )
            )
    # Mostly each manifest its own config (different digests, different content, as a real
    # push gives), sometimes a shared or partly shared set, unknown or not resolved yet.
    contents: dict[model.Digest, model.ImageContent | model.Unknown] = {}
    for digest in DIGESTS:
        kind = draw(mostly("own", "drawn", "unknown", "missing"))
        if kind == "own":
            contents[digest] = model.ImageContent(
                frozenset({model.Digest("sha256:e" + digest.value[8:71])})
            )
        elif kind == "drawn":
            contents[digest] = draw(image_contents())
        elif kind == "unknown":
            contents[digest] = model.Unknown("not-found")
    # Whether autoroll has deleted in this roll and, if so, which pods its read before that
    # first deletion listed (any of them may have been made after a sighting since).
    rolled_from = draw(
        st.one_of(st.none(), st.frozensets(st.sampled_from([p.uid for p in pod_list] or ["x"])))
    )
    return {
        "deployment": deployment,
        "pods": pod_list,
        "resolved": resolved,
        "children": children,
        "contents": contents,
        "sightings": sightings,
        "rolled_from": rolled_from,
    }


@settings(max_examples=400, deadline=None)
@given(scenarios())
def test_no_deletion_breaks_a_safety_property(scenario: dict[str, object]) -> None:
    deployment = scenario["deployment"]
    pod_list = scenario["pods"]
    resolved = scenario["resolved"]
    children = scenario["children"]
    contents = scenario["contents"]
    sightings = scenario["sightings"]
    assert isinstance(deployment, model.WorkloadView) and isinstance(pod_list, list)
    assert isinstance(resolved, dict) and isinstance(children, dict) and isinstance(sightings, dict)
    assert isinstance(contents, dict)
    rolled_from = scenario["rolled_from"]
    assert rolled_from is None or isinstance(rolled_from, frozenset)

    decision = decide(
        workload=deployment,
        pods=pod_list,
        registries={HOST},
        resolved=resolved,
        sightings=sightings,
        children=children,
        contents=contents,
        rolled_from=rolled_from,
    )

    # Property 2: at most one deletion per Deployment, and only when settled.
    assert len(decision.actions) <= 1
    event("deletes" if decision.actions else "no deletion")
    if not decision.actions:
        return
    assert is_settled(workload=deployment, pods=pod_list).is_settled
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
    running = parse_running_image(status.image_id)
    assert isinstance(running, RunningImage) and running.digest == action.from_digest
    assert action.from_digest != action.to_digest
    known_children = children.get(action.to_digest)
    if not running.is_config:
        assert isinstance(known_children, frozenset)
        assert action.from_digest not in known_children
    # Property 6: it runs other content. Its configs and the target's are known, and none
    # of its is the target's, or its node's platform picks one on each side and they differ.
    theirs = contents.get(action.to_digest)
    assert isinstance(theirs, model.ImageContent)
    if running.is_config:
        mine = model.ImageContent(frozenset({running.digest}))
    else:
        assert running.host == HOST, "a reference on another host was resolved"
        found = contents.get(running.digest)
        assert isinstance(found, model.ImageContent)
        mine = found
    platform = victim.platform
    picked = (
        platform is not None
        and (ours := mine.config_for(platform)) is not None
        and (target_config := theirs.config_for(platform)) is not None
        and ours != target_config
    )
    assert mine.configs.isdisjoint(theirs.configs) or picked
    event("by platform" if picked else "disjoint content")
    event("bare config" if running.is_config else f"reference on {running.repository}")
    # Property 4: never a pod that may replace one autoroll deleted: one that is older than
    # its target's first sighting (the sighting listed it, or its whole-second stamp is a
    # full second before it), or else one that autoroll's read before its first deletion in
    # this roll listed, or any when it has deleted none in this roll.
    sighting = sightings[ref]
    assert sighting.digest == action.to_digest
    listed = victim.uid in sighting.older_uids
    older = listed or victim.created_at + SECOND <= sighting.first_seen_at
    if older:
        assert victim.created_at <= sighting.first_seen_at
        if listed and victim.created_at + SECOND > sighting.first_seen_at:
            event("deletes a listed pod stamped in the sighting's second")
    else:
        assert rolled_from is None or victim.uid in rolled_from
        event("deletes a pod made after the sighting, not by autoroll")
