"""What ``bench.run`` measures against real ``autoroll serve`` on each populated cluster:
measurements 2 and 3 (``bench.webhook``) for each design, and the giant sizes, where the
watched cache (``bench.scale``) and one serve's targeted pushes are all that is measured.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.populate import ENROLL_LABEL, create_namespace
from bench.scale import Stage, measure_scale
from bench.serve import running_serve
from bench.sizes import Sizes
from bench.webhook import (
    LATENCY_LABEL,
    LATENCY_NAMESPACE,
    DeletionWatch,
    create_latency_targets,
    measure_push_latency,
    measure_watch_burst,
    measure_webhook_load,
)
from tests.support.registry import ImagePusher


def measure_webhooks(
    stage: Stage,
    *,
    sizes: Sizes,
    deployments: int,
    small: bool,
    load: bool,
    workdir: Path,
    designs: Sequence[str] = ("targeted", "full"),
    earlier: int = 0,
) -> dict[str, Any]:
    """Measurements 2 and 3 on the populated cluster, against real ``autoroll serve``.

    ``earlier``: latency Deployments an earlier call enrolled (its namespace exists then).

    ``deployments`` are enrolled (plus the latency targets); push-to-first-deletion is
    measured for both designs on the same objects: targeted passes on the watched cache
    (today) and a full listed pass per webhook (``WATCH_CACHE=false``, before issue 17)."""
    api, registry, writer, say = stage.api, stage.registry, stage.writer, stage.say
    pusher = ImagePusher(registry)
    pusher.session.trust_env = False
    if not earlier:
        create_namespace(writer, LATENCY_NAMESPACE)
    groups = {
        design: create_latency_targets(
            writer,
            pusher,
            registry.host,
            group=f"{design}{deployments}",
            count=sizes.pushes_large,
        )
        for design in designs
    }
    small_targets = (
        create_latency_targets(writer, pusher, registry.host, group="small", count=sizes.pushes)
        if small
        else []
    )
    watch = DeletionWatch(api, LATENCY_NAMESPACE)
    results: dict[str, Any] = {}
    enrolled = deployments + earlier + len(small_targets) + sum(len(g) for g in groups.values())
    try:
        if small:
            with running_serve(
                api=api,
                registry=registry,
                selector=f"{LATENCY_LABEL}=small",
                log=workdir / "serve-small.log",
            ) as serve:
                say(f"autoroll serve: {len(small_targets)} enrolled Deployments; pushing")
                results["push_small"] = measure_push_latency(
                    serve=serve,
                    watch=watch,
                    pusher=pusher,
                    targets=small_targets,
                    group="small",
                    targeted=True,
                    say=say,
                )
                results["push_small"]["enrolled"] = len(small_targets)
        for design, targets in groups.items():
            env = {"WATCH_CACHE": "true" if design == "targeted" else "false"}
            with running_serve(
                api=api,
                registry=registry,
                selector=f"{ENROLL_LABEL}=true",
                log=workdir / f"serve-{design}-{deployments}.log",
                extra_env=env,
            ) as serve:
                say(f"autoroll serve ({design}): {enrolled} enrolled Deployments; pushing")
                push = measure_push_latency(
                    serve=serve,
                    watch=watch,
                    pusher=pusher,
                    targets=targets,
                    group=f"{design}{deployments}",
                    targeted=design == "targeted",
                    say=say,
                )
                push["enrolled"] = enrolled
                results[f"push_{design}"] = push
                if load and design == "targeted":
                    say(f"webhook load: {sizes.webhook_requests} requests during passes")
                    results["load"] = measure_webhook_load(
                        serve=serve, requests_total=sizes.webhook_requests, say=say
                    )
                    results["load"]["burst"] = measure_watch_burst(
                        serve=serve,
                        writer=writer,
                        layout=stage.layout,
                        deployments=deployments,
                        requests_total=sizes.webhook_requests // 4,
                        say=say,
                    )
                    results["load"]["enrolled"] = enrolled
                push["rss_kib_by_process"] = serve.peak_rss_by_process()
                push["peak_rss_kib"] = max(push["rss_kib_by_process"].values(), default=0)
                say(f"  autoroll serve ({design}) peak RSS {push['peak_rss_kib'] / 1024:.0f} MB")
    finally:
        watch.close()
    return results


def measure_giant(
    stage: Stage, *, sizes: Sizes, created: int, earlier: int, workdir: Path
) -> list[dict[str, Any]]:
    """The ``giant`` sizes: the cached strategy, the control plane's memory, and one serve's
    targeted pushes (its peak RSS per process) at each."""
    found = []
    for size in sizes.giant:
        (cell,) = measure_scale(
            stage,
            sizes=[size],
            background_pods=sizes.background_pods,
            ticks=sizes.huge_ticks,
            strategies=("cached",),
            created=created,
        )
        measured = measure_webhooks(
            stage,
            sizes=sizes,
            deployments=size,
            small=False,
            load=False,
            workdir=workdir,
            designs=("targeted",),
            earlier=earlier,
        )
        found.append({**cell.as_json(), "push": measured})
        created, earlier = size, earlier + sizes.pushes_large
    return found
