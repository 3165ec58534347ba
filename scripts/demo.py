#!/usr/bin/env python3
"""`make demo`: watch autoroll roll a 3-replica Deployment, pod by pod, on your machine.

It brings up a local Kubernetes control plane (etcd, kube-apiserver, kube-controller-manager),
a real node (kubelet + containerd + runc, sealed in namespaces of its own: ``tests/e2e/node.py``),
a docker-registry with htpasswd auth, and ``autoroll serve`` as a local process. It deploys an
enrolled app whose pods are real containers (busybox serving HTTP, with a readiness probe),
pushes a new ``:latest``, sends the signed webhook, and prints every pod change and every
autoroll decision as they happen. Then Enter pushes again; Ctrl-C tears everything down.
Everything listens on 127.0.0.1 (or inside the node's own network namespace) and nothing is
downloaded, so it works offline once ``scripts/tools.sh all`` has cached the tools.

Without root or the node's tools, ``--node auto`` (the default) falls back to the simulated
kubelet and says so; ``--node real`` insists on the real one.

Usage (from the repository root)::

    make demo                       # the first run builds Kubernetes: 20-40 minutes
    make demo DEMO_ARGS=--once      # one roll, then tear down (exit 0 when it completed)

or, with the tools on PATH (``source .tools/env``)::

    .venv/bin/python scripts/demo.py [--replicas 3] [--poll 5] [--ready-after 7] [--once]

New pods take ``--ready-after`` seconds to become Ready (the readiness probe's initial
delay), longer than a poll interval, so the passes in between show autoroll waiting: it deletes
the next stale pod only when every pod is Ready again.

``--once`` rolls once and exits 0 (1 if the roll did not complete in ``--timeout`` seconds), so
the demo doubles as a smoke test.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from demo_output import Echo, cluster, say, short  # noqa: E402  (beside this script)

from tests.e2e.controller import DEFAULT_COMMAND, ControllerError, running_autoroll  # noqa: E402
from tests.e2e.controlplane import (  # noqa: E402
    Binaries,
    ControlPlaneError,
    running_control_plane,
)
from tests.e2e.helpers import apps_api, core_api, deployment, is_ready  # noqa: E402
from tests.e2e.images import APP_PORT, ImageError, push_app  # noqa: E402
from tests.e2e.kubelet import SimulatedKubelet  # noqa: E402
from tests.e2e.kubelet_behaviour import Behaviour  # noqa: E402
from tests.e2e.kubelet_images import RegistryResolver  # noqa: E402
from tests.e2e.node import NodeBinaries, NodeError  # noqa: E402
from tests.e2e.node import binaries_from_path as node_binaries_from_path  # noqa: E402
from tests.e2e.node_binder import Binder  # noqa: E402
from tests.e2e.node_start import running_node_with_registry  # noqa: E402
from tests.support.registry import ImagePusher, RegistryError, running_registry  # noqa: E402

ENROLL_LABEL = ("aethnet.se/autoroll", "true")
NAMESPACE = "demo"
APP = "hello"
REPOSITORY = "demo/hello"
TOOLS = ("etcd", "kube-apiserver", "kube-controller-manager", "docker-registry", "htpasswd")
REAL = (
    "real: etcd, kube-apiserver, kube-controller-manager, kubelet, containerd, runc, the"
    " containers, docker-registry, autoroll; not real: no scheduler (the demo binds pods to the"
    " one node), no kube-proxy or DNS, and autoroll runs as a local process, not a pod"
)
SIMULATED = (
    "real: etcd, kube-apiserver, kube-controller-manager, docker-registry, autoroll; simulated:"
    " the node (a thread writes pod status; no containers run) - `--node real` needs root and"
    " `scripts/tools.sh all`"
)


class DemoError(RuntimeError):
    """Something the user can fix (a missing tool, a component that did not start)."""


def find_tools() -> dict[str, str]:
    found = {name: shutil.which(name) for name in TOOLS}
    missing = [name for name, path in found.items() if path is None]
    if missing:
        raise DemoError(
            f"missing on PATH: {', '.join(missing)}. Run `scripts/tools.sh all` (the first "
            "Kubernetes build takes 20-40 minutes), then `source .tools/env`."
        )
    return {name: str(path) for name, path in found.items()}


# --- watching the roll -----------------------------------------------------------


@dataclass(frozen=True)
class PodState:
    name: str
    ready: bool
    digest: str
    terminating: bool


def pod_states(core: Any) -> dict[str, PodState]:
    pods = core.list_namespaced_pod(NAMESPACE, label_selector=f"app={APP}").items
    states = {}
    for p in pods:
        statuses = p.status.container_statuses or []
        image_id = (statuses[0].image_id or "") if statuses else ""
        states[p.metadata.name] = PodState(
            name=p.metadata.name,
            ready=is_ready(p),
            digest=image_id.rpartition("@")[2],
            terminating=p.metadata.deletion_timestamp is not None,
        )
    return states


def describe_changes(
    before: dict[str, PodState], after: dict[str, PodState], target: str
) -> list[str]:
    """One line per pod that appeared, changed or went away (pure: easy to read and test)."""
    lines = []
    for name in sorted(after.keys() - before.keys()):
        lines.append(f"+ {name} created")
    for name in sorted(after.keys() & before.keys()):
        old, new = before[name], after[name]
        if new.terminating and not old.terminating:
            lines.append(f"✗ {name} terminating (it ran {short(old.digest)})")
        elif new.ready and not old.ready:
            lines.append(f"✓ {name} Ready on {short(new.digest)}")
        elif new.digest != old.digest and new.digest:
            lines.append(f"· {name} pulled {short(new.digest)}")
    for name in sorted(before.keys() - after.keys()):
        lines.append(f"- {name} gone")
    return lines


def summary(states: dict[str, PodState], target: str) -> str:
    live = [s for s in states.values() if not s.terminating]
    current = [s for s in live if s.digest == target and s.ready]
    return f"{len(current)}/{len(live)} pods Ready on {short(target)}"


def watch_roll(core: Any, *, target: str, replicas: int, timeout: float) -> bool:
    """Print pod changes until every pod runs ``target`` and is Ready; False on timeout."""
    started = time.monotonic()
    before = pod_states(core)
    last_summary = ""
    while time.monotonic() - started < timeout:
        after = pod_states(core)
        for line in describe_changes(before, after, target):
            cluster(line)
        line = summary(after, target)
        if line != last_summary:
            cluster(f"[{line}]")
            last_summary = line
        live = [s for s in after.values() if not s.terminating]
        if len(live) == replicas and all(s.ready and s.digest == target for s in live):
            say(f"roll complete in {time.monotonic() - started:.1f} s")
            return True
        before = after
        time.sleep(0.25)
    say(f"the roll did not complete within {timeout:.0f} s ({last_summary})")
    return False


# --- the demo ----------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    tools = find_tools()
    command = args.autoroll.split() if args.autoroll else DEFAULT_COMMAND
    with contextlib.ExitStack() as stack:
        root = Path(tempfile.mkdtemp(prefix="autoroll-demo-"))
        stack.callback(shutil.rmtree, root, True)

        say("starting etcd, kube-apiserver and kube-controller-manager on 127.0.0.1 …")
        plane = stack.enter_context(
            running_control_plane(
                Binaries(tools["etcd"], tools["kube-apiserver"], tools["kube-controller-manager"]),
                workdir=root / "controlplane",
            )
        )
        say(f"control plane ready in {plane.timings['total']:.1f} s at {plane.server}")
        say(f"  kubeconfig: export KUBECONFIG={plane.kubeconfig}")

        registry = stack.enter_context(
            running_registry(tools["docker-registry"], root / "registry", user="demo")
        )
        pusher = ImagePusher(registry)
        image = f"{registry.host}/{REPOSITORY}:latest"
        version = 1
        digest = push_app(pusher, REPOSITORY, build="hello v1").digest
        say(f"registry at {registry.host}: pushed {image} → {short(digest)}")

        kube = plane.api_client()
        start_node(stack, args, plane=plane, registry=registry, image=image, root=root)

        core = core_api(kube)
        deploy_app(kube, image, replicas=args.replicas, ready_after=args.ready_after)
        if not watch_roll(core, target=digest, replicas=args.replicas, timeout=args.timeout):
            return 1

        echo = Echo()
        autoroll = stack.enter_context(
            running_autoroll(
                plane=plane,
                registry=registry,
                poll_seconds=args.poll,
                extra_env={"LOG_FORMAT": "json"},
                command=command,
                cwd=REPO,
                echo=echo,
            )
        )
        say(f"autoroll serving at {autoroll.url}, polling the registry every {args.poll} s")
        autoroll.wait_for_line(r'"event": ?"decision"')  # its first pass: everything current

        while True:
            version += 1
            generation = deployment_generation(kube)
            digest = push_app(pusher, REPOSITORY, build=f"hello v{version}").digest
            print()
            say(f"pushed a new {image} → {short(digest)}")
            say(f"sent the signed webhook Forgejo would send → HTTP {autoroll.webhook()}")
            done = watch_roll(core, target=digest, replicas=args.replicas, timeout=args.timeout)
            if done:
                after = deployment_generation(kube)
                same = "as before the push" if after == generation else f"was {generation}!"
                say("every pod replaced, one at a time")
                say(f"Deployment {NAMESPACE}/{APP}: generation {after}, {same} (autoroll never")
                say("  edits the Deployment, it deletes stale pods: Argo CD stays Synced)")
            if args.once or not sys.stdin.isatty():
                return 0 if done else 1
            echo.idle = True
            try:
                input("\nPress Enter to push again, Ctrl-C to tear everything down. ")
            finally:
                echo.idle = False


def start_node(
    stack: contextlib.ExitStack,
    args: argparse.Namespace,
    *,
    plane: Any,
    registry: Any,
    image: str,
    root: Path,
) -> None:
    """The real node and its binder (or the simulated kubelet), torn down with ``stack``."""
    binaries = node_to_use(args.node)
    if binaries is not None:
        starting = running_node_with_registry(binaries, plane, registry, workdir=root / "node")
        say("starting the node: containerd and the kubelet, in namespaces of their own …")
        node = stack.enter_context(starting)
        stack.enter_context(Binder(plane.api_client(), node.name))
        say(f"node {node.name} is Ready in {node.timings['kubelet']:.1f} s")
        say(REAL)
    else:
        kubelet = SimulatedKubelet(plane.api_client(), RegistryResolver(auth=registry.auth))
        # The readiness delay makes the rule visible: the next pod goes once this is Ready.
        kubelet.behave(image, Behaviour(ready_after=args.ready_after))
        kubelet.start()
        stack.callback(kubelet.stop)
        say(f"simulated kubelet: node {kubelet.node_name} is Ready")
        say(SIMULATED)


def node_to_use(choice: str) -> NodeBinaries | None:
    """The real node's binaries, or None for the simulated kubelet (``--node``)."""
    if choice == "simulated":
        return None
    binaries = node_binaries_from_path()
    problem = None
    if os.geteuid() != 0:
        problem = "the real node needs root (network and mount namespaces, cgroups)"
    elif binaries is None:
        problem = "kubelet, containerd, runc or the CNI plugins are missing (scripts/tools.sh all)"
    if problem is None:
        return binaries
    if choice == "real":
        raise DemoError(problem)
    say(f"{problem}: using the simulated kubelet instead")
    return None


