"""The registries block: which registries autoroll asks, how, and with which credentials.

Two ways to name them, together or alone (at least one registry):

    FORGEJO_HOST=git.example.org      the Forgejo shorthand, one registry: asked with
    FORGEJO_USER, FORGEJO_TOKEN       FORGEJO_USER/FORGEJO_TOKEN (FORGEJO_TOKEN_FILE), over
    REGISTRY_SCHEME, REGISTRY_CA_FILE REGISTRY_SCHEME, trusting REGISTRY_CA_FILE; its package
    FORGEJO_PULL_SECRETS=false        webhooks target its tags; FORGEJO_PULL_SECRETS puts the
                                      pods' pull secrets before its token
    REGISTRIES='[{"host": "ghcr.io", "pullSecrets": true}, ...]'
                                      a JSON list, one object per registry (the chart renders
                                      it from ``registries:``)

Each ``REGISTRIES`` entry (unknown keys are an error, naming the entry and the key):

    host             bare host[:port] (required; Docker Hub is ``docker.io``, asked at
                     registry-1.docker.io, its tokens from auth.docker.io)
    scheme           https (default) or http
    caFile           PEM CA trusted beside the default roots (a mounted file)
    pullSecrets      ask with each pod's imagePullSecrets, or its ServiceAccount's (default false)
    secretFile       a mounted kubernetes.io/dockerconfigjson Secret's ``.dockerconfigjson``:
                     the registry's own credentials, tried after the pods' (as a node's)
    concurrency      HEADs in flight at once, 1 to 32 (default 4)
    requestsPerPass  requests per pass, 0 for no cap (default 0)
    maxBackoffSeconds  the longest Retry-After honoured, 1 to 3600 (default 300)

With neither pull secrets nor a Secret (nor the Forgejo token), a registry is asked
anonymously. A host listed twice, or both as FORGEJO_HOST and in REGISTRIES, is an error.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from autoroll.config.choices import RegistryScheme
from autoroll.config.errors import Problem
from autoroll.config.parsers import parse_bool, parse_ca_file, parse_forgejo_host
from autoroll.config.reader import Reader
from autoroll.core.images import DEFAULT_HOST, registry_host
from autoroll.core.keyring import DOCKER_CONFIG_JSON, Keyring, KeyringError, parse_pull_secret

#: Where Docker Hub's registry API answers, and where its tokens come from.
DOCKER_HUB_API: Final = "registry-1.docker.io"
DOCKER_HUB_REALM: Final = "auth.docker.io"
_KEYS: Final = frozenset(
    {
        "host",
        "scheme",
        "caFile",
        "pullSecrets",
        "secretFile",
        "concurrency",
        "requestsPerPass",
        "maxBackoffSeconds",
    }
)


@dataclass(frozen=True, slots=True)
class RegistrySettings:
    """One registry as configured; ``host`` is ``registry_host``-ed."""

    host: str
    scheme: RegistryScheme = RegistryScheme.HTTPS
    ca_file: str | None = None
    pull_secrets: bool = False
    secret_file: str | None = None
    #: the registry's own credentials from ``secret_file`` (passwords never in a repr)
    keyring: Keyring = field(default_factory=Keyring)
    concurrency: int = 4
    requests_per_pass: int = 0
    max_backoff_seconds: int = 300
    forgejo: bool = False  # the FORGEJO_HOST shorthand: asked with FORGEJO_USER/TOKEN

    @property
    def base_url(self) -> str:
        """Where its registry API answers (Docker Hub's at registry-1.docker.io)."""
        api = DOCKER_HUB_API if self.host == DEFAULT_HOST else self.host
        return f"{self.scheme}://{api}"

    @property
    def realm_hosts(self) -> frozenset[str]:
        """Other hosts its credentials may go to for a token."""
        return frozenset({DOCKER_HUB_REALM}) if self.host == DEFAULT_HOST else frozenset()

    def credential_sources(self) -> str:
        """Its credential sources in the order they are tried, for the startup line."""
        sources = ["pod imagePullSecrets"] if self.pull_secrets else []
        if self.secret_file:
            sources.append(f"secret file {self.secret_file}")
        if self.forgejo:
            sources.append("FORGEJO_TOKEN")
        return ", then ".join(sources) or "anonymous"


def read_registries(
    reader: Reader, *, forgejo_host: str | None, scheme: RegistryScheme, ca_file: str | None
) -> tuple[RegistrySettings, ...]:
    """The Forgejo shorthand's registry (when FORGEJO_HOST is set) and REGISTRIES' entries
    (``Config.from_env`` requires one or the other)."""
    found: list[RegistrySettings] = []
    if forgejo_host is not None:
        pull = reader.optional("FORGEJO_PULL_SECRETS", False, parse_bool)
        found.append(
            RegistrySettings(
                registry_host(forgejo_host),
                scheme,
                ca_file,
                pull_secrets=pull,
                forgejo=True,
            )
        )
    raw = reader.env.get("REGISTRIES")
    if raw is not None:
        found.extend(_entries(reader, raw))
    seen: set[str] = set()
    for settings in found:
        if settings.host in seen:
            reader.problems.append(
                Problem(
                    "REGISTRIES",
                    f"{settings.host} is listed twice (FORGEJO_HOST counts as one entry);"
                    " list each registry once",
                )
            )
        seen.add(settings.host)
    return tuple(found)


def _entries(reader: Reader, raw: str) -> list[RegistrySettings]:
    try:
        document = json.loads(raw)
    except ValueError as exc:
        reader.problems.append(Problem("REGISTRIES", f"is not JSON ({exc}); expected a list"))
        return []
    if not isinstance(document, list) or not document:
        reader.problems.append(
            Problem("REGISTRIES", 'expected a JSON list such as [{"host": "ghcr.io"}]')
        )
        return []
    entries = []
    for index, item in enumerate(document):
        where = f"REGISTRIES[{index}]"
        problems_before = len(reader.problems)
        settings = _entry(reader, where, item)
        if settings is not None and len(reader.problems) == problems_before:
            entries.append(settings)
    return entries


def _entry(reader: Reader, where: str, item: object) -> RegistrySettings | None:
    if not isinstance(item, dict):
        reader.problems.append(Problem(where, 'expected an object such as {"host": "ghcr.io"}'))
        return None
    unknown = sorted(set(item) - _KEYS)
    if unknown:
        reader.problems.append(
            Problem(
                where,
                f"unknown key(s) {', '.join(unknown)}; expected some of {', '.join(sorted(_KEYS))}",
            )
        )
    host = _field(reader, where, item, "host", _host, required=True)
    if host is None:
        return None
    scheme = _field(reader, where, item, "scheme", _scheme) or RegistryScheme.HTTPS
    ca_file = _field(reader, where, item, "caFile", _text(parse_ca_file))
    secret_file = _field(reader, where, item, "secretFile", _text(_absolute))
    keyring = Keyring()
    if secret_file is not None:
        keyring = _secret_keyring(reader, f"{where}.secretFile", secret_file)
    return RegistrySettings(
        host=host,
        scheme=scheme,
        ca_file=ca_file,
        pull_secrets=bool(_field(reader, where, item, "pullSecrets", _flag)),
        secret_file=secret_file,
        keyring=keyring,
        concurrency=_number(reader, where, item, "concurrency", default=4, low=1, high=32),
        requests_per_pass=_number(
            reader, where, item, "requestsPerPass", default=0, low=0, high=1_000_000
        ),
        max_backoff_seconds=_number(
            reader, where, item, "maxBackoffSeconds", default=300, low=1, high=3600
        ),
    )


def _field(
    reader: Reader,
    where: str,
    item: Mapping[str, Any],
    key: str,
    parse: Any,
    *,
    required: bool = False,
) -> Any:
    if key not in item:
        if required:
            reader.problems.append(Problem(f"{where}.{key}", "is required"))
        return None
    try:
        return parse(item[key])
    except ValueError as exc:
        shown = item[key] if key != "secretFile" else "(a path)"
        reader.problems.append(Problem(f"{where}.{key}", f"{shown!r} is invalid: {exc}"))
        return None


def _number(
    reader: Reader,
    where: str,
    item: Mapping[str, Any],
    key: str,
    *,
    default: int,
    low: int,
    high: int,
) -> int:
    def parse(value: object) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise ValueError(f"expected a whole number, {low} to {high}")
        return value

    found = _field(reader, where, item, key, parse)
    return default if found is None else int(found)


def _host(value: object) -> str:
    if not isinstance(value, str):
        raise ValueError("expected a bare host[:port] text")
    return registry_host(parse_forgejo_host(value))


def _scheme(value: object) -> RegistryScheme:
    try:
        return RegistryScheme(str(value))
    except ValueError:
        raise ValueError("expected https or http") from None


def _flag(value: object) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return parse_bool(value)
    raise ValueError("expected true or false")


def _text(parse: Any) -> Any:
    def parse_text(value: object) -> Any:
        if not isinstance(value, str) or not value:
            raise ValueError("expected a non-empty text")
        return parse(value)

    return parse_text


def _absolute(value: str) -> str:
    if not value.startswith("/"):
        raise ValueError("expected the absolute path of a mounted file")
    return value


def _secret_keyring(reader: Reader, where: str, path: str) -> Keyring:
    """The entries of a mounted ``.dockerconfigjson``, read and checked once at startup."""
    try:
        text = reader.read_file(path)
    except ValueError as exc:
        reader.problems.append(Problem(where, str(exc)))
        return Keyring()
    try:
        entries = parse_pull_secret(
            DOCKER_CONFIG_JSON,
            {".dockerconfigjson": text.encode("utf-8")},
            source=f"registry Secret {path}",
        )
    except KeyringError as exc:
        reader.problems.append(Problem(where, f"{exc} (a kubernetes.io/dockerconfigjson Secret)"))
        return Keyring()
    return Keyring(tuple(entries))


def redacted_registries(registries: tuple[RegistrySettings, ...]) -> dict[str, str]:
    """The registries for the startup line: hosts, schemes, sources and limits, no secret."""
    listed = [
        {
            "host": r.host,
            "scheme": str(r.scheme),
            "credentials": r.credential_sources(),
            "concurrency": r.concurrency,
            "requestsPerPass": r.requests_per_pass,
        }
        for r in registries
    ]
    return {"REGISTRIES": json.dumps(listed, separators=(",", ":"))}


__all__ = ["RegistrySettings", "read_registries", "redacted_registries"]
