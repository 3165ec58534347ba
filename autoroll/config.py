"""The controller's configuration: one frozen object built from the environment.

``Config.from_env(os.environ)`` reads every variable once, checks all of them, and raises
one ``ConfigError`` listing every problem (variable, offending value — never for a secret —
and the expected form), so a broken Deployment is fixed in one edit, not one per restart.
Secrets are wrapped in ``Secret``, whose repr and str never show the value; ``redacted()``
is the view logged once at startup.

Unset means "use the default"; a variable that is set but empty is an error, because an
empty ``DRY_RUN`` silently meaning ``false`` is exactly the surprise we want to avoid.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Final, TypeVar

from autoroll.model import WorkloadKind

T = TypeVar("T")

#: A webhook secret shorter than this is guessable enough to forge signatures offline.
MIN_WEBHOOK_SECRET_BYTES: Final = 16

_HOST_PORT: Final = re.compile(
    r"(?P<host>[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*"
    r"|\[[0-9A-Fa-f:.]+\])(?::(?P<port>[0-9]{1,5}))?"
)
#: A Kubernetes object name (DNS-1123 subdomain) and a namespace (DNS-1123 label).
_DNS_LABEL: Final = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS_SUBDOMAIN: Final = re.compile(rf"{_DNS_LABEL.pattern}(\.{_DNS_LABEL.pattern})*")
#: Least gap, in seconds, between the renew deadline and the lease duration: the time a
#: deletion already past its leadership check may still take before another replica could
#: hold the lease (see docs/adr/004-leader-election-and-webhook-handoff.md).
MIN_LEASE_SAFETY_GAP_SECONDS: Final = 1.0
#: WORKLOAD_KINDS by default: every kind autoroll can roll.
ALL_KINDS: Final = ",".join(WorkloadKind)
_TRUE: Final = frozenset({"true", "1", "yes", "on"})
_FALSE: Final = frozenset({"false", "0", "no", "off"})


class LogFormat(StrEnum):
    TEXT = "text"
    JSON = "json"


class LogLevel(StrEnum):
    DEBUG = "debug"
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


class RolloutMethod(StrEnum):
    """How a stale pod is removed: a plain delete, or an eviction that honours PDBs."""

    DELETE = "delete"
    EVICT = "evict"


class RegistryScheme(StrEnum):
    HTTPS = "https"
    HTTP = "http"


class Secret:
    """A string that never prints itself. Call ``reveal()`` where the value is really needed.

    Deliberately not a dataclass: ``dataclasses.asdict``/``astuple`` on ``Config`` would
    otherwise recurse into it and copy the value out.
    """

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def reveal_bytes(self) -> bytes:
        return self._value.encode("utf-8")

    def __repr__(self) -> str:
        return "Secret('<redacted>')"

    def __str__(self) -> str:
        return "<redacted>"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


@dataclass(frozen=True, slots=True)
class Problem:
    """One bad variable: its name, what is wrong, and what would be right."""

    variable: str
    message: str

    def __str__(self) -> str:
        return f"{self.variable}: {self.message}"


class ConfigError(Exception):
    """Every configuration problem found, reported together."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems: tuple[Problem, ...] = tuple(problems)
        super().__init__(str(self))

    def __str__(self) -> str:
        lines = "\n".join(f"  - {p}" for p in self.problems)
        return f"invalid configuration ({len(self.problems)} problem(s)):\n{lines}"


@dataclass(frozen=True, slots=True)
class LeaderElection:
    """Lease-based leader election between replicas (``LEADER_ELECTION=true``).

    Timings follow client-go's defaults: another replica may take the lease only after it
    has seen it unchanged for ``lease_duration_seconds``; the leader stops acting once
    ``renew_deadline_seconds`` have passed since its last successful renew began; it tries
    every ``retry_period_seconds``. ``renew deadline < lease duration`` is the safety margin.
    """

    namespace: str  # the controller's own namespace; the chart's Role is there
    lease_name: str  # must match the Role's resourceNames
    identity: str | None = None  # POD_NAME; None means hostname-pid, chosen at startup
    lease_duration_seconds: float = 15.0  # leadership moves within this after a crash
    renew_deadline_seconds: float = 10.0  # the leader stops deleting this long after a renew
    retry_period_seconds: float = 2.0  # renew/acquire attempts; also the API load per replica


