"""The safety properties of ARCHITECTURE.md, checked over generated inputs (hypothesis).

The table tests in ``test_decide.py`` show each rule on a chosen case; these show that no
combination of pods, registry answers, children, image contents and sightings produces a
deletion that breaks properties 1, 2, 4 or 6, that over many passes the loop guard both
bounds the deletions per tag move and still lets every pod that predates the move be
replaced, and (property 6) that in a world where containerd names the alphabetically first
reference of a config — another repository's, another registry's, another manifest of the
same build — no pass, controller restart or pull deletes a pod that runs the target's
content, and every pod that runs other content is rolled wherever that can be resolved.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial

from hypothesis import event, given, settings
from hypothesis import strategies as st

from autoroll.controller.rolls import RollMemory
from autoroll.core.decide import ContentRequest, Decision, Sighting, decide, is_settled
from autoroll.core.images import RunningImage, TagRef, parse_running_image
from autoroll.core.model import (
    ContainerStatusView,
    ContainerView,
    Digest,
    Enrolled,
    ImageContent,
    PodView,
    Unknown,
    WorkloadView,
)
from autoroll.core.sightings import listed_uids, observe_targets
from tests.support.views import deployment_view

HOST = "forgejo.example"
IMAGES = {"app": f"{HOST}/team/app:latest", "side": f"{HOST}/team/side:v1"}
REFS = {"app": TagRef(HOST, "team/app", "latest"), "side": TagRef(HOST, "team/side", "v1")}
DIGESTS = [Digest("sha256:" + c * 64) for c in "0123"]
CONFIGS = [Digest("sha256:" + c * 64) for c in "abcd"]
PLATFORMS = ("linux/amd64", "linux/arm64")
T0 = datetime(2026, 1, 1, tzinfo=UTC)


class EachItsOwn(Mapping[Digest, ImageContent | Unknown]):
    """Every manifest stands for its own config: different digests are different content."""

    def __getitem__(self, digest: Digest) -> ImageContent | Unknown:
        return ImageContent(frozenset({digest}))

    def __iter__(self) -> Iterator[Digest]:
        return iter(())

    def __len__(self) -> int:
        return 0


def mostly(likely: object, *rare: object) -> st.SearchStrategy[object]:
    """``likely`` four times out of five: keeps generated scenarios near a deletion."""
    return st.sampled_from([likely] * 4 * max(1, len(rare)) + list(rare))


digests = st.sampled_from(DIGESTS)
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
def image_contents(draw: st.DrawFn) -> ImageContent:
    """Some configs, each maybe named for a platform (as an index names its children)."""
    configs = draw(st.frozensets(st.sampled_from(CONFIGS), min_size=1, max_size=3))
    platforms = tuple(
        (platform, config)
        for platform, config in zip(PLATFORMS, sorted(configs), strict=False)
        if draw(st.booleans())
    )
    return ImageContent(configs, platforms)


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
    # Mostly each manifest its own config (different digests, different content, as a real
    # push gives), sometimes a shared or partly shared set, unknown or not resolved yet.
    contents: dict[Digest, ImageContent | Unknown] = {}
    for digest in DIGESTS:
        kind = draw(mostly("own", "drawn", "unknown", "missing"))
        if kind == "own":
            contents[digest] = ImageContent(frozenset({Digest("sha256:e" + digest.value[8:71])}))
        elif kind == "drawn":
            contents[digest] = draw(image_contents())
        elif kind == "unknown":
            contents[digest] = Unknown("not-found")
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
    assert isinstance(deployment, WorkloadView) and isinstance(pod_list, list)
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
    assert isinstance(theirs, ImageContent)
    if running.is_config:
        mine = ImageContent(frozenset({running.digest}))
    else:
        assert running.host == HOST, "a reference on another host was resolved"
        found = contents.get(running.digest)
        assert isinstance(found, ImageContent)
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
    dep = deployment_view("ns", "app", len(ages), (ContainerView("app", IMAGES["app"]),))
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
    rolls = RollMemory()  # the pods before each roll's first deletion, as the reconciler keeps
    moves = 0
    target = fresh_digest(moves)
    deleted_per_sighting: dict[datetime, int] = {}
    quiet = [(60_000, False, 1)] * (len(pods) + 1)  # then passes with the tag left alone

    for index, (advance_ms, move, delay_ms) in enumerate([(0, False, 1), *steps, *quiet]):
        now += timedelta(milliseconds=advance_ms)
        if move:
            moves += 1
            target = fresh_digest(moves)
        listed = listed_uids([(dep, pods)], registries={HOST})  # listed, then the clock
        memory = observe_targets(memory, {ref: target}, now=now, listed=listed)
        sighting = memory[ref]
        decision = decide(
            workload=dep,
            pods=pods,
            registries={HOST},
            resolved={ref: target},
            sightings=memory,
            children={target: frozenset()},
            contents=EachItsOwn(),
            rolled_from=rolls.rolled_from(dep.key),
        )
        if decision.actions:
            rolls.deleting(Enrolled(dep, tuple(pods)))
        rolls.settle([(dep.key, decision)])
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


# -- property 6 over many passes: containerd's naming, pulls, pushes and restarts ------------

ENROLLED = "team/app"
#: Where else a build's manifests are found; every one sorts before ``forgejo.example/team``.
SOURCES = {
    "list": (HOST, ENROLLED),  # a Docker list of the same build beside the OCI index
    "mirror": (HOST, "aaa/mirror"),  # another repository on our registry
    "foreign": ("docker.io", "aaa/app"),  # another registry: autoroll never asks it
}


def named(*parts: object) -> Digest:
    return Digest("sha256:" + hashlib.sha256("/".join(map(str, parts)).encode()).hexdigest())


@dataclass
class World:
    """Builds pushed as an OCI index to the enrolled tag and, by digest, elsewhere; nodes
    whose containerd records references and names each container by the alphabetically
    first one recorded for the config it runs (``internal/cri/store/image``)."""

    node_platforms: list[str]
    drops: bool = False  # Gitea's registry: a re-pushed tag's previous manifest answers 404
    builds: list[dict[str, Digest]] = field(default_factory=list)  # platform -> config
    refs: list[dict[str, Digest]] = field(default_factory=list)  # per node: ref -> config
    pods: dict[str, tuple[int, Digest]] = field(default_factory=dict)  # uid -> node, config

    def __post_init__(self) -> None:
        self.refs = [{} for _ in self.node_platforms]

    def push(self, *, keep_amd64: bool) -> None:
        """A new build; a multi-arch push may leave amd64 unchanged."""
        number = len(self.builds)
        build = {p: named("config", number, p) for p in PLATFORMS}
        if keep_amd64 and self.builds:
            build["linux/amd64"] = self.builds[-1]["linux/amd64"]
        self.builds.append(build)

    def manifest(self, build: int, source: str = "index") -> Digest:
        return named(source, build)

    def content(self, digest: Digest) -> ImageContent | None:
        for number, build in enumerate(self.builds):
            if digest in {self.manifest(number, s) for s in ("index", *SOURCES)}:
                return ImageContent(frozenset(build.values()), tuple(sorted(build.items())))
        return None

    def target(self) -> Digest:
        return self.manifest(len(self.builds) - 1)

    def pull(self, node: int, build: int, source: str) -> Digest:
        host, repository = (HOST, ENROLLED) if source == "index" else SOURCES[source]
        config = self.builds[build][self.node_platforms[node]]
        self.refs[node][f"{host}/{repository}@{self.manifest(build, source)}"] = config
        return config

    def image_id(self, uid: str) -> str:
        node, config = self.pods[uid]
        return min(ref for ref, found in self.refs[node].items() if found == config)

    def answer_content(self, wanted: ContentRequest) -> ImageContent | Unknown:
        assert wanted.host == HOST, "autoroll asked another registry"
        dropped = {self.manifest(n) for n in range(len(self.builds) - 1)} if self.drops else set()
        found = self.content(wanted.digest)
        if found is None or (wanted.repository == ENROLLED and wanted.digest in dropped):
            return Unknown("not-found")
        return found

    def answer_children(self, digest: Digest) -> frozenset[Digest]:
        index = any(digest == self.manifest(n, s) for n in range(len(self.builds)) for s in SOURCES)
        index = index or digest in {self.manifest(n) for n in range(len(self.builds))}
        return frozenset({named("child", digest, p) for p in PLATFORMS}) if index else frozenset()


@st.composite
def worlds(draw: st.DrawFn) -> dict[str, object]:
    """Nodes of both platforms, a few pods, then passes 0.4-2.5 s apart, before which the
    tag may move (maybe leaving amd64 unchanged), the controller may restart (its memory and
    the registry client's caches lost), a node may pull some build from another source, and
    the registry may fail the pass's GETs."""
    sources = ["list", "mirror", *(["foreign"] if draw(st.booleans()) else [])]
    steps = draw(
        st.lists(
            st.tuples(
                st.integers(401, 2500),  # ms since the previous pass
                mostly(None, "full", "partial"),  # the tag moves before this pass
                mostly(False, True),  # the controller restarts before this pass
                st.one_of(
                    st.none(),
                    st.tuples(st.integers(0, 2), st.integers(0, 2), st.sampled_from(sources)),
                ),  # a node pulls (build current - k) from a source
                st.integers(1, 400),  # ms until a replacement exists
                st.integers(0, 2),  # the node a replacement lands on
                st.sampled_from([None, "content", "every"]),  # which GETs fail this pass
            ),
            min_size=1,
            max_size=25,
        )
    )
    return {
        "nodes": draw(st.lists(st.sampled_from(PLATFORMS), min_size=1, max_size=3)),
        "pods": draw(st.lists(st.integers(0, 2), min_size=1, max_size=4)),  # their nodes
        "pulls": draw(st.lists(st.tuples(st.integers(0, 2), st.sampled_from(sources)))),
        "aware": draw(st.booleans()),  # the pods carry their node's platform (issue 18)
        "drops": draw(st.booleans()),  # the registry drops a tag's previous manifest (Gitea)
        # Half the worlds have no restart and no failing pass, so that the rollout after a
        # push to a dropping registry is asserted too (it rests on the remembered target).
        "steps": steps if draw(st.booleans()) else [(*s[:2], False, *s[3:6], None) for s in steps],
    }


def decide_as_the_shell(
    world: World,
    dep: WorkloadView,
    pods: list[PodView],
    *,
    memory: Mapping[TagRef, Sighting],
    children: dict[Digest, frozenset[Digest] | Unknown],
    contents: dict[Digest, ImageContent | Unknown],
    flaky: str | None = None,
) -> Decision:
    """The reconciler's flow: decide, answer what it asks (children, then content), decide.
    A ``flaky`` registry answers (``every`` GET, or those for ``content`` only) with
    Unknown, as a timeout would."""
    target = world.target()
    run = partial(
        decide,
        workload=dep,
        pods=pods,
        registries={HOST},
        resolved={REFS["app"]: target},
        sightings=memory,
        children=children,
        contents=contents,
    )
    decision = run()
    for _ in range(2):
        timeout = Unknown("timeout")
        for wanted in decision.needs_children:
            failing = flaky == "every"
            children[wanted.digest] = timeout if failing else world.answer_children(wanted.digest)
        for request in decision.needs_content:
            contents[request.digest] = timeout if flaky else world.answer_content(request)
        decision = run()
    assert not decision.needs_children and not decision.needs_content
    # The end of the pass: the target's configs, while the registry still holds it.
    if target not in contents:
        remember = ContentRequest(HOST, ENROLLED, target)
        contents[target] = Unknown("timeout") if flaky else world.answer_content(remember)
    return decision


@settings(max_examples=300, deadline=None)
@given(worlds())
def test_no_pod_running_the_targets_content_is_ever_deleted_and_other_content_rolls(
    spec: dict[str, object],
) -> None:
    """Property 6 over many passes. containerd reports, for every container, the first of
    the references recorded on its node for the config it runs: an OCI index, a Docker list
    of the same build, a mirror's copy, another registry's copy, an older build's index that
    shares a platform's config. Whatever it names, no pass (and no controller restart, which
    loses the loop-guard memory and the caches) nor registry failure deletes a pod whose
    config is among the target's. And once passes go on undisturbed, every pod running other
    content has been replaced, in every world where that can be told: no copy on another
    registry, either the pods carry their node's platform or no push kept a platform
    unchanged, and, where the registry drops a re-pushed tag's previous manifest, the
    controller saw every target while it was one (no restart, no failing pass)."""
    nodes, placements, pulls = spec["nodes"], spec["pods"], spec["pulls"]
    aware, steps, drops = spec["aware"], spec["steps"], spec["drops"]
    assert isinstance(nodes, list) and isinstance(placements, list) and isinstance(pulls, list)
    assert isinstance(steps, list)
    world = World(node_platforms=nodes, drops=bool(drops))
    world.push(keep_amd64=False)
    dep = deployment_view("ns", "app", len(placements), (ContainerView("app", IMAGES["app"]),))
    now = T0
    pods: list[PodView] = []

    def create(uid: str, node: int, created: datetime) -> PodView:
        node %= len(nodes)
        world.pods[uid] = (node, world.pull(node, len(world.builds) - 1, "index"))
        return PodView(
            "ns",
            uid,
            uid,
            created.replace(microsecond=0),
            containers=dep.containers,
            platform=nodes[node] if aware else None,
        )

    def observed(pod: PodView) -> PodView:
        """The pod as the API shows it now: containerd renames as references come and go."""
        status = ContainerStatusView("app", IMAGES["app"], world.image_id(pod.uid), True)
        return PodView(
            pod.namespace,
            pod.name,
            pod.uid,
            pod.created_at,
            containers=pod.containers,
            statuses=(status,),
            platform=pod.platform,
        )

    pods = [create(f"p{i}", node, now - timedelta(seconds=5)) for i, node in enumerate(placements)]
    for node, source in pulls:
        world.pull(node % len(nodes), 0, source)
    memory: dict[TagRef, Sighting] = {}
    children: dict[Digest, frozenset[Digest] | Unknown] = {}
    contents: dict[Digest, ImageContent | Unknown] = {}
    foreign = any(source == "foreign" for _, source in pulls)
    partial_push = forgot = False
    quiet = [(60_000, None, False, None, 1, 0, None)] * (len(pods) + 1)

    for index, (advance_ms, move, restart, pull, delay_ms, lands, flaky) in enumerate(
        [(0, None, False, None, 1, 0, None), *steps, *quiet]
    ):
        now += timedelta(milliseconds=advance_ms)
        if move is not None:
            world.push(keep_amd64=move == "partial")
            partial_push = partial_push or move == "partial"
        if restart:
            memory, children, contents = {}, {}, {}
        forgot = forgot or restart or flaky is not None
        if pull is not None:
            node, back, source = pull
            world.pull(node % len(nodes), max(0, len(world.builds) - 1 - back), source)
            foreign = foreign or source == "foreign"
        listed_pods = [observed(p) for p in pods]
        listed = listed_uids([(dep, listed_pods)], registries={HOST})
        target = world.target()
        memory = observe_targets(memory, {REFS["app"]: target}, now=now, listed=listed)
        # Like the registry client: answers are cached, failures only for their own pass.
        children = {d: c for d, c in children.items() if isinstance(c, frozenset)}
        contents = {d: c for d, c in contents.items() if isinstance(c, ImageContent)}
        decision = decide_as_the_shell(
            world,
            dep,
            listed_pods,
            memory=memory,
            children=children,
            contents=contents,
            flaky=flaky,
        )
        target_configs = world.content(target)
        assert target_configs is not None
        for action in decision.actions:
            _, running = world.pods[action.uid]
            assert running not in target_configs.configs, (
                f"pass {index} deleted {action.name}, which runs the target's content"
                f" (reported as {world.image_id(action.uid)})"
            )
            event("rolled a pod reported under another name")
            if not world.image_id(action.uid).startswith(f"{HOST}/{ENROLLED}@"):
                event("rolled a pod reported under another repository's name")
            replacement = create(f"r{index}", lands, now + timedelta(milliseconds=delay_ms))
            pods = [p for p in pods if p.uid != action.uid] + [replacement]

    final = world.content(world.target())
    assert final is not None
    behind = sorted(p.uid for p in pods if world.pods[p.uid][1] not in final.configs)
    if foreign or (partial_push and not aware) or (drops and forgot):
        event("unresolvable world: only safety asserted")
        return
    assert not behind, f"pods running other content were never replaced: {behind}"
    event("resolvable world: every pod runs the target's content")
