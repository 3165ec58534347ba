"""Command-line entry point for the controller (``autoroll``).

``autoroll serve`` validates the environment (every problem at once, exit 2, no secret
echoed) and then runs the server. ``autoroll plan`` runs one dry pass against the current
kubeconfig and prints what the controller would do. User errors end in one clear message
and a non-zero status, never a traceback: exit 2 for configuration (environment,
kubeconfig), exit 1 for a cluster that could not be reached or refused us.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Mapping, Sequence

from autoroll import __version__
from autoroll.config import Config
from autoroll.config.announce import read_quarantine
from autoroll.config.errors import ConfigError
from autoroll.config.reader import Reader
from autoroll.controller.approvals import ApprovalBook
from autoroll.core.ports import QuarantineConflictError
from autoroll.core.quarantine import QuarantineKey
from autoroll.core.receivers.sources import RECEIVERS
from autoroll.edge.plan import render, run_plan
from autoroll.edge.quarantine_view import clear_in, history_text, list_text
from autoroll.edge.registries import pull_credentials, registry_pool
from autoroll.edge.server import serve
from autoroll.edge.wiring import log_secrets
from autoroll.instruments import logs
from autoroll.kube import ClusterConfigError, ClusterError, KubeCluster, KubeQuarantine, connect
from autoroll.kube.history import read_history
from autoroll.kube.secrets import KubeSecrets
from autoroll.notify import AppriseNotifier, NotifyConfigError
from autoroll.registry import proxies_in_use

log = logging.getLogger("autoroll")

EXIT_OK = 0
EXIT_UNAVAILABLE = 1
EXIT_USAGE = 2

#: ``plan`` never serves the webhook, so it does not need the real secret; this stands in
#: for an unset WEBHOOK_SECRET only (a set but invalid one is still reported).
_PLAN_WEBHOOK_PLACEHOLDER = "plan-does-not-serve-webhooks"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="autoroll",
        description="Roll enrolled Deployments, StatefulSets and DaemonSets when a mutable image"
        " tag moves.",
        epilog="Configuration comes from the environment: FORGEJO_HOST, FORGEJO_USER,"
        " FORGEJO_TOKEN (the Forgejo registry; required unless REGISTRIES, a JSON list of"
        " registries, names them), FORGEJO_PULL_SECRETS, WEBHOOK_SECRET (required; each secret"
        " also as <NAME>_FILE, the path"
        " of a mounted file holding it, e.g. FORGEJO_TOKEN_FILE, WEBHOOK_SECRET_FILE),"
        " POLL_INTERVAL_SECONDS, PASS_TIMEOUT_SECONDS, LABEL_SELECTOR, WORKLOAD_KINDS,"
        " LISTEN_ADDR, PROBE_ADDR (/livez, /readyz and /healthz on their own port and threads,"
        " default 0.0.0.0:8081), DRY_RUN, LOG_LEVEL, LOG_FORMAT, ROLLOUT_METHOD, EMIT_EVENTS,"
        " ROLLOUT_HALTED_AFTER_SECONDS, REGISTRY_SCHEME, REGISTRY_CA_FILE, WATCH_CACHE,"
        " CACHE_RESYNC_SECONDS, TAG_PASS_INTERVAL_SECONDS, PLATFORM_AWARE; the guardrails"
        " ROLL_BUDGET_DELETIONS, ROLL_BUDGET_PERIOD_SECONDS, ROLL_BUDGET_IN_FLIGHT,"
        " ROLL_MIN_AGE_SECONDS, ROLL_WINDOW, ROLL_PAUSED, ROLL_HEALTHY_SECONDS (a replacement"
        " stays available, no restart, this long before the next pod goes; 0: off)"
        " (docs/adr/016-guardrails.md); the"
        " tenants WATCH_NAMESPACES, ALLOWED_NAMESPACES, ROLL_BUDGET_DELETIONS_PER_NAMESPACE,"
        " ROLL_BUDGET_IN_FLIGHT_PER_NAMESPACE, REGISTRY_LOOKUPS_PER_NAMESPACE"
        " (docs/adr/019-tenants-in-their-lane.md); notifications NOTIFY_URLS (or"
        " NOTIFY_URLS_FILE , Apprise URLs, one per line), NOTIFY_EVENTS, NOTIFY_THROTTLE_SECONDS;"
        " the quarantine's record QUARANTINE_CONFIGMAP, QUARANTINE_NAMESPACE"
        " (docs/adr/026-the-quarantine-lives-in-a-configmap.md); with several replicas"
        " LEADER_ELECTION,"
        " LEADER_ELECTION_NAMESPACE, LEADER_ELECTION_LEASE, POD_NAME and"
        " LEADER_ELECTION_{LEASE_DURATION,RENEW_DEADLINE,RETRY_PERIOD}_SECONDS"
        " (docs/adr/004-leader-election-and-webhook-handoff.md); the registries' webhook"
        " receivers, each on when its secret (or its file: <NAME>_FILE) is set (POST"
        " /webhook/<source>): "
        + ", ".join(f"{r.variable} ({r.variable}_FILE)" for r in RECEIVERS.values())
        + " (docs/adr/025-webhook-receivers.md); the pod-pinning webhook PINNING, PINNING_ADDR,"
        " PINNING_TLS, PINNING_TLS_DIR, PINNING_WEBHOOK_CONFIGURATION, PINNING_DNS_NAMES,"
        " PINNING_CERT_SECONDS (docs/adr/028-pinning-new-pods-at-admission.md).",
    )
    parser.add_argument("--version", action="version", version=f"autoroll {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.add_parser(
        "serve",
        help="run the controller: webhook + metrics server and the reconcile loop",
        description="Validate the environment, then serve /livez, /readyz and /healthz on"
        " PROBE_ADDR, /metrics, /webhook and /webhook/<source> (and the probes) on LISTEN_ADDR,"
        " and reconcile"
        " every POLL_INTERVAL_SECONDS (and on every valid webhook).",
    )
    plan = commands.add_parser(
        "plan",
        help="one dry-run pass (in the controller pod: its ServiceAccount; else the"
        " kubeconfig), printed as a table",
        description="Decide every enrolled workload once, delete nothing, and print a table:"
        " image, running digest(s), registry digest and verdict per container.",
    )
    plan.add_argument(
        "--kubeconfig",
        metavar="PATH",
        help="kubeconfig to use (default: $KUBECONFIG, else ~/.kube/config)",
    )
    plan.add_argument(
        "-v", "--verbose", action="store_true", help="also log every decision to stderr"
    )
    _quarantine_parser(commands)
    history = commands.add_parser(
        "history",
        help="what rolled when, from which digest to which, and why (from autoroll's Events)",
        description="Read autoroll's Events (kept by the API server for an hour by default) and"
        " print each roll's start, completion, halt and quarantine with its tag, digests and"
        " trigger. Uses your kubeconfig (events: list).",
    )
    history.add_argument("-n", "--namespace", help="one namespace (default: every namespace)")
    history.add_argument("--kubeconfig", metavar="PATH", help="kubeconfig to use")
    return parser


def _quarantine_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    quarantine = commands.add_parser(
        "quarantine",
        help="list the quarantined digests, or clear one (in the controller pod)",
        description="The digests that halted a roll, quarantined for their repository:tag"
        " (docs/adr/026). Reads QUARANTINE_CONFIGMAP in QUARANTINE_NAMESPACE, which the chart"
        " sets in the controller's pod: kubectl -n <namespace> exec deploy/<release>-autoroll"
        " -- autoroll quarantine list.",
    )
    quarantine.add_argument("--kubeconfig", metavar="PATH", help="kubeconfig to use")
    actions = quarantine.add_subparsers(dest="action", metavar="ACTION")
    actions.add_parser("list", help="every quarantined digest, cleared ones too")
    clear = actions.add_parser(
        "clear",
        help="let workloads roll onto a quarantined digest after all",
        description="Mark REPOSITORY:TAG's quarantine cleared: the controller's next full pass"
        " lets every workload on the tag roll onto that digest, and the same halt does not"
        " quarantine it again (until the tag moves).",
    )
    clear.add_argument("key", metavar="REPOSITORY:TAG", help="for example team/app:latest")


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    if args.command == "serve":
        return _serve(os.environ)
    if args.command == "plan":
        try:
            return _plan(os.environ, kubeconfig=args.kubeconfig, verbose=args.verbose)
        except KeyboardInterrupt:
            print("autoroll plan: interrupted", file=sys.stderr)
            return 130
    if args.command == "quarantine":
        if args.action is None:
            parser.parse_args(["quarantine", "--help"])
        key = getattr(args, "key", "")
        return _quarantine(os.environ, action=args.action, key=key, kubeconfig=args.kubeconfig)
    if args.command == "history":
        return _history(os.environ, namespace=args.namespace, kubeconfig=args.kubeconfig)
    parser.error(f"unknown command {args.command!r}")  # pragma: no cover - argparse guards
    return EXIT_USAGE  # pragma: no cover


def _load_config(env: Mapping[str, str]) -> Config | None:
    try:
        return Config.from_env(env)
    except ConfigError as exc:
        # ConfigError never contains a secret's value (see autoroll.config).
        print(f"autoroll: {exc}", file=sys.stderr)
        print(
            "autoroll: set the variables above in the environment (see `autoroll --help`)",
            file=sys.stderr,
        )
        return None


def _serve(env: Mapping[str, str]) -> int:
    config = _load_config(env)
    if config is None:
        return EXIT_USAGE
    logs.configure(
        level=config.log_level, log_format=config.log_format, secrets=log_secrets(config)
    )
    settings = " ".join(f"{k}={v}" for k, v in config.redacted().items())
    log.info("autoroll %s starting: %s", __version__, settings)
    log.info("registry proxies: %s", proxies_in_use(env))
    if config.dry_run:
        log.warning("DRY_RUN=true: stale pods are logged, never deleted")
    if config.guardrails.paused:
        log.warning("ROLL_PAUSED=true: rolling is paused cluster-wide; nothing is deleted")
    if config.quarantine.configmap is None:
        log.warning(
            "QUARANTINE_CONFIGMAP is unset: quarantined digests are kept in memory and"
            " forgotten on a restart or a change of leader (the chart sets it)"
        )
    if config.notifications.enabled:
        try:
            AppriseNotifier(config.notifications.url_lines())
        except NotifyConfigError as exc:  # names the line, never the URL
            print(f"autoroll: {exc}", file=sys.stderr)
            return EXIT_USAGE
    return serve(config)


def _plan(env: Mapping[str, str], *, kubeconfig: str | None, verbose: bool) -> int:
    plan_env = _with_kubeconfig(env, kubeconfig)
    if "WEBHOOK_SECRET_FILE" not in plan_env:
        plan_env.setdefault("WEBHOOK_SECRET", _PLAN_WEBHOOK_PLACEHOLDER)
    config = _load_config(plan_env)
    if config is None:
        return EXIT_USAGE
    logs.configure(
        level=str(config.log_level) if verbose else "warning",
        log_format=config.log_format,
        secrets=log_secrets(config),
    )

    cluster = KubeCluster(
        label_selector=config.label_selector,
        api_client_factory=lambda: connect(plan_env),
        platform_aware=config.platform_aware,
        kinds=config.workload_kinds,
        namespaces=config.tenancy.namespaces,
        namespaced=config.tenancy.namespaced,
    )
    registry = registry_pool(config, on_secret=logs.redact_also)
    credentials = pull_credentials(
        config,
        secrets=KubeSecrets(api_client_factory=lambda: connect(plan_env)),
        on_secret=logs.redact_also,
    )
    book = ApprovalBook() if config.pinning is not None else None
    try:
        record = config.quarantine
        store = (
            KubeQuarantine(
                namespace=record.namespace,
                name=record.configmap,
                api_client_factory=lambda: connect(plan_env),
            )
            if record.configmap
            else None
        )
        report = run_plan(
            cluster=cluster,
            registry=registry,
            credentials=credentials,
            registries=config.registry_hosts,
            guardrails=config.guardrails,
            nodes=cluster,
            lookups_per_namespace=config.tenancy.lookups_per_namespace,
            quarantine=store,
            approvals=book,
        )
    except ClusterError as exc:
        return _cluster_failed("plan", exc)
    sys.stdout.write(
        render(
            report,
            label_selector=config.label_selector,
            kinds=config.workload_kinds,
            approvals=book,
        )
    )
    return EXIT_OK


def _quarantine(env: Mapping[str, str], *, action: str, key: str, kubeconfig: str | None) -> int:
    """``autoroll quarantine list|clear``: the record the controller keeps (docs/adr/026)."""
    reader = Reader(env)
    record = read_quarantine(reader)
    if reader.problems:
        print(f"autoroll quarantine: {ConfigError(reader.problems)}", file=sys.stderr)
        return EXIT_USAGE
    if record.configmap is None:
        print(
            "autoroll quarantine: QUARANTINE_CONFIGMAP is not set; run it in the controller's"
            " pod (kubectl -n <namespace> exec deploy/<release>-autoroll -- autoroll quarantine"
            " list), where the chart sets it, or set QUARANTINE_CONFIGMAP and"
            " QUARANTINE_NAMESPACE",
            file=sys.stderr,
        )
        return EXIT_USAGE
    local = _with_kubeconfig(env, kubeconfig)
    store = KubeQuarantine(
        namespace=record.namespace,
        name=record.configmap,
        api_client_factory=lambda: connect(local),
    )
    try:
        if action == "list":
            sys.stdout.write(list_text(store.load()))
            return EXIT_OK
        return _clear(store, key)
    except (ClusterError, QuarantineConflictError) as exc:
        return _cluster_failed("quarantine", exc)


def _clear(store: KubeQuarantine, key: str) -> int:
    try:
        parsed = QuarantineKey.parse(key)
    except ValueError as exc:
        print(f"autoroll quarantine clear: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        sys.stdout.write(clear_in(store, parsed))
    except KeyError:
        print(f"autoroll quarantine clear: nothing is quarantined for {parsed}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    return EXIT_OK


def _history(env: Mapping[str, str], *, namespace: str | None, kubeconfig: str | None) -> int:
    local = _with_kubeconfig(env, kubeconfig)
    try:
        rows = read_history(namespace=namespace, api_client_factory=lambda: connect(local))
    except ClusterError as exc:
        return _cluster_failed("history", exc)
    sys.stdout.write(history_text(rows))
    return EXIT_OK


def _with_kubeconfig(env: Mapping[str, str], kubeconfig: str | None) -> dict[str, str]:
    """The command's own copy of ``env``, with ``--kubeconfig`` (when given) as KUBECONFIG."""
    local = dict(env)
    if kubeconfig is not None:
        local["KUBECONFIG"] = kubeconfig
    return local


def _cluster_failed(command: str, exc: Exception) -> int:
    """Say why ``command`` could not reach the cluster: exit 2 for the kubeconfig (a user
    error), 1 for a cluster that could not be reached or refused us (module docstring)."""
    print(f"autoroll {command}: {exc}", file=sys.stderr)
    return EXIT_USAGE if isinstance(exc, ClusterConfigError) else EXIT_UNAVAILABLE
