"""The safety properties of ARCHITECTURE.md, checked over generated inputs (hypothesis).

The table tests in ``test_decide.py`` show each rule on a chosen case; these show that no
combination of pods, registry answers, children and sightings produces a deletion that
breaks properties 1, 2 or 4, and that over many passes the loop guard both bounds the
deletions per tag move and still lets every pod that predates the move be replaced.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import event, given, settings
from hypothesis import strategies as st

from autoroll.decide import Sighting, decide, is_settled, listed_uids, observe_targets
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
# Whole seconds, as creationTimestamp has them, close together so that pods are often
# stamped in the very second a digest is first seen (the sighting time has a fraction).
stamps = st.integers(min_value=0, max_value=8).map(lambda s: T0 + timedelta(seconds=s))
fractions = st.sampled_from([0, 1, 500, 999]).map(lambda ms: timedelta(milliseconds=ms))
SECOND = timedelta(seconds=1)


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
        created_at=draw(stamps),
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
            seen_at = draw(stamps) + draw(fractions)
            # Pods the sighting's pass listed were created before it, so none is stamped
            # later than it; any of them may be missing (another Deployment, not enrolled yet).
            listed = frozenset(
                p.uid for p in pod_list if p.created_at <= seen_at and draw(st.booleans())
            )
            sightings[ref] = Sighting(
                seen_digest if draw(mostly(True, False)) else draw(digests), seen_at, listed
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
    # Property 4: never a pod created after its target digest was first seen: either the
    # sighting listed it, or its whole-second stamp is a full second before the sighting.
    sighting = sightings[ref]
    assert sighting.digest == action.to_digest
    assert victim.created_at <= sighting.first_seen_at
    listed = victim.uid in sighting.older_uids
    assert listed or victim.created_at + SECOND <= sighting.first_seen_at
    if listed and victim.created_at + SECOND > sighting.first_seen_at:
        event("deletes a listed pod stamped in the sighting's second")


# -- many passes: the shell's flow (list, observe, decide) against a simulated ReplicaSet ----


@st.composite
def passes(draw: st.DrawFn) -> dict[str, object]:
    """Pods that predate the first pass by up to 3 s, then passes 0.4-2.5 s apart; the tag
    may move before a pass, and each replacement is created 1-400 ms after its deletion."""
    steps = draw(
        st.lists(
            st.tuples(
                st.integers(min_value=401, max_value=2500),  # ms since the previous pass
                mostly(False, True),  # the tag moves to a fresh digest before this pass
                st.integers(min_value=1, max_value=400),  # ms until a replacement exists
            ),
            min_size=1,
            max_size=25,
        )
    )
    return {
        "ages_ms": draw(st.lists(st.integers(1, 3000), min_size=1, max_size=4)),
        "start_ms": draw(st.integers(0, 999)),
        "steps": steps,
        "quirk": draw(st.booleans()),  # the runtime reports the pod's old digest after a pull
    }


def fresh_digest(n: int) -> Digest:
    return Digest(f"sha256:{n + 16:064x}")


@settings(max_examples=300, deadline=None)
@given(passes())
def test_loop_guard_over_many_passes_is_bounded_and_replaces_every_older_pod(
    sim: dict[str, object],
) -> None:
    """Real creation times are kept beside the whole-second stamps the core sees. Then:
    no pass deletes a pod created after the current sighting (even one stamped in its
    second); a tag move costs at most one deletion per pod listed at its sighting (no loop,
    even when the runtime keeps reporting old digests); and once passes go on without a
    move, every pod listed at the last sighting is replaced (the one-second window is
    closed: a pod stamped in the sighting's second is not spared)."""
    ages, start, steps, quirk = sim["ages_ms"], sim["start_ms"], sim["steps"], sim["quirk"]
    assert isinstance(ages, list) and isinstance(start, int) and isinstance(steps, list)
    dep = DeploymentView("ns", "app", len(ages), (ContainerView("app", IMAGES["app"]),))
    ref = REFS["app"]
    old = DIGESTS[0]
    now = T0 + timedelta(milliseconds=start)
    real: dict[str, datetime] = {}  # uid -> the moment the pod really came to exist

    def make_pod(uid: str, created: datetime, digest: Digest) -> PodView:
        real[uid] = created
        stamp = created.replace(microsecond=0)
        status = ContainerStatusView("app", IMAGES["app"], f"{HOST}/team/app@{digest}", True)
        return PodView("ns", uid, uid, stamp, containers=dep.containers, statuses=(status,))

    pods = [make_pod(f"p{i}", now - timedelta(milliseconds=a), old) for i, a in enumerate(ages)]
    memory: dict[TagRef, Sighting] = {}
    moves = 0
    target = fresh_digest(moves)
    deleted_per_sighting: dict[datetime, int] = {}
    quiet = [(60_000, False, 1)] * (len(pods) + 1)  # then passes with the tag left alone

    for index, (advance_ms, move, delay_ms) in enumerate([(0, False, 1), *steps, *quiet]):
        now += timedelta(milliseconds=advance_ms)
        if move:
            moves += 1
            target = fresh_digest(moves)
        listed = listed_uids([(dep, pods)], forgejo_host=HOST)  # listed, then the clock
        memory = observe_targets(memory, {ref: target}, now=now, listed=listed)
        sighting = memory[ref]
        decision = decide(
            deployment=dep,
            pods=pods,
            forgejo_host=HOST,
            resolved={ref: target},
            sightings=memory,
            children={target: frozenset()},
        )
        for action in decision.actions:
            assert real[action.uid] < sighting.first_seen_at, f"pass {index} deleted a younger pod"
            seen = deleted_per_sighting.get(sighting.first_seen_at, 0) + 1
            deleted_per_sighting[sighting.first_seen_at] = seen
            assert seen <= len(sighting.older_uids), "more deletions than pods at the sighting"
            replacement = make_pod(
                f"r{index}",
                now + timedelta(milliseconds=delay_ms),
                action.from_digest if quirk else target,
            )
            pods = [p for p in pods if p.uid != action.uid] + [replacement]

    left = memory[ref].older_uids & {p.uid for p in pods}
    assert not left, f"pods listed at the last sighting were never replaced: {sorted(left)}"
    event("quirk: replacements keep the old digest" if quirk else "replacements run the target")
