"""Narrowing each namespace's pod list to what the enrolled selectors can match, without hiding
a pod any of them matches: the list selector, the selector index and its query, list answers.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autoroll.kube.lists import list_items
from autoroll.kube.selectors import (
    LabelSelector,
    Operator,
    Requirement,
    SelectorIndex,
    pod_list_selector,
    selector_matches,
    selector_query,
)
from tests.support.kube_models import req

# --- narrowing each namespace's pod list ---------------------------------------------------------


def labels_selector(**labels: str) -> LabelSelector:
    return LabelSelector(tuple(sorted(labels.items())))


@pytest.mark.parametrize(
    ("selectors", "expected"),
    [
        ([labels_selector(app="web")], "app in (web)"),
        ([labels_selector(app="web"), labels_selector(app="api")], "app in (api,web)"),
        # a key every selector pins; the others are ignored
        ([labels_selector(app="web", tier="fe"), labels_selector(app="api")], "app in (api,web)"),
        # two pinned keys: the one with fewer values
        (
            [labels_selector(app="shop", instance="a"), labels_selector(app="shop", instance="b")],
            "app in (shop)",
        ),
        # In pins a key too, and unions with matchLabels
        (
            [LabelSelector((), (req("env", "In", "a", "b"),)), labels_selector(env="c")],
            "env in (a,b,c)",
        ),
        # matchLabels and In on one key must both hold: their intersection
        ([LabelSelector((("env", "a"),), (req("env", "In", "a", "b"),))], "env in (a)"),
        # no key common to all: the namespace is listed whole
        ([labels_selector(app="web"), labels_selector(name="api")], None),
        # only Exists / NotIn / DoesNotExist: nothing finite to ask for
        ([LabelSelector((), (req("app", "Exists"),))], None),
        ([LabelSelector((), (req("app", "NotIn", "x"),))], None),
        ([LabelSelector()], None),
        ([], None),
        # an empty value cannot be written in the set syntax
        ([labels_selector(app="")], None),
        # a selector that can match nothing (disjoint matchLabels and In) narrows to nothing
        ([LabelSelector((("env", "a"),), (req("env", "In", "b"),))], None),
        # too long for a URL: listed whole
        ([labels_selector(app="x" * 60 + str(i)) for i in range(200)], None),
    ],
)
def test_pod_list_selector(selectors: list[LabelSelector], expected: str | None) -> None:
    assert pod_list_selector(selectors) == expected


KEYS = st.sampled_from(["app", "tier", "env"])
VALUES = st.sampled_from(["a", "b", "c"])
REQUIREMENTS = st.builds(
    Requirement, KEYS, st.sampled_from(list(Operator)), st.frozensets(VALUES, min_size=1)
)
SELECTORS = st.builds(
    LabelSelector,
    st.dictionaries(KEYS, VALUES, max_size=2).map(lambda d: tuple(sorted(d.items()))),
    st.lists(REQUIREMENTS, max_size=2).map(tuple),
)


def narrowing_admits(narrowing: str, labels: dict[str, str]) -> bool:
    key, _, rest = narrowing.partition(" in (")
    return labels.get(key) in rest.rstrip(")").split(",")


@settings(max_examples=400, deadline=None)
@given(
    selectors=st.lists(SELECTORS, min_size=1, max_size=4),
    labels=st.dictionaries(KEYS, VALUES, max_size=3),
)
def test_narrowing_never_hides_a_pod_some_selector_matches(
    selectors: list[LabelSelector], labels: dict[str, str]
) -> None:
    narrowing = pod_list_selector(selectors)
    if narrowing is not None and any(selector_matches(s, labels) for s in selectors):
        assert narrowing_admits(narrowing, labels), (narrowing, labels)


def test_list_items_drops_managed_fields_and_keeps_the_rest() -> None:
    body = json.dumps(
        {
            "kind": "PodList",
            "items": [
                {"metadata": {"name": "a", "managedFields": [{"manager": "kubelet"}]}, "spec": {}},
                "not an object",
            ],
        }
    )
    assert list_items(body) == [{"metadata": {"name": "a"}, "spec": {}}]
    assert list_items(b'{"kind": "PodList", "items": null}') == []


@pytest.mark.parametrize(
    ("body", "problem"),
    [(b"<html>", "not JSON"), (b'{"items": {"a": 1}}', "items are not a list")],
)
def test_list_items_refuses_what_is_not_a_list_answer(body: bytes, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        list_items(body)


@settings(max_examples=400, deadline=None)
@given(
    selectors=st.lists(SELECTORS, min_size=1, max_size=5),
    removed=st.sets(st.integers(0, 4), max_size=2),
    labels=st.dictionaries(KEYS, VALUES, max_size=3),
)
def test_the_selector_index_finds_exactly_the_selectors_that_match(
    selectors: list[LabelSelector], removed: set[int], labels: dict[str, str]
) -> None:
    index = SelectorIndex()
    for n, selector in enumerate(selectors):
        index.add(f"w{n}", selector)
    index.add("w0", selectors[-1])  # filed again under another selector: the old one is gone
    kept = {f"w{n}": s for n, s in enumerate(selectors)} | {"w0": selectors[-1]}
    for n in removed:
        index.remove(f"w{n}")
        kept.pop(f"w{n}", None)
    assert len(index) == len(kept)
    assert index.matching(labels) == {k for k, s in kept.items() if selector_matches(s, labels)}


@pytest.mark.parametrize(
    ("selector", "query"),
    [
        (LabelSelector((("app", "web"), ("tier", "front"))), "app=web,tier=front"),
        (
            LabelSelector(
                (),
                (
                    Requirement("app", Operator.IN, frozenset({"b", "a"})),
                    Requirement("env", Operator.NOT_IN, frozenset({"prod"})),
                    Requirement("tier", Operator.EXISTS),
                    Requirement("canary", Operator.DOES_NOT_EXIST),
                ),
            ),
            "app in (a,b),env notin (prod),tier,!canary",
        ),
    ],
)
def test_selector_query_renders_the_exact_selector(selector: LabelSelector, query: str) -> None:
    assert selector_query(selector) == query
