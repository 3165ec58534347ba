"""What a pass asks a registry, and what it hears back: plain data across ``RegistryPort``.

A ``Lookup`` is one tag with the credentials a new pod of the workload would pull it with
(``autoroll.core.keyring``, the kubelet's order); the registry adapter appends the registry's
own credentials after them (as the kubelet's node keyring follows the pod's pull secrets) and
asks anonymously only when there are none at all. Two workloads whose pods pull one tag with
the same credentials share one lookup, so one HEAD.

An ``Answer`` says which credential answered (its ``source``, never the secret), for the
log and ``autoroll plan``.
"""

from __future__ import annotations

from dataclasses import dataclass

from autoroll.core.images import TagRef
from autoroll.core.keyring import Credential
from autoroll.core.model import Digest, Unknown

#: The source of an answer that no credential gave: the registry was asked anonymously.
ANONYMOUS = "anonymous"


@dataclass(frozen=True, slots=True)
class Lookup:
    """One tag to ask its registry (``ref.host``) about, with the pod's pull credentials."""

    ref: TagRef
    credentials: tuple[Credential, ...] = ()


@dataclass(frozen=True, slots=True)
class Answer:
    """The registry's digest for a lookup, or Unknown; ``source`` is the credential that got
    the answer (``ANONYMOUS``, or "" when none did: a refusal, a failure, no request)."""

    value: Digest | Unknown
    source: str = ""


__all__ = ["ANONYMOUS", "Answer", "Lookup"]