def deploy_app(kube: Any, image: str, *, replicas: int, ready_after: float) -> None:
    """The demo namespace and the enrolled Deployment (the label is on the Deployment)."""
    core = core_api(kube)
    core.create_namespace({"metadata": {"name": NAMESPACE}})
    manifest = deployment(
        APP,
        image,
        replicas=replicas,
        labels=dict([ENROLL_LABEL]),
        pull_policy="Always",
        http_port=APP_PORT,
        ready_after=ready_after,
    )
    wait_for_service_account(core)
    apps_api(kube).create_namespaced_deployment(NAMESPACE, manifest)
    say(f"deployed {NAMESPACE}/{APP}: {replicas} replicas of {image}, enrolled with "
        f"{ENROLL_LABEL[0]}={ENROLL_LABEL[1]}")  # fmt: skip


def deployment_generation(kube: Any) -> int:
    generation: int = apps_api(kube).read_namespaced_deployment(APP, NAMESPACE).metadata.generation
    return generation


def wait_for_service_account(core: Any) -> None:
    """Pods are admitted only once the namespace's default ServiceAccount exists."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        names = [sa.metadata.name for sa in core.list_namespaced_service_account(NAMESPACE).items]
        if "default" in names:
            return
        time.sleep(0.2)
    raise DemoError(f"namespace {NAMESPACE} got no default ServiceAccount within 30 s")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--replicas", type=int, default=3, help="replicas of the demo app (3)")
    parser.add_argument(
        "--poll", type=int, default=5, help="autoroll POLL_INTERVAL_SECONDS (5, the least)"
    )
    parser.add_argument(
        "--timeout", type=float, default=180, help="seconds one roll may take (180)"
    )
    parser.add_argument(
        "--ready-after",
        type=float,
        default=7,
        help="seconds a new pod takes to become Ready (7)",
    )
    parser.add_argument("--once", action="store_true", help="roll once, then tear down and exit")
    parser.add_argument(
        "--node",
        choices=("auto", "real", "simulated"),
        default="auto",
        help="real kubelet + containerd, the simulated kubelet, or real when possible (auto)",
    )
    parser.add_argument(
        "--autoroll",
        default=os.environ.get("AUTOROLL_COMMAND", ""),
        help="command that runs the controller (default: python -m autoroll serve)",
    )
    args = parser.parse_args(argv)
    try:
        code = run(args)
    except KeyboardInterrupt:
        print()
        say("interrupted: everything is torn down")
        # Ctrl-C is how the interactive demo ends; with --once it cut the roll short.
        return 130 if args.once else 0
    except (
        DemoError,
        ControlPlaneError,
        ControllerError,
        RegistryError,
        NodeError,
        ImageError,
    ) as exc:
        say(f"demo failed: {exc}")
        return 2
    say("everything is torn down")
    return code


if __name__ == "__main__":
    sys.exit(main())
