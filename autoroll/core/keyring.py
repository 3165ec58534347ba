"""Which pull credentials serve an image: the kubelet's registry-key matching, in Python.

The kubelet builds a keyring from a pod's pull secrets and looks the image up in it
(k8s.io/kubernetes v1.37.2, ``pkg/credentialprovider/keyring.go``: ``BasicDockerKeyring.Add``,
``URLsMatch``, ``Lookup``; ``pkg/credentialprovider/secrets/secrets.go``:
``MakeDockerKeyring``). autoroll asks the registry with the same credentials, found the
same way, so what it reads is what the node can pull (docs/adr/024-pull-credentials.md):

- **Keys.** Each entry of a ``kubernetes.io/dockerconfigjson`` (``auths``) or
  ``kubernetes.io/dockercfg`` Secret is a key: a scheme is dropped, a leading ``/v1/`` or
  ``/v2/`` path counts as none, so ``https://index.docker.io/v1/`` is ``index.docker.io``.
  An entry's ``auth`` (base64 ``user:password``, padded or not) replaces its
  ``username``/``password``.
- **Matching** (``key_matches``): the port must be equal (none matches only none), the host
  must have as many dot-separated parts as the key's, each part matched by the key's part as
  a ``filepath.Match`` glob (``*.example.com``), and the key's path must be a *string* prefix
  of the image's (``host/team`` matches ``host/teams/app`` too, as in the kubelet).
- **Order** (``lookup``): every key that matches, most specific first (the keys sorted in
  reverse byte order, duplicates once), and under one key the credentials in the order their
  Secrets were added: the pod's ``imagePullSecrets`` in their order. When no key matches and
  the image is on Docker Hub, the entry for ``index.docker.io`` serves.
- **Pulling** tries them in that order and stops at the first that works; no match at all
  pulls anonymously (``kuberuntime_image.go: PullImage``). A Secret of either type whose JSON
  is malformed fails the whole keyring, so every image of the pod (``KeyringError``).

Pure: Secret data in, ``Credential`` tuples out. A password never reaches a repr.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from autoroll.core.images import DEFAULT_HOST, ImageRefError, _split_host

#: The Secret types and keys the kubelet reads (``v1.SecretTypeDockerConfigJson`` and
#: ``v1.SecretTypeDockercfg``, ``v1.DockerConfigJsonKey`` and ``v1.DockerConfigKey``).
DOCKER_CONFIG_JSON: Final = "kubernetes.io/dockerconfigjson"
DOCKER_CFG: Final = "kubernetes.io/dockercfg"
SECRET_KEYS: Final = {DOCKER_CONFIG_JSON: ".dockerconfigjson", DOCKER_CFG: ".dockercfg"}
#: The key Docker Hub's credentials are found under when no key matches (``Lookup``).
DOCKER_HUB_KEY: Final = "index.docker.io"
#: The most entries one Secret may hold before it is refused: a real one has a handful.
MAX_ENTRIES: Final = 1000


class KeyringError(ValueError):
    """A pull secret the kubelet would refuse (malformed JSON, a bad ``auth``); the message
    names the Secret, never its content."""


@dataclass(frozen=True, slots=True)
class Credential:
    """One username and password for a registry, and where it came from.

    ``source`` is what a person reads (``imagePullSecret shop/regcred``); ``key`` is the
    registry key that matched. The password is left out of every repr and ``str``.
    """

    username: str
    password: str = field(repr=False)
    source: str
    key: str = ""

    def __str__(self) -> str:
        return f"{self.source} (user {self.username!r})" if self.username else self.source


@dataclass(frozen=True, slots=True)
class PullSecret:
    """A Secret as read from the API, for ``parse_pull_secret``: its ``type`` and ``data``
    (decoded bytes, never in a repr), and the ``uid``/``resource_version`` it is cached by."""

    namespace: str
    name: str
    type: str
    data: Mapping[str, bytes] = field(repr=False, compare=False, hash=False)
    uid: str = ""
    resource_version: str = ""


@dataclass(frozen=True, slots=True)
class Entry:
    """One key of a pull secret and its credential, in the order the Secret lists it."""

    key: str
    credential: Credential


def parse_pull_secret(secret_type: str, data: Mapping[str, bytes], *, source: str) -> list[Entry]:
    """The entries of a pull secret, as ``MakeDockerKeyring`` reads it: ``[]`` for a Secret
    of another type or without its key (the kubelet skips it), ``KeyringError`` for one it
    would refuse. ``source`` names the Secret in each ``Credential`` and in the error."""
    key = SECRET_KEYS.get(secret_type)
    raw = data.get(key) if key is not None else None
    if not raw:
        return []
    try:
        document = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise KeyringError(f"{source}: {key} is not JSON ({type(exc).__name__})") from None
    auths = (
        document.get("auths")
        if secret_type == DOCKER_CONFIG_JSON and isinstance(document, dict)
        else document
    )
    if auths is None and secret_type == DOCKER_CONFIG_JSON:
        return []  # {"auths": null} or no auths: an empty keyring, as json.Unmarshal leaves it
    if not isinstance(auths, dict):
        raise KeyringError(f"{source}: {key} must map registry keys to entries")
    if len(auths) > MAX_ENTRIES:
        raise KeyringError(f"{source}: {key} has more than {MAX_ENTRIES} entries")
    entries = []
    for raw_key, value in auths.items():
        credential = _credential(raw_key, value, source=source)
        normalised = registry_key(raw_key)
        if normalised is not None:  # the kubelet ignores a key url.Parse refuses
            entries.append(Entry(normalised, credential))
    return entries


def _credential(raw_key: str, value: object, *, source: str) -> Credential:
    """One entry's credential (``DockerConfigEntry.UnmarshalJSON``): ``auth`` wins."""
    if value is None:
        value = {}  # JSON null decodes to an empty entry
    if not isinstance(value, dict):
        raise KeyringError(f"{source}: the entry for {raw_key!r} is not an object")
    # Go's encoding/json matches field names case-insensitively ("Auth" is auth).
    folded = {str(k).lower(): v for k, v in value.items()}
    fields = {k: folded.get(k, "") for k in ("username", "password", "auth")}
    fields = {k: "" if v is None else v for k, v in fields.items()}
    if not all(isinstance(v, str) for v in fields.values()):
        raise KeyringError(f"{source}: the entry for {raw_key!r} has a field that is not text")
    username, password, auth = fields["username"], fields["password"], fields["auth"]
    if auth:
        username, password = _decode_auth(auth, raw_key, source=source)
    return Credential(str(username), str(password), source, str(raw_key))