@dataclass(frozen=True, slots=True)
class Config:
    """Effective configuration. Units are in the names; defaults say why in ``from_env``."""

    forgejo_host: str  # bare host[:port]; the registry to ask and the image-host filter
    forgejo_user: str  # the user that owns the token (HTTP Basic user name)
    forgejo_token: Secret  # read:package token (HTTP Basic password)
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
    dry_run: bool = False  # log intended deletions, delete nothing
    log_level: LogLevel = LogLevel.INFO
    log_format: LogFormat = LogFormat.TEXT
    rollout_method: RolloutMethod = RolloutMethod.DELETE  # delete needs the least RBAC
    emit_events: bool = False  # Kubernetes Events need another RBAC verb: opt in
    registry_scheme: RegistryScheme = RegistryScheme.HTTPS  # http only for local registries
    leader_election: LeaderElection | None = None  # None: one replica, reconciles alone
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

    @property
    def listen_addr(self) -> str:
        return f"{self.listen_host}:{self.listen_port}"

    @property
    def registry_url(self) -> str:
        """Base URL of the registry API (no trailing slash)."""
        return f"{self.registry_scheme}://{self.forgejo_host}"

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Config:
        """Build the config from ``env``; raise ``ConfigError`` naming every bad variable."""
        reader = _Reader(env)
        host = reader.required("FORGEJO_HOST", _parse_forgejo_host)
        user = reader.required("FORGEJO_USER", _parse_nonblank)
        token = reader.required_secret("FORGEJO_TOKEN", _check_nonblank)
        secret = reader.required_secret("WEBHOOK_SECRET", _check_webhook_secret)
        poll = reader.optional("POLL_INTERVAL_SECONDS", 120, _parse_interval)
        pass_timeout = reader.optional("PASS_TIMEOUT_SECONDS", 300, _parse_pass_timeout)
        selector = reader.optional("LABEL_SELECTOR", "aethnet.se/autoroll=true", _parse_selector)
        kinds_text = reader.optional("WORKLOAD_KINDS", ALL_KINDS, _parse_kinds)
        kinds = tuple(WorkloadKind(k) for k in kinds_text.split(","))
        listen = reader.optional("LISTEN_ADDR", ("0.0.0.0", 8080), _parse_listen_addr)
        dry_run = reader.optional("DRY_RUN", False, _parse_bool)
        level = reader.optional("LOG_LEVEL", LogLevel.INFO, _enum_parser(LogLevel))
        fmt = reader.optional("LOG_FORMAT", LogFormat.TEXT, _enum_parser(LogFormat))
        method = reader.optional(
            "ROLLOUT_METHOD", RolloutMethod.DELETE, _enum_parser(RolloutMethod)
        )
        events = reader.optional("EMIT_EVENTS", False, _parse_bool)
        scheme = reader.optional(
            "REGISTRY_SCHEME", RegistryScheme.HTTPS, _enum_parser(RegistryScheme)
        )
        halted_after = reader.optional("ROLLOUT_HALTED_AFTER_SECONDS", 600, _parse_interval)
        election = _read_leader_election(reader)
        watch_cache = reader.optional("WATCH_CACHE", True, _parse_bool)
        resync = reader.optional("CACHE_RESYNC_SECONDS", 1800, _parse_resync)
        if reader.problems:
            raise ConfigError(reader.problems)
        assert host is not None and user is not None and token is not None and secret is not None
        return cls(
            forgejo_host=host,
            forgejo_user=user,
            forgejo_token=token,
            webhook_secret=secret,
            poll_interval_seconds=poll,
            pass_timeout_seconds=pass_timeout,
            label_selector=selector,
            workload_kinds=kinds,
            listen_host=listen[0],
            listen_port=listen[1],
            dry_run=dry_run,
            log_level=level,
            log_format=fmt,
            rollout_method=method,
            emit_events=events,
            registry_scheme=scheme,
            leader_election=election,
            watch_cache=watch_cache,
            cache_resync_seconds=resync,
            rollout_halted_after_seconds=halted_after,
        )

    def redacted(self) -> dict[str, str]:
        """The effective configuration by variable name, secrets replaced, for one log line."""
        return {
            "FORGEJO_HOST": self.forgejo_host,
            "FORGEJO_USER": self.forgejo_user,
            "FORGEJO_TOKEN": "<redacted>",
            "WEBHOOK_SECRET": "<redacted>",
            "POLL_INTERVAL_SECONDS": str(self.poll_interval_seconds),
            "PASS_TIMEOUT_SECONDS": str(self.pass_timeout_seconds),
            "LABEL_SELECTOR": self.label_selector,
            "WORKLOAD_KINDS": ",".join(self.workload_kinds),
            "LISTEN_ADDR": self.listen_addr,
            "DRY_RUN": str(self.dry_run).lower(),
            "LOG_LEVEL": str(self.log_level),
            "LOG_FORMAT": str(self.log_format),
            "ROLLOUT_METHOD": str(self.rollout_method),
            "EMIT_EVENTS": str(self.emit_events).lower(),
            "REGISTRY_SCHEME": str(self.registry_scheme),
            "WATCH_CACHE": str(self.watch_cache).lower(),
            "CACHE_RESYNC_SECONDS": str(self.cache_resync_seconds),
            "ROLLOUT_HALTED_AFTER_SECONDS": str(self.rollout_halted_after_seconds),
            **_redacted_election(self.leader_election),
        }


