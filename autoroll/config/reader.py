"""Reading variables one by one while collecting every problem instead of stopping at one.

Unset means "use the default"; a variable that is set but empty is an error, because an
empty ``DRY_RUN`` silently meaning ``false`` is exactly the surprise we want to avoid.

A secret ``NAME`` may instead come from a file: ``NAME_FILE`` is the path of a mounted file
(a Kubernetes Secret volume, say) holding the value, so the value is in no environment
(``/proc/<pid>/environ``, ``kubectl describe``, a crash dump). The env var is the fallback;
both set is an error, since which one wins would be a guess. The file's trailing newlines
are dropped (``echo`` and most editors add one; no token or key ends in one).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final, TypeVar

from autoroll.config.errors import Problem, Secret

T = TypeVar("T")
D = TypeVar("D")

#: Suffix of the variable naming a secret's file.
FILE_SUFFIX: Final = "_FILE"
#: Largest secret file read, in bytes: a token or an HMAC key is well under 1 KiB.
MAX_SECRET_FILE_BYTES: Final = 64 * 1024


class SecretFileError(ValueError):
    """A secret file that cannot be used; the message says why, never the content."""


def read_secret_file(path: str) -> str:
    """The secret in the file at ``path``, trailing newlines dropped (module docstring).

    The one read of the filesystem in the configuration, injected into ``Reader`` so tests
    hand it a mapping instead.
    """
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_SECRET_FILE_BYTES + 1)
    except OSError as exc:
        raise SecretFileError(f"cannot read {path!r}: {exc.strerror or exc}") from exc
    if len(data) > MAX_SECRET_FILE_BYTES:
        raise SecretFileError(f"{path!r} is over {MAX_SECRET_FILE_BYTES} bytes; is it a secret?")
    try:
        return data.decode("utf-8").rstrip("\r\n")
    except UnicodeDecodeError as exc:
        raise SecretFileError(f"{path!r} is not UTF-8 text") from exc


class Reader:
    """Collects problems instead of stopping at the first one."""

    def __init__(
        self, env: Mapping[str, str], *, read_file: Callable[[str], str] = read_secret_file
    ) -> None:
        self.env = env
        self.problems: list[Problem] = []
        self._read_file = read_file

    def read_file(self, path: str) -> str:
        """The secret file at ``path`` (``read_secret_file``'s rules); ``ValueError`` saying
        why it cannot be used."""
        return self._read_file(path)

    def required(self, name: str, parse: Callable[[str], T]) -> T | None:
        raw = self.env.get(name)
        if raw is None or raw == "":
            self.problems.append(Problem(name, "is required but not set"))
            return None
        return self._parsed(name, raw, parse, None)

    def required_secret(self, name: str, check: Callable[[str], None]) -> Secret | None:
        """``name``'s secret, from the file ``<name>_FILE`` names or else from ``name``."""
        return self._secret(name, check, required=True)

    def optional_secret(self, name: str, check: Callable[[str], None]) -> Secret | None:
        """``name``'s secret as ``required_secret`` reads it, or None when neither ``name``
        nor ``<name>_FILE`` is set (the feature it keys is off). Set but empty is an error,
        as for every variable."""
        return self._secret(name, check, required=False)

    def _secret(self, name: str, check: Callable[[str], None], *, required: bool) -> Secret | None:
        file_name = name + FILE_SUFFIX
        path, raw = self.env.get(file_name), self.env.get(name)
        if path is not None and raw is not None:
            self.problems.append(
                Problem(
                    name,
                    f"is set and so is {file_name}; set only one ({file_name}, the path of a"
                    " mounted file, keeps the secret out of the environment)",
                )
            )
            return None
        if path is None:
            if raw is None and not required:
                return None
            if raw is None or raw == "":
                why = (
                    f"is required but not set (nor {file_name}, a file holding it)"
                    if required
                    else f"is set but empty; give the secret (or {file_name}, a file holding"
                    " it), or unset it to leave what it keys off"
                )
                self.problems.append(Problem(name, why))
                return None
            return self._checked(name, raw, check)
        if path == "":
            self.problems.append(
                Problem(file_name, f"is set but empty; give the secret file's path, or set {name}")
            )
            return None
        try:
            raw = self._read_file(path)
        except ValueError as exc:
            self.problems.append(Problem(file_name, str(exc)))
            return None
        if raw == "":
            self.problems.append(Problem(file_name, f"the file {path!r} is empty"))
            return None
        return self._checked(file_name, raw, check)

    def _checked(self, where: str, raw: str, check: Callable[[str], None]) -> Secret | None:
        try:
            check(raw)
        except ValueError as exc:
            # The value of a secret is never echoed, not even a bad one.
            self.problems.append(Problem(where, f"(value not shown) is invalid: {exc}"))
            return None
        return Secret(raw)

    def optional(
        self, name: str, default: T, parse: Callable[[str], T], *, default_text: str = ""
    ) -> T:
        """``name`` parsed, or ``default`` when unset (``default_text`` says what that
        default is, when ``str(default)`` would not)."""
        raw = self.env.get(name)
        if raw is None:
            return default
        if raw == "":
            text = default_text or str(default)
            self.problems.append(
                Problem(name, f"is set but empty; unset it for the default {text}")
            )
            return default
        return self._parsed(name, raw, parse, default)

    def _parsed(self, name: str, raw: str, parse: Callable[[str], T], fallback: D) -> T | D:
        """``raw`` parsed; else the problem noted under ``name`` (with the value, never a
        secret's: those go through ``_checked``) and ``fallback``."""
        try:
            return parse(raw)
        except ValueError as exc:
            self.problems.append(Problem(name, f"{raw!r} is invalid: {exc}"))
            return fallback