def _decode_auth(auth: str, raw_key: str, *, source: str) -> tuple[str, str]:
    """``base64(user:password)``, padded (``StdEncoding``) or not (``RawStdEncoding``)."""
    text = auth if auth.strip().endswith("=") else auth + "=" * (-len(auth) % 4)
    try:
        decoded = base64.b64decode(text, validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        raise KeyringError(f"{source}: the auth of {raw_key!r} is not base64") from None
    username, colon, password = decoded.partition(":")
    if not colon:
        raise KeyringError(
            f"{source}: the auth of {raw_key!r} must be base64(username:password)"
        ) from None
    return username, password


def registry_key(raw: str) -> str | None:
    """A secret's key as ``BasicDockerKeyring.Add`` indexes it: host and path without the
    scheme, a leading ``/v1/`` or ``/v2/`` dropped (``https://quay.io/v1/`` is ``quay.io``);
    None for a key Go's URL parser would refuse."""
    url = raw if raw.startswith(("https://", "http://")) else "https://" + raw
    parsed = _go_url(url)
    if parsed is None:
        return None
    host, path = parsed
    if path.startswith(("/v2/", "/v1/")):
        path = path[3:]
    return host + path if path and path != "/" else host


# --- matching ------------------------------------------------------------------------------


def _go_url(url: str) -> tuple[str, str] | None:
    """(host, path) of ``scheme://…`` as Go's ``url.Parse`` reads them, or None where it
    errs: the authority runs to the first ``/``, ``?`` or ``#``, userinfo is dropped, a port
    must be digits, a host starting with ``[`` must close it right before its port. Written
    out because Python's ``urlsplit`` refuses hosts Go accepts (``registr[a-z].example``)."""
    rest = url.partition("://")[2]
    cut = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    authority, tail = rest[:cut], rest[cut:]
    host = authority.rpartition("@")[2]
    if host.startswith("["):
        close = host.rfind("]")
        if close < 0 or not re.fullmatch(r"(?::[0-9]*)?", host[close + 1 :]):
            return None
    elif ":" in host and not re.fullmatch(r"[0-9]*", host.rpartition(":")[2]):
        return None
    path = re.split(r"[?#]", tail, maxsplit=1)[0] if tail.startswith("/") else ""
    return host, path


def _split(schemeless: str) -> tuple[list[str], str, str] | None:
    """(host parts, port, path) of a schemeless URL as ``SplitURL`` reads it; None when it
    does not parse."""
    parsed = _go_url("https://" + schemeless)
    if parsed is None:
        return None
    host, path = parsed
    # net.SplitHostPort, and on its error the whole host with no port.
    name, port = host, ""
    bracketed = re.fullmatch(r"\[([^\]]*)\]:([0-9]*)", host)
    if bracketed is not None:
        name, port = bracketed.group(1), bracketed.group(2)
    elif host.count(":") == 1 and not host.startswith("["):
        name, _, port = host.partition(":")
    return name.split("."), port, path


def key_matches(key: str, image: str) -> bool:
    """Does the registry key ``key`` (``*.example.com:5000/team``) serve ``image``
    (``registry.example.com:5000/team/app``, no tag)? ``URLsMatchStr``, rule for rule."""
    glob, target = _split(key), _split(image)
    if glob is None or target is None:
        return False
    glob_parts, glob_port, glob_path = glob
    target_parts, target_port, target_path = target
    if glob_port != target_port or len(glob_parts) != len(target_parts):
        return False
    if not target_path.startswith(glob_path):
        return False
    return all(_glob_part(g, t) for g, t in zip(glob_parts, target_parts, strict=True))


def _glob_part(pattern: str, name: str) -> bool:
    """Go's ``filepath.Match`` on one host part: ``*``, ``?``, ``[...]`` (``^`` negates), ``\\``
    escapes; a malformed pattern matches nothing (Go returns ErrBadPattern)."""
    regex = _glob_regex(pattern)
    return regex is not None and regex.fullmatch(name) is not None


def _glob_regex(pattern: str) -> re.Pattern[str] | None:
    out, i = [], 0
    while i < len(pattern):
        char = pattern[i]
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "\\":
            if i + 1 >= len(pattern):
                return None
            i += 1
            out.append(re.escape(pattern[i]))
        elif char == "[":
            end = pattern.find("]", i + 2 if pattern[i + 1 : i + 2] in {"^", "]"} else i + 1)
            if end < 0:
                return None
            body = pattern[i + 1 : end]
            negate = body.startswith("^")
            body = body[1:] if negate else body
            if not body:
                return None
            out.append(("[^" if negate else "[") + body.replace("\\", "\\\\") + "]")
            i = end
        else:
            out.append(re.escape(char))
        i += 1
    try:
        return re.compile("".join(out))
    except re.error:
        return None


def is_docker_hub_name(image: str) -> bool:
    """Will ``image`` (a name without tag) be pulled from Docker Hub? ``isDefaultRegistryMatch``:
    a one-part name, ``docker.io/…`` or ``index.docker.io/…``, or a first part with no ``.``
    or ``:`` (a Docker Hub user's repository)."""
    first, slash, _ = image.partition("/")
    if not first:
        return False
    if not slash:
        return True
    if first in {"docker.io", "index.docker.io"}:
        return True
    return "." not in first and ":" not in first


def pull_name(image: str) -> str:
    """The name the kubelet looks an image up by (``parsers.ParseImageName``): the tag and
    digest dropped, Docker Hub's host and ``library/`` filled in, the host as written."""
    rest = image.partition("@")[0]
    if rest.rfind(":") > rest.rfind("/"):
        rest = rest[: rest.rfind(":")]
    try:
        host, path = _split_host(rest)
    except ImageRefError:  # pragma: no cover - _split_host never raises
        return rest
    if host is None:
        host = DEFAULT_HOST
        if "/" not in path:
            path = f"library/{path}"
    return f"{host}/{path}"


@dataclass(frozen=True, slots=True)
class Keyring:
    """Entries of some pull secrets, added in the pod's order (``BasicDockerKeyring``)."""

    entries: tuple[Entry, ...] = ()

    @classmethod
    def of(cls, secrets: Iterable[Sequence[Entry]]) -> Keyring:
        return cls(tuple(entry for entries in secrets for entry in entries))

    def lookup(self, image: str) -> tuple[Credential, ...]:
        """Every credential that serves ``image`` (``pull_name``), in the kubelet's order
        (module docstring); empty when none does (then it pulls anonymously)."""
        by_key: dict[str, list[Credential]] = {}
        for entry in self.entries:
            by_key.setdefault(entry.key, []).append(entry.credential)
        index = sorted(by_key, key=lambda k: k.encode("utf-8"), reverse=True)
        found = tuple(c for k in index if key_matches(k, image) for c in by_key[k])
        if found:
            return found
        if is_docker_hub_name(image) and DOCKER_HUB_KEY in by_key:
            return tuple(by_key[DOCKER_HUB_KEY])
        return ()


__all__ = [
    "DOCKER_CFG",
    "DOCKER_CONFIG_JSON",
    "Credential",
    "Entry",
    "Keyring",
    "KeyringError",
    "PullSecret",
    "is_docker_hub_name",
    "key_matches",
    "parse_pull_secret",
    "pull_name",
    "registry_key",
]
