"""The controller's configuration: one frozen object built from the environment.

``Config.from_env(os.environ)`` reads every variable once, checks all of them, and raises
one ``ConfigError`` listing every problem (variable, offending value — never for a secret —
and the expected form), so a broken Deployment is fixed in one edit, not one per restart.
Secrets are wrapped in ``Secret``, whose repr and str never show the value; ``redacted()``
is the view logged once at startup.

The settings blocks live in modules of their own (``leader``: ``LEADER_ELECTION*``,
``guardrails``: ``ROLL_*``, ``receivers``: the registries' webhook secrets, ``choices``: the
enumerated settings), on the shared ``reader``
(unset means the default, set-but-empty is an error), ``parsers`` and ``errors``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from autoroll.config.choices import (
    LogFormat,
    LogLevel,
    RegistryScheme,
    RolloutMethod,
    enum_parser,
)
from autoroll.config.errors import ConfigError, Problem, Secret
from autoroll.config.guardrails import read_guardrails, redacted_guardrails
from autoroll.config.leader import LeaderElection, read_leader_election, redacted_election
from autoroll.config.parsers import (
    ALL_KINDS,
    check_nonblank,
    check_webhook_secret,
    parse_bool,
    parse_ca_file,
    parse_forgejo_host,
    parse_interval,
    parse_kinds,
    parse_listen_addr,
    parse_nonblank,
    parse_pass_timeout,
    parse_resync,
    parse_selector,
    parse_tag_interval,
)
from autoroll.config.reader import Reader, read_secret_file
from autoroll.config.receivers import Receivers, read_receivers, redacted_receivers
from autoroll.config.registries import RegistrySettings, read_registries, redacted_registries
from autoroll.config.tenancy import Tenancy, read_tenancy, redacted_tenancy
from autoroll.core.model import WorkloadKind
from autoroll.core.policy import Guardrails

# Only Config: every other name has its own module (config.errors, config.choices, ...).
__all__ = ["Config"]


@dataclass(frozen=True, slots=True)
class Config:
    """Effective configuration. Units are in the names; defaults say why in ``from_env``."""

    #: the Forgejo shorthand's bare host[:port] (None: only REGISTRIES); its package webhooks
    #: name tags on it
    forgejo_host: str | None
    forgejo_user: str  # the user that owns the token (HTTP Basic user name); "" without one
    forgejo_token: Secret  # read:package token (HTTP Basic password); "" without one
    webhook_secret: Secret  # HMAC-SHA256 key for POST /webhook
    poll_interval_seconds: int = 120  # a missed webhook is noticed within two minutes
    #: a pass still running after this is told to stop between Deployments, and /livez fails
    #: once no pass finished for poll interval + this + one API call: a stuck loop restarts
    pass_timeout_seconds: int = 300
    label_selector: str = "aethnet.se/autoroll=true"  # on the workload object, not the pods
    #: the kinds listed each pass (one list request each) and granted by the chart's RBAC
    workload_kinds: tuple[WorkloadKind, ...] = tuple(WorkloadKind)
    listen_host: str = "0.0.0.0"  # all interfaces: probes and webhooks arrive via the pod IP
    listen_port: int = 8080
    #: /livez, /readyz and /healthz on a listener and threads of their own, so clients of the
    #: webhook port (slow ones included) can never delay a kubelet probe (autoroll.edge.probes)
    probe_host: str = "0.0.0.0"
    probe_port: int = 8081
    dry_run: bool = False  # log intended deletions, delete nothing
    log_level: LogLevel = LogLevel.INFO
    log_format: LogFormat = LogFormat.TEXT
    rollout_method: RolloutMethod = RolloutMethod.DELETE  # delete needs the least RBAC
    emit_events: bool = False  # Kubernetes Events need another RBAC verb: opt in
    registry_scheme: RegistryScheme = RegistryScheme.HTTPS  # http only for local registries
    # PEM CA file trusted beside the default roots (a Forgejo behind a private CA); None: the
    # default roots alone. Checked to load at startup.
    registry_ca_file: str | None = None
    leader_election: LeaderElection | None = None  # None: one replica, reconciles alone
    #: the cluster-wide budget, min-age, window and pause (autoroll.core.policy; defaults and why
    #: in docs/adr/016-guardrails.md)
    guardrails: Guardrails = field(default_factory=Guardrails)
    #: read each pod's node platform (nodes: list), so a multi-arch push that leaves a
    #: platform unchanged restarts none of its pods; off: such pods are platform-unknown
    platform_aware: bool = False
    #: enrolled workloads and their pods kept in memory from watches: a pass finds its work
    #: without listing, a webhook's pass looks at its tag's workloads only, and a roll goes
    #: on as soon as a replacement is Ready; deletions are still decided on a fresh read
    watch_cache: bool = True
    #: the cache lists everything again this often, in case a watch ever missed an event
    cache_resync_seconds: int = 1800
    # A rollout stuck this long behind a pod that is not Ready is reported as halted (WARNING,
    # metric, Event): long enough for a slow start, short enough that a broken release is
    # noticed the same hour.
    rollout_halted_after_seconds: int = 600
    #: which namespaces are rolled, how they are reached, their share of registry lookups
    #: (autoroll.config.tenancy)
    tenancy: Tenancy = field(default_factory=Tenancy)
    #: webhook deliveries for one repository:tag start at most one pass per this many
    #: seconds (the rest wait for its end, autoroll.core.debounce): a burst costs two passes,
    #: a second push within it waits at most this long; 0 turns the debounce off
    tag_pass_interval_seconds: int = 5
    #: every registry asked, the Forgejo shorthand's first (autoroll.config.registries); only
    #: images on these hosts are rolled
    registries: tuple[RegistrySettings, ...] = ()
    #: the registries' webhook receivers that are on, each with its secret
    #: (autoroll.config.receivers; docs/adr/025-webhook-receivers.md)
    receivers: Receivers = field(default_factory=Receivers)

    @property
    def listen_addr(self) -> str:
        return f"{self.listen_host}:{self.listen_port}"

    @property
    def probe_addr(self) -> str:
        return f"{self.probe_host}:{self.probe_port}"

    @property
    def registry_hosts(self) -> frozenset[str]:
        """The configured registries' hosts (``registry_host``-ed): only their images roll."""
        return frozenset(r.host for r in self.registries)

    @property
    def pull_secret_hosts(self) -> frozenset[str]:
        """The registries asked with the pods' pull secrets (the chart grants secrets: get)."""
        return frozenset(r.host for r in self.registries if r.pull_secrets)

    @property
    def registry_url(self) -> str:
        """Base URL of the Forgejo shorthand's registry API (no trailing slash)."""
        return f"{self.registry_scheme}://{self.forgejo_host}"

    @classmethod
    def from_env(
        cls, env: Mapping[str, str], *, read_file: Callable[[str], str] = read_secret_file
    ) -> Config:
        """Build the config from ``env``; raise ``ConfigError`` naming every bad variable.

        ``FORGEJO_TOKEN`` and ``WEBHOOK_SECRET`` may each come from a file instead
        (``FORGEJO_TOKEN_FILE``, ``WEBHOOK_SECRET_FILE``; ``config.reader``), read with
        ``read_file``, as are the registries' Secret files (``config.registries``). The
        Forgejo shorthand (``FORGEJO_HOST``, ``FORGEJO_USER``, ``FORGEJO_TOKEN``) is required
        unless ``REGISTRIES`` names the registries.
        """
        reader = Reader(env, read_file=read_file)
        shorthand = "FORGEJO_HOST" in env or "REGISTRIES" not in env
        host = user = token = None
        if shorthand:
            # The Forgejo shorthand: required unless REGISTRIES names the registries.
            host = reader.required("FORGEJO_HOST", parse_forgejo_host)
            user = reader.required("FORGEJO_USER", parse_nonblank)
            token = reader.required_secret("FORGEJO_TOKEN", check_nonblank)
        secret = reader.required_secret("WEBHOOK_SECRET", check_webhook_secret)
        poll = reader.optional("POLL_INTERVAL_SECONDS", 120, parse_interval)
        pass_timeout = reader.optional("PASS_TIMEOUT_SECONDS", 300, parse_pass_timeout)
        selector = reader.optional("LABEL_SELECTOR", "aethnet.se/autoroll=true", parse_selector)
        kinds_text = reader.optional("WORKLOAD_KINDS", ALL_KINDS, parse_kinds)
        kinds = tuple(WorkloadKind(k) for k in kinds_text.split(","))
        listen = reader.optional("LISTEN_ADDR", ("0.0.0.0", 8080), parse_listen_addr)
        probe = reader.optional(
            "PROBE_ADDR", ("0.0.0.0", 8081), parse_listen_addr, default_text="0.0.0.0:8081"
        )
        if probe[1] == listen[1]:
            reader.problems.append(
                Problem(
                    "PROBE_ADDR",
                    f"{probe[0]}:{probe[1]} uses LISTEN_ADDR's port {listen[1]}; give the probes"
                    " a port of their own (PROBE_ADDR, 8081 unless set)",
                )
            )
        dry_run = reader.optional("DRY_RUN", False, parse_bool)
        level = reader.optional("LOG_LEVEL", LogLevel.INFO, enum_parser(LogLevel))
        fmt = reader.optional("LOG_FORMAT", LogFormat.TEXT, enum_parser(LogFormat))
        method = reader.optional("ROLLOUT_METHOD", RolloutMethod.DELETE, enum_parser(RolloutMethod))
        events = reader.optional("EMIT_EVENTS", False, parse_bool)
        scheme = reader.optional(
            "REGISTRY_SCHEME", RegistryScheme.HTTPS, enum_parser(RegistryScheme)
        )
        ca_file = reader.optional(
            "REGISTRY_CA_FILE", None, parse_ca_file, default_text="(the default roots alone)"
        )
        halted_after = reader.optional("ROLLOUT_HALTED_AFTER_SECONDS", 600, parse_interval)
        election = read_leader_election(reader)
        guardrails = read_guardrails(reader)
        platform_aware = reader.optional("PLATFORM_AWARE", False, parse_bool)
        watch_cache = reader.optional("WATCH_CACHE", True, parse_bool)
        resync = reader.optional("CACHE_RESYNC_SECONDS", 1800, parse_resync)
        tenancy = read_tenancy(reader)
        tag_interval = reader.optional("TAG_PASS_INTERVAL_SECONDS", 5, parse_tag_interval)
        registries = read_registries(reader, forgejo_host=host, scheme=scheme, ca_file=ca_file)
        receivers = read_receivers(reader)
        if reader.problems:
            raise ConfigError(reader.problems)
        assert secret is not None
        assert not shorthand or (host is not None and user is not None and token is not None)
        return cls(
            forgejo_host=host,
            forgejo_user=user or "",
            forgejo_token=token or Secret(""),
            webhook_secret=secret,
            poll_interval_seconds=poll,
            pass_timeout_seconds=pass_timeout,
            label_selector=selector,
            workload_kinds=kinds,
            listen_host=listen[0],
            listen_port=listen[1],
            probe_host=probe[0],
            probe_port=probe[1],
            dry_run=dry_run,
            log_level=level,
            log_format=fmt,
            rollout_method=method,
            emit_events=events,
            registry_scheme=scheme,
            registry_ca_file=ca_file,
            leader_election=election,
            guardrails=guardrails,
            platform_aware=platform_aware,
            watch_cache=watch_cache,
            cache_resync_seconds=resync,
            rollout_halted_after_seconds=halted_after,
            tenancy=tenancy,
            tag_pass_interval_seconds=tag_interval,
            registries=registries,
            receivers=receivers,
        )

    def redacted(self) -> dict[str, str]:
        """The effective configuration by variable name, secrets replaced, for one log line."""
        return {
            "FORGEJO_HOST": self.forgejo_host or "",
            "FORGEJO_USER": self.forgejo_user,
            "FORGEJO_TOKEN": "<redacted>" if self.forgejo_token.reveal() else "",
            "WEBHOOK_SECRET": "<redacted>",
            "POLL_INTERVAL_SECONDS": str(self.poll_interval_seconds),
            "PASS_TIMEOUT_SECONDS": str(self.pass_timeout_seconds),
            "LABEL_SELECTOR": self.label_selector,
            "WORKLOAD_KINDS": ",".join(self.workload_kinds),
            "LISTEN_ADDR": self.listen_addr,
            "PROBE_ADDR": self.probe_addr,
            "DRY_RUN": str(self.dry_run).lower(),
            "LOG_LEVEL": str(self.log_level),
            "LOG_FORMAT": str(self.log_format),
            "ROLLOUT_METHOD": str(self.rollout_method),
            "EMIT_EVENTS": str(self.emit_events).lower(),
            "REGISTRY_SCHEME": str(self.registry_scheme),
            "REGISTRY_CA_FILE": self.registry_ca_file or "",
            "WATCH_CACHE": str(self.watch_cache).lower(),
            "CACHE_RESYNC_SECONDS": str(self.cache_resync_seconds),
            "ROLLOUT_HALTED_AFTER_SECONDS": str(self.rollout_halted_after_seconds),
            **redacted_election(self.leader_election),
            **redacted_guardrails(self.guardrails),
            "PLATFORM_AWARE": str(self.platform_aware).lower(),
            **redacted_tenancy(self.tenancy),
            "TAG_PASS_INTERVAL_SECONDS": str(self.tag_pass_interval_seconds),
            **redacted_registries(self.registries),
            **redacted_receivers(self.receivers),
        }
