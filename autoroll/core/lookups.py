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

from collections.abc import Mapping
from dataclasses import dataclass, field

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


@dataclass(frozen=True, slots=True)
class Resolution:
    """A pass's registry answers: one per tag (``by_ref``: what the loop guard and the plan
    see), each workload's own where its credentials got another answer than the tag's
    (``by_workload``, by workload key: a pod whose pull secret is wrong is unknown even when
    another workload's secret reads the tag), and who answered (``sources``, by workload key
    and tag: ``registry · credential source``)."""

    by_ref: dict[TagRef, Digest | Unknown] = field(default_factory=dict)
    by_workload: dict[str, dict[TagRef, Digest | Unknown]] = field(default_factory=dict)
    sources: dict[str, dict[TagRef, str]] = field(default_factory=dict)

    def for_workload(self, key: str) -> Mapping[TagRef, Digest | Unknown]:
        """The answers ``key``'s workload decides on."""
        own = self.by_workload.get(key)
        return {**self.by_ref, **own} if own else self.by_ref


def merge_answers(
    asked: Mapping[str, Mapping[TagRef, Lookup | Unknown]],
    answers: Mapping[Lookup, Answer],
    *,
    unasked: Mapping[TagRef, Unknown] | None = None,
) -> Resolution:
    """Per tag one answer, per workload its own (``Resolution``). ``asked`` is, by workload
    key, each of its tags' lookup, or the Unknown that kept it from being asked (a pull
    secret the kubelet would refuse); ``unasked`` the tags left for a later pass.

    A tag's answer is a digest when any workload's lookup got one (the registry's content
    does not depend on who asks), else the first Unknown, workloads in key order."""
    unasked = unasked or {}
    per_workload: dict[str, dict[TagRef, Digest | Unknown]] = {}
    sources: dict[str, dict[TagRef, str]] = {}
    for key in sorted(asked):
        for ref, lookup in asked[key].items():
            if ref in unasked:
                per_workload.setdefault(key, {})[ref] = unasked[ref]
                continue
            answer = answers.get(lookup) if isinstance(lookup, Lookup) else Answer(lookup)
            if answer is None:
                continue  # not asked this pass (out of scope)
            per_workload.setdefault(key, {})[ref] = answer.value
            if answer.source:
                sources.setdefault(key, {})[ref] = f"{ref.host} · {answer.source}"
    by_ref: dict[TagRef, Digest | Unknown] = dict(unasked)
    for key in sorted(per_workload):
        for ref, value in per_workload[key].items():
            if ref not in by_ref or (
                isinstance(value, Digest) and isinstance(by_ref[ref], Unknown)
            ):
                by_ref[ref] = value
    own = {
        key: {ref: v for ref, v in values.items() if by_ref.get(ref) != v}
        for key, values in per_workload.items()
    }
    return Resolution(by_ref, {k: v for k, v in own.items() if v}, sources)


__all__ = ["ANONYMOUS", "Answer", "Lookup", "Resolution", "merge_answers"]