def _read_leader_election(reader: _Reader) -> LeaderElection | None:
    """The ``LEADER_ELECTION*`` variables; None when election is off (the default).

    The timing variables are read (and checked) even when election is off, so a typo is
    reported instead of silently ignored.
    """
    enabled = reader.optional("LEADER_ELECTION", False, _parse_bool)
    duration = reader.optional("LEADER_ELECTION_LEASE_DURATION_SECONDS", 15.0, _parse_seconds)
    deadline = reader.optional("LEADER_ELECTION_RENEW_DEADLINE_SECONDS", 10.0, _parse_seconds)
    retry = reader.optional("LEADER_ELECTION_RETRY_PERIOD_SECONDS", 2.0, _parse_seconds)
    identity = reader.optional("POD_NAME", None, _parse_nonblank)
    lease = reader.optional("LEADER_ELECTION_LEASE", "autoroll", _parse_object_name)
    namespace: str | None = reader.optional("LEADER_ELECTION_NAMESPACE", None, _parse_namespace)
    if duration - deadline < MIN_LEASE_SAFETY_GAP_SECONDS:
        reader.problems.append(
            Problem(
                "LEADER_ELECTION_RENEW_DEADLINE_SECONDS",
                f"{deadline:g} must be at least {MIN_LEASE_SAFETY_GAP_SECONDS:g}s below"
                f" LEADER_ELECTION_LEASE_DURATION_SECONDS ({duration:g}): a leader must stop"
                " deleting before another replica can take the lease",
            )
        )
    if retry * 2 > deadline:
        reader.problems.append(
            Problem(
                "LEADER_ELECTION_RETRY_PERIOD_SECONDS",
                f"{retry:g} must be at most half of LEADER_ELECTION_RENEW_DEADLINE_SECONDS"
                f" ({deadline:g}), so a leader gets at least two renew attempts",
            )
        )
    if not enabled:
        return None
    if namespace is None:
        if "LEADER_ELECTION_NAMESPACE" in reader.env:
            return None  # set but invalid: already reported
        reader.problems.append(
            Problem(
                "LEADER_ELECTION_NAMESPACE",
                "is required when LEADER_ELECTION=true; set it to the controller's namespace"
                " (the chart sets it from the release namespace)",
            )
        )
        return None
    return LeaderElection(
        namespace=namespace,
        lease_name=lease,
        identity=identity,
        lease_duration_seconds=duration,
        renew_deadline_seconds=deadline,
        retry_period_seconds=retry,
    )


def _redacted_election(election: LeaderElection | None) -> dict[str, str]:
    if election is None:
        return {"LEADER_ELECTION": "false"}
    return {
        "LEADER_ELECTION": "true",
        "LEADER_ELECTION_NAMESPACE": election.namespace,
        "LEADER_ELECTION_LEASE": election.lease_name,
        "LEADER_ELECTION_LEASE_DURATION_SECONDS": f"{election.lease_duration_seconds:g}",
        "LEADER_ELECTION_RENEW_DEADLINE_SECONDS": f"{election.renew_deadline_seconds:g}",
        "LEADER_ELECTION_RETRY_PERIOD_SECONDS": f"{election.retry_period_seconds:g}",
        "POD_NAME": election.identity or "<unset: hostname-pid>",
    }


# --------------------------------------------------------------------------------------------
# Parsers: each returns the value or raises ValueError with the expected form.


