"""Label selectors: their semantics, their parsing and their query syntax.

Pure, so every rule is tested without an API server: ``selector_matches`` (the exact
match every claim on a pod ends with), ``selector_from_json``, the server-side narrowing
of a namespace's pod list (``pod_list_selector``), the exact selector as a query
(``selector_query``), and ``SelectorIndex``, which tries a pod only against the selectors
that can match it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

#: A pod-list narrowing selector longer than this is not sent (the URL would get unwieldy);
#: the namespace is then listed whole, which costs parsing, never correctness.
MAX_NARROWING_SELECTOR: Final = 8192


class Operator(StrEnum):
    IN = "In"
    NOT_IN = "NotIn"
    EXISTS = "Exists"
    DOES_NOT_EXIST = "DoesNotExist"


@dataclass(frozen=True, slots=True)
class Requirement:
    """One ``matchExpressions`` entry."""

    key: str
    operator: Operator
    values: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A workload's ``spec.selector``: all ``match_labels`` and all requirements must hold."""

    match_labels: tuple[tuple[str, str], ...] = ()
    requirements: tuple[Requirement, ...] = ()

    @property
    def is_empty(self) -> bool:
        return not self.match_labels and not self.requirements


def selector_matches(selector: LabelSelector, labels: Mapping[str, str]) -> bool:
    """Does ``labels`` satisfy ``selector`` (Kubernetes label-selector semantics)?

    An empty selector matches nothing here, unlike the API's "everything": apps/v1 rejects
    empty workload selectors, and if one slipped through, adopting every pod in the
    namespace would be the dangerous reading.
    """
    if selector.is_empty:
        return False
    for key, value in selector.match_labels:
        if labels.get(key) != value:
            return False
    for requirement in selector.requirements:
        present = requirement.key in labels
        if requirement.operator is Operator.IN:
            if not present or labels[requirement.key] not in requirement.values:
                return False
        elif requirement.operator is Operator.NOT_IN:
            if present and labels[requirement.key] in requirement.values:
                return False
        elif requirement.operator is Operator.EXISTS:
            if not present:
                return False
        elif present:  # DoesNotExist
            return False
    return True


def selector_from_json(selector: Mapping[str, Any] | None) -> LabelSelector:
    """Convert a ``LabelSelector`` as the API sends it. Unknown operators raise ``ValueError``."""
    if not selector:
        return LabelSelector()
    labels = tuple(sorted((selector.get("matchLabels") or {}).items()))
    requirements = []
    for expression in selector.get("matchExpressions") or ():
        try:
            operator = Operator(expression.get("operator"))
        except ValueError:
            raise ValueError(
                f"unsupported label selector operator {expression.get('operator')!r}"
                f" (expected one of {', '.join(o.value for o in Operator)})"
            ) from None
        requirements.append(
            Requirement(
                expression.get("key", ""), operator, frozenset(expression.get("values") or ())
            )
        )
    return LabelSelector(labels, tuple(requirements))


def pod_list_selector(selectors: Iterable[LabelSelector]) -> str | None:
    """A label selector that narrows one namespace's pod list to pods that *may* match one
    of ``selectors``, or None when no such selector is simple to write.

    It takes a label key that every selector pins to a finite set of values (``matchLabels``
    or ``In``) and asks for ``key in (union of values)``; with the usual chart selectors
    (``app.kubernetes.io/instance``, ``app``) that leaves out every unenrolled workload.
    Still one request per namespace; the exact match is done afterwards by
    ``selector_matches``, so a loose narrowing can never adopt a wrong pod.
    """
    pinned: dict[str, set[str]] | None = None
    for selector in selectors:
        if selector.is_empty:
            return None
        values: dict[str, set[str]] = {k: {v} for k, v in selector.match_labels}
        for requirement in selector.requirements:
            if requirement.operator is Operator.IN:
                values.setdefault(requirement.key, set(requirement.values)).intersection_update(
                    requirement.values
                )
        if pinned is None:
            pinned = values
        else:
            pinned = {k: pinned[k] | v for k, v in values.items() if k in pinned}
        if not pinned:
            return None
    if not pinned:
        return None
    key, wanted = min(pinned.items(), key=lambda item: (len(item[1]), item[0]))
    if not wanted or "" in wanted:  # nothing to narrow to, or a value the syntax cannot say
        return None
    rendered = f"{key} in ({','.join(sorted(wanted))})"
    return rendered if len(rendered) <= MAX_NARROWING_SELECTOR else None


