"""Safety properties 2 and 9 for StatefulSets and DaemonSets, over many passes (hypothesis).

A small simulation stands in for each workload's controller and kubelet: it deletes,
recreates and readies pods on its own schedule, writes its status only now and then (so
the status autoroll reads lags the pods), rolls its own template changes (RollingUpdate,
partitions included), and lets nodes go NotReady. Between its steps, autoroll's shell flow
runs as the reconciler does (list, sighting, decide, read the Nodes asked for, decide).

Whatever the interleaving:

- no pass deletes a pod of a workload while another of its pods is missing, terminating or
  not Ready (so never two at once), nor one whose Node is not Ready;
- no StatefulSet pod is deleted whose revision is not the latest template's (with OnDelete,
  that would release a template change nobody released);
- and, where nothing breaks (no crash-looping image, no template change, Nodes Ready), every
  pod ends up running the target: the rules stop what must stop, not the roll itself.

The simulation itself is ``tests.support.workload_world``.
"""

from __future__ import annotations

from datetime import timedelta

from hypothesis import event, given, settings

from autoroll.core.decide import Sighting
from autoroll.core.images import TagRef
from autoroll.core.model import WorkloadKind
from tests.support.workload_world import World, autoroll_pass, digest, worlds


@settings(max_examples=400, deadline=None)
@given(worlds())
def test_no_pass_deletes_while_a_pod_is_unready_nor_a_pod_behind_its_template(
    spec: tuple[World, list[tuple[object, ...]]],
) -> None:
    world, steps = spec
    memory: dict[TagRef, Sighting] = {}
    changed_template = flipped_node = False
    for advance_ms, what, sync, ready_some, finish, flap, flip, runs in steps:
        assert isinstance(advance_ms, int) and isinstance(ready_some, int)
        world.now += timedelta(milliseconds=advance_ms)
        if what == "push":
            world.target += 1
        elif what == "template":
            world.generation += 1  # the controller observes it on its next sync
            changed_template = True
        elif what == "crash":
            world.crashing = True
        if isinstance(flip, int) and world.kind is WorkloadKind.DAEMONSET and flip < world.size:
            node = f"n{flip}"
            world.node_ready[node] = not world.node_ready[node]
            flipped_node = True
        flapping = f"{world.name}-{flap}" if isinstance(flap, int) else None
        world.kubelet(ready_some, finish=bool(finish), flap=flapping)
        if sync:
            world.controller()
        if runs:
            memory = autoroll_pass(world, memory)
    # Then a quiet hour: Nodes Ready, the controller and the kubelet keep up, passes go on.
    for node in world.node_ready:
        world.node_ready[node] = True
    for _ in range(6 * world.size + 6):
        world.now += timedelta(seconds=60)
        settle(world)
        memory = autoroll_pass(world, memory)
    settle(world)
    behind = sorted(n for n, p in world.pods.items() if p.digest != digest(world.target))
    if world.crashing:
        # Never Ready: after the pod that runs it, nothing more is deleted (asserted above).
        event("crash-looping image: safety only")
        return
    held = world.on_delete or (world.kind is WorkloadKind.STATEFULSET and world.partition > 0)
    if held and changed_template:
        # A template change nobody released (OnDelete) or held by a partition: the pods
        # behind it are the user's or the controller's, and autoroll leaves them alone.
        event("pending template change: safety only")
        return
    assert not behind, f"pods never rolled: {behind} (a node flipped: {flipped_node})"
    event(f"{world.kind}: every pod runs the target")


def settle(world: World) -> None:
    """The controller and the kubelet catch up (a few rounds, no autoroll pass)."""
    for _ in range(2 * world.size + 2):
        world.kubelet(world.size)
        world.controller()