class _Reader:
    """Collects problems instead of stopping at the first one."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self.env = env
        self.problems: list[Problem] = []

    def required(self, name: str, parse: Callable[[str], T]) -> T | None:
        raw = self.env.get(name)
        if raw is None or raw == "":
            self.problems.append(Problem(name, "is required but not set"))
            return None
        try:
            return parse(raw)
        except ValueError as exc:
            self.problems.append(Problem(name, f"{raw!r} is invalid: {exc}"))
            return None

    def required_secret(self, name: str, check: Callable[[str], None]) -> Secret | None:
        raw = self.env.get(name)
        if raw is None or raw == "":
            self.problems.append(Problem(name, "is required but not set"))
            return None
        try:
            check(raw)
        except ValueError as exc:
            # The value of a secret is never echoed, not even a bad one.
            self.problems.append(Problem(name, f"(value not shown) is invalid: {exc}"))
            return None
        return Secret(raw)

    def optional(self, name: str, default: T, parse: Callable[[str], T]) -> T:
        raw = self.env.get(name)
        if raw is None:
            return default
        if raw == "":
            self.problems.append(
                Problem(name, f"is set but empty; unset it for the default {default!s}")
            )
            return default
        try:
            return parse(raw)
        except ValueError as exc:
            self.problems.append(Problem(name, f"{raw!r} is invalid: {exc}"))
            return default


def _parse_forgejo_host(raw: str) -> str:
    if "://" in raw or "/" in raw:
        raise ValueError(
            "expected a bare host[:port] such as forgejo.example.org, without scheme or path"
        )
    match = _HOST_PORT.fullmatch(raw)
    if match is None:
        raise ValueError(
            "expected a bare host[:port] such as forgejo.example.org or forgejo.local:3000"
        )
    port = match.group("port")
    if port is not None and not 1 <= int(port) <= 65535:
        raise ValueError("port must be 1-65535")
    return raw.lower()


def _parse_nonblank(raw: str) -> str:
    if raw.strip() != raw or not raw:
        raise ValueError("expected a non-empty value without surrounding whitespace")
    return raw


def _check_nonblank(raw: str) -> None:
    if raw.strip() != raw:
        raise ValueError("has surrounding whitespace (a trailing newline from a file?)")


def _check_webhook_secret(raw: str) -> None:
    _check_nonblank(raw)
    size = len(raw.encode("utf-8"))
    if size < MIN_WEBHOOK_SECRET_BYTES:
        raise ValueError(
            f"is {size} bytes; expected at least {MIN_WEBHOOK_SECRET_BYTES}"
            " (e.g. the output of openssl rand -hex 32)"
        )


def _parse_interval(raw: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise ValueError("expected a whole number of seconds, 5 to 86400") from None
    if not 5 <= value <= 86400:
        raise ValueError("expected a whole number of seconds, 5 to 86400")
    return value


def _parse_pass_timeout(raw: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise ValueError("expected a whole number of seconds, 5 to 3600") from None
    if not 5 <= value <= 3600:
        raise ValueError("expected a whole number of seconds, 5 to 3600")
    return value


def _parse_resync(raw: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise ValueError("expected a whole number of seconds, 60 to 86400") from None
    if not 60 <= value <= 86400:
        raise ValueError("expected a whole number of seconds, 60 to 86400")
    return value


def _parse_seconds(raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise ValueError("expected a number of seconds, 0.1 to 300") from None
    if not 0.1 <= value <= 300:  # also rejects nan and inf
        raise ValueError("expected a number of seconds, 0.1 to 300")
    return value


def _parse_object_name(raw: str) -> str:
    if len(raw) > 253 or not _DNS_SUBDOMAIN.fullmatch(raw):
        raise ValueError(
            "expected a Kubernetes object name: lowercase letters, digits, '-' and '.',"
            " at most 253 characters"
        )
    return raw


def _parse_namespace(raw: str) -> str:
    if len(raw) > 63 or not _DNS_LABEL.fullmatch(raw):
        raise ValueError(
            "expected a namespace name: lowercase letters, digits and '-', at most 63 characters"
        )
    return raw


def _parse_selector(raw: str) -> str:
    requirements = [part.strip() for part in raw.split(",")]
    if any(not part for part in requirements):
        raise ValueError(
            "expected a label selector such as aethnet.se/autoroll=true (no empty terms)"
        )
    return raw


def _parse_kinds(raw: str) -> str:
    """Kind names, comma-separated, any case: returned canonical (lowercase, in the order of
    ``WorkloadKind``), each named once."""
    expected = ALL_KINDS
    kinds: list[WorkloadKind] = []
    for part in raw.split(","):
        name = part.strip().lower()
        try:
            kind = WorkloadKind(name)
        except ValueError:
            raise ValueError(
                f"{part.strip()!r} is not a workload kind; expected a comma-separated list of"
                f" {expected} (e.g. {expected})"
            ) from None
        if kind in kinds:
            raise ValueError(f"{kind} is listed twice; name each kind once")
        kinds.append(kind)
    # One order whatever the spelling, so logs and requests are stable.
    return ",".join(k for k in WorkloadKind if k in kinds)


def _parse_listen_addr(raw: str) -> tuple[str, int]:
    host, colon, port = raw.rpartition(":")
    if not colon or not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise ValueError("expected host:port such as 0.0.0.0:8080 or [::]:8080")
    if not _HOST_PORT.fullmatch(host):
        raise ValueError("expected host:port such as 0.0.0.0:8080 or [::]:8080")
    return host, int(port)


def _parse_bool(raw: str) -> bool:
    lowered = raw.lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ValueError("expected true or false")


E = TypeVar("E", bound=StrEnum)


def _enum_parser(kind: type[E]) -> Callable[[str], E]:
    def parse(raw: str) -> E:
        try:
            return kind(raw.lower())
        except ValueError:
            raise ValueError(f"expected one of {'|'.join(m.value for m in kind)}") from None

    return parse