def selector_query(selector: LabelSelector) -> str:
    """``selector`` in the API's ``labelSelector`` query syntax (the exact selector).

    Used for the one narrow pod list before a deletion (``KubeCluster.read_now``). The
    answer is still matched with ``selector_matches``, so a rendering the server read more
    loosely could never adopt a wrong pod.
    """
    parts = [f"{key}={value}" for key, value in selector.match_labels]
    for requirement in selector.requirements:
        values = ",".join(sorted(requirement.values))
        if requirement.operator is Operator.IN:
            parts.append(f"{requirement.key} in ({values})")
        elif requirement.operator is Operator.NOT_IN:
            parts.append(f"{requirement.key} notin ({values})")
        elif requirement.operator is Operator.EXISTS:
            parts.append(requirement.key)
        else:
            parts.append(f"!{requirement.key}")
    return ",".join(parts)


class SelectorIndex:
    """Which of one namespace's selectors match a pod, without trying every selector.

    Trying each of 500 enrolled selectors against each of 1,500 pods is 750,000 matches per
    namespace. A selector that matches pins some ``key=value`` (a ``matchLabels`` pair, or
    one of an ``In`` requirement's values), so each selector is filed under the pairs it
    needs, and a pod is tried only against the selectors filed under one of its own labels
    (selectors that pin nothing are tried always). The final word is ``selector_matches``.
    """

    def __init__(self) -> None:
        self._selectors: dict[str, LabelSelector] = {}
        # A pair pinned by one selector (the usual case) files its key alone: a set costs
        # four times a string reference.
        self._filed: dict[tuple[str, str], str | set[str]] = {}
        self._always: set[str] = set()

    def __len__(self) -> int:
        return len(self._selectors)

    def get(self, key: str) -> LabelSelector | None:
        return self._selectors.get(key)

    def keys(self) -> set[str]:
        return set(self._selectors)

    def add(self, key: str, selector: LabelSelector) -> None:
        self.remove(key)
        self._selectors[key] = selector
        pairs = _filing_pairs(selector)
        if pairs is None:
            self._always.add(key)
        for pair in pairs or ():
            filed = self._filed.get(pair)
            if filed is None:
                self._filed[pair] = key
            elif isinstance(filed, str):
                self._filed[pair] = {filed, key}
            else:
                filed.add(key)

    def remove(self, key: str) -> None:
        selector = self._selectors.pop(key, None)
        if selector is None:
            return
        self._always.discard(key)
        for pair in _filing_pairs(selector) or ():
            filed = self._filed.get(pair)
            if filed == key:
                del self._filed[pair]
            elif isinstance(filed, set):
                filed.discard(key)
                if len(filed) == 1:
                    self._filed[pair] = next(iter(filed))

    def matching(self, labels: Mapping[str, str]) -> set[str]:
        """The keys whose selector matches ``labels``."""
        candidates = set(self._always)
        for pair in labels.items():
            filed = self._filed.get(pair)
            if isinstance(filed, str):
                candidates.add(filed)
            elif filed is not None:
                candidates.update(filed)
        return {key for key in candidates if selector_matches(self._selectors[key], labels)}


def _filing_pairs(selector: LabelSelector) -> list[tuple[str, str]] | None:
    """The pairs one of which every pod ``selector`` matches must carry; None if none is
    known (no ``matchLabels``, no ``In``): such a selector is tried against every pod."""
    if selector.match_labels:
        return [selector.match_labels[0]]
    for requirement in selector.requirements:
        if requirement.operator is Operator.IN and requirement.values:
            return [(requirement.key, value) for value in sorted(requirement.values)]
    return None


__all__ = [
    "MAX_NARROWING_SELECTOR",
    "LabelSelector",
    "Operator",
    "Requirement",
    "SelectorIndex",
    "pod_list_selector",
    "selector_from_json",
    "selector_matches",
    "selector_query",
]
