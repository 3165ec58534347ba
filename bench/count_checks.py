"""The benchmark's request-count targets (issue 8, issue 17's cache, issue 28's stalled pass).

What the CI quick mode enforces: exact counts of registry and Kubernetes requests per pass,
and no pass from a bad-signature webhook. Pure: results in, one sentence per broken target out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from bench.tables import lists, total


def count_violations(results: Mapping[str, Any]) -> list[str]:
    """Every broken request-count target, as a sentence; empty when all hold.

    - registry: HEADs per pass == unique repository:tags, no other request but, in the
      first (cold) pass only, at most one GET per unique tag: each target's manifest is
      resolved to its image config once, while the registry still holds it (the bench's
      images are single-platform); steady state: nothing changed, so no GET at all;
    - Kubernetes: exactly one list per enabled workload kind, exactly one pod list per
      namespace holding enrolled workloads (so lists == kinds + namespaces), and no other
      request (nothing is stale, so nothing is deleted);
    - webhooks: bad signatures cause zero passes.
    """
    found = []
    for cell in results.get("scale", ()):
        where = f"{cell['deployments']} Deployments / {cell['images']} images"
        for n, p in enumerate(cell["results"]["autoroll"]["passes"], start=1):
            registry, kube = p["registry"], p["kube"]
            if registry.get("HEAD", 0) != cell["unique_refs"]:
                found.append(
                    f"{where}, pass {n}: {registry.get('HEAD', 0)} registry HEADs,"
                    f" expected exactly {cell['unique_refs']} (unique repository:tags)"
                )
            gets = registry.get("GET", 0) if n == 1 else 0
            if gets > cell["unique_refs"]:
                found.append(
                    f"{where}, pass {n}: {gets} registry GETs, at most {cell['unique_refs']}"
                    " (one per target manifest, cold pass only)"
                )
            if total(registry) != registry.get("HEAD", 0) + gets:
                found.append(f"{where}, pass {n}: registry requests other than HEAD: {registry}")
            kinds = p.get("kinds", ["deployment"])  # results from before issue 16: Deployments
            limit = len(kinds) + cell["namespaces"]
            if lists(kube) > limit:
                found.append(
                    f"{where}, pass {n}: {lists(kube)} Kubernetes list requests, limit {limit}"
                )
            for kind in kinds:
                listed = kube.get(f"list {kind}s", 0)
                if listed != 1:
                    found.append(
                        f"{where}, pass {n}: {listed} Kubernetes lists of {kind}s, expected"
                        " exactly 1 (one per enabled kind)"
                    )
            if kube.get("list pods", 0) != cell["namespaces"]:
                found.append(
                    f"{where}, pass {n}: {kube.get('list pods', 0)} Kubernetes pod lists,"
                    f" expected exactly {cell['namespaces']} (one per namespace with enrolled"
                    " workloads)"
                )
            if total(kube) != lists(kube):
                found.append(f"{where}, pass {n}: Kubernetes requests other than lists: {kube}")
            if p["verdicts"].get("actions", 0):
                found.append(f"{where}, pass {n}: deletions in a steady-state cluster")
    for cell in results.get("scale", ()):
        found += cached_violations(cell)
        found += stalled_violations(cell)
    load = results.get("load")
    if load and load.get("idle", {}).get("ticks_caused", 0) != 0:
        found.append(
            f"bad-signature webhooks to an idle controller caused"
            f" {load['idle']['ticks_caused']} pass(es)"
        )
    if load and load["bad"]["ticks_caused"] != 0:
        found.append(f"bad-signature webhooks caused {load['bad']['ticks_caused']} pass(es)")
    if load and load["good"]["ticks_caused"] > 2:
        found.append(
            f"{len(load['good']['latencies_ms'])} signed deliveries for one tag caused"
            f" {load['good']['ticks_caused']} passes; the per-tag debounce allows 2 (one at"
            " once, one after the burst)"
        )
    if load and load["bad"]["statuses"] != {"403": len(load["bad"]["latencies_ms"])}:
        found.append(f"bad-signature webhooks answered {load['bad']['statuses']}, not all 403")
    return found


def stalled_violations(cell: Mapping[str, Any]) -> list[str]:
    """Issue 28's rule for a pass longer than its registry budget (``stalled``, bench.tick):
    each target's image config is fetched in the cold pass, one GET per unique
    repository:tag (the bench's images are single-platform), and no GET in any later pass.
    Before, the pass's own time between the HEADs and those GETs counted against the
    budget: on a loaded machine the cold pass ran out and the GETs came in the steady ones."""
    stalled = cell["results"].get("stalled")
    if stalled is None:
        return []  # results from before issue 28
    where = f"{cell['deployments']} Deployments / {cell['images']} images, stalled pass"
    found = []
    for n, p in enumerate(stalled["passes"], start=1):
        registry = p["registry"]
        gets, heads = registry.get("GET", 0), registry.get("HEAD", 0)
        want = cell["unique_refs"] if n == 1 else 0
        if heads != cell["unique_refs"] or gets != want or total(registry) != heads + gets:
            found.append(
                f"{where} {n}: registry requests {registry}, expected HEAD:"
                f" {cell['unique_refs']} and GET: {want} (the targets' configs in the cold"
                " pass only, however long the pass)"
            )
    return found


def affected(cell: Mapping[str, Any]) -> int:
    """Deployments on the targeted repository: image 0, used by every ``images``-th one."""
    return math.ceil(int(cell["deployments"]) / int(cell["images"]))


def cached_violations(cell: Mapping[str, Any]) -> list[str]:
    """The watched cache's request-count rules (issue 17), for one measured size.

    - every pass on the warm cache (an idle poll) sends no Kubernetes request but the
      watches' own (a watch the server ended is opened again: that may fall in a pass), and
      still one registry HEAD per unique repository:tag;
    - the targeted pass after a push to one tag sends exactly 1 HEAD (that tag), lists no
      workload, and reads each affected workload once, whole, right before acting on it (its
      object by name and its pods: 1 Deployment read and 1 pod list per affected workload,
      as many fresh reads as actions).
    """
    cached = cell["results"].get("cached")
    if cached is None:
        return []  # results from before issue 17
    where = f"{cell['deployments']} Deployments / {cell['images']} images, cached"
    found = []
    for n, p in enumerate(cached["passes"], start=1):
        sent = {k: v for k, v in p["kube"].items() if not k.startswith("watch ")}
        if sent:
            found.append(
                f"{where}, pass {n}: Kubernetes requests with the cache warm besides the"
                f" watches, expected none: {sent}"
            )
        if p["registry"].get("HEAD", 0) != cell["unique_refs"]:
            found.append(
                f"{where}, pass {n}: {p['registry'].get('HEAD', 0)} registry HEADs, expected"
                f" exactly {cell['unique_refs']} (unique repository:tags)"
            )
    targeted = cached.get("targeted")
    if targeted is None:
        return [*found, f"{where}: no targeted pass was measured"]
    want = affected(cell)
    heads = targeted["registry"].get("HEAD", 0)
    if heads != 1:
        found.append(f"{where}, targeted pass: {heads} registry HEADs, expected exactly 1")
    kube = targeted["kube"]
    pod_reads = kube.get("list pods", 0)
    if pod_reads != want or targeted["fresh_reads"] != want:
        found.append(
            f"{where}, targeted pass: {pod_reads} pod reads and {targeted['fresh_reads']} fresh"
            f" reads, expected exactly {want} (1 per affected workload, before acting)"
        )
    if targeted["actions"] != want:
        found.append(f"{where}, targeted pass: {targeted['actions']} actions, expected {want}")
    object_reads = kube.get("list deployments", 0)
    if object_reads != want:
        found.append(
            f"{where}, targeted pass: {object_reads} Deployment reads, expected exactly {want}"
            " (the fresh read of each affected workload's object)"
        )
    if total(kube) != pod_reads + object_reads:
        found.append(
            f"{where}, targeted pass: Kubernetes requests other than the fresh reads: {kube}"
        )
    return found
